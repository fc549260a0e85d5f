"""Every state change of hosts, experiments and runs goes through these functions.

Views, the API, management commands and Celery tasks call them and nothing else writes rows.
"""

import json
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta

from celery import current_app
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Count, Q, QuerySet
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerUnreachable

from .analysis import analyse_run
from .definition import HOST_NAME, DefinitionError, ExperimentDefinition, validate_definition
from .metrics import METRIC_NAMES
from .models import (
    AttemptOutcome,
    Experiment,
    ExperimentStatus,
    Host,
    HostStatus,
    Run,
    RunAttempt,
    RunFile,
    RunStatus,
    Transport,
)
from .units import parse_size

logger = logging.getLogger(__name__)

SSH_USER = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")
SSH_HOST = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$|^[0-9a-fA-F:]{2,39}$")
WORK_DIR = re.compile(r"^/[A-Za-z0-9._/-]{1,200}$")

DRIVE_HOST_TASK = "workers.tasks.drive_host_task"
TRUNCATION_MARKER = b"\n[... Recovery Lab kept the head and tail of this file ...]\n"
IDEMPOTENCY_KEY = re.compile(r"^[A-Za-z0-9._:-]{1,100}$")


@dataclass
class Bundle:
    """What a host runner sends back: its result.json and the raw files, by name."""

    result: dict
    files: dict[str, bytes]


# Hosts ---------------------------------------------------------------------------------------


def register_host(
    name: str,
    transport: str,
    ssh_user: str = "",
    ssh_host: str = "",
    ssh_port: int = 22,
    work_dir: str = "/var/tmp/recovery-lab",
) -> Host:
    """Create or update a host. Running it twice with the same values changes nothing; a new
    address forgets the pinned host key (the next probe pins the new machine's)."""
    if not HOST_NAME.match(name or ""):
        raise ValueError(f"host name {name!r}: lowercase letters, digits, '.', '_' and '-', at most 63")
    if transport not in Transport.values:
        raise ValueError(f"transport must be one of {', '.join(Transport.values)}")
    if transport == Transport.SSH:
        if not SSH_USER.match(ssh_user or ""):
            raise ValueError(f"ssh_user {ssh_user!r}: a login name such as root or bench")
        if not SSH_HOST.match(ssh_host or ""):
            raise ValueError(f"ssh_host {ssh_host!r}: a host name or IP address")
        if not 1 <= int(ssh_port) <= 65535:
            raise ValueError(f"ssh_port {ssh_port}: 1..65535")
    if not WORK_DIR.match(work_dir or "") or ".." in work_dir:
        raise ValueError(f"work_dir {work_dir!r}: an absolute path of letters, digits, '.', '_', '-', '/'")
    address = {"ssh_user": ssh_user, "ssh_host": ssh_host, "ssh_port": int(ssh_port)}
    with transaction.atomic():
        host = Host.objects.select_for_update().filter(name=name).first()
        if host is None:
            return Host.objects.create(name=name, transport=transport, work_dir=work_dir, **address)
        before = (host.transport, host.ssh_user, host.ssh_host, host.ssh_port)
        moved = before != (transport, *address.values())
        host.transport, host.work_dir, host.active = transport, work_dir, True
        for field, value in address.items():
            setattr(host, field, value)
        if moved:
            host.host_key = host.host_key_fingerprint = ""
            host.status = HostStatus.UNKNOWN
        host.save()
    return host


def record_probe(host_id: int, facts: dict, host_key: str = "", fingerprint: str = "") -> Host:
    """Store what a probe found; the first key seen is pinned. Running it twice changes nothing
    but last_seen."""
    with transaction.atomic():
        host = Host.objects.select_for_update().get(id=host_id)
        if host_key and not host.host_key:
            host.host_key, host.host_key_fingerprint = host_key, fingerprint
        host.facts, host.last_seen, host.last_error = facts, timezone.now(), ""
        host.status = HostStatus.IDLE
        host.save()
    return host


def record_probe_failure(host_id: int, error: str) -> Host:
    Host.objects.filter(id=host_id).update(status=HostStatus.DOWN, last_error=error[:2000])
    return Host.objects.get(id=host_id)


def forget_host_key(host_id: int) -> None:
    """After a host was reinstalled on purpose: the next probe pins its new key."""
    Host.objects.filter(id=host_id).update(host_key="", host_key_fingerprint="", status=HostStatus.UNKNOWN)


def active_host_names() -> list[str]:
    return list(Host.objects.filter(active=True).values_list("name", flat=True))


# Experiments ---------------------------------------------------------------------------------


def create_experiment(
    raw_definition: object, user=None, idempotency_key: str = ""
) -> tuple[Experiment, bool]:
    """Validate a definition, store the experiment and its runs, wake their hosts once committed.

    Returns (experiment, created). With an idempotency key the client chose, sending the same
    request again returns the experiment the first one made (created False), so a client that
    retries after a lost answer does not start the work twice. Raises DefinitionError (nothing
    stored, nothing queued) when the definition is bad, ValueError for a malformed key.
    """
    if idempotency_key and not IDEMPOTENCY_KEY.match(idempotency_key):
        raise ValueError("Idempotency-Key: 1 to 100 letters, digits, '.', '_', ':' or '-'")
    if idempotency_key:
        earlier = Experiment.objects.filter(created_by=user, idempotency_key=idempotency_key).first()
        if earlier is not None:
            return earlier, False
    definition = validate_definition(raw_definition, active_host_names())
    try:
        with transaction.atomic():
            experiment = Experiment.objects.create(
                name=definition.name,
                definition=definition.as_dict(),
                created_by=user,
                idempotency_key=idempotency_key,
            )
            runs = _create_runs(experiment, definition)
            host_ids = {run.host_id for run in runs}
            transaction.on_commit(lambda: wake_hosts(host_ids))
    except IntegrityError:
        # The same key sent twice at once: the other request made it.
        return Experiment.objects.get(created_by=user, idempotency_key=idempotency_key), False
    return experiment, True


def _create_runs(experiment: Experiment, definition: ExperimentDefinition) -> list[Run]:
    hosts = {h.name: h for h in Host.objects.filter(name__in=definition.hosts)}
    return Run.objects.bulk_create(
        Run(
            experiment=experiment,
            matrix_index=spec.matrix_index,
            host=hosts[spec.host],
            host_label=spec.host,
            engine=spec.engine,
            parameters=spec.parameters,
            server_options=spec.server_options,
            repetition=spec.repetition,
            buffer_pool_bytes=parse_size(spec.parameters["buffer_pool_size"]),
            redo_log_bytes=parse_size(spec.parameters["redo_log_size"]),
            insert_rate=spec.parameters["insert_rate"],
        )
        for spec in definition.expand()
    )


def refresh_experiment_status(experiment_id: int) -> None:
    """Derive the experiment's status from its runs' rows. Idempotent."""
    counts = Run.objects.filter(experiment_id=experiment_id).aggregate(
        total=Count("id"),
        queued=Count("id", filter=Q(status=RunStatus.QUEUED)),
        running=Count("id", filter=Q(status=RunStatus.RUNNING)),
        failed=Count("id", filter=Q(status=RunStatus.FAILED)),
    )
    if counts["running"] or (counts["queued"] and counts["queued"] < counts["total"]):
        status, finished_at = ExperimentStatus.RUNNING, None
    elif counts["queued"]:
        status, finished_at = ExperimentStatus.QUEUED, None
    elif counts["failed"] == counts["total"]:
        status, finished_at = ExperimentStatus.FAILED, timezone.now()
    elif counts["failed"]:
        status, finished_at = ExperimentStatus.PARTIAL, timezone.now()
    else:
        status, finished_at = ExperimentStatus.DONE, timezone.now()
    Experiment.objects.filter(id=experiment_id).exclude(status=status).update(
        status=status, finished_at=finished_at
    )


# Runs ----------------------------------------------------------------------------------------


def record_progress(run_id: int, message: str, percent: float | None = None) -> None:
    """The runner's latest step, and how far through the run it is (0-100) when it says."""
    fields = {"progress": message[:200]}
    if percent is not None:
        fields["progress_percent"] = max(0.0, min(100.0, float(percent)))
    Run.objects.filter(id=run_id, status=RunStatus.RUNNING).update(**fields)


def run_spec(run: Run) -> dict:
    """What the host runner needs to execute a run: plain, validated values only."""
    definition = run.experiment.definition
    return {
        "run_id": run.id,
        "engine": run.engine,
        "parameters": run.parameters,
        "server_options": run.server_options,
        "workload": definition["workload"],
        "crash": definition["crash"],
        "start_timeout_s": settings.RUNNER_START_TIMEOUT_S,
    }


def store_files(run: Run, files: dict[str, bytes], original_sizes: dict[str, int] | None = None) -> None:
    """Replace the run's raw files (re-ingest never appends).

    original_sizes: where a caller already cut a file down (an import's large error log), its
    size before; the file is then marked truncated.
    """
    limit = settings.RAW_FILE_MAX_BYTES
    run.files.all().delete()
    rows = []
    for name, content in sorted(files.items()):
        size = (original_sizes or {}).get(name, len(content))
        kept = content
        if len(content) > limit:
            kept = content[: limit // 2] + TRUNCATION_MARKER + content[-limit // 2 :]
        rows.append(
            RunFile(run=run, name=name[:100], content=kept, size_bytes=size, truncated=size > len(kept))
        )
    RunFile.objects.bulk_create(rows)


def apply_metrics(run: Run, files: dict[str, bytes], result: dict) -> list[str]:
    """Set the run's metrics, phases and suspicion from its files (the row is saved by the
    caller). Recomputed whole every time, so a re-parse after a parser fix clears a suspicion."""
    analysis = analyse_run(result, files, run.engine, run.redo_log_bytes)
    for name in METRIC_NAMES:
        setattr(run, name, analysis.metrics.get(name))
    run.phases = analysis.phases
    run.suspect = bool(analysis.suspect_reasons)
    run.suspect_reason = "; ".join(analysis.suspect_reasons)[:500]
    run.server_version = (analysis.server_version or run.server_version)[:120]
    return analysis.warnings


def ingest_bundle(run_id: int, bundle: Bundle, attempt_id: int | None = None) -> Run:
    """Store a finished run's files and metrics and mark it done (or failed, as the runner said).

    Running it twice with the same bundle leaves the same rows: files are replaced, metrics
    recomputed from them.
    """
    with transaction.atomic():
        run = Run.objects.select_for_update().get(id=run_id)
        store_files(run, bundle.files)
        warnings = apply_metrics(run, bundle.files, bundle.result)
        run.host_facts = bundle.result.get("facts") or {}
        runner_error = bundle.result.get("error")
        if bundle.result.get("status") == "done":
            run.status, run.error = RunStatus.DONE, ""
            if warnings:
                run.error = "Parsed with warnings: " + "; ".join(warnings)[:2000]
        else:
            run.status = RunStatus.FAILED
            run.error = runner_error or "the host runner reported a failure without a reason"
        run.progress = ""
        run.finished_at = timezone.now()
        run.save()
        if attempt_id is not None:
            done = run.status == RunStatus.DONE
            end_attempt(
                attempt_id, AttemptOutcome.DONE if done else AttemptOutcome.FAILED, "" if done else run.error
            )
    refresh_experiment_status(run.experiment_id)
    return run


def reparse_run(run_id: int) -> Run:
    """Recompute a run's metrics from its stored raw files. Running it twice changes nothing."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(id=run_id)
        files = {f.name: bytes(f.content) for f in run.files.all()}
        result = json.loads(files.get("result.json", b"{}") or b"{}")
        if not files:
            return run
        apply_metrics(run, files, result)
        run.save()
    return run


def exclude_run(run_id: int, reason: str, user=None) -> Run:
    """Leave a run out of charts and statistics, with the reason; the run and its files stay.
    Running it twice keeps the latest reason."""
    reason = " ".join((reason or "").split())[:500]
    if not reason:
        raise ValueError("say why the run is left out, so others can judge it")
    Run.objects.filter(id=run_id).update(
        excluded=True, excluded_reason=reason, excluded_by=user, excluded_at=timezone.now()
    )
    return Run.objects.get(id=run_id)


def include_run(run_id: int) -> Run:
    """Undo exclude_run. Idempotent."""
    Run.objects.filter(id=run_id).update(
        excluded=False, excluded_reason="", excluded_by=None, excluded_at=None
    )
    return Run.objects.get(id=run_id)


def mark_run_failed(run_id: int, error: str, attempt_id: int | None = None) -> None:
    """Record a failure in words a user can act on (and end its attempt). Idempotent; a
    finished run stays as it is."""
    with transaction.atomic():
        Run.objects.filter(id=run_id).exclude(status=RunStatus.DONE).update(
            status=RunStatus.FAILED, error=error[:5000], progress="", finished_at=timezone.now()
        )
        if attempt_id is not None:
            end_attempt(attempt_id, AttemptOutcome.FAILED, error)
    experiment_id = Run.objects.filter(id=run_id).values_list("experiment_id", flat=True).first()
    if experiment_id:
        refresh_experiment_status(experiment_id)


# Dispatch: one driver per host claims its runs in turn ---------------------------------------


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


def _claimable(host_id: int, now) -> QuerySet:
    return Run.objects.filter(host_id=host_id, status=RunStatus.QUEUED, imported=False).filter(
        Q(not_before__isnull=True) | Q(not_before__lte=now)
    )


def has_claimable_run(host_id: int) -> bool:
    return _claimable(host_id, timezone.now()).exists()


def hosts_to_wake(busy_host_ids: set[int], resend_after: timedelta) -> list[int]:
    """Hosts with work and no driver: a run ready to be claimed, or one left running by a lost
    worker. A host whose wake message was sent recently is left alone (its message may be
    waiting behind busy workers): beat does not resend it on every pass."""
    now = timezone.now()
    ready = Q(runs__status=RunStatus.QUEUED, runs__imported=False) & (
        Q(runs__not_before__isnull=True) | Q(runs__not_before__lte=now)
    )
    lost = Q(runs__status=RunStatus.RUNNING, runs__imported=False)
    candidates = (
        Host.objects.filter(active=True)
        .filter(ready | lost)
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
            .select_for_update(skip_locked=True)
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


def end_attempt(attempt_id: int, outcome: str, error: str = "", transient: bool = False) -> None:
    RunAttempt.objects.filter(id=attempt_id, ended_at__isnull=True).update(
        outcome=outcome, error=error[:5000], transient=transient, ended_at=timezone.now()
    )


def retry_run(run_id: int, error: str, attempt_id: int | None = None, lost: bool = False) -> float | None:
    """A passing failure (a refused or dropped connection, the host busy elsewhere, a lost
    worker): the run goes back to the queue and is claimed again after a pause that doubles with
    each try (RUN_RETRY_BACKOFF_S), or fails with the reason once it has had RUN_MAX_ATTEMPTS
    tries. Returns the pause in seconds, or None when the run failed (or was not running)."""
    with transaction.atomic():
        run = Run.objects.select_for_update().filter(id=run_id, status=RunStatus.RUNNING).first()
        if run is None:
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


def release_lost_runs(host_id: int) -> list[int]:
    """Runs left running on a host that no driver holds: their worker stopped mid-run. Called by
    the host's next driver (which holds the host, so nothing else can be running there); each is
    retried or, past the limit, failed. Returns their ids."""
    lost = list(
        Run.objects.filter(host_id=host_id, status=RunStatus.RUNNING, imported=False).values_list(
            "id", flat=True
        )
    )
    reason = "its worker stopped during the run"
    for run_id in lost:
        open_attempts = RunAttempt.objects.filter(run_id=run_id, ended_at__isnull=True)
        attempt_id = open_attempts.order_by("-number").values_list("id", flat=True).first()
        retry_run(run_id, reason, attempt_id, lost=True)
    return lost


def record_host_reachable(host_id: int) -> None:
    Host.objects.filter(id=host_id).update(last_seen=timezone.now(), status=HostStatus.IDLE, last_error="")


__all__ = [
    "Bundle",
    "DefinitionError",
    "claim_next_run",
    "create_experiment",
    "driver_started",
    "end_attempt",
    "exclude_run",
    "forget_host_key",
    "has_claimable_run",
    "hosts_to_wake",
    "include_run",
    "ingest_bundle",
    "mark_run_failed",
    "record_host_reachable",
    "record_probe",
    "record_probe_failure",
    "record_progress",
    "refresh_experiment_status",
    "register_host",
    "release_lost_runs",
    "reparse_run",
    "retry_run",
    "run_spec",
    "wake_hosts",
]
