"""Oracle MySQL 9.7 for real (runner/families/mysql), from the build `make setup` installs from
Debian unstable's packages: the lab's runs, their checkpoint held back through the workload and
what their snapshots and logs say of it, and `predict` from them against a loaded 9.7 server of
the test's own."""

import json
import re
import time
from urllib.parse import quote

import pytest
from django.conf import settings

from experiments import services
from experiments.models import Run, RunStatus
from experiments.services.tokens import new_token
from recovery_lab_cli.live import read_server
from recovery_lab_cli.server_url import parse_server_url
from recovery_lab_cli.units import parse_size

from .conftest import wait_for
from .live_mariadb import MONITOR_PASSWORD
from .live_mysql import LiveMySQL
from .test_gate import artifact
from .test_predict import LAB, client

pytestmark = pytest.mark.mariadb
LAST_CHECKPOINT = re.compile(r"^Last checkpoint at\s+(\d+)$", re.M)


def held_back(run: Run) -> None:
    """MySQL's own hold-back (no debug build's innodb_checkpoint_disabled needed): the checkpoint
    LSN at the kill is the one before the workload, in every second's sample, in SHOW ENGINE
    INNODB STATUS before and at the kill, and where the restart's log starts its scan; the redo
    between is what recovery replayed, every batch counted."""
    text = {file.name: bytes(file.content).decode() for file in run.files.all()}
    before = int(LAST_CHECKPOINT.search(text["innodb_status_before_run.txt"]).group(1))
    at_crash = int(LAST_CHECKPOINT.search(text["innodb_status_at_crash.txt"]).group(1))
    samples = [json.loads(line) for line in text["samples.jsonl"].splitlines()]
    assert samples and {sample["checkpoint_lsn"] for sample in samples} == {before} == {at_crash}
    assert run.checkpoint_moved_bytes == 0  # recorded as the run did it: the run page's sentence
    ages = [sample["checkpoint_age_bytes"] for sample in samples]
    assert ages == sorted(ages), ages  # the redo grew and stayed
    assert run.checkpoint_lsn == before and run.redo_bytes >= ages[-1], (run.checkpoint_lsn, run.redo_bytes)
    assert "--innodb-redo-log-capacity=128M" in json.loads(text["result.json"])["server_args"]
    recovery = text["error.log"][text["error.log"].index("Starting crash recovery") :]
    counted = [int(n) for n in re.findall(r"Applying a batch of (\d+) redo log records", recovery)]
    assert run.pages_to_recover == sum(counted[:-1] if counted[-1] == 0 else counted) > 0, counted


@pytest.fixture
def live_mysql(mysql_build):
    """A loaded MySQL 9.7 of the test's own, standing for a production server (tests/live_mysql.py):
    a light, steady load, as test_predict's. Yields its socket."""
    live = LiveMySQL(build=settings.RUNNER_WORK_DIR / "builds" / mysql_build[0], log_file_size="48M")
    try:
        live.start()
        live.start_load(rate=400, threads=1)
        yield live.socket
    finally:
        live.stop()


@pytest.mark.django_db(transaction=True)
def test_predict_on_a_loaded_mysql_9_7_from_real_mysql_lab_runs(
    live_server, local_host, celery_worker_process, user, live_mysql
):
    """The lab's runs on MySQL 9.7 (crashed at their redo targets: the checkpoint age polled from
    Innodb_redo_log_*), then `predict` against a loaded 9.7 of the test's own as a monitoring
    account with no privilege: its redo to replay is the current LSN less the checkpoint's
    (MySQL 8.0.30+ has no Innodb_checkpoint_age), its worst case innodb_redo_log_capacity."""
    # five runs, one per redo target (a prediction needs 5): a MySQL run costs three starts
    lab = {**LAB, "name": "Lab: MySQL 9.7 downtime against redo", "repetitions": 1}
    lab["parameters"] = {**LAB["parameters"], "server_build": ["mysql-9.7"]}
    lab["crash"] = {**LAB["crash"], "redo_bytes": ["4M", "8M", "12M", "18M", "24M"]}
    experiment, _ = services.create_experiment(lab)
    runs = Run.objects.filter(experiment=experiment)
    wait_for(lambda: not runs.exclude(status__in=RunStatus.finished()).exists(), 600, "five lab runs")
    assert runs.filter(status=RunStatus.DONE).count() == 5, list(runs.values("status", "error"))
    for run in runs:  # each crashed at its redo target, on MySQL, its checkpoint held meanwhile
        assert run.server_version.startswith("9.7.") and run.redo_bytes >= 0.9 * parse_size(
            run.parameters["crash_redo_bytes"]
        ), (run.server_version, run.redo_bytes, run.parameters)
        held_back(run)
    url = f"mysql://monitor:{quote(MONITOR_PASSWORD, safe='')}@{quote(str(live_mysql), safe='')}"
    first = read_server(parse_server_url(url), "innodb", timeout_s=5)
    assert first.version.startswith("9.7.") and first.worst_redo == 48 * 2**20
    assert first.bound == "innodb_redo_log_capacity (an upper bound)"
    assert first.redo_log_bytes == 48 * 2**20 and first.buffer_pool_bytes == 128 * 2**20
    deadline = time.monotonic() + 30
    while read_server(parse_server_url(url), "innodb", timeout_s=5).redo_to_replay < 2**20:
        assert time.monotonic() < deadline, "the redo to replay never reached 1 MiB under the load"
        time.sleep(0.5)
    said = client(live_server, new_token(user), url, "predict", "--lab-host", "local", "--rto", "1h")
    artifact("predict-mysql-9.7.txt", said)
    assert said.returncode == 0, said.stdout + said.stderr
    now = re.search(
        r"^now +([0-9.]+) MiB of redo to replay -> downtime ([0-9.]+) s "
        r"\(95% prediction interval ([0-9.]+)-([0-9.]+) s\)",
        said.stdout,
        re.M,
    )
    assert now, said.stdout
    redo_mib, typical, low, high = map(float, now.groups())
    assert redo_mib >= 1 and low <= typical <= high
    worst = r"^worst case +48\.0 MiB \(innodb_redo_log_capacity .*\) -> downtime [0-9.]+ s \(95%"
    assert re.search(worst, said.stdout, re.M), said.stdout
    assert said.stdout.startswith(f"server      {live_mysql}: 9.7."), said.stdout  # its socket, no port
    assert MONITOR_PASSWORD not in said.stdout + said.stderr
    # the lab's pool is this server's; its log is not, and the prediction says so
    assert (
        "note        the lab's runs had a redo log size of 128 MiB, this server 48 MiB: runs of 48 MiB "
        "would stand for it" in said.stdout
    ), said.stdout
