"""The experiments' pages: the list, the new-experiment form, an experiment with its charts, its
report (HTML and PDF), live progress, cancel, annotate, and an archive's import."""

import uuid

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Count
from django.http import HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from experiments import services
from experiments.definition import DefinitionError
from experiments.filters import ExperimentFilter
from experiments.models import Experiment
from experiments.pages.common import annotate_page, pdf_response, report_html
from experiments.pages.context import (
    experiment_context,
    experiment_live_context,
    history_choices,
    report_context,
)
from experiments.pages.forms import ExperimentForm, definition_yaml
from experiments.pages.profiles import cell_profile_diffs
from experiments.roles import (
    FORBIDDEN,
    may_change,
    may_experiment,
    require_change,
    role_required,
)
from experiments.services.archive import ArchiveRejected, import_experiment
from workers.probing import probe_host

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
            {**history_choices(), "filter": found},
            status=400,
        )
    page = Paginator(found.qs, EXPERIMENTS_PER_PAGE).get_page(request.GET.get("page"))
    context = {
        **history_choices(),
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
    """The form; `?from=ID`: filled with that experiment's definition, to run it again."""
    source = None
    if request.method != "POST" and request.GET.get("from", "").isdigit():
        source = get_object_or_404(Experiment, pk=int(request.GET["from"]))
    initial = ExperimentForm.initial_from(source.definition) if source else None
    form = ExperimentForm(request.POST or None, initial=initial, host_names=services.active_host_names())
    if request.method == "POST" and form.is_valid():
        try:
            # The form's own key: a double click or a resent POST opens the same experiment.
            experiment, _ = services.create_experiment(
                form.definition(),
                user=request.user,
                idempotency_key=request.POST.get("idempotency_key", ""),
                probe=probe_host,
            )
        except DefinitionError as exc:
            form.add_definition_errors(exc.errors)
        except ValueError as exc:  # a tampered form key
            form.add_error(None, str(exc))
        else:
            return redirect(experiment)
    key = request.POST.get("idempotency_key") or f"form-{uuid.uuid4().hex}"
    context = {"form": form, "idempotency_key": key, "source": source}
    return render(request, "experiments/experiment_new.html", context)


@login_required
def experiment_definition_yaml(request, pk: int):
    """The definition as the CLI takes it (`recovery-lab run FILE`), to download."""
    experiment = get_object_or_404(Experiment, pk=pk)
    response = HttpResponse(definition_yaml(experiment.definition), content_type="application/yaml")
    response["Content-Disposition"] = f'attachment; filename="experiment-{experiment.pk}.yaml"'
    return response


@login_required
def experiment_detail(request, pk: int):
    experiment = get_object_or_404(Experiment, pk=pk)
    context = {
        **experiment_context(experiment),
        "can_change": may_change(request.user, experiment),
        "definition_yaml": definition_yaml(experiment.definition),
    }
    context["profile_diffs"] = cell_profile_diffs(context["cells"])
    return render(request, "experiments/experiment_detail.html", context)


@login_required
@require_POST
def experiment_annotate(request, pk: int):
    experiment = get_object_or_404(Experiment, pk=pk)
    return annotate_page(request, experiment, experiment)


@login_required
def experiment_report(request, pk: int):
    """A printable page for a reader who will not open the dashboard."""
    experiment = get_object_or_404(Experiment.objects.select_related("created_by"), pk=pk)
    context = report_context(experiment)
    page = reverse("experiment-report", args=[pk])
    return HttpResponse(report_html(request, "experiments/report.html", context, page))


@login_required
def experiment_report_pdf(request, pk: int):
    """The report printed by Chromium, charts included, offline."""
    experiment = get_object_or_404(Experiment.objects.select_related("created_by"), pk=pk)
    context = {**report_context(experiment), "printing": True}
    html = report_html(request, "experiments/report.html", context, reverse("experiment-report", args=[pk]))
    title = f"#{experiment.pk} {experiment.name}"
    return pdf_response(request, html, title, f"experiment-{experiment.pk}.pdf")


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
    return JsonResponse(experiment_live_context(experiment, request))


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
