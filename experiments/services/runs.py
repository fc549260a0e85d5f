"""Runs: progress, ingest of a bundle (files, metrics, outcome), re-parse, exclusion, failure;
and the experiment's status, derived from its runs."""

import json
import logging
from dataclasses import dataclass

from celery import current_app
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import DataError, transaction
from django.db.models import (
    Case,
    Count,
    ExpressionWrapper,
    F,
    Func,
    IntegerField,
    JSONField,
    Q,
    Value,
    When,
)
from django.db.models.lookups import GreaterThanOrEqual
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerUnreachable

from experiments import storage
from experiments.analysis.noise import disturbance
from experiments.definition import CRASH_SWEEPS
from experiments.ingest.bundle import analyse_run
from experiments.metrics import METRIC_NAMES
from experiments.models import (
    AttemptOutcome,
    Experiment,
    ExperimentStatus,
    Run,
    RunAttempt,
    RunFile,
    RunStatus,
    without_nul,
)
from experiments.services.audit import audit, audited_by
from experiments.services.images import crash_image, fail_orphaned_restarts
from runner.contract import RunSpec

TRUNCATION_MARKER = b"\n[... Recovery Lab kept the head and tail of this file ...]\n"


@dataclass
class Bundle:
    """What a host runner sends back: its result.json and the raw files, by name."""

    result: dict
    files: dict[str, bytes]


logger = logging.getLogger(__name__)
ANALYSE_SERIES_TASK = "workers.tasks.analyse_series_task"


def refresh_experiment_status(experiment_id: int) -> None:
    """Derive the experiment's status from its runs' rows. Idempotent. Imported runs (records of
    crashes elsewhere, not runs of this experiment) never change it: imports alone are done.
    Restarts waiting for a crash image never kept fail first (services/images.py)."""
    fail_orphaned_restarts(experiment_id)
    counts = Run.objects.filter(experiment_id=experiment_id, imported=False).aggregate(
        total=Count("id"),
        queued=Count("id", filter=Q(status=RunStatus.QUEUED)),
        running=Count("id", filter=Q(status=RunStatus.RUNNING)),
        failed=Count("id", filter=Q(status=RunStatus.FAILED)),
        cancelled=Count("id", filter=Q(status=RunStatus.CANCELLED)),
    )
    if not counts["total"]:  # imports only
        status, finished_at = ExperimentStatus.DONE, timezone.now()
    elif counts["running"] or (counts["queued"] and counts["queued"] < counts["total"]):
        status, finished_at = ExperimentStatus.RUNNING, None
    elif counts["queued"]:
        status, finished_at = ExperimentStatus.QUEUED, None
    elif counts["cancelled"]:
        status, finished_at = ExperimentStatus.CANCELLED, timezone.now()
    elif counts["failed"] == counts["total"]:
        status, finished_at = ExperimentStatus.FAILED, timezone.now()
    elif counts["failed"]:
        status, finished_at = ExperimentStatus.PARTIAL, timezone.now()
    else:
        status, finished_at = ExperimentStatus.DONE, timezone.now()
    changed = (
        Experiment.objects.filter(id=experiment_id)
        .exclude(status=status)
        .update(status=status, finished_at=finished_at)
    )
    if changed and finished_at is not None:
        series_id = Experiment.objects.filter(id=experiment_id).values_list("series_id", flat=True).first()
        if series_id is not None:  # a firing of a recurring series ended: search its history again
            transaction.on_commit(lambda: analyse_soon(series_id))


def analyse_soon(series_id: int) -> None:
    """Ask a worker to search a recurring series for change points (services/series.py)."""
    try:
        current_app.send_task(ANALYSE_SERIES_TASK, args=[series_id], retry=False)
    except (BrokerUnreachable, OSError) as exc:
        logger.warning("broker unreachable, series %s is analysed after its next firing: %s", series_id, exc)


def superseded(attempt_id: int | None) -> bool:
    """The attempt was ended by someone else than its driver: taken for lost while its driver
    could not reach the database, and its run retried (or failed) since. Whatever that driver
    brings back is stale and is dropped, so a run's result is stored once, by its current attempt.
    Inside a transaction the attempt's row stays locked until it ends."""
    if attempt_id is None:
        return False
    return not RunAttempt.objects.select_for_update().filter(id=attempt_id, ended_at__isnull=True).exists()


def should_stop(run_id: int, attempt_id: int) -> bool:
    """The attempt's runner must stop: its run was cancelled, or the attempt superseded."""
    return (
        Run.objects.filter(id=run_id, status=RunStatus.CANCELLED).exists()
        or not RunAttempt.objects.filter(id=attempt_id, ended_at__isnull=True).exists()
    )


def record_progress(
    run_id: int, message: str, percent: float | None = None, attempt_id: int | None = None
) -> None:
    """The runner's latest step, and how far through the run it is (0-100) when it says. A
    superseded attempt's runner says nothing about the run any more."""
    fields = {"progress": without_nul(message)[:200]}
    if percent is not None:
        fields["progress_percent"] = max(0.0, min(100.0, float(percent)))
    runs = Run.objects.filter(id=run_id, status=RunStatus.RUNNING)
    if attempt_id is not None:
        runs = runs.filter(attempt_rows__id=attempt_id, attempt_rows__ended_at__isnull=True)
    runs.update(**fields)


# The run page's live chart keeps the last this many seconds; the whole set comes with the bundle.
LIVE_SAMPLES_KEPT = 300


def record_sample(run_id: int, sample: dict, attempt_id: int | None = None) -> None:
    """A second's sample while the run goes, for its page: appended (the oldest dropped past
    LIVE_SAMPLES_KEPT) in one UPDATE, only while the run runs under this attempt (a superseded
    driver's samples are dropped, as its progress is). Running it twice keeps the sample twice,
    which the live chart shows as one point: harmless."""
    runs = Run.objects.filter(id=run_id, status=RunStatus.RUNNING)
    if attempt_id is not None:
        runs = runs.filter(attempt_rows__id=attempt_id, attempt_rows__ended_at__isnull=True)
    samples = F("live_samples")
    count = Func(samples, function="jsonb_array_length", output_field=IntegerField())
    # jsonb - 0 drops the first element; a || b appends
    kept = Case(
        When(GreaterThanOrEqual(count, LIVE_SAMPLES_KEPT), then=ExpressionWrapper(samples - 0, JSONField())),
        default=samples,
        output_field=JSONField(),
    )
    sample_array = Func(Value(without_nul(sample), JSONField()), function="jsonb_build_array")
    appended = Func(kept, sample_array, function="", arg_joiner=" || ", output_field=JSONField())
    Run.objects.filter(id__in=runs.values("id")).update(live_samples=appended)


def run_spec(run: Run) -> RunSpec:
    """What the host runner needs to execute a run, in the runner's own typed contract, checked by it
    here already (RunFailed, permanent, names a bad value); the transport sets the work directory."""
    definition = run.experiment.definition
    # a swept crash value is one of the run's parameters (its cell); the runner takes it in its crash plan
    crash = dict(definition["crash"])
    for key, name in CRASH_SWEEPS.items():
        if name in run.parameters:
            crash[key] = run.parameters[name]
    parameters = {name: value for name, value in run.parameters.items() if name not in CRASH_SWEEPS.values()}
    spec = RunSpec(
        run_id=run.id,
        engine=run.engine,
        parameters=parameters,
        server_options=run.server_options,
        workload=definition["workload"],
        crash=crash,
        start_timeout_s=settings.RUNNER_START_TIMEOUT_S,
        stall_after_s=settings.RUNNER_STALL_AFTER_S,
        reuse_dataset=settings.RUNNER_REUSE_DATASETS,
        storage=storage.limits_of(run.parameters),
        image=crash_image(run),
    )
    spec.check()
    return spec


def store_files(run: Run, files: dict[str, bytes], original_sizes: dict[str, int] | None = None) -> None:
    """Replace the run's raw files (re-ingest never appends). original_sizes: where a caller
    already cut a file down (an import's large error log), its size before; marked truncated."""
    limit = settings.RAW_FILE_MAX_BYTES
    run.files.all().delete()
    rows = []
    for name, content in sorted(files.items()):
        name = without_nul(name)
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
    run.phase_resolution = analysis.phase_resolution
    run.samples = analysis.samples
    run.timeline = analysis.timeline
    run.resources = analysis.resources
    run.recovery_bound = (analysis.resources.get("verdict") or {}).get("bound", "")
    run.suspect = bool(analysis.suspect_reasons)
    run.suspect_reason = "; ".join(analysis.suspect_reasons)[:500]
    run.server_version = (analysis.server_version or run.server_version)[:120]
    run.server_family = str(result.get("server_family") or run.server_family)[:40]
    run.noise = result.get("noise") if isinstance(result.get("noise"), dict) else {}
    reasons = disturbance(run.noise, host_calibrations(run))
    run.disturbed, run.disturbed_reason = bool(reasons), "; ".join(reasons)[:500]
    return analysis.warnings


HISTORY_RUNS = 30


def host_calibrations(run: Run) -> list[dict]:
    """The calibrations of the host's last undisturbed runs before this one: what its loops take
    when it is quiet."""
    earlier = (
        Run.objects.filter(host_label=run.host_label, disturbed=False, noise__has_key="calibration")
        .exclude(pk=run.pk)
        .order_by("-finished_at")
        .values_list("noise__calibration", flat=True)[:HISTORY_RUNS]
    )
    return [calibration for calibration in earlier if isinstance(calibration, dict)]


def ingest_bundle(run_id: int, bundle: Bundle, attempt_id: int | None = None) -> Run:
    """Store a finished run's files and metrics and mark it done (or failed, as the runner said).

    Running it twice with the same bundle leaves the same rows: with its attempt, the second call
    finds the attempt ended and changes nothing; without, files are replaced and metrics
    recomputed from them. A superseded attempt's bundle is dropped (see superseded()).
    """
    with transaction.atomic():
        run = Run.objects.select_for_update().get(id=run_id)
        if superseded(attempt_id):
            return run
        if run.status == RunStatus.CANCELLED:  # cancelled while its bundle was on the way
            if attempt_id is not None:
                end_attempt(attempt_id, AttemptOutcome.CANCELLED, run.error)
            return run
        try:
            with transaction.atomic():  # a savepoint: a bundle that cannot be read leaves nothing half-stored
                read_bundle(run, bundle)
                run.save()
        except BUNDLE_UNREADABLE as exc:
            run.refresh_from_db()
            kept = {name: content for name, content in bundle.files.items() if isinstance(content, bytes)}
            store_files(run, kept)  # for whoever looks into it
            run.status = RunStatus.FAILED
            said = f"the host's bundle could not be read: {exc.__class__.__name__}: {exc}"
            run.error = without_nul(said)[:2000]
            run.progress, run.live_samples, run.finished_at = "", [], timezone.now()
            run.save()
        if attempt_id is not None:
            done = run.status == RunStatus.DONE
            end_attempt(
                attempt_id, AttemptOutcome.DONE if done else AttemptOutcome.FAILED, "" if done else run.error
            )
    refresh_experiment_status(run.experiment_id)
    return run


# What a bundle of bad values (a crafted or broken result.json, ...) raises: the run fails, files kept.
_BAD_VALUES = (ValueError, TypeError, KeyError, AttributeError, IndexError, ArithmeticError, RecursionError)
BUNDLE_UNREADABLE = (*_BAD_VALUES, DataError, ValidationError)


def read_bundle(run: Run, bundle: Bundle) -> None:
    """The run's files, metrics and outcome from its bundle, on the row (saved by the caller).
    Raises one of BUNDLE_UNREADABLE where a value is not what the runner writes."""
    result = bundle.result
    if not isinstance(result, dict):
        raise ValueError(f"result.json holds {type(result).__name__}, not an object")
    store_files(run, bundle.files)
    warnings = apply_metrics(run, bundle.files, result)
    run.host_facts = result.get("facts") if isinstance(result.get("facts"), dict) else {}
    settings_read = result.get("effective_settings")
    run.effective_settings = settings_read if isinstance(settings_read, dict) else {}
    dataset = result.get("dataset") if isinstance(result.get("dataset"), dict) else {}
    run.dataset_reused = dataset.get("reused") if isinstance(dataset.get("reused"), bool) else None
    runner_error = result.get("error")
    if result.get("status") == "done":
        run.status, run.error = RunStatus.DONE, ""
        if warnings:
            run.error = "Parsed with warnings: " + "; ".join(warnings)[:2000]
    elif result.get("status") == "stalled":  # a result: what the restart did until nothing moved
        mark_stalled(run, str(runner_error or "recovery stalled"))
    else:
        run.status = RunStatus.FAILED
        run.error = without_nul(str(runner_error or "the host runner reported a failure without a reason"))
    run.progress = ""
    run.live_samples = []  # the bundle's samples.jsonl holds them all
    run.finished_at = timezone.now()


def mark_stalled(run: Run, said: str) -> None:
    """A recovery that stopped moving: a result with no recovery time, in the server's words."""
    run.status, run.error = RunStatus.STALLED, without_nul(said)[:5000]
    run.recovery_seconds = run.redo_apply_mb_per_s = None


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
    with transaction.atomic(), audited_by(user):  # saved, not updated: the audit trail sees it
        run = Run.objects.select_for_update().get(id=run_id)
        run.excluded, run.excluded_reason, run.excluded_by = True, reason, user
        run.excluded_at = timezone.now()
        run.save(update_fields=["excluded", "excluded_reason", "excluded_by", "excluded_at"])
    return run


def include_run(run_id: int, user=None) -> Run:
    """Undo exclude_run. Idempotent."""
    with transaction.atomic(), audited_by(user):
        run = Run.objects.select_for_update().get(id=run_id)
        run.excluded, run.excluded_reason, run.excluded_by, run.excluded_at = False, "", None, None
        run.save(update_fields=["excluded", "excluded_reason", "excluded_by", "excluded_at"])
    return run


def end_attempt(attempt_id: int, outcome: str, error: str = "", transient: bool = False) -> None:
    RunAttempt.objects.filter(id=attempt_id, ended_at__isnull=True).update(
        outcome=outcome, error=without_nul(error)[:5000], transient=transient, ended_at=timezone.now()
    )


def mark_run_failed(run_id: int, error: str, attempt_id: int | None = None) -> None:
    """Record a failure in words a user can act on (and end its attempt). Idempotent."""
    with transaction.atomic():
        Run.objects.select_for_update().filter(id=run_id).first()
        if superseded(attempt_id):
            return
        Run.objects.filter(id=run_id).exclude(
            status__in=[RunStatus.DONE, RunStatus.CANCELLED, RunStatus.STALLED]
        ).update(
            status=RunStatus.FAILED, error=without_nul(error)[:5000], progress="", finished_at=timezone.now()
        )
        if attempt_id is not None:
            end_attempt(attempt_id, AttemptOutcome.FAILED, error)
    experiment_id = Run.objects.filter(id=run_id).values_list("experiment_id", flat=True).first()
    if experiment_id:
        refresh_experiment_status(experiment_id)


def cancel_experiment(experiment_id: int, user=None, run_id: int | None = None) -> int:
    """Queued runs never start; running ones are stopped on their hosts by their driver (workers/
    driver.py), every process killed; all end cancelled (`run_id`: that run only, and restarts
    waiting for its crash fail). Finished runs stay. Idempotent. Returns the runs cancelled."""
    who, said = getattr(user, "username", "") or "someone", f"cancelled run {run_id}" if run_id else ""
    runs = Run.objects.filter(experiment_id=experiment_id, status__in=[RunStatus.QUEUED, RunStatus.RUNNING])
    with transaction.atomic():
        cancelled = runs.filter(**({} if run_id is None else {"id": run_id})).update(
            status=RunStatus.CANCELLED,
            error=f"cancelled by {who} at {timezone.now():%Y-%m-%d %H:%M:%S} UTC",
            progress="",
            not_before=None,
            finished_at=timezone.now(),
        )
        if cancelled:
            audit(Experiment.objects.get(id=experiment_id), user, said or f"cancelled {cancelled} runs")
    fail_orphaned_restarts(experiment_id)
    refresh_experiment_status(experiment_id)
    return cancelled
