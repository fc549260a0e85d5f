"""Uploads: a body over UPLOAD_MAX_BYTES is refused before it is read (413, nothing stored);
a large one is streamed to disk: the real web process's peak memory hardly moves, whatever the
size of the file."""

import re
import subprocess
from pathlib import Path

import pytest

from experiments.models import Run
from experiments.services.tokens import new_token

from .conftest import wait_for
from .factories import UserFactory
from .test_faults import answering, free_port, start_web, stop_web
from .test_imports import parameters, upload

pytestmark = [pytest.mark.busy, pytest.mark.django_db]  # the real web process takes 512 MiB
REAL_LOG = Path(__file__).parent / "data" / "mariadb-10.11" / "innodb_after_workload" / "error.log"


def test_a_body_over_the_limit_is_refused_before_it_is_read(api, client, user, settings):
    settings.UPLOAD_MAX_BYTES = 1024 * 1024
    big = upload(b"x" * (2 * 1024 * 1024))
    answer = api.post("/api/imports/", {**parameters(), "error_log": big}, format="multipart")
    assert answer.status_code == 413
    assert re.match(r"the request is 2 MiB; this installation takes at most 1 MiB", answer.json()["detail"])
    client.force_login(user)
    page = client.post("/imports/new/", {**parameters(), "error_log": upload(b"x" * (2 * 1024 * 1024))})
    assert page.status_code == 413 and b"UPLOAD_MAX_BYTES" in page.content
    assert not Run.objects.exists()


def peak_rss_kib(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"^VmHWM:\s+(\d+) kB", status, re.M).group(1))


def gunicorn_worker(master_pid: int) -> int:
    children = Path(f"/proc/{master_pid}/task/{master_pid}/children").read_text().split()
    return int(children[0])


def big_log(path: Path, mib: int) -> Path:
    """A busy server's log of `mib` MiB, with a real crash recovery at its very end."""
    padding = b"2026-11-01  3:00:00 0 [Note] a line of a busy server's log, repeated to make it large\n"
    with path.open("wb") as out:
        for _ in range(mib * 1024**2 // (len(padding) * 10_000)):
            out.write(padding * 10_000)
        out.write(REAL_LOG.read_bytes())
    return path


@pytest.mark.django_db(transaction=True)
def test_a_large_import_is_streamed_to_disk_not_held_by_the_web_process(tmp_path):
    """128 MiB, then 512 MiB of error log sent by curl (which streams it) to the real web
    process: the worker's peak memory barely moves, and not with the size of the file (held in
    memory, four times the file would be four times the growth); the recovery at the very end of
    each file is read."""
    user = UserFactory(username="importer")
    token = new_token(user)
    port = free_port()
    web = start_web(port)
    grown_mib = {}
    try:
        hosts = wait_for(
            lambda: answering(f"http://127.0.0.1:{port}/api/hosts/", token), 60, "the web process"
        )
        assert hosts.status_code == 200  # the app is loaded: what follows is the upload's cost
        before = peak_rss_kib(gunicorn_worker(web.pid))
        for mib in (128, 512):
            log = big_log(tmp_path / f"error-{mib}.log", mib)
            fields = [
                arg
                for name, value in parameters(host_label=f"big{mib}.example").items()
                for arg in ("-F", f"{name}={value}")
            ]
            sent = subprocess.run(
                [
                    "curl", "-sS", "--max-time", "600", "-o", str(tmp_path / "answer.json"),
                    "-w", "%{http_code}", "-H", f"Authorization: Token {token}", *fields,
                    "-F", f"error_log=@{log}",
                    f"http://127.0.0.1:{port}/api/imports/",
                ],
                capture_output=True, text=True, check=False,
            )  # fmt: skip
            answer = (tmp_path / "answer.json").read_text()[:500]
            assert sent.stdout == "201", (sent.stdout, sent.stderr, answer)
            grown_mib[mib] = (peak_rss_kib(gunicorn_worker(web.pid)) - before) / 1024
            log.unlink()
    finally:
        stop_web(web)
    assert grown_mib[128] < 64, f"the web process grew by {grown_mib[128]:.0f} MiB for a 128 MiB upload"
    assert grown_mib[512] - grown_mib[128] < 16, f"peak memory follows the upload's size: {grown_mib}"
    for run in Run.objects.all():
        assert run.recovery_seconds is not None, run.host_label  # the recovery at the end was read
    assert Run.objects.count() == 2
