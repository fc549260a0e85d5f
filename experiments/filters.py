"""Run filters shared by GET /api/runs/, GET /api/explore/, the CSV exports and /explore/
(django-filter, so they appear in the OpenAPI schema)."""

import django_filters as filters
from django import forms
from django.db.models import Exists, OuterRef, Q
from drf_spectacular.utils import extend_schema_field

from experiments.models import Engine, Experiment, ExperimentStatus, Run, RunStatus
from recovery_lab_cli.units import as_row_id

# What the schema says of a filter is what the form field refuses: Django's text fields refuse
# NUL (PostgreSQL takes no NUL in text), ids are whole numbers within bigint.
NO_NUL = r"^[^\x00]*$"
ID = {"type": "integer", "minimum": 1, "maximum": 2**63 - 1}


@extend_schema_field({"type": "string", "pattern": NO_NUL})
class TextFilter(filters.CharFilter):
    """Text matched as typed."""


class CharInFilter(filters.BaseInFilter, filters.CharFilter):
    """A comma-separated list: engine=innodb,rocksdb."""


class _IdField(forms.IntegerField):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, min_value=ID["minimum"], max_value=ID["maximum"], **kwargs)


@extend_schema_field(ID)
class IdFilter(filters.NumberFilter):
    """One row id: experiment=3."""

    field_class = _IdField


class IdInFilter(filters.BaseInFilter, filters.NumberFilter):
    """A comma-separated list of ids: experiments=3,7."""

    field_class = _IdField


class RunFilter(filters.FilterSet):
    experiment = IdFilter(field_name="experiment_id", help_text="one experiment's id")
    experiments = IdInFilter(field_name="experiment_id", help_text="experiment ids, comma-separated")
    engine = CharInFilter(
        field_name="engine", help_text=f"one or more of {', '.join(Engine.values)}, comma-separated"
    )
    host = CharInFilter(field_name="host_label", help_text="host names or import labels, comma-separated")
    server_version = CharInFilter(help_text="server versions as the runs report them, comma-separated")
    status = filters.ChoiceFilter(choices=RunStatus.choices)
    crash_method = CharInFilter(help_text="sigkill, power_loss (comma-separated)")
    imported = filters.BooleanFilter(help_text="true: runs imported from logs; false: runs done here")
    tag = TextFilter(method="filter_tag", help_text="runs with this tag, or of experiments with it")
    since = filters.DateFilter(
        field_name="finished_at", lookup_expr="date__gte", help_text="finished on or after"
    )
    until = filters.DateFilter(
        field_name="finished_at", lookup_expr="date__lte", help_text="finished on or before"
    )
    suspect = filters.BooleanFilter(help_text="runs whose values the analysis does not trust")
    excluded = filters.BooleanFilter(help_text="runs a user left out of analysis")

    class Meta:
        model = Run
        fields = []

    def filter_tag(self, queryset, name, value):
        """The run's own tag, or its experiment's."""
        return queryset.filter(Q(tags__contains=[value]) | Q(experiment__tags__contains=[value]))


class AnalysisFilter(RunFilter):
    """What charts and statistics read: finished runs, without suspect or excluded ones unless
    asked for."""

    include_suspect = filters.BooleanFilter(method="keep", help_text="true: chart suspect runs too")
    include_excluded = filters.BooleanFilter(method="keep", help_text="true: chart runs users excluded too")

    def keep(self, queryset, name, value):
        return queryset  # read in filter_queryset: the default (absent) must filter too

    def filter_queryset(self, queryset):
        queryset = super().filter_queryset(queryset).filter(status=RunStatus.DONE)
        if not self.form.cleaned_data.get("include_suspect"):
            queryset = queryset.filter(suspect=False)
        if not self.form.cleaned_data.get("include_excluded"):
            queryset = queryset.filter(excluded=False)
        return queryset


# What the experiment list's runs-based filters look at, by parameter name.
RUN_FIELDS = {"engine": "engine", "host": "host_label", "server_version": "server_version"}


class ExperimentFilter(filters.FilterSet):
    """The team's history: GET /api/experiments/ and the /experiments/ page (whose address holds
    every filter, the sort and the page: a permalink)."""

    q = TextFilter(method="search", help_text="words in the name or notes, a tag, or an id")
    engine = CharInFilter(method="with_runs", help_text="experiments with runs of these engines")
    host = CharInFilter(method="with_runs", help_text="experiments with runs on these hosts or import labels")
    server_version = CharInFilter(method="with_runs", help_text="experiments with runs of these versions")
    tag = CharInFilter(method="with_tags", help_text="experiments with every one of these tags")
    author = TextFilter(field_name="created_by__username", help_text="the author's user name")
    status = filters.MultipleChoiceFilter(choices=ExperimentStatus.choices)
    imported = filters.BooleanFilter(help_text="true: made of imported runs")
    since = filters.DateFilter(
        field_name="created_at", lookup_expr="date__gte", help_text="created on or after"
    )
    until = filters.DateFilter(
        field_name="created_at", lookup_expr="date__lte", help_text="created on or before"
    )
    sort = filters.OrderingFilter(
        fields=(
            ("created_at", "created"),
            ("finished_at", "finished"),
            ("name", "name"),
            ("status", "status"),
            ("run_count", "runs"),
            ("id", "id"),
        ),
        help_text="created (default -created), finished, name, status, runs or id; - for descending",
    )

    class Meta:
        model = Experiment
        fields = []

    def __init__(self, data=None, *args, **kwargs):
        # the page's Status select sends "" for "any" (its default): no filter, not "status:
        # Select a valid choice" and an empty list
        if data is not None and "" in data.getlist("status", []):
            data = data.copy()
            data.setlist("status", [value for value in data.getlist("status") if value])
        super().__init__(data, *args, **kwargs)

    def search(self, queryset, name, value):
        words = value.strip()
        match = Q(name__icontains=words) | Q(notes__icontains=words) | Q(tags__contains=[words])
        if (row_id := as_row_id(words)) is not None:
            match |= Q(pk=row_id)
        return queryset.filter(match)

    def with_runs(self, queryset, name, value):
        runs = Run.objects.filter(experiment=OuterRef("pk"), **{f"{RUN_FIELDS[name]}__in": value})
        return queryset.filter(Exists(runs))

    def with_tags(self, queryset, name, value):
        return queryset.filter(tags__contains=list(value))

    def filter_queryset(self, queryset):
        queryset = super().filter_queryset(queryset)
        if not self.form.cleaned_data.get("sort"):
            return queryset.order_by("-created_at", "-id")
        return queryset.order_by(*queryset.query.order_by, "-id")  # equal values: a stable page order
