"""Any metric against any parameter or metric, grouped (GET /api/explore/ and /explore/).

PostgreSQL does the heavy part: it groups the runs, writes each group's points as JSON arrays in
one pass and fits the line with its own regression aggregates (regr_slope, regr_intercept,
regr_r2), so 100,000 runs never become 100,000 Python objects.
"""

import json
from dataclasses import dataclass, field

from django.contrib.postgres.aggregates import RegrIntercept, RegrR2, RegrSlope, RegrSXX, RegrSXY, RegrSYY
from django.db.models import (
    Aggregate,
    BigIntegerField,
    Case,
    CharField,
    Count,
    F,
    FloatField,
    Max,
    Min,
    QuerySet,
    TextField,
    Value,
    When,
)
from django.db.models.fields.json import KT
from django.db.models.functions import Cast, Coalesce

from experiments.analysis import fits
from experiments.analysis.cells import ENGINE_NAMES
from experiments.metrics import LABELS, NUMERIC_METRICS, PHASE_AXES, UNITS
from experiments.models import Experiment
from experiments.parameters import AXIS_TITLES, NUMBER, PARAMETER_UNITS, TABLE
from experiments.vocabulary import CRASH_METHOD_LABELS
from recovery_lab_cli.units import MIB, format_size


def _whole_number(name: str) -> Case:
    """A number kept in a run's parameters, cast only where the stored value is a whole number: no
    stored value can make a query fail."""
    return Case(
        When(
            **{f"parameters__{name}__regex": r"^[0-9]{1,18}$"},
            then=Cast(KT(f"parameters__{name}"), BigIntegerField()),
        ),
        default=None,
        output_field=BigIntegerField(),
    )


def _phase_seconds(name: str) -> Case:
    """A recovery phase's seconds, kept in a run's `phases`; none where the run has no such phase
    (or a value that is no number: no stored value can make a query fail)."""
    return Case(
        When(
            **{f"phases__{name}__regex": r"^[0-9]{1,12}(\.[0-9]{1,12})?([eE][-+]?[0-9]{1,3})?$"},
            then=Cast(KT(f"phases__{name}"), FloatField()),
        ),
        default=None,
        output_field=FloatField(),
    )


def _named(name: str, absent: str | None):
    """A value kept in a run's parameters as text; a run that names none had `absent` (the system's
    build, local storage, a warm cache)."""
    if absent is None:
        return KT(f"parameters__{name}")
    return Coalesce(KT(f"parameters__{name}"), Value(absent), output_field=TextField())


# Every parameter is an axis (experiments/parameters.py): by its Run column, as a whole number,
# or as a category (a swept redo target, "96M", among them: its bytes are the redo_bytes metric).
NUMERIC_PARAMETERS = {
    parameter.name: F(parameter.column) if parameter.column else _whole_number(parameter.name)
    for parameter in TABLE
    if parameter.column or parameter.kind == NUMBER
}
CATEGORIES = {
    "engine": F("engine"),
    "server_version": F("server_version"),
    "host": F("host_label"),
    "crash_method": F("crash_method"),
    **{
        parameter.name: _named(parameter.name, parameter.absent_text)
        for parameter in TABLE
        if parameter.name not in NUMERIC_PARAMETERS
    },
}
X_AXES = (*NUMERIC_PARAMETERS, *CATEGORIES, *NUMERIC_METRICS, *PHASE_AXES)
Y_AXES = (*NUMERIC_METRICS, *PHASE_AXES)
POWER_CUT_SUFFIX = " · power loss"
GROUPS = ("engine", "host", "server_version", "crash_method", "experiment", *(p.name for p in TABLE))


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
    if name in PHASE_AXES:
        return _phase_seconds(PHASE_AXES[name])
    return F(name)


def _unit(name: str) -> str:
    """The unit of an axis' values: bytes where they are numbers of bytes (a swept redo target,
    "96M", is a category: its text)."""
    if name in CATEGORIES:
        return ""
    return PARAMETER_UNITS.get(name, UNITS.get(name, ""))


def title(name: str) -> str:
    return AXIS_TITLES.get(name) or LABELS.get(name, name)


class Median(Aggregate):
    """The median of a group, in PostgreSQL (percentile_cont), as numpy's median of the same values."""

    function = "percentile_cont"
    template = "%(function)s(0.5) WITHIN GROUP (ORDER BY %(expressions)s)"
    output_field = FloatField()


class JsonAggText(Aggregate):
    """json_agg(...) handed over as text: the points go from PostgreSQL into the response as
    they are, never becoming Python numbers (parsing and re-encoding 200,000 of them would cost
    more than the query)."""

    function = "json_agg"
    template = "%(function)s(%(expressions)s)::text"
    output_field = TextField()


@dataclass
class ExploreResult:
    """GET /api/explore/'s answer; each series' points are JSON text straight from PostgreSQL."""

    meta: dict
    series: list[dict] = field(default_factory=list)

    @property
    def numeric(self) -> bool:
        return self.meta["x_kind"] == "number"

    def to_json(self) -> bytes:
        """The answer as docs/design.md writes it, assembled around the JSON PostgreSQL made."""
        series = ",".join(
            f'{{"name": {json.dumps(s["name"])}, "key": {json.dumps(s["key"])}, '
            f'"x": {s["x"]}, "y": {s["y"]}, "run_ids": {s["run_ids"]}}}'
            for s in self.series
        )
        head = json.dumps(self.meta)[:-1]
        return f'{head}, "series": [{series}]}}'.encode()

    def to_dict(self) -> dict:
        series = [
            {
                **_public(s),
                "x": json.loads(s["x"]),
                "y": json.loads(s["y"]),
                "run_ids": json.loads(s["run_ids"]),
            }
            for s in self.series
        ]
        return {**self.meta, "series": series}

    def to_outline(self) -> dict:
        """to_dict() with each series' points left as JSON text and stood in for by their ranges
        ([low, high] of x and of y, which is all an axis or a fitted line is drawn from): a
        chart of 100,000 points is drawn without them becoming Python numbers (explore_page_json).
        Numeric x only."""
        series = [
            {**_public(s), "x": s["ranges"][:2], "y": s["ranges"][2:], "run_ids": [], "n": s["n"]}
            for s in self.series
        ]
        return {**self.meta, "series": series}


def _public(series: dict) -> dict:
    return {k: v for k, v in series.items() if k not in ("ranges", "n")}


def explore(runs: QuerySet, query: Query) -> ExploreResult:
    """Y against X per group for runs already filtered (filters.AnalysisFilter). The three
    arrays of a group are built from the same rows in the same order, so they line up."""
    numeric_x = query.x not in CATEGORIES
    aggregates = {
        "xs": JsonAggText("_x"),
        "ys": JsonAggText("_y"),
        "run_ids": JsonAggText("id"),
        "n": Count("id"),
    }
    if numeric_x:  # the fit, and the ranges the chart's axes are drawn over (explore_page_json)
        aggregates.update(
            slope=RegrSlope("_y", "_x"),
            intercept=RegrIntercept("_y", "_x"),
            r2=RegrR2("_y", "_x"),
            x_low=Min("_x"),
            x_high=Max("_x"),
            y_low=Min("_y"),
            y_high=Max("_y"),
        )
    if reads_as_rate(query):  # what fits.why_no_rate_of looks at, from the same rows
        aggregates.update(
            sxx=RegrSXX("_y", "_x"), syy=RegrSYY("_y", "_x"), sxy=RegrSXY("_y", "_x"), y_median=Median("_y")
        )
    groups = list(points(runs, query).values("_g", "_m").annotate(**aggregates).order_by("_g", "_m"))
    names = group_names(query.group, [g["_g"] for g in groups])
    result = ExploreResult(
        meta={
            "x": query.x,
            "y": query.y,
            "group": query.group,
            "count": sum(g["n"] for g in groups),
            "fits": [],
            "x_kind": "number" if numeric_x else "category",
            "x_title": title(query.x),
            "y_title": title(query.y),
            "x_unit": _unit(query.x),
            "y_unit": UNITS.get(query.y, ""),
        }
    )
    for group in groups:
        name = names[group["_g"]] + group["_m"]
        result.series.append(
            {
                "name": name,
                "key": str(group["_g"]) + ("|power_loss" if group["_m"] else ""),
                "x": group["xs"],
                "y": group["ys"],
                "run_ids": group["run_ids"],
                "n": group["n"],
                "ranges": [group["x_low"], group["x_high"], group["y_low"], group["y_high"]]
                if numeric_x
                else None,
            }
        )
        if numeric_x and group["slope"] is not None and group["n"] >= 3:
            result.meta["fits"].append(
                {
                    "series": name,
                    "slope": group["slope"],
                    "intercept": group["intercept"],
                    "r2": group["r2"],
                    "n": group["n"],
                    "reads_as": fit_reading(query, group),
                }
            )
    return result


def reads_as_rate(query: Query) -> bool:
    """Seconds against bytes: a slope that reads better upside down, as bytes handled per second."""
    x_unit = _unit(query.x)
    return x_unit == "B" and UNITS.get(query.y) == "s"


def fit_reading(query: Query, group: dict) -> str:
    """A slope of seconds per byte reads better upside down: the bytes handled per second (for
    redo against recovery, the apply rate), where the runs can carry one (fits.why_no_rate_of,
    from the group's sums of squares, range and median taken in SQL); else why not."""
    if not reads_as_rate(query):
        return ""
    slope_ci = fits.slope_interval(group["slope"], group["n"], group["sxx"], group["syy"], group["sxy"])
    refusal = fits.why_no_rate_of(
        slope_ci, group["intercept"], group["x_low"], group["x_high"], group["y_median"]
    )
    if refusal:
        return f"no rate: {refusal}"
    return f"{1 / group['slope'] / MIB:,.1f} MiB/s"


def points(runs: QuerySet, query: Query) -> QuerySet:
    """The runs that have both values, each with its x (`_x`), y (`_y`), group key (`_g`) and the
    suffix of its series' name (`_m`): the explore answer and its CSV both start here."""
    # Runs crashed by a power cut are a series of their own in any grouping (the layer slows the
    # workload before the crash; they answer a durability question): "_m" splits them off.
    power_cut = "" if query.group == "crash_method" else POWER_CUT_SUFFIX
    return runs.annotate(
        _x=_expression(query.x),
        _y=_expression(query.y),
        _g=_expression(query.group),
        _m=Case(
            When(crash_method="power_loss", then=Value(power_cut)),
            default=Value(""),
            output_field=CharField(),
        ),
    ).filter(_x__isnull=False, _y__isnull=False)


def group_names(group: str, keys: list) -> dict:
    """What a series is called, for each group key."""
    known = names_known(group)
    if known is not None:
        names, otherwise = known
        return {key: names.get(_text(key), otherwise or _text(key)) for key in keys}
    if group == "experiment":
        names = dict(Experiment.objects.filter(id__in=keys).values_list("id", "name"))
        return {key: f"#{key} {names.get(key, '')}".strip() for key in keys}
    return {key: format_size(key) if key is not None else "not set" for key in keys}  # sizes


def names_known(group: str) -> tuple[dict[str, str], str] | None:
    """For a group whose series are named without looking at the runs: the names by key (as
    text; a missing key is ""), and the name of any other key ("" where it is the key itself).
    None for the groups named from the runs' own data (experiments, sizes)."""
    if group == "engine":
        return ENGINE_NAMES, ""
    if group == "crash_method":
        return CRASH_METHOD_LABELS, "imported (unknown)"
    if group == "experiment" or _unit(group):
        return None
    return {"": "not set"}, ""


def _text(key) -> str:
    return "" if key is None else str(key)
