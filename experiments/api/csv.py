"""CSV of runs and of explored points, written by PostgreSQL (`COPY ... TO STDOUT`) and streamed as it
comes: 100,000 runs never become Python objects (docs/benchmarks.md has what that bought).

The runs are the view's own queryset, filters and all, compiled by Django; around it one COPY picks
the CSV's columns. Text a spreadsheet would run as a formula is quoted by `csv_text()` (migration
0027) the way defusedcsv quotes it; numbers are left alone.
"""

import io
import json

from defusedcsv import csv  # the header line; the rows' text cells go through csv_text() in SQL
from django.db import connection
from django.db.models import QuerySet
from django.http import StreamingHttpResponse
from psycopg import sql

from experiments.analysis.explore import (
    CATEGORIES,
    POWER_CUT_SUFFIX,
    Query,
    group_names,
    names_known,
    points,
)
from experiments.metrics import METRIC_NAMES
from experiments.parameters import BY_NAME, TABLE

# Every parameter a run can have (experiments/parameters.py), a column each: where a run names
# none, what that meant (the system's build, held-back flushing, a warm cache, local storage, no
# profile), else empty (a crash plan that sweeps nothing).
PARAMETER_COLUMNS = tuple(parameter.name for parameter in TABLE)
TEXT = (
    "status",
    "host_label",
    "engine",
    "server_version",
    "suspect_reason",
    "disturbed_reason",
    "excluded_reason",
)
FLAGS = ("imported", "suspect", "disturbed", "excluded", "verified")
JSON = ("server_options", "phases", "phase_resolution")
# The CSV's columns, in order: the run's own columns, its parameters spread out, every metric.
CSV_COLUMNS = (
    "id",
    "experiment_id",
    "status",
    "host_label",
    "engine",
    *PARAMETER_COLUMNS,
    "server_options",
    "repetition",
    "imported",
    "server_version",
    "suspect",
    "suspect_reason",
    "disturbed",
    "disturbed_reason",
    "excluded",
    "excluded_reason",
    "phases",
    "phase_resolution",
    "finished_at",
    *METRIC_NAMES,
)
HEADERS = {"id": "run_id", "experiment_id": "experiment", "host_label": "host"}
QUERIED = (*(c for c in CSV_COLUMNS if c not in PARAMETER_COLUMNS), "parameters")

# Bytes handed to the client at a time: COPY gives a row at a time, and a chunk a row made the
# response's own overhead the cost.
CHUNK_BYTES = 256 * 1024


def _cell(column: str) -> sql.Composable:
    """One column of the runs CSV as the text it is written as."""
    name = sql.Identifier("run", column)
    if column in PARAMETER_COLUMNS:
        value = sql.SQL("{} ->> {}").format(sql.Identifier("run", "parameters"), column)
        absent = BY_NAME[column].absent_text
        if absent is not None:
            value = sql.SQL("coalesce({}, {})").format(value, absent)
        return sql.SQL("csv_text({})").format(value)
    if column in TEXT:
        return sql.SQL("csv_text({})").format(name)
    if column in FLAGS:  # as Python writes them; a run never verified stays empty
        return sql.SQL("CASE {} WHEN true THEN 'True' WHEN false THEN 'False' END").format(name)
    if column in JSON:  # as JSON, empty where there is nothing
        return sql.SQL("CASE WHEN {0} NOT IN ('{{}}', '[]', 'null') THEN {0}::text END").format(name)
    if column == "finished_at":  # ISO 8601, as Python's isoformat() writes it
        return sql.SQL("to_json({}) #>> '{{}}'").format(name)
    return name  # a number or an id, as PostgreSQL writes it


RUNS_COPY = sql.SQL("COPY (SELECT {cells} FROM ({runs}) AS run ORDER BY run.id) TO STDOUT (FORMAT csv)")


def runs_csv(runs: QuerySet, filename: str = "runs.csv") -> StreamingHttpResponse:
    """Every metric a column; parameters spread into columns; server options, phases and their
    resolution as JSON; flags as True or False."""
    inner, params = runs.order_by().values(*QUERIED).query.sql_with_params()
    statement = RUNS_COPY.format(
        cells=sql.SQL(", ").join(_cell(column) for column in CSV_COLUMNS), runs=sql.SQL(inner)
    )
    header = [HEADERS.get(column, column) for column in CSV_COLUMNS]
    return _stream(filename, header, statement, params)


# A series' name: its key's in `names`, else `otherwise`, else the key itself. The names are
# quoted once (the uncorrelated subquery runs once), not once a line; only a key without a name is
# quoted on its line.
EXPLORE_COPY = sql.SQL(
    "COPY (SELECT point.id, "
    "coalesce((SELECT jsonb_object_agg(key, csv_text(value)) FROM jsonb_each_text({names}::jsonb))"
    " ->> (coalesce(point._g::text, '') || point._m), "
    "csv_text(coalesce(nullif({otherwise}, ''), point._g::text) || point._m)), "
    "{x}, point._y FROM ({points}) AS point ORDER BY point.id) TO STDOUT (FORMAT csv)"
)


def explore_csv(runs: QuerySet, query: Query) -> StreamingHttpResponse:
    """The points behind an /explore/ chart, one line per run in the order of their ids, each naming
    its series."""
    chosen = points(runs, query)
    known = names_known(query.group)
    if known is None:  # named from the runs' own data: their keys first
        keys = list(chosen.order_by().values_list("_g", flat=True).distinct())
        known = (
            {"" if k is None else str(k): name for k, name in group_names(query.group, keys).items()},
            "",
        )
    names, otherwise = known
    # a series of power-cut runs is named with a suffix (points()' "_m"): its name looked up whole
    names = {key + suffix: name + suffix for key, name in names.items() for suffix in ("", POWER_CUT_SUFFIX)}
    inner, params = chosen.order_by().values("id", "_g", "_m", "_x", "_y").query.sql_with_params()
    x = sql.SQL("csv_text(point._x::text)" if query.x in CATEGORIES else "point._x")
    statement = EXPLORE_COPY.format(names=json.dumps(names), otherwise=otherwise, x=x, points=sql.SQL(inner))
    header = [query.group, query.x, query.y]
    return _stream(f"explore-{query.y}-vs-{query.x}.csv", ["run_id", *header], statement, params)


def _stream(filename: str, header: list[str], statement: sql.Composable, params) -> StreamingHttpResponse:
    def chunks():
        line = io.StringIO()
        csv.writer(line, lineterminator="\n").writerow(header)  # COPY ends its lines with \n too
        yield line.getvalue().encode()
        pending = bytearray()
        with connection.cursor() as cursor, cursor.copy(statement, params) as copy:
            for row in copy:
                pending += row
                if len(pending) >= CHUNK_BYTES:
                    yield bytes(pending)
                    pending.clear()
        yield bytes(pending)

    response = StreamingHttpResponse(chunks(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
