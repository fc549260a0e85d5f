"""Dispatch by host against the real database, broker and (for SSH hosts) real sockets: claims,
attempts, retries with backoff, lost workers, beat's wake-ups, a dead broker, idempotent POSTs.
The runs here never reach a server; test_hosts_end_to_end.py runs real ones."""

import json
import subprocess
import sys
import threading
from datetime import timedelta

import asyncssh
import pytest
from celery import current_app
from django.conf import settings
from django.db import connections
from django.utils import timezone

from experiments import services
from experiments.models import AttemptOutcome, Host, Run, RunAttempt, RunStatus, Transport
from workers import tasks
from workers.driver import drive_host, watch_for_cancel
from workers.locks import busy_host_ids, host_lock
from workers.transports import write_runner

from .conftest import celery_broker, queued_messages
from .factories import HostFactory, RunFactory, UserFactory, experiment_form
from .sshd import free_port
from .test_definition import definition
from .test_services import fixture_bundle

pytestmark = pytest.mark.django_db(transaction=True)


def ssh_host(name="bench1", pinned=True) -> Host:
    """An SSH host on a loopback port where nothing listens: every connection is refused."""
    key = asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode() if pinned else ""
    return HostFactory(
        name=name,
        transport=Transport.SSH,
        ssh_user="root",
        ssh_host="127.0.0.1",
        ssh_port=free_port(),
        host_key=key,
        host_key_fingerprint="SHA256:test" if pinned else "",
    )


def broker_unreachable():
    """This process's Celery app pointed at a port where no broker listens."""
    return celery_broker(f"redis://127.0.0.1:{free_port()}/0")


# Claims -----------------------------------------------------------------------------------------


def test_a_claim_takes_the_oldest_ready_run_and_opens_its_attempt(local_host):
    waiting = RunFactory(host=local_host, not_before=timezone.now() + timedelta(hours=1))
    first, second = RunFactory(host=local_host), RunFactory(host=local_host)
    other_host = RunFactory(host=HostFactory(name="other"))

    run, attempt = services.claim_next_run(local_host.id, "celery@w1")
    assert run.id == first.id and run.status == RunStatus.RUNNING and run.attempts == 1
    assert (attempt.number, attempt.worker, attempt.outcome) == (1, "celery@w1", AttemptOutcome.RUNNING)
    assert services.claim_next_run(local_host.id, "celery@w1")[0].id == second.id
    assert services.claim_next_run(local_host.id, "celery@w1") is None  # `waiting` is not due yet
    assert Run.objects.get(id=waiting.id).status == RunStatus.QUEUED
    assert Run.objects.get(id=other_host.id).status == RunStatus.QUEUED


def test_claimers_racing_for_one_host_never_get_the_same_run(local_host):
    runs = [RunFactory(host=local_host) for _ in range(6)]
    claimed, barrier = [], threading.Barrier(8)

    def claim():
        barrier.wait()
        try:
            worker = threading.current_thread().name
            while (got := services.claim_next_run(local_host.id, worker)) is not None:
                claimed.append(got[0].id)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=claim, name=f"claimer-{i}") for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(claimed) == sorted(r.id for r in runs)
    assert RunAttempt.objects.count() == 6 and set(RunAttempt.objects.values_list("number", flat=True)) == {1}


# Outcomes of an attempt -------------------------------------------------------------------------


def test_a_passing_failure_is_retried_with_a_growing_pause_then_fails_with_the_reason(local_host, settings):
    settings.RUN_RETRY_BACKOFF_S = 10
    run = RunFactory(host=local_host)
    pauses = []
    for _ in range(3):
        Run.objects.filter(id=run.id).update(not_before=None)  # skip the wait
        _, attempt = services.claim_next_run(local_host.id, "w")
        pauses.append(services.retry_run(run.id, "connection refused", attempt.id))
    run.refresh_from_db()
    assert pauses == [10, 20, None]
    assert run.status == RunStatus.FAILED and run.error == "connection refused (gave up after 3 attempts)"
    rows = list(run.attempt_rows.values_list("number", "outcome", "transient", "error"))
    assert rows == [
        (1, "retry", True, "connection refused"),
        (2, "retry", True, "connection refused"),
        (3, "failed", True, "connection refused"),
    ]
    assert all(a.ended_at and a.seconds >= 0 for a in run.attempt_rows.all())


def test_a_retried_run_waits_for_its_pause(local_host, settings):
    settings.RUN_RETRY_BACKOFF_S = 60
    run = RunFactory(host=local_host)
    _, attempt = services.claim_next_run(local_host.id, "w")
    services.retry_run(run.id, "host busy elsewhere", attempt.id)
    run.refresh_from_db()
    assert run.status == RunStatus.QUEUED and "trying again in 60 s" in run.progress
    assert 55 < (run.not_before - timezone.now()).total_seconds() <= 60
    assert services.claim_next_run(local_host.id, "w") is None


def test_a_permanent_error_fails_the_run_at_once_and_the_host_goes_on_to_the_next(broker, local_host):
    # a server option the runner's allow-list does not have: the runner refuses the spec
    runs = [
        RunFactory(host=local_host, host_label=local_host.name, server_options={"init_file": "/tmp/x"})
        for _ in range(2)
    ]

    assert drive_host(local_host.id, "celery@w1") is True
    assert queued_messages(broker) == 1  # the host handed on to a fresh driver for the next run
    broker.delete(current_app.conf.task_default_queue)
    assert drive_host(local_host.id, "celery@w1") is True
    assert drive_host(local_host.id, "celery@w1") is False
    for run in runs:
        run.refresh_from_db()
        assert run.status == RunStatus.FAILED and "'init_file' is not one this runner sets" in run.error
        attempt = run.attempt_rows.get()
        assert (attempt.outcome, attempt.transient, attempt.worker) == ("failed", False, "celery@w1")
        assert "init_file" in attempt.error and attempt.host_id == local_host.id
    assert queued_messages(broker) == 0


def test_an_ssh_host_whose_key_no_admin_confirmed_gets_no_run_and_is_not_woken(broker):
    host = ssh_host(pinned=False)
    run = RunFactory(host=host, host_label=host.name)

    assert drive_host(host.id, "celery@w1") is False
    run.refresh_from_db()
    assert run.status == RunStatus.QUEUED and not run.attempt_rows.exists()  # waits, not failed
    assert services.hosts_to_wake(set(), timedelta(0)) == []
    assert queued_messages(broker) == 0
    Host.objects.filter(id=host.id).update(host_key="ssh-ed25519 AAAA", host_key_fingerprint="SHA256:x")
    assert services.hosts_to_wake(set(), timedelta(0)) == [host.id]  # confirmed: its runs go


def test_the_driver_backs_off_from_an_unreachable_host_and_wakes_it_later(broker):
    host = ssh_host()
    first, second = RunFactory(host=host, host_label=host.name), RunFactory(host=host, host_label=host.name)

    assert drive_host(host.id, "celery@w1") is True
    first.refresh_from_db()
    attempt = first.attempt_rows.get()
    assert first.status == RunStatus.QUEUED and first.not_before > timezone.now() - timedelta(seconds=1)
    assert attempt.outcome == "retry" and attempt.transient and "ConnectionRefused" in attempt.error
    assert Run.objects.get(id=second.id).attempts == 0
    host.refresh_from_db()
    assert host.status == "down" and "ConnectionRefused" in host.last_error  # on the hosts page
    message = json.loads(broker.lindex(current_app.conf.task_default_queue, 0))
    assert message["headers"]["task"] == "workers.tasks.drive_host_task" and message["headers"]["eta"]
    assert queued_messages(broker) == 1


def test_a_second_driver_for_a_held_host_returns_at_once(local_host):
    run = RunFactory(host=local_host)
    with host_lock(local_host.id) as acquired:
        assert acquired
        assert busy_host_ids() >= {local_host.id}
        assert drive_host(local_host.id, "celery@w2") is False
    run.refresh_from_db()
    assert run.status == RunStatus.QUEUED and run.attempts == 0 and not run.attempt_rows.exists()
    assert local_host.id not in busy_host_ids()


# Lost workers and beat --------------------------------------------------------------------------


def went_silent(run) -> None:
    """The run's driver gave its last sign of life longer ago than RUN_LOST_AFTER_S."""
    long_ago = timezone.now() - timedelta(seconds=settings.RUN_LOST_AFTER_S + 1)
    RunAttempt.objects.filter(run=run).update(started_at=long_ago, heartbeat_at=long_ago)


def test_a_run_left_running_by_a_lost_worker_is_woken_once_and_retried_by_the_next_driver(local_host, broker):
    run = RunFactory(host=local_host)
    services.claim_next_run(local_host.id, "celery@gone")  # its worker died: nobody holds the host
    tasks.wake_hosts_task.run()
    tasks.wake_hosts_task.run()  # the next pass does not send it again
    assert queued_messages(broker) == 1

    assert services.release_lost_runs(local_host.id) == []  # its driver may only be reconnecting
    assert services.has_live_run(local_host.id)
    went_silent(run)
    assert not services.has_live_run(local_host.id)
    assert services.release_lost_runs(local_host.id) == [run.id]
    run.refresh_from_db()
    attempt = run.attempt_rows.get()
    assert run.status == RunStatus.QUEUED and run.not_before is not None
    assert (attempt.outcome, attempt.transient) == ("lost", True)
    assert attempt.error == "its worker stopped during the run"


def test_a_run_lost_three_times_fails_with_the_reason(local_host):
    run = RunFactory(host=local_host, attempts=2)
    services.claim_next_run(local_host.id, "celery@gone")
    went_silent(run)
    services.release_lost_runs(local_host.id)
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED
    assert run.error == "its worker stopped during the run (gave up after 3 attempts)"


def test_beat_wakes_each_idle_host_with_ready_runs_once_and_leaves_held_hosts_alone(broker, settings):
    settings.WAKE_RESEND_S = 300
    idle, held, nothing = HostFactory(name="idle"), HostFactory(name="held"), HostFactory(name="nothing")
    for host in (idle, idle, held):
        RunFactory(host=host)
    RunFactory(host=nothing, status=RunStatus.DONE)
    with host_lock(held.id):
        assert tasks.wake_hosts_task.run() == [idle.id]
        assert tasks.wake_hosts_task.run() == []
    assert queued_messages(broker) == 1
    Host.objects.filter(id=idle.id).update(wake_sent_at=timezone.now() - timedelta(seconds=301))
    assert tasks.wake_hosts_task.run() == sorted([held.id, idle.id])  # a wake long unanswered: again


# The API when the broker is down, and clients that send twice -----------------------------------


def test_an_experiment_saved_while_the_broker_is_down_answers_201_and_its_host_is_woken_later(
    api, local_host, broker
):
    with broker_unreachable():
        response = api.post("/api/experiments/", definition(server_options={}, repetitions=1), format="json")
    assert response.status_code == 201, response.content
    experiment = response.json()
    queued = Run.objects.filter(experiment_id=experiment["id"], status=RunStatus.QUEUED)
    assert queued.count() == len(experiment["runs"]) > 0
    assert queued_messages(broker) == 0
    assert Host.objects.get(id=local_host.id).wake_sent_at is None

    assert tasks.wake_hosts_task.run() == [local_host.id]  # beat, once the broker is back
    assert queued_messages(broker) == 1


def test_the_same_idempotency_key_returns_the_first_experiment(api, local_host, broker):
    body = definition(server_options={}, repetitions=1)
    first = api.post("/api/experiments/", body, format="json", HTTP_IDEMPOTENCY_KEY="nightly-2026-11-22")
    again = api.post("/api/experiments/", body, format="json", HTTP_IDEMPOTENCY_KEY="nightly-2026-11-22")
    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json()["id"] == again.json()["id"] and Run.objects.count() == len(first.json()["runs"])
    assert queued_messages(broker) == 1

    other = api.post("/api/experiments/", body, format="json", HTTP_IDEMPOTENCY_KEY="nightly-2026-11-23")
    assert other.status_code == 201 and other.json()["id"] != first.json()["id"]
    bad = api.post("/api/experiments/", body, format="json", HTTP_IDEMPOTENCY_KEY="x; rm -rf /")
    assert bad.status_code == 400 and "Idempotency-Key" in bad.json()


def test_another_user_with_the_same_key_gets_an_experiment_of_their_own(api, local_host, broker):
    body = definition(server_options={}, repetitions=1)
    mine = api.post("/api/experiments/", body, format="json", HTTP_IDEMPOTENCY_KEY="k1").json()
    api.force_authenticate(UserFactory(username="perf"))
    theirs = api.post("/api/experiments/", body, format="json", HTTP_IDEMPOTENCY_KEY="k1")
    assert theirs.status_code == 201 and theirs.json()["id"] != mine["id"]


# The runner: one at a time per work directory ---------------------------------------------------


def test_a_runner_finding_its_work_directory_in_use_says_the_host_is_busy_and_may_be_retried(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, sys; f = open(sys.argv[1], 'a'); fcntl.flock(f, fcntl.LOCK_EX); "
            "print('held', flush=True); sys.stdin.read()",
            str(work / ".runner.lock"),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        spec = {
            "run_id": 7,
            "engine": "innodb",
            "parameters": {"buffer_pool_size": "128M", "redo_log_size": "64M", "insert_rate": 0},
            "workload": {"name": "oltp_write_only", "tables": 1, "table_size": 100},
            "crash": {"when": "after_workload"},
            "work_dir": str(work),
        }
        (tmp_path / "spec.json").write_text(json.dumps(spec))
        done = subprocess.run(
            [
                sys.executable,
                str(write_runner(tmp_path)),
                "--spec",
                str(tmp_path / "spec.json"),
                "--out",
                str(tmp_path),
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        holder.stdin.close()
        holder.wait(timeout=10)
    last = json.loads(done.stdout.strip().splitlines()[-1])
    assert done.returncode == 1 and last["permanent"] is False
    assert "busy elsewhere" in last["error"] and str(work) in last["error"]
    assert not any(p.name.startswith("run-") for p in work.iterdir())  # nothing was started


# Pages ------------------------------------------------------------------------------------------


def test_the_form_sent_twice_with_its_key_makes_one_experiment(client, local_host, broker):
    client.force_login(UserFactory(username="dba"))
    form = client.get("/experiments/new/")
    key = form.context["idempotency_key"]
    assert key.startswith("form-") and f'value="{key}"' in form.content.decode()
    fields = experiment_form("double click", idempotency_key=key)
    first, second = client.post("/experiments/new/", fields), client.post("/experiments/new/", fields)
    assert first.status_code == second.status_code == 302 and first.url == second.url
    assert Run.objects.count() == 1 and queued_messages(broker) == 1


def test_beat_probes_every_active_host_except_those_a_driver_holds(broker):
    idle, held = HostFactory(name="idle"), HostFactory(name="held")
    HostFactory(name="retired", active=False)
    with host_lock(held.id):
        tasks.probe_hosts_task.run()
    messages = [json.loads(m) for m in broker.lrange(current_app.conf.task_default_queue, 0, -1)]
    assert [(m["headers"]["task"], m["headers"]["argsrepr"]) for m in messages] == [
        ("workers.tasks.probe_host_task", f"({idle.id},)")
    ]


def test_a_driver_finding_a_live_run_on_its_host_starts_nothing_beside_it(local_host, broker):
    """The run's own driver lost the host's lock with its database connection but still beats:
    the next driver leaves the run alone, starts no second one, and looks again later."""
    from workers.driver import drive_host

    running, waiting = RunFactory(host=local_host), RunFactory(host=local_host)
    services.claim_next_run(local_host.id, "celery@elsewhere")
    assert drive_host(local_host.id, "celery@here") is False
    running.refresh_from_db()
    waiting.refresh_from_db()
    assert running.status == RunStatus.RUNNING and running.attempt_rows.count() == 1
    assert waiting.status == RunStatus.QUEUED
    assert queued_messages(broker) == 1  # its wake for later


def test_a_driver_taken_for_lost_brings_back_nothing_and_its_runner_is_stopped(local_host):
    """A driver that could not reach the database for longer than RUN_LOST_AFTER_S (PostgreSQL
    restarting) finds, when it is back, its run retried under a new attempt: its bundle, failure,
    retry and progress change nothing, and its watcher stops its runner. The result is stored
    once, by the current attempt."""
    run = RunFactory(host=local_host)
    _, stale = services.claim_next_run(local_host.id, "celery@cut-off")
    went_silent(run)
    assert services.release_lost_runs(local_host.id) == [run.id]
    Run.objects.filter(id=run.id).update(not_before=None)
    _, current = services.claim_next_run(local_host.id, "celery@here")
    services.record_progress(run.id, "running oltp_insert", 40.0, current.id)

    services.ingest_bundle(run.id, fixture_bundle(), stale.id)
    services.mark_run_failed(run.id, "stale failure", stale.id)
    assert services.retry_run(run.id, "stale retry", stale.id) is None
    services.record_progress(run.id, "stale progress", 90.0, stale.id)
    run.refresh_from_db()
    assert (run.status, run.progress) == (RunStatus.RUNNING, "running oltp_insert")
    assert run.progress_percent == 40.0
    assert run.files.count() == 0 and run.redo_bytes is None
    assert services.should_stop(run.id, stale.id) and not services.should_stop(run.id, current.id)

    cancelled, finished = threading.Event(), threading.Event()
    watcher = threading.Thread(target=watch_for_cancel, args=(run.id, stale.id, cancelled, finished))
    watcher.start()
    try:
        assert cancelled.wait(timeout=30), "the stale attempt's runner was not told to stop"
    finally:
        finished.set()
        watcher.join()

    services.ingest_bundle(run.id, fixture_bundle(), current.id)
    services.ingest_bundle(run.id, fixture_bundle(), current.id)  # a reconnecting driver's second try
    run.refresh_from_db()
    outcomes = list(run.attempt_rows.order_by("number").values_list("outcome", flat=True))
    assert run.status == RunStatus.DONE and run.redo_bytes == 102229397 - 44420
    assert outcomes == [AttemptOutcome.LOST, AttemptOutcome.DONE]
    assert run.files.filter(name="error.log").count() == 1
