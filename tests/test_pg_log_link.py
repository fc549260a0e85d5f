"""PostgreSQL's error log is its stderr, opened by the root runner in the server's folder at each
start (issue 64, item 6c). Whoever holds the server's OS user can put a hard link to a root-only
file at its name, where the kernel lets them (fs.protected_hardlinks=0): the runner would then
write the restarted server's log into that file. It opens the log as it reads the other files of
that folder, a regular file of one name only, and refuses the rest by name."""

import json
import os
import secrets
import shutil
import tempfile
from pathlib import Path

import pytest
from django.conf import settings

from .test_end_to_end import runner_in_its_workload
from .test_postgresql_runs import pg_spec

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="a root-only file and the server's user need root")
HARD_LINK = "error.log has other names (hard links)"


@pytest.fixture
def root_secret():
    """A file only root may read, on the run's filesystem (a hard link stays in one), and its text."""
    folder = Path(tempfile.mkdtemp(prefix="root-only-", dir=Path(settings.RUNNER_WORK_DIR).parent))
    secret = folder / "secret"
    text = f"root's secret {secrets.token_hex(16)}\n"
    secret.write_text(text)
    secret.chmod(0o600)
    yield secret, text
    shutil.rmtree(folder)


def test_a_hard_link_at_postgresql_s_error_log_is_refused_and_root_s_file_left_as_it_was(
    tmp_path, root_secret
):
    secret, text = root_secret
    crash = {"method": "sigkill", "when": "during_workload", "after_seconds": 3}
    spec = pg_spec(6403, crash, events=10_000_000)
    runner = runner_in_its_workload(tmp_path, spec)
    try:
        (run,) = Path(spec["work_dir"]).glob(f"run-{spec['run_id']}-*")
        home = run / "server"
        # what the server's user does where hard links to others' files are allowed (root does it
        # here: this host's kernel refuses it to them): its log moved away, the secret's name put there
        os.rename(home / "error.log", home / "error.log.moved")
        os.link(secret, home / "error.log")
        runner.stdout.read()  # to its end: the crash, then the restart's start
        runner.wait(timeout=300)
    finally:
        if runner.poll() is None:
            runner.stdin.close()
            runner.wait(timeout=60)
    result = json.loads((tmp_path / "b" / "result.json").read_text())

    assert secret.read_text() == text, "the restarted server's log was written into root's file"
    assert secret.stat().st_nlink == 1, "the run's folder, and the link in it, are removed"
    assert result["status"] == "failed" and HARD_LINK in result["error"], result["error"]
    assert any(reason.startswith(HARD_LINK) for reason in result["refused_files"]), result["refused_files"]
    for path in (tmp_path / "b").iterdir():  # nor was it read into the bundle
        assert text.strip() not in path.read_text(errors="replace"), path.name
