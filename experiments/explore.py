"""Any metric against any parameter or metric, grouped (GET /api/explore/ and /explore/).

PostgreSQL does the heavy part: it groups the runs, gathers each group's points into arrays in
one pass and fits the line with its own regression aggregates (regr_slope, regr_intercept,
regr_r2), so 100,000 runs never become 100,000 Python objects.
"""

from dataclasses import dataclass

from django.contrib.postgres.aggregates import ArrayAgg, RegrCount, RegrIntercept, RegrR2, RegrSlope
from django.db.models import BigIntegerField, F, QuerySet
from django.db.models.fields.json import KT
from django.db.models.functions import Cast

from .cells import ENGINE_NAMES
from .charts import AXIS_TITLES, PARAMETER_UNITS
from .metrics import LABELS, NUMERIC_METRICS, UNITS
from .models import Experiment
from .units import format_size

NUMERIC_PARAMETERS = {
    "buffer_pool_size": F("buffer_pool_bytes"),
    "redo_log_size": F("redo_log_bytes"),
    "insert_rate": F("insert_rate"),
    "binlog_files": Cast(KT("parameters__binlog_files"), BigIntegerField()),
}
CATEGORIES = {"engine": F("engine"), "server_version": F("server_version"), "host": F("host_label")}
X_AXES = (*NUMERIC_PARAMETERS, *CATEGORIES, *NUMERIC_METRICS)
Y_AXES = NUMERIC_METRICS
GROUPS = ("engine", "host", "server_version", "experiment", *NUMERIC_PARAMETERS)


class ExploreError(ValueError):
    def __init__(self, errors: dict[str, list[str]]):
        super().__init__(str(errors))
        self.errors = errors


@dataclass(frozen=True)
class Query:
    x: str = "redo_bytes"
    y: str = "recovery_seconds"
    group: str = "engine"

    @classmethod
    def from_params(cls, params) -> "Query":
        query = cls(
            x=params.get("x") or cls.x, y=params.get("y") or cls.y, group=params.get("group") or cls.group
        )
        errors = {}
        for name, value, allowed in (
            ("x", query.x, X_AXES),
            ("y", query.y, Y_AXES),
            ("group", query.group, GROUPS),
        ):
            if value not in allowed:
                errors[name] = [f"{value!r} is not one of: {', '.join(allowed)}"]
        if errors:
            raise ExploreError(errors)
        return query


def _expression(name: str):
    if name in NUMERIC_PARAMETERS:
        return NUMERIC_PARAMETERS[name]
    if name in CATEGORIES:
        return CATEGORIES[name]
    if name == "experiment":
        return F("experiment_id")
    return F(name)


def title(name: str) -> str:
    return AXIS_TITLES.get(name) or LABELS.get(name, name)


def explore(runs: QuerySet, query: Query) -> dict:
    """The answer of GET /api/explore/ for runs already filtered (filters.AnalysisFilter)."""
    numeric_x = query.x not in CATEGORIES
    order = ("_x", "id")
    aggregates = {
        "xs": ArrayAgg("_x", order_by=order),
        "ys": ArrayAgg("_y", order_by=order),
        "run_ids": ArrayAgg("id", order_by=order),
    }
    if numeric_x:
        aggregates.update(
            slope=RegrSlope("_y", "_x"),
            intercept=RegrIntercept("_y", "_x"),
            r2=RegrR2("_y", "_x"),
            n=RegrCount("_y", "_x"),
        )
    groups = (
        runs.annotate(_x=_expression(query.x), _y=_expression(query.y), _g=_expression(query.group))
        .filter(_x__isnull=False, _y__isnull=False)
        .values("_g")
        .annotate(**aggregates)
        .order_by("_g")
    )
    groups = list(groups)
    names = _group_names(query.group, [g["_g"] for g in groups])
    series, fits = [], []
    for group in groups:
        name = names[group["_g"]]
        series.append(
            {
                "name": name,
                "key": str(group["_g"]),
                "x": group["xs"],
                "y": group["ys"],
                "run_ids": group["run_ids"],
            }
        )
        if numeric_x and group["slope"] is not None and group["n"] >= 3:
            fits.append(
                {
                    "reads_as": fit_reading(query, group["slope"]),
                    "series": name,
                    "slope": group["slope"],
                    "intercept": group["intercept"],
                    "r2": group["r2"],
                    "n": group["n"],
                }
            )
    return {
        "x": query.x,
        "y": query.y,
        "group": query.group,
        "count": sum(len(s["run_ids"]) for s in series),
        "series": series,
        "fits": fits,
        "x_kind": "number" if numeric_x else "category",
        "x_title": title(query.x),
        "y_title": title(query.y),
        "x_unit": PARAMETER_UNITS.get(query.x, UNITS.get(query.x, "")),
        "y_unit": UNITS.get(query.y, ""),
    }


def fit_reading(query: Query, slope: float) -> str:
    """A slope of seconds per byte reads better upside down: the bytes handled per second (for
    redo against recovery, the apply rate)."""
    x_unit = PARAMETER_UNITS.get(query.x, UNITS.get(query.x, ""))
    if x_unit == "B" and UNITS.get(query.y) == "s" and slope > 0:
        return f"{1 / slope / 1e6:,.1f} MB/s"
    return ""


def _group_names(group: str, keys: list) -> dict:
    if group == "engine":
        return {key: ENGINE_NAMES.get(key, key) for key in keys}
    if group == "experiment":
        names = dict(Experiment.objects.filter(id__in=keys).values_list("id", "name"))
        return {key: f"#{key} {names.get(key, '')}".strip() for key in keys}
    if group in PARAMETER_UNITS:
        return {key: format_size(key) if key is not None else "not set" for key in keys}
    return {key: str(key) if key not in (None, "") else "not set" for key in keys}
