"""One driver per host: a task that holds the host's lock, carries out the host's next ready run,
and hands the host on to a fresh task for the run after it. Nothing spins on a busy lock: a
second driver for the same host finds the lock taken and returns at once, and the next run starts
as soon as the previous one is ingested. One run per task keeps a warm shutdown of a worker to
the run in hand, and no task outlives the broker's visibility timeout however long the queue.

Every try is a RunAttempt row. A failure that may pass (a refused or dropped connection, the host
busy elsewhere) puts the run back with a growing pause and leaves the host alone until then; a
permanent one (bad spec, missing binary, a server that never came back) fails the run at once.
"""

import logging
import threading
import time

from django.conf import settings
from django.db import InterfaceError, OperationalError, connection, connections

from experiments import services
from experiments.models import AttemptOutcome, Run, RunAttempt
from runner.contract import RunFailed
from workers.hosts import transport_for
from workers.locks import host_lock
from workers.transports import RunCancelled, TransportError

logger = logging.getLogger(__name__)
CANCEL_POLL_S = 1.0


def with_db(call, *args, **kwargs):
    """A database call from a driver that may outlive its connection (PostgreSQL restarted, or
    the connection cut): on a dropped connection it reconnects and tries again, for up to
    DB_RECONNECT_S. Every call passed here is safe to make twice."""
    deadline = time.monotonic() + settings.DB_RECONNECT_S
    while True:
        try:
            return call(*args, **kwargs)
        except (OperationalError, InterfaceError) as exc:
            connection.close()  # this thread's: the next query opens a new one
            if time.monotonic() > deadline:
                raise
            logger.warning("database unreachable (%s); trying again", str(exc).strip().splitlines()[0])
            time.sleep(1.0)  # a pause between reconnection attempts


def drive_host(host_id: int, worker: str) -> bool:
    """Carry out the host's next ready run, if the host is free; True if a run was started."""
    pause = None
    with host_lock(host_id) as acquired:
        if not acquired:
            return False  # another driver has the host
        services.driver_started(host_id)
        services.release_lost_runs(host_id)  # left running by a worker that died
        if services.has_live_run(host_id):
            # The host's run goes on under a driver that lost the lock with its connection: wait
            # for it, never start a second run beside it.
            claimed, pause = None, float(settings.RUN_LOST_AFTER_S)
        else:
            claimed = services.claim_next_run(host_id, worker)
        if claimed is not None:
            pause = carry_out(*claimed)
    # The lock is free before the next driver is sent, so it never finds the host held by this one.
    if pause is not None:
        services.wake_hosts([host_id], countdown=pause)  # the host may be down: look again later
    elif services.has_claimable_run(host_id):
        services.wake_hosts([host_id])
    return claimed is not None


def carry_out(run: Run, attempt: RunAttempt) -> float | None:
    """One attempt at a run, ended with its outcome. Returns the pause before the run's next
    try when the failure may pass, else None (done, or failed for good)."""
    cancelled, finished = threading.Event(), threading.Event()
    threading.Thread(
        target=watch_for_cancel, args=(run.id, attempt.id, cancelled, finished), daemon=True
    ).start()
    try:
        bundle = transport_for(run.host).execute(
            services.run_spec(run),
            lambda message, percent: with_db(services.record_progress, run.id, message, percent, attempt.id),
            cancelled,
            lambda sample: with_db(services.record_sample, run.id, sample, attempt.id),
        )
        with_db(services.record_host_reachable, run.host_id)
        if bundle.result.get("status") != "done" and bundle.result.get("permanent") is False:
            raise TransportError(bundle.result.get("error") or "the host runner failed for a passing reason")
        with_db(services.ingest_bundle, run.id, bundle, attempt.id)  # the same rows if made twice
    except RunCancelled as exc:
        with_db(services.end_attempt, attempt.id, AttemptOutcome.CANCELLED, str(exc))
        return None
    except RunFailed as exc:  # the spec did not pass the runner's own checks here
        with_db(services.mark_run_failed, run.id, f"bad run spec: {exc}", attempt.id)
        return None
    except TransportError as exc:
        if exc.unsafe:
            with_db(services.record_host_unsafe, run.host_id, str(exc))
        if exc.permanent:
            with_db(services.mark_run_failed, run.id, str(exc), attempt.id)
            return None
        logger.warning("run %s, attempt %s: %s", run.id, attempt.number, exc)
        if exc.host_down:
            with_db(services.record_host_down, run.host_id, str(exc))
        return with_db(services.retry_run, run.id, str(exc), attempt.id)
    except Exception as exc:
        logger.exception("run %s failed inside the worker", run.id)
        with_db(
            services.mark_run_failed,
            run.id,
            f"internal error in the worker ({exc.__class__.__name__}: {exc}); "
            "the traceback is in the worker's log",
            attempt.id,
        )
    finally:
        finished.set()
    return None


def watch_for_cancel(
    run_id: int, attempt_id: int, cancelled: threading.Event, finished: threading.Event
) -> None:
    """Look at the run's row every second while it runs, and stop the runner (which kills every
    process it started) when the run was cancelled or this attempt superseded: taken for lost
    while this driver could not reach the database, its run is another attempt's now. Beat for
    the attempt four times per RUN_LOST_AFTER_S, so the run is not taken for lost."""
    beat_every = settings.RUN_LOST_AFTER_S / 4
    last_beat = 0.0
    try:
        while not finished.wait(CANCEL_POLL_S):
            if time.monotonic() - last_beat >= beat_every:
                with_db(services.beat, attempt_id)
                last_beat = time.monotonic()
            if with_db(services.should_stop, run_id, attempt_id):
                cancelled.set()
                return
    finally:
        connections.close_all()  # this thread's own connection
