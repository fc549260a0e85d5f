"""Celery entry points: thin wrappers taking ids, calling experiments.services."""

import logging
from datetime import timedelta

from celery import shared_task

from experiments import services
from experiments.models import Host, Run, RunStatus

from .locks import host_is_busy, host_lock
from .probing import probe_host
from .transports import TransportError, transport_for

logger = logging.getLogger(__name__)


@shared_task(bind=True, max_retries=None)
def execute_run_task(self, run_id: int) -> None:
    """Execute one queued run on its host, then ingest its bundle.

    Runs twice: a second call finds the run no longer queued (claim_run's conditional UPDATE) and
    does nothing. While another run holds the host, it retries later without claiming.
    """
    run = Run.objects.filter(id=run_id).only("status", "host_id").first()
    if run is None or run.status != RunStatus.QUEUED or run.host_id is None:
        return
    with host_lock(run.host_id) as acquired:
        if not acquired:
            raise self.retry(countdown=min(2 * (self.request.retries + 1), 10))
        run = services.claim_run(run_id)
        if run is None:
            return
        try:
            transport = transport_for(run.host)
            bundle = transport.execute(
                services.run_spec(run),
                lambda message, percent: services.record_progress(run_id, message, percent),
            )
            services.ingest_bundle(run_id, bundle)
        except TransportError as exc:
            services.mark_run_failed(run_id, str(exc))
        except Exception as exc:
            logger.exception("run %s failed inside the worker", run_id)
            services.mark_run_failed(
                run_id,
                f"internal error in the worker ({exc.__class__.__name__}: {exc}); "
                "the traceback is in the worker's log",
            )


@shared_task
def requeue_lost_runs_task() -> None:
    """Find runs whose worker or queued message was lost, and send them again.

    A running run whose host is not locked has lost its worker: it goes back to the queue (or
    fails after three attempts). A queued run whose host is idle has lost its message (Redis keeps
    nothing across a restart here). Runs twice: the second pass finds nothing new to do, and a
    duplicate message is harmless because claim_run lets only one through.
    """
    for run in Run.objects.filter(status=RunStatus.RUNNING, imported=False).only("host_id"):
        if not host_is_busy(run.host_id):
            services.release_run(run.id, "its worker stopped during the run")
    for run_id in services.queued_runs_to_resend(older_than=timedelta(minutes=2)):
        run = Run.objects.only("host_id").get(id=run_id)
        if not host_is_busy(run.host_id):
            services.enqueue_run(run_id)


@shared_task
def probe_host_task(host_id: int) -> None:
    """Probe one host (facts, status). Runs twice: the same facts, a later last_seen."""
    probe_host(host_id)


@shared_task
def probe_hosts_task() -> None:
    """Beat: probe every active host that is not running a run, so the hosts page says which are
    down before a run finds out."""
    for host in Host.objects.filter(active=True).only("id"):
        if not host_is_busy(host.id):
            probe_host_task.delay(host.id)
