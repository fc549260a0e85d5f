"""A series' controls, for its owner and admins: edit it (its definition as the command line's
YAML), pause and resume it, fire it now, delete it after a confirmation."""

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from experiments.definition import DefinitionError
from experiments.models import Series
from experiments.pages.forms import definition_yaml
from experiments.pages.series import listed_lines
from experiments.roles import require_change
from experiments.services import series as series_service
from experiments.services.series_controls import delete_series, fire_now
from recovery_lab_cli.yaml_input import YamlRefused, load_plain_yaml


class SeriesForm(forms.Form):
    name = forms.CharField(max_length=150)
    schedule = forms.CharField(
        max_length=100, help_text="cron (minute hour day month weekday) or @hourly, @daily, @nightly, @weekly"
    )
    enabled = forms.BooleanField(required=False, label="Firing (unticked: paused)")
    # in percent, as the form that makes a series asks it (the series keeps a share)
    alert_threshold_percent = forms.FloatField(
        label="Alert when a metric gets worse by more than (%)", min_value=0.1, max_value=1000
    )
    alert_emails = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 2}), help_text="one per line"
    )
    alert_webhooks = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 2}), help_text="https URLs, one per line"
    )
    definition = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 18, "class": "code"}),
        help_text="as the command line takes it (YAML); it applies to the firings to come",
    )

    @staticmethod
    def initial_from(series: Series) -> dict:
        return {
            "name": series.name,
            "schedule": series.schedule,
            "enabled": series.enabled,
            "alert_threshold_percent": round(series.alert_threshold * 100, 6),
            "alert_emails": "\n".join(series.alert_emails),
            "alert_webhooks": "\n".join(series.alert_webhooks),
            "definition": definition_yaml(series.definition),
        }

    def changes(self) -> dict:
        """What update_series takes; a definition that is no YAML is the form's error."""
        data = self.cleaned_data
        try:
            definition = load_plain_yaml(data["definition"])
        except YamlRefused as exc:
            raise DefinitionError({"definition": [str(exc)]}) from None
        return {
            "name": data["name"],
            "schedule": data["schedule"],
            "enabled": data["enabled"],
            "alert_threshold": data["alert_threshold_percent"] / 100,
            "alert_emails": listed_lines(data["alert_emails"]),
            "alert_webhooks": listed_lines(data["alert_webhooks"]),
            "definition": definition,
        }


@login_required
@require_http_methods(["GET", "POST"])
def series_edit(request, pk: int):
    series = get_object_or_404(Series, pk=pk)
    require_change(request.user, series)
    form = SeriesForm(request.POST or None, initial=SeriesForm.initial_from(series))
    if request.method == "POST" and form.is_valid():
        try:
            series_service.update_series(series.pk, form.changes(), user=request.user)
        except DefinitionError as exc:
            for path, problems in exc.errors.items():
                field = path.split(".")[0] if path.split(".")[0] in form.fields else None
                for problem in problems:
                    form.add_error(field, problem if field == path else f"{path}: {problem}")
        else:
            messages.info(request, "Series saved: the firings to come use it.")
            return redirect(series)
    return render(request, "experiments/series_edit.html", {"series": series, "form": form})


@login_required
@require_POST
def series_pause(request, pk: int):
    """Pause a firing series, or resume a paused one."""
    series = get_object_or_404(Series, pk=pk)
    require_change(request.user, series)
    series_service.update_series(series.pk, {"enabled": not series.enabled}, user=request.user)
    messages.info(
        request, "Series resumed." if not series.enabled else "Series paused: it fires no more until resumed."
    )
    return redirect(series)


@login_required
@require_POST
def series_fire(request, pk: int):
    series = get_object_or_404(Series, pk=pk)
    require_change(request.user, series)
    try:
        experiment = fire_now(series.pk, user=request.user)
    except DefinitionError as exc:  # a host or build it names is gone
        problems = "; ".join(f"{k}: {' '.join(v)}" for k, v in exc.errors.items())
        messages.error(request, f"Not fired: {problems}")
        return redirect(series)
    messages.info(request, f"Fired by hand: experiment #{experiment.pk}.")
    return redirect(experiment)


@login_required
@require_http_methods(["GET", "POST"])
def series_delete(request, pk: int):
    """A confirmation page; the POST deletes."""
    series = get_object_or_404(Series, pk=pk)
    require_change(request.user, series)
    if request.method == "POST":
        kept = delete_series(series.pk, user=request.user)
        messages.info(request, f"Series {series.name!r} deleted; the {kept} experiment(s) it fired are kept.")
        return redirect("series-list")
    return render(
        request, "experiments/series_delete.html", {"series": series, "firings": series.firings.count()}
    )
