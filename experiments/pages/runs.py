"""A run's page: its metrics, the seconds before and after the crash, files, live progress;
exclusion, annotation and re-parse."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_POST

from experiments import services, storage
from experiments.analysis.sentences import (
    crash_image_sentence,
    flushing_sentence,
    restart_cache_sentence,
    storage_sentence,
)
from experiments.charts.profile import flame_chart
from experiments.charts.resources import with_resources
from experiments.charts.run import live_samples_chart, progress_chart, samples_chart, timeline_chart
from experiments.ingest.profile import FOLDED_FILE
from experiments.metrics import LABELS, METRIC_NAMES
from experiments.models import Run, RunStatus
from experiments.pages.common import annotate_page
from experiments.roles import may_change, require_change
from recovery_lab_cli.units import below_resolution, duration_text
from runner.contract import UNSAID_DEFAULTS


@login_required
@require_POST
def run_annotate(request, pk: int):
    run = get_object_or_404(Run.objects.select_related("experiment"), pk=pk)
    return annotate_page(request, run, run.experiment)


# Metrics computed from the recovery's duration: as fine as its lines were timed.
TIMED_BY_THE_LOG = ("recovery_seconds", "redo_apply_mb_per_s")


def _metric_value(run: Run, name: str):
    """A metric as shown: with the resolution of the log's stamps where the recovery was timed in
    whole seconds (a server's own log, imported), so 0.523 is not read as milliseconds measured."""
    value = getattr(run, name)
    coarsest = max(run.phase_resolution.values(), default=0)
    if value is None or name not in TIMED_BY_THE_LOG or coarsest < 1:
        return value
    return f"{value} (from whole-second stamps: ±{coarsest:g} s on the recovery)"


def _run_context(run: Run) -> dict:
    return {
        "run": run,
        "metrics": [(LABELS[name], name, _metric_value(run, name)) for name in METRIC_NAMES],
        "phases": [
            (name, duration_text(seconds, run.phase_resolution.get(name)))
            for name, seconds in run.phases.items()
        ],
        # the note on "< 5 ms" only where a phase reads so
        "below_resolution": any(
            below_resolution(seconds, run.phase_resolution.get(name)) for name, seconds in run.phases.items()
        ),
        "page_cache": restart_cache_sentence((run.resources or {}).get("restart_cache")),
        "flushing": flushing_sentence(
            (run.parameters or {}).get("flushing", UNSAID_DEFAULTS["flushing"]),
            run.checkpoint_moved_bytes,
            run.log_bytes_written,
        ),
        "storage": _storage_said(run),
        "crash_image": _crash_image_said(run),
        "files": run.files.defer("content"),
        "attempts": run.attempt_rows.select_related("host"),
    }


def _image_state(status: str) -> str:
    if status in (RunStatus.DONE, RunStatus.STALLED):
        return "done"
    return "failed" if status in (RunStatus.FAILED, RunStatus.CANCELLED) else "to come"


def _crash_image_said(run: Run) -> str:
    """crash.one_crash: the crash this run restarts, or the restarts of its own, as they stand."""
    states = [_image_state(status) for status in run.restarts_from_image.values_list("status", flat=True)]
    return crash_image_sentence(
        run.image_of_id,
        run.image_of.parameters.get("buffer_pool_size", "") if run.image_of_id else "",
        run.parameters.get("buffer_pool_size", ""),
        _image_state(run.status),
        restarted=states.count("done"),
        to_come=states.count("to come"),
    )


def _storage_said(run: Run) -> str:
    """The class as the run recorded it, labelled as the lab's classes name it (if it still does)."""
    recorded = (run.resources or {}).get("storage")
    known = storage.CLASSES.get((recorded or {}).get("name"))
    disk = ((run.host_facts or {}).get("disk") or {}).get("floor") or {}
    return storage_sentence(recorded, known.label if known else "", disk.get("seq_read_mb_s"))


def _run_figures(run: Run) -> dict:
    """The seconds before the crash and the restart's timeline, where the run has them; while
    it runs, its workload's seconds so far."""
    if run.status == RunStatus.RUNNING:
        figures = {"samples": live_samples_chart(run.live_samples)}
    else:
        figures = {
            "samples": samples_chart(run.samples, run.crash_method),
            "timeline": with_resources(timeline_chart(run.timeline), run.resources),
            "progress": progress_chart(run.timeline),
            "profile": flame_chart(_folded(run)),
        }
    return {"run_figures": {name: figure for name, figure in figures.items() if figure["data"]}}


def _folded(run: Run) -> bytes:
    """The run's CPU profile as perf folded it, where it asked for one."""
    if not (run.resources or {}).get("profile"):
        return b""
    return bytes(run.files.filter(name=FOLDED_FILE).values_list("content", flat=True).first() or b"")


@login_required
def run_detail(request, pk: int):
    run = get_object_or_404(Run.objects.select_related("experiment", "host", "excluded_by"), pk=pk)
    context = {
        **_run_context(run),
        **_run_figures(run),
        "can_change": may_change(request.user, run.experiment),
    }
    return render(request, "experiments/run_detail.html", context)


@login_required
def run_live(request, pk: int):
    run = get_object_or_404(Run.objects.select_related("experiment", "host", "excluded_by"), pk=pk)
    body = render_to_string("experiments/_run_body.html", _run_context(run), request)
    return JsonResponse(
        {"status": run.status, "finished": run.is_finished, "html": body, **_run_figures(run)}
    )


@login_required
@require_POST
def run_exclude(request, pk: int):
    run = get_object_or_404(Run.objects.select_related("experiment"), pk=pk)
    require_change(request.user, run.experiment)
    try:
        services.exclude_run(run.pk, request.POST.get("reason", ""), user=request.user)
    except ValueError as exc:
        messages.error(request, str(exc))
    return redirect(run)


@login_required
@require_POST
def run_cancel(request, pk: int):
    run = get_object_or_404(Run.objects.select_related("experiment"), pk=pk)
    require_change(request.user, run.experiment)
    cancelled = services.cancel_experiment(run.experiment_id, user=request.user, run_id=run.pk)
    messages.info(request, "Cancelled this run." if cancelled else "This run had already ended.")
    return redirect(run)


@login_required
@require_POST
def run_include(request, pk: int):
    run = get_object_or_404(Run.objects.select_related("experiment"), pk=pk)
    require_change(request.user, run.experiment)
    services.include_run(run.pk, user=request.user)
    return redirect(run)


@login_required
def run_file(request, pk: int, name: str):
    run = get_object_or_404(Run, pk=pk)
    raw = get_object_or_404(run.files, name=name)
    return render(request, "experiments/run_file.html", {"run": run, "file": raw})


@login_required
def run_file_download(request, pk: int, name: str):
    """The file's bytes as kept, to save: an attachment the browser never renders (a server's log
    is anyone's text), named after the run."""
    run = get_object_or_404(Run, pk=pk)
    raw = get_object_or_404(run.files, name=name)
    response = HttpResponse(bytes(raw.content), content_type="application/octet-stream")
    response["Content-Disposition"] = content_disposition_header(True, f"run-{run.pk}-{raw.name}")
    response["X-Content-Type-Options"] = "nosniff"
    return response


@login_required
@require_POST
def run_reparse(request, pk: int):
    run = get_object_or_404(Run.objects.select_related("experiment"), pk=pk)
    require_change(request.user, run.experiment)
    services.reparse_run(run.pk)
    return redirect(run)
