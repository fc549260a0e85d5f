"""The whole path with real parts: API -> PostgreSQL -> Redis -> Celery worker -> host runner
(private mariadbd, sysbench, kill -9, restart) -> ingest -> metrics."""

import json
import subprocess
import sys

import pytest
from django.conf import settings

from experiments.models import Run, RunStatus
from workers.transports import RUNNER_PATH

from .conftest import runner_processes, wait_for

pytestmark = [pytest.mark.mariadb, pytest.mark.django_db(transaction=True)]


def run_runner(folder, spec: dict) -> tuple[int, dict]:
    """Run the host runner as a transport would; its exit code and last event."""
    (folder / "spec.json").write_text(json.dumps(spec))
    done = subprocess.run(
        [
            sys.executable,
            str(RUNNER_PATH),
            "--spec",
            str(folder / "spec.json"),
            "--out",
            str(folder / "bundle"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done.returncode, json.loads(done.stdout.strip().splitlines()[-1])


def test_four_runs_innodb_and_myrocks_two_redo_sizes(api, local_host, celery_worker_process):
    body = {
        "name": "InnoDB vs MyRocks, two redo sizes",
        "hosts": ["local"],
        "engines": ["innodb", "rocksdb"],
        "parameters": {"redo_log_size": ["64M", "512M"]},
        "workload": {
            "name": "oltp_write_only",
            "tables": 4,
            "table_size": 20000,
            "threads": 4,
            "events": 8000,
        },
        "crash": {"method": "sigkill", "when": "after_workload"},
        "repetitions": 1,
    }
    created = api.post("/api/experiments/", body, format="json")
    assert created.status_code == 201, created.content
    experiment_id = created.json()["id"]

    def finished():
        runs = Run.objects.filter(experiment_id=experiment_id)
        return all(r.status in (RunStatus.DONE, RunStatus.FAILED) for r in runs)

    wait_for(finished, timeout_s=900, what="4 runs to finish", interval_s=1)
    runs = api.get(f"/api/experiments/{experiment_id}/").json()["runs"]
    assert [r["status"] for r in runs] == ["done"] * 4, [r["error"] for r in runs]
    for run in runs:
        metrics = run["metrics"]
        assert metrics["recovery_seconds"] > 0, run
        assert metrics["downtime_seconds"] > 0 and metrics["ready_seconds"] > 0, run
        assert metrics["downtime_seconds"] >= metrics["ready_seconds"], run
        assert metrics["verified"] is True, run
    innodb = [r for r in runs if r["engine"] == "innodb"]
    assert all(r["metrics"]["redo_bytes"] > 1_000_000 for r in innodb)
    assert all(r["metrics"]["checkpoint_lsn"] < r["metrics"]["crash_lsn"] for r in innodb)
    assert Run.objects.get(id=runs[0]["id"]).files.filter(name="error.log.stamped").exists()
    assert runner_processes() == []


def test_server_that_never_comes_back_fails_clearly_and_leaves_no_process(tmp_path):
    spec = {
        "run_id": 0,
        "engine": "innodb",
        "parameters": {"buffer_pool_size": "64M", "redo_log_size": "64M", "insert_rate": 0},
        "server_options": {},
        "workload": {
            "name": "oltp_write_only",
            "tables": 1,
            "table_size": 100,
            "threads": 1,
            "events": 10,
            "time_seconds": 0,
        },
        "crash": {"method": "sigkill", "when": "after_workload"},
        "work_dir": str(settings.RUNNER_WORK_DIR),
        "start_timeout_s": 0,  # no time at all: the server cannot answer in time
    }
    exit_code, last_event = run_runner(tmp_path, spec)
    assert exit_code == 1
    assert last_event["event"] == "failed"
    assert "never came back" in last_event["error"]
    result = json.loads((tmp_path / "bundle" / "result.json").read_text())
    assert result["status"] == "failed"
    assert runner_processes() == []


def test_runner_refuses_a_malformed_spec_before_starting_anything(tmp_path):
    spec = {
        "engine": "innodb",
        "parameters": {"redo_log_size": "64M; reboot"},
        "workload": {"name": "oltp_write_only"},
        "crash": {},
    }
    exit_code, last_event = run_runner(tmp_path, spec)
    assert exit_code == 2
    assert "not a size" in last_event["error"]
