"""Cells of an experiment (engine x parameter values x host, over its repetitions) and what the
statistics say of each. Plain rows in, dataclasses out; no Django.

A row is a dict of one Run's columns (`ROW_FIELDS`, as `QuerySet.values()` gives them).
"""

import json
from collections import defaultdict
from dataclasses import dataclass, field

from experiments.analysis import stats
from experiments.engines import engine_order
from experiments.metrics import NUMERIC_METRICS
from experiments.parameters import ALWAYS_NAMED, DEFINED, PARAMETER_LABELS, SWEPT
from experiments.vocabulary import ENGINE_LABELS, RATE_REACHED_SHARE
from recovery_lab_cli.units import MIB, SizeError, parse_size
from runner.contract import UNSAID_DEFAULTS

ENGINE_NAMES = ENGINE_LABELS
ROW_FIELDS = (
    "id",
    "experiment_id",
    "status",
    "engine",
    "host_label",
    "parameters",
    "server_options",
    "repetition",
    "imported",
    "server_version",
    "server_family",
    "phases",
    "phase_resolution",
    "suspect",
    "suspect_reason",
    "disturbed",
    "excluded",
    "excluded_reason",
    "recovery_bound",
    "buffer_pool_bytes",
    "redo_log_bytes",
    "insert_rate",
    *NUMERIC_METRICS,
)
# A run's verdict (Run.recovery_bound) in words, for hover boxes and the cells' sentences.
BOUND_WORDS = {
    "cpu_one_core": "bound by one core",
    "cpu_all_cores": "bound by the CPU, every core busy",
    "disk": "bound by the disk",
    "host_busy": "held back by other work on the host (waiting for a core)",
    "waiting": "neither a core nor the disk busy (waiting)",
    "mixed": "held back by no one resource",
    "unknown": "too short to say what bound it",
}
# What the summary table shows per cell, in this order.
SUMMARY_METRICS = (
    ("recovery_seconds", "recovery (s)"),
    ("downtime_seconds", "downtime (s)"),
    ("redo_bytes", "redo (MiB)"),
    ("redo_apply_mb_per_s", "apply rate (MiB/s)"),
    ("rows_undone", "rows undone"),
    ("lost_commits", "acknowledged commits lost"),
    ("workload_tps", "TPS"),
    ("achieved_insert_rate", "insert rate reached (rows/s)"),
)
# Summarised too, for the charts (the trade-off of a bigger log, the clean-start baseline).
CHART_METRICS = ("pages_written", "log_bytes_written", "clean_start_seconds", "ready_seconds")
PARAMETER_ORDER = ALWAYS_NAMED
# The crash plan's swept values, among a run's parameters (definition.CRASH_SWEEPS).
CRASH_AXES = tuple(parameter.name for parameter in SWEPT)


def log_bytes(cell: "Cell") -> int:
    """A cell's redo log size in bytes, 0 where it has none that reads as a size."""
    try:
        return parse_size(str(cell.parameters.get("redo_log_size")))
    except SizeError:
        return 0


# Durations timed by a run's phases, which a log can time only so finely: a recovery shorter than
# its log resolves is stored as 0 s (its first and last lines stamped alike); compared, it counts
# at that resolution, an upper bound, and the comparison says how many runs did.
RESOLVED_METRICS = ("recovery_seconds", "replay_seconds")


def resolved(row: dict) -> dict:
    """The row with each of RESOLVED_METRICS shorter than its log resolves counted at the
    resolution, and `at_resolution` {metric: seconds} naming those it raised."""
    bound = max((row.get("phase_resolution") or {}).values(), default=0.0)
    raised = {m: bound for m in RESOLVED_METRICS if row.get(m) is not None and row[m] < bound}
    return {**row, **raised, "at_resolution": raised} if raised else row


def counted_at_resolution(rows, metric: str) -> dict:
    """Of resolved rows, how many had `metric` raised to its resolution (a recovery's rates per GiB
    or per 1000 rows with it), and the coarsest: {} if none."""
    source = "recovery_seconds" if metric.startswith("recovery_seconds_per_") else metric
    raised = [row["at_resolution"][source] for row in rows if source in (row.get("at_resolution") or {})]
    return {"runs": len(raised), "seconds": max(raised)} if raised else {}


def analysable(row: dict) -> bool:
    return row["status"] == "done" and not row["suspect"] and not row["excluded"]


def settings_text(row: dict) -> str:
    """'pool 1G · log 256M · rate 2000 · innodb_flush_log_at_trx_commit=1'"""
    parts = [
        # a switch is its name when on ("profiled"), not "profiled True"
        PARAMETER_LABELS.get(k, k) if v is True else f"{PARAMETER_LABELS.get(k, k)} {v}"
        for k, v in sorted(row["parameters"].items())
        if not (k == "binlog_files" and not v)  # the binary log off: the usual case, not worth a word
    ]
    parts += [f"{k}={v}" for k, v in sorted(row["server_options"].items())]
    return " · ".join(parts)


def hover_text(row: dict) -> str:
    """Every parameter and the repetition, for a chart's hover box."""
    text = (
        f"run {row['id']} · {ENGINE_NAMES.get(row['engine'], row['engine'])} on {row['host_label']}"
        f"<br>{settings_text(row)}<br>repetition {row['repetition']}"
    )
    if row["imported"]:
        text += f"<br>imported, {row['server_version'] or 'version unknown'}"
    if row.get("recovery_bound"):
        text += f"<br>recovery: {BOUND_WORDS.get(row['recovery_bound'], row['recovery_bound'])}"
    if row["suspect"]:
        text += f"<br>SUSPECT: {row['suspect_reason']}"
    return text


def scalar_key(value):
    """A stored value as a key: scalars as they are, anything else (which no definition makes,
    but a stored row may hold) as its JSON text, so no value can fail a page."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return json.dumps(value, sort_keys=True, default=str)


def cell_key(row: dict) -> tuple:
    return (
        row["host_label"],
        row["engine"],
        tuple(sorted((k, scalar_key(v)) for k, v in row["parameters"].items())),
        tuple(sorted((k, scalar_key(v)) for k, v in row["server_options"].items())),
    )


@dataclass
class Cell:
    host: str
    engine: str
    parameters: dict
    server_options: dict
    label: str
    run_ids: list[int] = field(default_factory=list)
    summaries: dict[str, stats.Summary] = field(default_factory=dict)
    phases: dict[str, float] = field(default_factory=dict)
    rate_note: str = ""
    # The crash was planned at a redo target (crash.redo_bytes) its runs did not reach.
    target_note: str = ""

    def median(self, metric: str) -> float | None:
        return self.summaries[metric].median

    @property
    def needs_more(self) -> list[str]:
        """Why this cell's recovery or downtime should not be read yet."""
        reasons = []
        for name, label in (("recovery_seconds", "recovery"), ("downtime_seconds", "downtime")):
            summary = self.summaries.get(name)
            if summary is not None and summary.n and summary.needs_more:
                reasons.append(f"{label}: {summary.reason}")
        return reasons


def build_cells(rows: list[dict]) -> list[Cell]:
    """One Cell per engine x parameters x host, summarising its analysable runs only."""
    grouped: dict[tuple, list[dict]] = defaultdict(list)
    for row in rows:
        if analysable(row):
            grouped[cell_key(row)].append(row)
    keys = sorted(grouped, key=_sort_key)
    metrics = (*(name for name, _ in SUMMARY_METRICS), *CHART_METRICS)
    # Every sample of every cell summarised in one batch (scipy vectorises equal sizes).
    requests = [(key, metric, [r[metric] for r in grouped[key]]) for key in keys for metric in metrics]
    phase_requests = [
        (key, name, [r["phases"].get(name) for r in grouped[key]])
        for key in keys
        for name in sorted({name for r in grouped[key] for name in r["phases"]})
    ]
    summaries = stats.summarize_many([values for _, _, values in requests])
    phase_medians = stats.summarize_many([values for _, _, values in phase_requests])
    cells = {}
    for key in keys:
        first = grouped[key][0]
        cells[key] = Cell(
            host=first["host_label"],
            engine=first["engine"],
            parameters=first["parameters"],
            server_options=first["server_options"],
            label=f"{ENGINE_NAMES.get(first['engine'], first['engine'])} · {settings_text(first)}",
            run_ids=[r["id"] for r in grouped[key]],
        )
    for (key, metric, _), summary in zip(requests, summaries, strict=True):
        cells[key].summaries[metric] = summary
    for (key, name, _), summary in zip(phase_requests, phase_medians, strict=True):
        if summary.median is not None:
            cells[key].phases[name] = summary.median
    for key, cell in cells.items():
        cell.rate_note = _rate_note(
            grouped[key][0].get("insert_rate"), cell.summaries["achieved_insert_rate"]
        )
        cell.target_note = _target_note(cell.parameters.get("crash_redo_bytes"), cell.summaries["redo_bytes"])
    return list(cells.values())


def _sort_key(key: tuple) -> tuple:
    """Cells in the order a person reads them: by engine (the registry's order), then each
    setting by value, sizes by bytes (8M, 32M, 96M; 256M, 1G), numbers by value, text as text."""
    host, engine, parameters, options = key
    return (
        host,
        engine_order(engine),
        engine,
        [(k, value_order(v)) for k, v in parameters],
        [(k, value_order(v)) for k, v in options],
    )


def value_order(value) -> tuple:
    """A setting's value as a sort key: a size by its bytes, a number by itself, else its text."""
    if isinstance(value, bool):
        return (2, 0, str(value))
    if isinstance(value, int | float):
        return (0, value, "")
    text = str(value)
    try:
        return (0, parse_size(text), "")
    except SizeError:
        pass
    try:
        return (0, float(text), "")
    except ValueError:
        return (1, 0, text)


def _rate_note(asked: int | None, reached: stats.Summary) -> str:
    if not asked or reached.median is None or reached.median >= RATE_REACHED_SHARE * asked:
        return ""
    return f"reached {reached.median:,.0f} of the {asked:,} rows/s asked for: not the same work"


def _target_note(target: str | None, redo: stats.Summary) -> str:
    """Where a cell's runs crashed short of the redo target it is labelled with (by the share a
    rate must reach too), what they reached, in words; "" otherwise."""
    try:
        goal = parse_size(target) if target else None
    except SizeError:
        return ""
    if not goal or redo.median is None or redo.median >= RATE_REACHED_SHARE * goal:
        return ""
    return (
        f"crashed at {redo.median / MIB:,.1f} MiB of redo (median of {redo.n}), "
        f"{1 - redo.median / goal:.0%} short of its {target} target: the workload ended first "
        "(give it more time_seconds)"
    )


def varied_axes(rows: list[dict]) -> list[str]:
    """The parameters (and engine, host, server options, version) that take more than one value
    among these runs: the axes worth a chart."""
    values: dict[str, set] = defaultdict(set)
    for row in rows:
        values["engine"].add(row["engine"])
        values["host"].add(row["host_label"])
        values["server_version"].add(row["server_version"])
        for name in PARAMETER_ORDER:  # binlog_files: named by every run made since it existed
            values[name].add(str(row["parameters"].get(name, 0 if name == "binlog_files" else None)))
        for name, value in row["server_options"].items():
            values[name].add(str(value))
        for name, default in UNSAID_DEFAULTS.items():  # a run that names none has the default
            value = row["parameters"].get(name, default)
            values[name].add(bool(value) if isinstance(default, bool) else value)
        for name in CRASH_AXES:  # a swept crash plan is an axis too (its values otherwise pooled)
            values[name].add(str(row["parameters"].get(name)))
    unsaid = [parameter.name for parameter in DEFINED if parameter.name in UNSAID_DEFAULTS]
    order = [*PARAMETER_ORDER, *CRASH_AXES, "engine", "host", *unsaid, "server_version"]
    order += sorted(k for k in values if k not in order)
    return [name for name in order if len(values[name]) > 1]
