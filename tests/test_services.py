"""Services and tasks against the real database and broker; the runner itself is not started."""

import json

import pytest

from experiments import services
from experiments.models import ExperimentStatus, RunStatus
from workers import tasks
from workers.locks import host_lock

from .conftest import DATA, queued_messages
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


def test_claim_run_lets_only_one_claim_through(local_host):
    run = RunFactory(host=local_host)
    assert services.claim_run(run.id) is not None
    assert services.claim_run(run.id) is None
    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING and run.attempts == 1


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


def test_execute_run_task_twice_on_a_finished_run_does_nothing(local_host):
    run = RunFactory(host=local_host, status=RunStatus.DONE, recovery_seconds=1.5)
    tasks.execute_run_task.run(run.id)
    tasks.execute_run_task.run(run.id)
    run.refresh_from_db()
    assert run.status == RunStatus.DONE and run.recovery_seconds == 1.5 and run.attempts == 0


def test_execute_run_task_waits_while_the_host_is_busy(local_host):
    from celery.exceptions import Retry

    run = RunFactory(host=local_host)
    with host_lock(local_host.id) as acquired:
        assert acquired
        with pytest.raises(Retry):
            tasks.execute_run_task.run(run.id)
    run.refresh_from_db()
    assert run.status == RunStatus.QUEUED and run.attempts == 0


def test_run_whose_worker_died_is_requeued_once_per_pass(local_host, broker):
    run = RunFactory(host=local_host)
    services.claim_run(run.id)  # claimed, but no worker holds the host lock: the worker is gone
    tasks.requeue_lost_runs_task.run()
    tasks.requeue_lost_runs_task.run()
    run.refresh_from_db()
    assert run.status == RunStatus.QUEUED
    assert queued_messages(broker) == 1


def test_run_is_failed_after_three_lost_attempts(local_host, broker):
    run = RunFactory(host=local_host, attempts=2)
    services.claim_run(run.id)
    tasks.requeue_lost_runs_task.run()
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED and "gave up after 3 attempts" in run.error


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
