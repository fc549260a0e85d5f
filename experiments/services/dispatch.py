"""Dispatch: waking a host's driver, claiming its next run, attempts, retries with a growing
pause, runs a lost worker left behind. workers/driver.py is the driver that calls these."""

import logging
from collections.abc import Iterable
from datetime import timedelta

from celery import current_app
from django.conf import settings
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerUnreachable

from experiments.models import (
    AttemptOutcome,
    Host,
    HostStatus,
    Run,
    RunAttempt,
    RunStatus,
    Transport,
    without_nul,
)
from experiments.services.runs import end_attempt, refresh_experiment_status, superseded

logger = logging.getLogger(__name__)

DRIVE_HOST_TASK = "workers.tasks.drive_host_task"


def wake_hosts(host_ids: Iterable[int], countdown: float = 0) -> list[int]:
    """Send each host's driver task: one message per host, however many runs it has queued.

    If the broker cannot be reached, the runs stay queued in PostgreSQL and beat wakes their
    hosts once it is back: what the caller saved is not undone. Returns the hosts woken.
    """
    woken = []
    for host_id in sorted(set(host_ids)):
        try:
            # No publish retries: a dead broker fails at once, and beat is the retry.
            current_app.send_task(DRIVE_HOST_TASK, args=[host_id], countdown=countdown or None, retry=False)
        except (BrokerUnreachable, OSError) as exc:
            logger.warning("broker unreachable, host %s will be woken by beat: %s", host_id, exc)
            continue
        woken.append(host_id)
    if woken:
        Host.objects.filter(id__in=woken).update(wake_sent_at=timezone.now())
    return woken


def _ready(now, prefix: str = "") -> Q:
    """A queued run out of its retry pause, and where it restarts another run's crash image
    (crash.one_crash), that run kept it (done, or stalled after keeping it); `prefix` ("runs__")
    asks it of a host's runs."""
    return (
        Q(**{f"{prefix}status": RunStatus.QUEUED, f"{prefix}imported": False})
        & (Q(**{f"{prefix}not_before__isnull": True}) | Q(**{f"{prefix}not_before__lte": now}))
        & (Q(**{f"{prefix}image_of__isnull": True}) | Q(**{f"{prefix}image_of__status__in": IMAGE_KEPT}))
    )


# the statuses of a run whose crash image its restarts can use: it was kept before its own restart
IMAGE_KEPT = (RunStatus.DONE, RunStatus.STALLED)


def _unconfirmed(prefix: str = "") -> Q:
    """An SSH host whose key no admin confirmed, or whose work directory the runner refused
    (`unsafe`): nothing is sent to it, its runs wait queued until an admin fixes it and a probe
    finds it so."""
    return Q(**{f"{prefix}transport": Transport.SSH, f"{prefix}host_key": ""}) | Q(
        **{f"{prefix}status": HostStatus.UNSAFE}
    )


def _claimable(host_id: int, now) -> QuerySet:
    return Run.objects.filter(_ready(now), host_id=host_id).exclude(_unconfirmed("host__"))


def has_claimable_run(host_id: int) -> bool:
    return _claimable(host_id, timezone.now()).exists()


def hosts_to_wake(busy_host_ids: set[int], resend_after: timedelta) -> list[int]:
    """Hosts with work and no driver: a run ready to be claimed, or one left running by a lost
    worker. A host whose wake message was sent recently is left alone (its message may be
    waiting behind busy workers): beat does not resend it on every pass."""
    now = timezone.now()
    lost = Q(runs__status=RunStatus.RUNNING, runs__imported=False)
    candidates = (
        Host.objects.filter(active=True)
        .exclude(_unconfirmed())
        .filter(_ready(now, "runs__") | lost)
        .filter(Q(wake_sent_at__isnull=True) | Q(wake_sent_at__lt=now - resend_after))
        .exclude(id__in=busy_host_ids)
        .values_list("id", flat=True)
        .distinct()
    )
    return sorted(candidates)


def driver_started(host_id: int) -> None:
    """A driver holds the host now: the wake that brought it here is spent."""
    Host.objects.filter(id=host_id).update(wake_sent_at=None)


def claim_next_run(host_id: int, worker: str) -> tuple[Run, RunAttempt] | None:
    """Move the host's oldest ready run from queued to running and open its attempt; None when
    nothing is ready. SKIP LOCKED: two claimers never wait on, or both get, the same row."""
    now = timezone.now()
    with transaction.atomic():
        run = (
            _claimable(host_id, now)
            # the run's row only: the host's row, joined for its key, locked too would make every
            # other claimer skip every run of the host while this one commits (a full suite saw
            # 8 claimers take 1 of 6 runs)
            .select_for_update(skip_locked=True, of=("self",))
            .order_by("queued_at", "id")
            .only("id", "attempts", "experiment_id")
            .first()
        )
        if run is None:
            return None
        number = run.attempts + 1
        Run.objects.filter(id=run.id).update(
            status=RunStatus.RUNNING,
            started_at=now,
            finished_at=None,
            not_before=None,
            error="",
            progress="starting",
            progress_percent=0,
            attempts=number,
        )
        attempt = RunAttempt.objects.create(
            run_id=run.id, number=number, host_id=host_id, worker=worker[:200], started_at=now
        )
    refresh_experiment_status(run.experiment_id)
    return Run.objects.select_related("host", "experiment").get(id=run.id), attempt


def retry_run(run_id: int, error: str, attempt_id: int | None = None, lost: bool = False) -> float | None:
    """A passing failure (a refused or dropped connection, the host busy elsewhere, a lost
    worker): the run goes back to the queue and is claimed again after a pause that doubles with
    each try (RUN_RETRY_BACKOFF_S), or fails with the reason once it has had RUN_MAX_ATTEMPTS
    tries. Returns the pause in seconds, or None when the run failed (or was not running)."""
    error = without_nul(error)
    with transaction.atomic():
        run = Run.objects.select_for_update().filter(id=run_id, status=RunStatus.RUNNING).first()
        if run is None or superseded(attempt_id):
            return None
        outcome = AttemptOutcome.LOST if lost else AttemptOutcome.RETRY
        if run.attempts >= settings.RUN_MAX_ATTEMPTS:
            if attempt_id is not None:
                end_attempt(attempt_id, AttemptOutcome.LOST if lost else AttemptOutcome.FAILED, error, True)
            give_up = f"{error} (gave up after {run.attempts} attempts)"
            Run.objects.filter(id=run_id).update(
                status=RunStatus.FAILED, error=give_up[:5000], progress="", finished_at=timezone.now()
            )
            pause = None
        else:
            pause = settings.RUN_RETRY_BACKOFF_S * 2 ** (run.attempts - 1)
            if attempt_id is not None:
                end_attempt(attempt_id, outcome, error, transient=True)
            Run.objects.filter(id=run_id).update(
                status=RunStatus.QUEUED,
                not_before=timezone.now() + timedelta(seconds=pause),
                progress=f"attempt {run.attempts} failed, trying again in {pause:g} s: {error}"[:200],
                progress_percent=None,
            )
    refresh_experiment_status(run.experiment_id)
    return pause


def beat(attempt_id: int) -> None:
    """The attempt's driver is alive (called every few seconds while it runs)."""
    RunAttempt.objects.filter(id=attempt_id, ended_at__isnull=True).update(heartbeat_at=timezone.now())


def _alive_since(now) -> Q:
    """An open attempt whose driver gave a sign of life (or started) within RUN_LOST_AFTER_S."""
    since = now - timedelta(seconds=settings.RUN_LOST_AFTER_S)
    return Q(heartbeat_at__gte=since) | Q(heartbeat_at__isnull=True, started_at__gte=since)


def has_live_run(host_id: int) -> bool:
    """A run of this host is still under way with a live driver, whatever the host's lock says
    (the lock goes with a dropped database connection; the run does not)."""
    return RunAttempt.objects.filter(
        _alive_since(timezone.now()),
        ended_at__isnull=True,
        run__host_id=host_id,
        run__status=RunStatus.RUNNING,
    ).exists()


def release_lost_runs(host_id: int) -> list[int]:
    """Runs left running on a host that no driver holds and whose driver gave no sign of life for
    RUN_LOST_AFTER_S: their worker stopped mid-run. Called by the host's next driver; each is
    retried or, past the limit, failed. Returns their ids."""
    alive = RunAttempt.objects.filter(_alive_since(timezone.now()), ended_at__isnull=True)
    lost = list(
        Run.objects.filter(host_id=host_id, status=RunStatus.RUNNING, imported=False)
        .exclude(id__in=alive.values("run_id"))
        .values_list("id", flat=True)
    )
    reason = "its worker stopped during the run"
    for run_id in lost:
        open_attempts = RunAttempt.objects.filter(run_id=run_id, ended_at__isnull=True)
        attempt_id = open_attempts.order_by("-number").values_list("id", flat=True).first()
        retry_run(run_id, reason, attempt_id, lost=True)
    return lost
