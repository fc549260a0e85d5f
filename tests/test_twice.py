"""Every Celery task delivered twice leaves what one delivery leaves. Tasks are acknowledged late
(CELERY_TASK_ACKS_LATE), so a message whose worker died, or that outlived the broker's visibility
timeout, is delivered again; beat and the API may also send a second one. Also every call the
driver retries on a dropped database connection (workers.driver.with_db), made twice.

Tests elsewhere that are about the same: beat's wake pass run twice sends one driver
(test_dispatch.py), an ingest and a re-parse made twice (test_services.py), a form or POST sent
twice with its idempotency key (test_dispatch.py), an import made twice (test_archive.py)."""

import json

import pytest
from celery import current_app
from django.utils import timezone

from experiments import services
from experiments.models import AttemptOutcome, Host, HostStatus, Run, RunStatus
from workers import tasks

from .conftest import queued_messages, runner_processes, wait_for
from .factories import HostFactory, RunFactory

pytestmark = pytest.mark.django_db(transaction=True)

ONE_RUN = {
    "name": "delivered twice",
    "hosts": ["local"],
    "engines": ["innodb"],
    "parameters": {"buffer_pool_size": ["64M"], "redo_log_size": ["64M"], "insert_rate": [0]},
    "workload": {"name": "oltp_write_only", "tables": 1, "table_size": 2000, "threads": 2, "events": 4000},
    "crash": {"method": "sigkill", "when": "after_workload"},
    "repetitions": 1,
}


def queued_tasks(broker) -> list[tuple[str, str]]:
    messages = [json.loads(m) for m in broker.lrange(current_app.conf.task_default_queue, 0, -1)]
    return [(m["headers"]["task"], m["headers"]["argsrepr"]) for m in messages]


@pytest.mark.mariadb
def test_drive_host_delivered_twice_carries_out_the_run_once(local_host, broker, celery_worker_process):
    """Two deliveries of the host's driver, taken at once by a worker's two processes: one holds
    the host and carries out the run, the other returns; the run has one attempt. A third
    delivery after the run finds nothing to do."""
    experiment, _ = services.create_experiment(ONE_RUN)  # sends the host's driver
    tasks.drive_host_task.delay(local_host.id)  # and the same message again
    run = Run.objects.get(experiment=experiment)
    wait_for(lambda: Run.objects.get(id=run.id).is_finished, 600, "the run to finish", interval_s=1)
    run.refresh_from_db()
    assert run.status == RunStatus.DONE, run.error
    assert list(run.attempt_rows.values_list("outcome", flat=True)) == [AttemptOutcome.DONE]
    files = sorted(run.files.values_list("name", flat=True))
    assert len(files) == len(set(files)) and "error.log" in files

    assert tasks.drive_host_task.run(local_host.id) is False
    run.refresh_from_db()
    assert run.attempt_rows.count() == 1 and run.status == RunStatus.DONE
    wait_for(lambda: runner_processes() == [], 30, "every process of the run gone")


def test_probe_host_delivered_twice_changes_nothing_but_last_seen(local_host):
    tasks.probe_host_task.run(local_host.id)
    first = Host.objects.get(id=local_host.id)
    tasks.probe_host_task.run(local_host.id)
    second = Host.objects.get(id=local_host.id)
    assert second.status == first.status == HostStatus.IDLE
    assert second.facts["cpu_count"] == first.facts["cpu_count"] and second.facts.keys() == first.facts.keys()
    assert (second.host_key, second.host_key_fingerprint) == (first.host_key, first.host_key_fingerprint)
    assert first.last_seen <= second.last_seen <= timezone.now()


def test_beat_s_probe_pass_run_twice_sends_one_probe_per_host_per_pass(broker):
    hosts = [HostFactory(name="bench1"), HostFactory(name="bench2")]
    tasks.probe_hosts_task.run()
    tasks.probe_hosts_task.run()
    expected = sorted(("workers.tasks.probe_host_task", f"({h.id},)") for h in hosts)
    assert sorted(queued_tasks(broker)) == sorted(expected * 2)
    assert queued_messages(broker) == 4


def test_a_retry_made_twice_by_a_reconnecting_driver_counts_once(local_host, settings):
    """with_db may repeat a call whose commit reached the database but whose answer did not."""
    settings.RUN_RETRY_BACKOFF_S = 30
    run = RunFactory(host=local_host)
    _, attempt = services.claim_next_run(local_host.id, "celery@here")
    pause = services.retry_run(run.id, "connection refused", attempt.id)
    assert services.retry_run(run.id, "connection refused", attempt.id) is None
    run.refresh_from_db()
    assert pause == 30 and run.status == RunStatus.QUEUED and run.attempts == 1
    assert list(run.attempt_rows.values_list("outcome", flat=True)) == [AttemptOutcome.RETRY]


def test_a_failure_and_an_attempt_s_end_made_twice_keep_the_first(local_host):
    run = RunFactory(host=local_host)
    _, attempt = services.claim_next_run(local_host.id, "celery@here")
    services.mark_run_failed(run.id, "the server never came back", attempt.id)
    ended = Run.objects.get(id=run.id).finished_at
    services.mark_run_failed(run.id, "the server never came back", attempt.id)
    services.end_attempt(attempt.id, AttemptOutcome.DONE)
    run.refresh_from_db()
    attempt.refresh_from_db()
    assert (run.status, run.error, run.finished_at) == (RunStatus.FAILED, "the server never came back", ended)
    assert (attempt.outcome, attempt.error) == (AttemptOutcome.FAILED, "the server never came back")


def test_progress_and_a_heartbeat_made_twice_leave_the_last(local_host):
    run = RunFactory(host=local_host)
    _, attempt = services.claim_next_run(local_host.id, "celery@here")
    for _ in range(2):
        services.record_progress(run.id, "running oltp_write_only", 55.0, attempt.id)
        services.beat(attempt.id)
    run.refresh_from_db()
    attempt.refresh_from_db()
    assert (run.progress, run.progress_percent) == ("running oltp_write_only", 55.0)
    assert attempt.heartbeat_at is not None and attempt.ended_at is None
