"""Pages. Thin: they read rows and call services; figures come from charts.py."""

import uuid

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import BadRequest
from django.core.paginator import Paginator
from django.db.models import Count
from django.http import HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.module_loading import import_string
from django.views.decorators.http import require_POST

from . import charts, pages, run_charts, services
from .api import PROBE_HOST, comparison, parse_experiment_ids, parse_ignored
from .archive import ArchiveRejected, import_experiment
from .definition import DefinitionError
from .explore import GROUPS, X_AXES, Y_AXES, ExploreError, Query, explore, title
from .filters import AnalysisFilter, ExperimentFilter
from .forms import ExperimentForm, ImportForm
from .imports import ImportRejected, import_runs
from .metrics import LABELS, METRIC_NAMES
from .models import Engine, Experiment, Host, Run, RunStatus, Transport
from .pdf import PDFError, html_to_pdf
from .planner import PlanRefused
from .planning import PlannerForm, plan_from
from .roles import FORBIDDEN, may_administer, may_change, may_experiment, require_change, role_required
from .ssh_keys import SSHKeyError, dashboard_public_key

EXPERIMENTS_PER_PAGE = 25
# The list's columns: the sort key behind each header ("" = not sortable).
SORT_COLUMNS = (
    ("id", "#"),
    ("name", "Name"),
    ("", "Tags"),
    ("status", "Status"),
    ("runs", "Runs"),
    ("", "By"),
    ("created", "Created"),
)


@login_required
def experiment_list(request):
    """The team's history: searched, filtered, sorted and paged from the address (a permalink)."""
    experiments = Experiment.objects.select_related("created_by").annotate(run_count=Count("runs"))
    found = ExperimentFilter(request.GET, queryset=experiments)
    if not found.is_valid():
        return render(
            request,
            "experiments/experiment_list.html",
            {**pages.history_choices(), "filter": found},
            status=400,
        )
    page = Paginator(found.qs, EXPERIMENTS_PER_PAGE).get_page(request.GET.get("page"))
    context = {
        **pages.history_choices(),
        "filter": found,
        "page": page,
        "experiments": page.object_list,
        "filtered": any(value for key, value in request.GET.items() if key not in ("page", "sort")),
        "sort": request.GET.get("sort", ""),
        "sort_columns": SORT_COLUMNS,
    }
    return render(request, "experiments/experiment_list.html", context)


@login_required
@role_required(may_experiment, FORBIDDEN["experiment"])
def experiment_new(request):
    form = ExperimentForm(request.POST or None, host_names=services.active_host_names())
    if request.method == "POST" and form.is_valid():
        try:
            # The form's own key: a double click or a resent POST opens the same experiment.
            experiment, _ = services.create_experiment(
                form.definition(), user=request.user, idempotency_key=request.POST.get("idempotency_key", "")
            )
        except DefinitionError as exc:
            form.add_definition_errors(exc.errors)
        except ValueError as exc:  # a tampered form key
            form.add_error(None, str(exc))
        else:
            return redirect(experiment)
    key = request.POST.get("idempotency_key") or f"form-{uuid.uuid4().hex}"
    return render(request, "experiments/experiment_new.html", {"form": form, "idempotency_key": key})


@login_required
def experiment_detail(request, pk: int):
    experiment = get_object_or_404(Experiment, pk=pk)
    context = {**pages.experiment_context(experiment), "can_change": may_change(request.user, experiment)}
    return render(request, "experiments/experiment_detail.html", context)


def _annotate(request, target, experiment):
    require_change(request.user, experiment)
    try:
        services.annotate(
            target, notes=request.POST.get("notes"), tags=request.POST.get("tags"), user=request.user
        )
    except services.AnnotationRejected as exc:
        for field_name, message in exc.errors.items():
            messages.error(request, f"{field_name}: {message} (nothing was saved)")
    else:
        messages.info(request, "Notes and tags saved.")
    return redirect(target)


@login_required
@require_POST
def experiment_annotate(request, pk: int):
    experiment = get_object_or_404(Experiment, pk=pk)
    return _annotate(request, experiment, experiment)


@login_required
@require_POST
def run_annotate(request, pk: int):
    run = get_object_or_404(Run.objects.select_related("experiment"), pk=pk)
    return _annotate(request, run, run.experiment)


def _report_html(request, template: str, context: dict, page: str) -> str:
    """The report as HTML; `page` is the address of its web version (the PDF names it too)."""
    return render_to_string(template, {**context, "permalink": request.build_absolute_uri(page)}, request)


def _pdf_response(request, html: str, title: str, filename: str) -> HttpResponse:
    try:
        pdf = html_to_pdf(html, title)
    except PDFError as exc:
        return render(request, "experiments/report_error.html", {"error": str(exc)}, status=503)
    response = HttpResponse(pdf, content_type="application/pdf")
    response["Content-Disposition"] = f'inline; filename="{filename}"'
    return response


@login_required
def experiment_report(request, pk: int):
    """A printable page for a reader who will not open the dashboard."""
    experiment = get_object_or_404(Experiment.objects.select_related("created_by"), pk=pk)
    context = pages.report_context(experiment)
    page = reverse("experiment-report", args=[pk])
    return HttpResponse(_report_html(request, "experiments/report.html", context, page))


@login_required
def experiment_report_pdf(request, pk: int):
    """The report printed by Chromium, charts included, offline."""
    experiment = get_object_or_404(Experiment.objects.select_related("created_by"), pk=pk)
    context = {**pages.report_context(experiment), "printing": True}
    html = _report_html(request, "experiments/report.html", context, reverse("experiment-report", args=[pk]))
    title = f"#{experiment.pk} {experiment.name}"
    return _pdf_response(request, html, title, f"experiment-{experiment.pk}.pdf")


@login_required
@require_POST
def experiment_cancel(request, pk: int):
    experiment = get_object_or_404(Experiment, pk=pk)
    require_change(request.user, experiment)
    count = services.cancel_experiment(experiment.pk, user=request.user)
    messages.info(request, f"Cancelled {count} run{'s' if count != 1 else ''}.")
    return redirect(experiment)


@login_required
def experiment_live(request, pk: int):
    """JSON that keeps the experiment page current while its runs go."""
    experiment = get_object_or_404(Experiment, pk=pk)
    return JsonResponse(pages.experiment_live(experiment, request))


def _run_context(run: Run) -> dict:
    return {
        "run": run,
        "metrics": [(LABELS[name], name, getattr(run, name)) for name in METRIC_NAMES],
        "files": run.files.defer("content"),
        "attempts": run.attempt_rows.select_related("host"),
    }


def _run_figures(run: Run) -> dict:
    """The seconds before the crash and the restart's timeline, where the run has them; while
    it runs, its workload's seconds so far."""
    if run.status == RunStatus.RUNNING:
        figures = {"samples": run_charts.live_samples_chart(run.live_samples)}
    else:
        figures = {
            "samples": run_charts.samples_chart(run.samples, run.crash_method),
            "timeline": run_charts.timeline_chart(run.timeline),
        }
    return {"run_figures": {name: figure for name, figure in figures.items() if figure["data"]}}


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
@require_POST
def run_reparse(request, pk: int):
    run = get_object_or_404(Run.objects.select_related("experiment"), pk=pk)
    require_change(request.user, run.experiment)
    services.reparse_run(run.pk)
    return redirect(run)


@login_required
def host_list(request):
    hosts = list(Host.objects.with_activity())
    public_key = ""
    if any(host.transport == Transport.SSH for host in hosts):
        try:
            public_key = dashboard_public_key()
        except SSHKeyError as exc:
            messages.error(request, str(exc))
    return render(request, "experiments/host_list.html", {"hosts": hosts, "public_key": public_key})


@login_required
@require_POST
@role_required(may_administer, FORBIDDEN["admin"])
def host_probe(request, pk: int):
    host = get_object_or_404(Host, pk=pk)
    found = import_string(PROBE_HOST)(host.pk)
    if found.get("offered_host_key_fingerprint"):
        messages.warning(request, found["error"])
    elif "error" in found:
        messages.error(request, f"{host.name}: {found['error']}")
    return redirect("host-list")


@login_required
@require_POST
@role_required(may_administer, FORBIDDEN["admin"])
def host_trust_key(request, pk: int):
    """An admin confirms the key a host offered (the form carries the fingerprint shown): pinned,
    then the host is probed over it."""
    host = get_object_or_404(Host, pk=pk)
    try:
        host = services.trust_host_key(host.pk, request.POST.get("fingerprint", ""), request.user)
    except services.HostKeyRejected as exc:
        messages.error(request, str(exc))
        return redirect("host-list")
    messages.success(request, f"{host.name}: host key {host.host_key_fingerprint} trusted")
    found = import_string(PROBE_HOST)(host.pk)
    if "error" in found:
        messages.error(request, f"{host.name}: {found['error']}")
    return redirect("host-list")


@login_required
@role_required(may_experiment, FORBIDDEN["experiment"])
def experiment_import(request):
    """An experiment exported by another installation, uploaded and stored here."""
    error, existing = "", None
    if request.method == "POST":
        upload = request.FILES.get("file")
        if upload is None:
            error = "choose the .tar.gz file another installation exported"
        else:
            try:
                experiment = import_experiment(upload, user=request.user)
            except ArchiveRejected as exc:
                error, existing = str(exc), exc.duplicate
            else:
                messages.info(
                    request, f"Imported from {experiment.origin.get('installation') or 'elsewhere'}."
                )
                return redirect(experiment)
    return render(
        request,
        "experiments/experiment_import.html",
        {"error": error, "existing": existing},
        status=409 if existing else 400 if error else 200,
    )


@login_required
@role_required(may_experiment, FORBIDDEN["experiment"])
def import_new(request):
    # runs join an experiment of one's own (an admin's: any)
    mine = Experiment.objects.all()
    if not may_administer(request.user):
        mine = mine.filter(created_by=request.user)
    form = ImportForm(request.POST or None, request.FILES or None, experiments=mine)
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


@login_required
def explore_page(request):
    """Any metric against any parameter or metric; the URL holds the whole state."""
    context = {
        "x_choices": [(name, title(name)) for name in X_AXES],
        "y_choices": [(name, title(name)) for name in Y_AXES],
        "group_choices": [(name, title(name)) for name in GROUPS],
        "engines": Engine.choices,
        "experiments": Experiment.objects.order_by("-created_at", "-id")[:200],
        "params": request.GET,
        "shown": {name: request.GET.get(name) or getattr(Query, name) for name in ("x", "y", "group")},
        "csv_query": request.GET.urlencode(),
    }
    try:
        query = Query.from_params(request.GET)
    except ExploreError as exc:
        context["errors"] = exc.errors
        return render(request, "experiments/explore.html", context, status=400)
    runs = AnalysisFilter(request.GET, queryset=Run.objects.all())
    if not runs.is_valid():
        context["errors"] = runs.errors
        return render(request, "experiments/explore.html", context, status=400)
    result = explore(runs.qs, query).to_dict()
    context.update(query=query, result=result, figure=charts.explore_figure(result))
    return render(request, "experiments/explore.html", context)


@login_required
def planner_page(request):
    """/planner/: the planner's form; its answer in sentences and a chart. The URL holds the
    question (a permalink)."""
    form = PlannerForm(request.GET or None)
    context = {"form": form}
    if request.GET and form.is_valid():
        try:
            answer, points = plan_from(form.cleaned_data)
        except PlanRefused as refused:
            context["refused"] = refused.reason
        else:
            answer = answer.as_dict()
            context.update(
                plan=answer,
                sentences=pages.plan_sentences(answer, form.cleaned_data),
                figure=charts.planner_chart(answer, points),
                api_query=request.GET.urlencode(),
            )
    return render(request, "experiments/planner.html", context, status=400 if form.errors else 200)


def _compared(request) -> tuple[list[int], frozenset]:
    """The experiments a compare report is about, from ?experiments=A,B, and the settings left
    out of the match (?ignore=); 400 with the reason on a bad list or an unknown id."""
    try:
        return parse_experiment_ids(request.GET.get("experiments", "")), parse_ignored(
            request.GET.get("ignore", "")
        )
    except ValueError as exc:
        raise BadRequest(str(exc)) from exc


def _compare_page(ids: list[int], ignore: frozenset) -> str:
    ignored = f"&ignore={','.join(sorted(ignore))}" if ignore else ""
    return f"{reverse('compare-report')}?experiments={','.join(map(str, ids))}{ignored}"


@login_required
def compare_report(request):
    ids, ignore = _compared(request)
    context = pages.compare_report_context(comparison(ids, ignore))
    page = _compare_page(ids, ignore)
    return HttpResponse(_report_html(request, "experiments/compare_report.html", context, page))


@login_required
def compare_report_pdf(request):
    ids, ignore = _compared(request)
    context = {**pages.compare_report_context(comparison(ids, ignore)), "printing": True}
    html = _report_html(request, "experiments/compare_report.html", context, _compare_page(ids, ignore))
    title = "Comparison of " + " and ".join(f"#{i}" for i in ids)
    return _pdf_response(request, html, title, f"compare-{'-'.join(map(str, ids))}.pdf")


@login_required
def compare_page(request):
    """/compare/?experiments=A,B: matched cells side by side, ratios in words."""
    context = {"experiments": Experiment.objects.order_by("-created_at", "-id")[:200], "selected": []}
    text = request.GET.get("experiments", "")
    if not text:
        return render(request, "experiments/compare.html", context)
    try:
        ids = parse_experiment_ids(text)
        ignore = parse_ignored(request.GET.get("ignore", ""))
    except ValueError as exc:
        context["error"] = str(exc)
        return render(request, "experiments/compare.html", context, status=400)
    result = comparison(ids, ignore)
    query = f"experiments={','.join(map(str, ids))}"
    context.update(
        selected=ids,
        result=result,
        table=pages.comparison_table(result),
        figure=charts.compare_chart(result),
        csv_query=query,
        api_query=query + (f"&ignore={','.join(sorted(ignore))}" if ignore else ""),
    )
    return render(request, "experiments/compare.html", context)
