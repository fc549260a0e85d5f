"""Run filters shared by GET /api/runs/, GET /api/explore/, the CSV exports and /explore/
(django-filter, so they appear in the OpenAPI schema)."""

import django_filters as filters

from .models import Engine, Run, RunStatus


class CharInFilter(filters.BaseInFilter, filters.CharFilter):
    """A comma-separated list: engine=innodb,rocksdb."""


class NumberInFilter(filters.BaseInFilter, filters.NumberFilter):
    """A comma-separated list of ids: experiments=3,7."""


class RunFilter(filters.FilterSet):
    experiment = filters.NumberFilter(field_name="experiment_id", help_text="one experiment's id")
    experiments = NumberInFilter(field_name="experiment_id", help_text="experiment ids, comma-separated")
    engine = CharInFilter(
        field_name="engine", help_text=f"one or more of {', '.join(Engine.values)}, comma-separated"
    )
    host = CharInFilter(field_name="host_label", help_text="host names or import labels, comma-separated")
    server_version = CharInFilter(help_text="server versions as the runs report them, comma-separated")
    status = filters.ChoiceFilter(choices=RunStatus.choices)
    imported = filters.BooleanFilter(help_text="true: runs imported from logs; false: runs done here")
    tag = filters.CharFilter(method="filter_tag", help_text="runs of experiments with this tag")
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
        return queryset.filter(experiment__tags__contains=[value])


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
