"""CSV of runs and of explored points, streamed (a 100,000-run export never sits in memory)."""

import io
import json

from defusedcsv import csv  # a cell a spreadsheet would run as a formula is quoted
from django.http import StreamingHttpResponse

from experiments.metrics import METRIC_NAMES

# Every parameter a run can have, a column each (empty where a run does not name it: server_build
# and flushing are named only when not the default, system and held_back).
PARAMETER_COLUMNS = (
    "buffer_pool_size",
    "redo_log_size",
    "insert_rate",
    "binlog_files",
    "server_build",
    "flushing",
    "crash_when",
    "crash_redo_bytes",
    "crash_after_seconds",
)
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


# Lines sent to the client per chunk: one chunk a line made the response's own overhead the
# cost (100,000 chunks through Django's streaming for 100,000 runs).
LINES_PER_CHUNK = 2000


def _stream(filename: str, header: list[str], rows) -> StreamingHttpResponse:
    def lines():
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        writer.writerow(header)
        for count, row in enumerate(rows, start=1):
            writer.writerow(row)
            if count % LINES_PER_CHUNK == 0:
                yield buffer.getvalue()
                buffer.seek(0)
                buffer.truncate()
        yield buffer.getvalue()

    response = StreamingHttpResponse(lines(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def runs_csv(runs, filename: str = "runs.csv") -> StreamingHttpResponse:
    """Every metric a column; parameters spread into columns; server options, phases and their
    resolution as JSON."""
    header = [HEADERS.get(column, column) for column in CSV_COLUMNS]
    records = runs.order_by("id").values(*QUERIED).iterator(chunk_size=2000)
    return _stream(filename, header, ([_cell(r, c) for c in CSV_COLUMNS] for r in records))


def _cell(record: dict, column: str):
    if column in PARAMETER_COLUMNS:
        return record["parameters"].get(column, "")
    value = record[column]
    if column in ("server_options", "phases", "phase_resolution"):
        return json.dumps(value, sort_keys=True) if value else ""
    if column == "finished_at":
        return value.isoformat() if value else ""
    return "" if value is None else value


def explore_csv(result: dict) -> StreamingHttpResponse:
    """The points behind an /explore/ chart: one line per run."""
    header = ["run_id", result["group"], result["x"], result["y"]]
    rows = (
        [run_id, series["name"], x, y]
        for series in result["series"]
        for run_id, x, y in zip(series["run_ids"], series["x"], series["y"], strict=True)
    )
    return _stream(f"explore-{result['y']}-vs-{result['x']}.csv", header, rows)
