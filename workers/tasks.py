"""Celery entry points: thin wrappers taking ids, calling experiments.services and the driver."""

import logging
from datetime import timedelta

from celery import shared_task
from django.conf import settings

from experiments import services
from experiments.models import Host
from experiments.services import series as services_series
from workers.driver import drive_host
from workers.locks import busy_host_ids
from workers.probing import carry_out_requested_probe, probe_host

logger = logging.getLogger(__name__)
# A probe asked for and not taken by a worker within this long is sent again (its message lost).
PROBE_RESEND_S = 20


@shared_task(bind=True)
def drive_host_task(self, host_id: int) -> bool:
    """Carry out the host's next queued run and send itself for the one after
    (workers/driver.py). Sent when runs are queued, and by beat for hosts with work and no
    driver. Runs twice: the second finds the host's lock taken, or nothing left to do."""
    return drive_host(host_id, worker=self.request.hostname or "")


@shared_task
def wake_hosts_task() -> list[int]:
    """Beat: wake hosts that have ready runs (or runs a lost worker left running) and no driver,
    for example after the broker was down when an experiment was saved. Returns the hosts woken."""
    due = services.hosts_to_wake(busy_host_ids(), timedelta(seconds=settings.WAKE_RESEND_S))
    # probes an admin asked for whose message was lost go again, as runs' wakes do
    services.resend_requested_probes(timedelta(seconds=PROBE_RESEND_S))
    return services.wake_hosts(due)


@shared_task
def probe_host_task(host_id: int) -> None:
    """Probe one host (facts, status). Runs twice: the same facts, a later last_seen."""
    probe_host(host_id)


@shared_task
def requested_probe_task(host_id: int) -> bool:
    """A probe an admin asked for (the hosts page, the API): off the web request, one at a time per
    host. Runs twice: the second finds nothing queued."""
    return carry_out_requested_probe(host_id)


@shared_task
def probe_hosts_task() -> None:
    """Beat: probe every active host that is not running a run, so the hosts page says which are
    down before a run finds out."""
    busy = busy_host_ids()
    for host_id in Host.objects.filter(active=True).exclude(id__in=busy).values_list("id", flat=True):
        probe_host_task.delay(host_id)


@shared_task
def fire_series_task() -> list[int]:
    """Beat: a firing for each recurring series whose next moment has passed. Returns the
    experiments created."""
    return services_series.fire_due_series()


@shared_task
def analyse_series_task(series_id: int) -> list[int]:
    """Search a series' history for change points (sent when a firing ends). Runs twice: the same
    change points, no second alert. Returns the new change points."""
    return [point.pk for point in services_series.refresh_change_points(series_id)]


@shared_task(
    bind=True,
    max_retries=services_series.MAX_ATTEMPTS,
    # the sender's own deadline comes first; these bound the task whatever happens inside
    soft_time_limit=settings.WEBHOOK_TIMEOUT_S + settings.EMAIL_TIMEOUT + 5,
    time_limit=settings.WEBHOOK_TIMEOUT_S + settings.EMAIL_TIMEOUT + 15,
)
def send_notification_task(self, notification_id: int) -> str:
    """Send one alert, once (on the alerts' queue); tried again with a growing pause while the
    mail server or the webhook refuses it."""
    status = services_series.send_notification(notification_id)
    if status == "pending":
        raise self.retry(countdown=60 * 2**self.request.retries)
    return status


@shared_task
def send_pending_notifications_task() -> None:
    """Beat: alerts still pending (their task was lost with the broker)."""
    for notification_id in services_series.pending_notifications():
        send_notification_task.delay(notification_id)
