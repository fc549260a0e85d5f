"""Services and tasks against the real database and broker; the runner itself is not started."""

import json

import pytest
from django.db import ProgrammingError, connection

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


def test_nul_bytes_from_a_crashed_server_s_files_are_dropped_not_fatal(local_host):
    """Blocks never written read back as zeros: a runner's error quoting the log's tail, and the
    log itself, may hold NUL bytes, which PostgreSQL stores in no text or jsonb value."""
    bundle = fixture_bundle(status="failed")
    bundle.result["error"] = "the server never came back. Its log:\n\x00\x00\x002026 [Note] x"
    bundle.files["error.log"] += b"\x00" * 4096 + b"2026-11-01  3:00:00 0 [Note] after the hole\n"
    run = RunFactory(host=local_host, status=RunStatus.RUNNING)
    services.ingest_bundle(run.id, bundle)
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED
    assert run.error == "the server never came back. Its log:\n2026 [Note] x"
    assert b"\x00" in run.files.get(name="error.log").content  # the raw file is kept as it was
    other = RunFactory(host=local_host, status=RunStatus.RUNNING)
    services.record_progress(other.id, "running\x00")
    services.mark_run_failed(other.id, "dropped\x00 mid-run")
    other.refresh_from_db()
    assert other.error == "dropped mid-run"


def test_an_ingest_the_database_refuses_half_way_leaves_nothing_of_it(local_host):
    """All or nothing: the database refuses the run's row after its files were written (a
    trigger of the test's, raising on that update): no file, metric or status of the bundle is
    left, the run is still running, and the same ingest afterwards stores it all."""
    run = RunFactory(host=local_host, status=RunStatus.RUNNING)
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE FUNCTION refuse_run() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$"
        )
        cursor.execute(
            "CREATE TRIGGER refuse_run BEFORE UPDATE ON experiments_run FOR EACH ROW "
            "WHEN (NEW.status = 'done') EXECUTE FUNCTION refuse_run()"
        )
    try:
        with pytest.raises(ProgrammingError, match="refused by the test"):
            services.ingest_bundle(run.id, fixture_bundle())
        run.refresh_from_db()
        assert run.status == RunStatus.RUNNING and run.redo_bytes is None and run.finished_at is None
        assert run.files.count() == 0
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DROP TRIGGER refuse_run ON experiments_run")
            cursor.execute("DROP FUNCTION refuse_run()")
    services.ingest_bundle(run.id, fixture_bundle())
    run.refresh_from_db()
    assert run.status == RunStatus.DONE and run.files.count() == 4


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
