"""Services and tasks against the real database and broker; the runner itself is not started."""

import json

import pytest

from experiments import services
from experiments.models import ExperimentStatus, RunStatus

from .conftest import DATA
from .factories import RunFactory

pytestmark = pytest.mark.django_db(transaction=True)
FIXTURE = DATA / "mariadb-10.11" / "innodb_binlog_during_load"


def fixture_bundle(status="done") -> services.Bundle:
    files = {
        "error.log": (FIXTURE / "error_with_clean_restart.log").read_bytes(),
        "innodb_status_at_crash.txt": (FIXTURE / "innodb_status_at_crash.txt").read_bytes(),
        "sysbench_report.txt": (FIXTURE / "sysbench_partial.txt").read_bytes(),
    }
    result = {
        "status": status,
        "error": None if status == "done" else "the server never came back",
        "times": {
            "killed": 100.0,
            "recovery_first_query": 100.968,
            "clean_spawned": 200.0,
            "clean_first_query": 200.14,
        },
    }
    files["result.json"] = json.dumps(result).encode()
    return services.Bundle(result=result, files=files)


def test_ingest_bundle_sets_metrics_from_the_logs(local_host):
    run = RunFactory(host=local_host, status=RunStatus.RUNNING)
    services.ingest_bundle(run.id, fixture_bundle())
    run.refresh_from_db()
    assert run.status == RunStatus.DONE
    assert run.redo_bytes == 102229397 - 44420
    assert run.trx_rolled_back == 2
    assert run.downtime_seconds == pytest.approx(0.968)
    assert run.clean_start_seconds == pytest.approx(0.14)
    assert run.workload_tps == pytest.approx(5156.12)
    run.experiment.refresh_from_db()
    assert run.experiment.status == ExperimentStatus.DONE


def test_ingest_twice_leaves_the_same_rows(local_host):
    run = RunFactory(host=local_host, status=RunStatus.RUNNING)
    services.ingest_bundle(run.id, fixture_bundle())
    first = (run.files.count(), sorted(run.files.values_list("name", flat=True)))
    services.ingest_bundle(run.id, fixture_bundle())
    run.refresh_from_db()
    assert (run.files.count(), sorted(run.files.values_list("name", flat=True))) == first
    assert run.redo_bytes == 102229397 - 44420


def test_failed_bundle_keeps_files_and_says_why(local_host):
    run = RunFactory(host=local_host, status=RunStatus.RUNNING)
    services.ingest_bundle(run.id, fixture_bundle(status="failed"))
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED
    assert "never came back" in run.error
    assert run.files.filter(name="error.log").exists()
    run.experiment.refresh_from_db()
    assert run.experiment.status == ExperimentStatus.FAILED


def test_a_run_that_failed_after_the_kill_keeps_what_was_measured_before(local_host):
    """The server never came back: the bundle has the moment of the kill but no restart."""
    bundle = fixture_bundle(status="failed")
    bundle.result["times"] = {"killed": 100.0, "recovery_spawned": 100.2}
    bundle.files["result.json"] = json.dumps(bundle.result).encode()
    run = RunFactory(host=local_host, status=RunStatus.RUNNING)
    services.ingest_bundle(run.id, bundle)
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED and "never came back" in run.error
    assert run.downtime_seconds is None  # no first query after the restart
    assert run.redo_bytes == 102229397 - 44420  # read from the snapshot taken before the kill


def test_reparse_twice_changes_nothing(local_host):
    run = RunFactory(host=local_host, status=RunStatus.RUNNING)
    services.ingest_bundle(run.id, fixture_bundle())
    run.refresh_from_db()
    run.redo_bytes = 1
    run.save()
    services.reparse_run(run.id)
    services.reparse_run(run.id)
    run.refresh_from_db()
    assert run.redo_bytes == 102229397 - 44420


def test_mark_run_failed_does_not_undo_a_done_run(local_host):
    run = RunFactory(host=local_host, status=RunStatus.DONE)
    services.mark_run_failed(run.id, "late failure")
    run.refresh_from_db()
    assert run.status == RunStatus.DONE


def test_reparse_command_restores_metrics_from_raw_files(local_host):
    from io import StringIO

    from django.core.management import call_command

    run = RunFactory(host=local_host, status=RunStatus.RUNNING)
    services.ingest_bundle(run.id, fixture_bundle())
    run.refresh_from_db()
    run.crash_lsn = None
    run.save()
    out = StringIO()
    call_command("reparse", "--experiment", str(run.experiment_id), stdout=out)
    run.refresh_from_db()
    assert run.crash_lsn == 102229397
    assert "re-parsed 1 run(s)" in out.getvalue()


def test_a_run_that_did_not_reach_its_insert_rate_says_so(local_host):
    run = RunFactory(host=local_host, status=RunStatus.RUNNING)
    bundle = fixture_bundle()
    bundle.result["spec"] = {"parameters": {"insert_rate": 1_000_000}, "workload": {"name": "oltp_insert"}}
    services.ingest_bundle(run.id, bundle)
    run.refresh_from_db()
    assert run.status == RunStatus.DONE and run.achieved_insert_rate < 900_000
    assert "insert rate not reached" in run.error and "of the 1,000,000 rows/s asked for" in run.error
