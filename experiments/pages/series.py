"""The recurring series' pages: the list, one series with each metric over its firings and the
change points found (triaged here), and a series made from an experiment's definition."""

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Count
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from experiments.analysis.series import SERIES_METRICS, history
from experiments.charts.series import series_chart
from experiments.definition import DefinitionError
from experiments.metrics import LABELS, UNITS
from experiments.models import ChangePoint, Experiment, Series, Triage
from experiments.roles import FORBIDDEN, may_change, may_experiment, require_change, role_required
from experiments.services import series as series_service
from recovery_lab_cli.units import binary_bytes

SERIES_PER_PAGE = 25


def listed_lines(text: str) -> list[str]:
    """Addresses typed one per line or comma-separated."""
    return [line.strip() for line in text.replace(",", "\n").splitlines() if line.strip()]


@login_required
def series_list(request):
    listed = (
        Series.objects.select_related("created_by")
        .annotate(
            firing_count=Count("firings", distinct=True),
            change_point_count=Count("change_points", distinct=True),
        )
        .order_by("name")
    )  # an aggregate drops Meta.ordering
    page = Paginator(listed, SERIES_PER_PAGE).get_page(request.GET.get("page"))
    return render(request, "experiments/series_list.html", {"page": page})


def shown(metric: str, value: float) -> str:
    """A median as a person reads it: bytes in binary units (MiB), seconds in s, rates as they are."""
    if UNITS.get(metric) == "B":
        return binary_bytes(value)
    if UNITS.get(metric) == "s":
        return f"{value:.3g} s"
    return f"{value:,.4g}"


def series_context(series: Series, user) -> dict:
    """Each metric's figure over the firings, and the change points with what differed. Where
    alerts go, and why one failed in detail, only for the owner and admins (webhook URLs are
    secrets); others see the host."""
    private = may_change(user, series)
    firings = [{**firing.as_dict(), "index": i} for i, firing in enumerate(history(series.pk), start=1)]
    points = list(series.change_points.select_related("triaged_by").order_by("firing_index", "metric"))
    drawn = [
        {"firing_index": p.firing_index, "ratio": p.ratio, "worse": p.worse, "metric": p.metric}
        for p in points
    ]
    figures = {
        metric: series_chart(metric, firings, [d for d in drawn if d["metric"] == metric])
        for metric in SERIES_METRICS
        if any(f["values"].get(metric) for f in firings)
    }
    return {
        "series": series,
        "firings": firings,
        "figures": figures,
        "figure_ids": [f"series-{metric}" for metric in figures],
        "change_points": [
            (
                p,
                LABELS.get(p.metric, p.metric),
                shown(p.metric, p.before_median),
                shown(p.metric, p.after_median),
            )
            for p in points
        ],
        "triages": Triage.choices,
        "alert_destinations": (
            [*series.alert_emails, *series.alert_webhooks]
            if private
            else series_service.alert_destinations(series)
        ),
        "notifications": [
            {
                "to": f"{n.channel}: {n.target}" if private else series_service.shown_target(n),
                "status": n.status,
                "attempts": n.attempts,
                "sent_at": n.sent_at,
                "error": f"{n.error} ({n.error_detail})" if private and n.error_detail else n.error,
            }
            for p in points
            for n in p.notifications.all()
        ],
    }


@login_required
def series_detail(request, pk: int):
    series = get_object_or_404(Series, pk=pk)
    context = series_context(series, request.user)
    context["may_change"] = may_change(request.user, series)
    context["mail_configured"] = not settings.EMAIL_BACKEND.endswith("console.EmailBackend")
    # alerts link to SITE_URL: said where it matters when the team reaches the page elsewhere
    opened = request.build_absolute_uri("/").rstrip("/")
    context["site_url_differs"] = (opened, settings.SITE_URL) if opened != settings.SITE_URL else None
    return render(request, "experiments/series_detail.html", context)


@login_required
@require_POST
def change_point_triage(request, pk: int):
    point = get_object_or_404(ChangePoint.objects.select_related("series"), pk=pk)
    require_change(request.user, point.series)
    try:
        series_service.triage_change_point(
            point.pk, request.POST.get("triage"), request.POST.get("note", ""), user=request.user
        )
    except DefinitionError as exc:
        for field_name, problems in exc.errors.items():
            messages.error(request, f"{field_name}: {' '.join(problems)} (nothing was saved)")
    else:
        messages.info(request, "Triage saved.")
    return redirect(f"{point.series.get_absolute_url()}#change-point-{point.pk}")


@login_required
@require_POST
@role_required(may_experiment, FORBIDDEN["experiment"])
def series_from_experiment(request, pk: int):
    """A series that repeats an experiment's definition on a schedule."""
    experiment = get_object_or_404(Experiment, pk=pk)
    data = {
        "name": request.POST.get("name", ""),
        "definition": experiment.definition,
        "schedule": request.POST.get("schedule", ""),
        "alert_emails": listed_lines(request.POST.get("alert_emails", "")),
        "alert_webhooks": listed_lines(request.POST.get("alert_webhooks", "")),
    }
    try:
        data["alert_threshold"] = float(request.POST.get("alert_threshold_percent", "10")) / 100
    except ValueError:
        data["alert_threshold"] = None
    try:
        series = series_service.create_series(data, user=request.user)
    except DefinitionError as exc:
        for field_name, problems in exc.errors.items():
            messages.error(request, f"{field_name}: {' '.join(problems)} (no series was made)")
        return redirect(experiment)
    messages.info(request, f"Series made: its first firing is at {series.next_firing_at:%Y-%m-%d %H:%M} UTC.")
    return redirect(series)
