"""Pages. Thin: they read rows and call services; figures come from charts.py."""

from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from . import charts, services
from .definition import DefinitionError
from .forms import ExperimentForm, ImportForm
from .imports import ImportRejected, import_runs
from .metrics import LABELS, METRIC_NAMES
from .models import Experiment, Host, Run, RunStatus


@login_required
def experiment_list(request):
    experiments = Experiment.objects.select_related("created_by").annotate(run_count=Count("runs"))
    return render(request, "experiments/experiment_list.html", {"experiments": experiments})


@login_required
def experiment_new(request):
    form = ExperimentForm(request.POST or None, host_names=services.active_host_names())
    if request.method == "POST" and form.is_valid():
        try:
            experiment = services.create_experiment(form.definition(), user=request.user)
        except DefinitionError as exc:
            form.add_definition_errors(exc.errors)
        else:
            return redirect(experiment)
    return render(request, "experiments/experiment_new.html", {"form": form})


@login_required
def experiment_detail(request, pk: int):
    experiment = get_object_or_404(Experiment, pk=pk)
    runs = list(experiment.runs.select_related("host"))
    rows = charts.chart_rows(runs)
    in_progress = any(r.status in (RunStatus.QUEUED, RunStatus.RUNNING) for r in runs)
    return render(
        request,
        "experiments/experiment_detail.html",
        {
            "experiment": experiment,
            "runs": runs,
            "figure": charts.recovery_vs_redo(rows),
            "charted": sum(1 for r in rows if r["redo_bytes"] is not None),
            "in_progress": in_progress,
        },
    )


@login_required
def run_detail(request, pk: int):
    run = get_object_or_404(Run.objects.select_related("experiment", "host"), pk=pk)
    metrics = [(LABELS[name], name, getattr(run, name)) for name in METRIC_NAMES]
    files = run.files.defer("content")
    return render(request, "experiments/run_detail.html", {"run": run, "metrics": metrics, "files": files})


@login_required
def run_file(request, pk: int, name: str):
    run = get_object_or_404(Run, pk=pk)
    raw = get_object_or_404(run.files, name=name)
    return render(request, "experiments/run_file.html", {"run": run, "file": raw})


@login_required
@require_POST
def run_reparse(request, pk: int):
    run = get_object_or_404(Run, pk=pk)
    services.reparse_run(run.pk)
    return redirect(run)


@login_required
def host_list(request):
    return render(request, "experiments/host_list.html", {"hosts": Host.objects.all()})


@login_required
def import_new(request):
    form = ImportForm(request.POST or None, request.FILES or None, experiments=Experiment.objects.all())
    if request.method == "POST" and form.is_valid():
        parameters = form.parameters()
        experiment = parameters.pop("experiment")
        try:
            result = import_runs(
                form.uploads(),
                parameters,
                experiment_id=experiment.pk if experiment else None,
                experiment_name=parameters.pop("experiment_name") or "",
                user=request.user,
            )
        except ImportRejected as exc:
            form.add_import_errors(exc.errors)
        else:
            return redirect(result.experiment)
    return render(request, "experiments/import_new.html", {"form": form})
