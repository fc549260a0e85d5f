"""CSV of runs and of explored points, streamed (a 100,000-run export never sits in memory)."""

import csv
import json

from django.http import StreamingHttpResponse

from .metrics import METRIC_NAMES

RUN_COLUMNS = (
    "id",
    "experiment_id",
    "status",
    "host_label",
    "engine",
    "parameters",
    "server_options",
    "repetition",
    "imported",
    "server_version",
    "suspect",
    "suspect_reason",
    "excluded",
    "excluded_reason",
    "phases",
    "finished_at",
    *METRIC_NAMES,
)
PARAMETER_COLUMNS = ("buffer_pool_size", "redo_log_size", "insert_rate")


class _Echo:
    """A file-like object whose write returns the line: csv.writer feeds the stream with it."""

    def write(self, value):
        return value


def _stream(filename: str, header: list[str], rows) -> StreamingHttpResponse:
    writer = csv.writer(_Echo())

    def lines():
        yield writer.writerow(header)
        for row in rows:
            yield writer.writerow(row)

    response = StreamingHttpResponse(lines(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def runs_csv(runs, filename: str = "runs.csv") -> StreamingHttpResponse:
    """Every metric a column; parameters spread into columns; server options and phases as JSON."""
    header = [
        "run_id",
        "experiment",
        "status",
        "host",
        "engine",
        *PARAMETER_COLUMNS,
        "server_options",
        "repetition",
        "imported",
        "server_version",
        "suspect",
        "suspect_reason",
        "excluded",
        "excluded_reason",
        "phases",
        "finished_at",
        *METRIC_NAMES,
    ]

    def rows():
        for values in runs.order_by("id").values_list(*RUN_COLUMNS).iterator(chunk_size=2000):
            record = dict(zip(RUN_COLUMNS, values, strict=True))
            yield [
                record["id"],
                record["experiment_id"],
                record["status"],
                record["host_label"],
                record["engine"],
                *(record["parameters"].get(name, "") for name in PARAMETER_COLUMNS),
                json.dumps(record["server_options"], sort_keys=True) if record["server_options"] else "",
                record["repetition"],
                record["imported"],
                record["server_version"],
                record["suspect"],
                record["suspect_reason"],
                record["excluded"],
                record["excluded_reason"],
                json.dumps(record["phases"], sort_keys=True) if record["phases"] else "",
                record["finished_at"].isoformat() if record["finished_at"] else "",
                *("" if record[name] is None else record[name] for name in METRIC_NAMES),
            ]

    return _stream(filename, header, rows())


def explore_csv(result: dict) -> StreamingHttpResponse:
    """The points behind an /explore/ chart: one line per run."""
    header = ["run_id", result["group"], result["x"], result["y"]]
    rows = (
        [run_id, series["name"], x, y]
        for series in result["series"]
        for run_id, x, y in zip(series["run_ids"], series["x"], series["y"], strict=True)
    )
    return _stream(f"explore-{result['y']}-vs-{result['x']}.csv", header, rows)
