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
        "run_id": 1,
        "engine": "innodb",
        "parameters": {"redo_log_size": "64M; reboot"},
        "workload": {"name": "oltp_write_only"},
        "crash": {"when": "after_workload"},
    }
    exit_code, last_event = run_runner(tmp_path, spec)
    assert exit_code == 1
    assert "not a size" in last_event["error"] and last_event["permanent"] is True
    result = json.loads((tmp_path / "bundle" / "result.json").read_text())
    assert result["status"] == "failed" and result["permanent"] and "times" not in result


def test_a_runner_whose_stdin_closes_stops_everything_it_started(tmp_path):
    """The worker died or the SSH session dropped: no mariadbd or sysbench of ours is left."""
    spec = {
        "run_id": 2,
        "engine": "innodb",
        "parameters": {"buffer_pool_size": "64M", "redo_log_size": "64M", "insert_rate": 0},
        "workload": {
            "name": "oltp_write_only",
            "tables": 1,
            "table_size": 1000,
            "threads": 1,
            "events": 10_000_000,
            "time_seconds": 0,
        },
        "crash": {"method": "sigkill", "when": "after_workload"},
        "work_dir": str(settings.RUNNER_WORK_DIR),
        "start_timeout_s": 120,
    }
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    runner = subprocess.Popen(
        [
            sys.executable,
            str(RUNNER_PATH),
            "--spec",
            str(tmp_path / "spec.json"),
            "--out",
            str(tmp_path / "b"),
            "--watch-stdin",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    for line in runner.stdout:  # wait for the workload: server and sysbench both running
        if "running oltp_write_only:" in line:
            break
    assert any("sysbench" in p for p in runner_processes()) and any(
        "mariadbd" in p for p in runner_processes()
    )
    runner.stdin.close()
    assert runner.wait(timeout=30) == 3
    wait_for(lambda: runner_processes() == [], 10, "the runner's processes to be gone")
