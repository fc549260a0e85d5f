"""The pages that ask questions of many runs: explore, compare (with its report) and the planner."""

from django.contrib.auth.decorators import login_required
from django.core.exceptions import BadRequest
from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone

from experiments.analysis.compare import comparison, parse_experiment_ids, parse_ignored
from experiments.analysis.explore import GROUPS, X_AXES, Y_AXES, ExploreError, Query, explore, title
from experiments.analysis.planner import PlanRefused, plan_from
from experiments.analysis.planner_form import PlannerForm
from experiments.charts.compare import compare_chart
from experiments.charts.explore import drawn_with_webgl, explore_page_json
from experiments.charts.planner import planner_chart
from experiments.filters import AnalysisFilter
from experiments.models import Engine, Experiment, Run
from experiments.pages.common import pdf_response, report_html
from experiments.pages.context import compare_report_context, comparison_table
from experiments.pages.profiles import profile_diffs
from experiments.reports.planner import plan_sentences, question_sentence
from recovery_lab_cli.units import MIB


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
    answer = explore(runs.qs, query)
    result = {**answer.meta, "series": answer.series}  # the page's count and fits (points not read)
    figure = explore_page_json(answer)
    build = "strict" if drawn_with_webgl(answer.meta["count"]) else "cartesian"  # templates/plotly.html
    context.update(query=query, result=result, figure=figure, plotly_build=build)
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
                sentences=plan_sentences(answer, form.cleaned_data),
                figure=planner_chart(answer, points),
                api_query=request.GET.urlencode(),
            )
    return render(request, "experiments/planner.html", context, status=400 if form.errors else 200)


def _planner_report_context(request) -> dict:
    """The planner's answer for paper: the question with its limits, the answer, the chart and
    the runs it stands on; a question the form refuses is a bad request."""
    form = PlannerForm(request.GET)
    if not form.is_valid():
        raise BadRequest("; ".join(f"{name}: {' '.join(errors)}" for name, errors in form.errors.items()))
    question = form.cleaned_data
    context = {"question": question_sentence(question), "query": request.GET.urlencode()}
    context["generated_at"] = timezone.now()
    try:
        answer, points = plan_from(question)
    except PlanRefused as refused:
        return {**context, "refused": refused.reason, "figures": {}}
    plan = answer.as_dict()
    runs = {r.id: r for r in Run.objects.filter(pk__in=plan["run_ids"]).select_related("experiment")}
    return {
        **context,
        "plan": plan,
        "sentences": plan_sentences(plan, question),
        "figures": {"planner": planner_chart(plan, points)},
        "points": [
            {
                "run": runs[p.run_id],
                "redo_mib": p.redo_bytes / MIB,
                "downtime_seconds": p.downtime_seconds,
                "redo_log_mib": p.redo_log_bytes / MIB if p.redo_log_bytes else None,
            }
            for p in points
        ],
    }


@login_required
def planner_report(request):
    context = _planner_report_context(request)
    page = f"{reverse('planner-report')}?{context['query']}"
    return HttpResponse(report_html(request, "experiments/planner_report.html", context, page))


@login_required
def planner_report_pdf(request):
    context = {**_planner_report_context(request), "printing": True}
    page = f"{reverse('planner-report')}?{context['query']}"
    html = report_html(request, "experiments/planner_report.html", context, page)
    return pdf_response(request, html, "Recovery-time plan", "recovery-time-plan.pdf")


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
    context = compare_report_context(comparison(ids, ignore))
    page = _compare_page(ids, ignore)
    return HttpResponse(report_html(request, "experiments/compare_report.html", context, page))


@login_required
def compare_report_pdf(request):
    ids, ignore = _compared(request)
    context = {**compare_report_context(comparison(ids, ignore)), "printing": True}
    html = report_html(request, "experiments/compare_report.html", context, _compare_page(ids, ignore))
    title = "Comparison of " + " and ".join(f"#{i}" for i in ids)
    return pdf_response(request, html, title, f"compare-{'-'.join(map(str, ids))}.pdf")


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
        table=comparison_table(result),
        figure=compare_chart(result),
        profile_diffs=profile_diffs(result),
        csv_query=query,
        api_query=query + (f"&ignore={','.join(sorted(ignore))}" if ignore else ""),
        leave_out=result["leave_out"],
    )
    return render(request, "experiments/compare.html", context)
