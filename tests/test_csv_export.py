"""The CSVs PostgreSQL writes (COPY, experiments/api/csv.py) hold the same cells Python's
defusedcsv writer wrote of the same rows before, for text built to trip either: formulas, pipes,
quotes, commas, line breaks, non-ASCII, empty and missing values, flags, JSON and numbers."""

import csv as plain_csv
import io
import json
from datetime import UTC, datetime

import pytest
from defusedcsv import csv as defused

from experiments.api.csv import CSV_COLUMNS, HEADERS, PARAMETER_COLUMNS, QUERIED
from experiments.models import Run
from experiments.parameters import BY_NAME

from .factories import ExperimentFactory, RunFactory

AWKWARD = [
    '=HYPERLINK("http://evil.example/","click")',
    "+cmd|' /C calc'!A0",
    "-2+3",
    "-1.5",
    "@SUM(1,1)",
    "%appdata%|x",
    "|pipe",
    "a, b",
    'say "hi"',
    "two\nlines",
    "crlf\r\nend",
    "naïve ☃",
    "",
    "1,000.5",
]


def reference(records) -> list[list[str]]:
    """What the CSV was when Python wrote it: defusedcsv over each run's values."""

    def cell(record, column):
        if column in PARAMETER_COLUMNS:  # a run that names none: what that meant
            return record["parameters"].get(column, BY_NAME[column].absent_text or "")
        value = record[column]
        if column in ("server_options", "phases", "phase_resolution"):
            return json.dumps(value, sort_keys=True) if value else ""
        if column == "finished_at":
            return value.isoformat() if value else ""
        return "" if value is None else value

    buffer = io.StringIO()
    writer = defused.writer(buffer)
    writer.writerow([HEADERS.get(c, c) for c in CSV_COLUMNS])
    for record in records:
        writer.writerow([cell(record, c) for c in CSV_COLUMNS])
    return list(plain_csv.reader(io.StringIO(buffer.getvalue())))


def same(column: str, ours: str, theirs: str) -> bool:
    """A cell reads the same: JSON as the same value, numbers as the same number."""
    if column in ("server_options", "phases", "phase_resolution") and ours and theirs:
        return json.loads(ours) == json.loads(theirs)
    try:
        return float(ours) == float(theirs)
    except ValueError:
        return ours == theirs


@pytest.mark.parametrize("start", range(0, len(AWKWARD), 7))
def test_the_runs_csv_postgresql_writes_reads_as_python_wrote_it(start, api):
    experiment = ExperimentFactory()
    texts = AWKWARD[start : start + 7]
    for index, text in enumerate(texts):
        RunFactory(
            experiment=experiment,
            status="done",
            host_label=text[:100],
            server_version=text,
            suspect=index % 2 == 0,
            suspect_reason=text,
            excluded=index % 3 == 0,
            excluded_reason=text[::-1],
            verified=[True, False, None][index % 3],
            recovery_seconds=[0.1, -0.5, 12.0, 1e-7, 123456789.125, None, 3.0][index],
            redo_bytes=[None, 0, 2**40, 7, 1, 2, 3][index],
            parameters={
                "buffer_pool_size": text,
                "redo_log_size": "64M",
                "insert_rate": -index,
                "binlog_files": 200,
            },
            server_options={"innodb_flush_log_at_trx_commit": 2, "note": text} if index % 2 else {},
            phases={"redo_scan": 0.25, "redo_apply": 1.5} if index else {},
            finished_at=datetime(2026, 11, 27, 11, index, 5, 123456 * (index % 2), tzinfo=UTC),
        )
    answer = api.get("/api/runs/", {"experiment": experiment.id, "format": "csv"})
    ours = list(plain_csv.reader(io.StringIO(b"".join(answer.streaming_content).decode())))
    records = Run.objects.filter(experiment=experiment).order_by("id").values(*QUERIED)
    theirs = reference(records)
    assert ours[0] == theirs[0] and len(ours) == len(theirs) == len(texts) + 1
    for mine, expected in zip(ours[1:], theirs[1:], strict=True):
        differing = [
            (column, a, b)
            for column, a, b in zip(CSV_COLUMNS, mine, expected, strict=True)
            if not same(column, a, b)
        ]
        assert differing == []


def test_the_explore_csv_holds_the_points_the_chart_draws(api):
    experiment = ExperimentFactory(name="=cmd|x")
    for index in range(6):
        RunFactory(
            experiment=experiment,
            status="done",
            engine=["innodb", "rocksdb"][index % 2],
            redo_bytes=(index + 1) * 1_000_000,
            recovery_seconds=0.1 * (index + 1),
            crash_method="power_loss" if index == 5 else "kill",
            server_version=["=1+1", "", "10.11.9"][index % 3],
        )
    for group in ("engine", "experiment", "server_version"):
        query = {"x": "redo_bytes", "y": "recovery_seconds", "group": group}
        chart = api.get("/api/explore/", query).json()
        drawn = {
            (run_id, defused._escape(series["name"]), x, y)
            for series in chart["series"]
            for run_id, x, y in zip(series["run_ids"], series["x"], series["y"], strict=True)
        }
        answer = api.get("/api/explore/", {**query, "format": "csv"})
        lines = list(plain_csv.reader(io.StringIO(b"".join(answer.streaming_content).decode())))
        assert lines[0] == ["run_id", group, "redo_bytes", "recovery_seconds"]
        written = {(int(i), name, int(x), float(y)) for i, name, x, y in lines[1:]}
        assert written == drawn and len(lines) == 7
    by_version = api.get("/api/explore/", {"x": "server_version", "group": "engine", "format": "csv"})
    versions = [
        line[2] for line in plain_csv.reader(io.StringIO(b"".join(by_version.streaming_content).decode()))
    ]
    assert "'=1+1" in versions and "=1+1" not in versions
