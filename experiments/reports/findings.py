"""Reports: an experiment (or a comparison) for a reader who will not open the dashboard. The
question, the method, findings in sentences built from the statistics, the charts, the summary
table and the caveats. Plain rows in, plain values out; the page and its PDF (pdf.py) render it."""

from collections import Counter, defaultdict

from experiments import parameters
from experiments.analysis import aa
from experiments.analysis.cells import ENGINE_NAMES, PARAMETER_ORDER, Cell
from experiments.analysis.compare import compare_engines
from experiments.metrics import moved_beyond_a_record
from experiments.reports.answers import answers
from experiments.reports.bound import bound_findings
from experiments.reports.effects import parameter_findings
from experiments.reports.redo import engine_where, redo_findings
from experiments.reports.stalled import stall_findings
from recovery_lab_cli.units import binary_bytes, counted, seconds_text
from runner.contract import UNSAID_DEFAULTS

# Sizes in bytes; everything else a number where it reads as one, else text.
SIZE_PARAMETERS = parameters.SIZE_PARAMETERS
MAX_LISTED = 8  # caveats list this many runs by name, then count the rest


def _range(values: list[float]) -> str:
    low, high = min(values), max(values)
    return seconds_text(low) if low == high else f"{seconds_text(low)} to {seconds_text(high)}"


def headline_findings(cells: list[Cell]) -> list[str]:
    """Per engine (and host): how long recovery and downtime took over its cells."""
    grouped: dict[tuple, list[Cell]] = defaultdict(list)
    for cell in cells:
        grouped[(cell.host, cell.engine)].append(cell)
    several_hosts = len({host for host, _ in grouped}) > 1
    found = []
    for (host, engine), group in grouped.items():
        runs = sum(c.summaries["recovery_seconds"].n for c in group)
        recovery = [c.median("recovery_seconds") for c in group if c.median("recovery_seconds") is not None]
        downtime = [c.median("downtime_seconds") for c in group if c.median("downtime_seconds") is not None]
        if not recovery and not downtime:
            continue
        where = engine_where(engine, host, several_hosts)
        if len(group) == 1:
            summary = group[0].summaries["recovery_seconds"]
            # the median, and the interval of the statistic it is for (the geometric mean): one
            # number is not called "typical" beside another's interval
            interval = (
                f"; the geometric mean's 95% CI {seconds_text(summary.ci[0])}-{seconds_text(summary.ci[1])}"
                if summary.ci
                else ""
            )
            sentence = (
                f"{where}: crash recovery took {seconds_text(summary.median)} (median of {summary.n} "
                f"run{'s' if summary.n != 1 else ''}{interval})"
                if summary.median is not None
                else f"{where}: no crash recovery time was measured"
            )
        else:
            sentence = (
                f"{where}: crash recovery took {_range(recovery)} across {len(group)} settings "
                f"(the median per setting, {counted(runs, 'run')})"
                if recovery
                else f"{where}: no crash recovery time was measured"
            )
        if downtime:
            sentence += f"; from the kill to the first query answered, {_range(downtime)}"
        found.append(sentence + ".")
    return found


def engine_findings(rows: list[dict], spreads: dict | None = None) -> list[str]:
    compared = compare_engines(rows, spreads)
    said = [sentence for cell in compared["cells"] for sentence in cell["sentences"]]
    return [
        sentence[0].upper() + sentence[1:] + "." for sentence in [*said, *filter(None, [compared["holds"]])]
    ]


def findings(
    rows: list[dict],
    cells: list[Cell],
    axes: list[str],
    spreads: dict | None = None,
    design: dict | None = None,
) -> list[str]:
    """The experiment's findings in sentences; `spreads`: its hosts' (aa.host_spreads), if known;
    `design`: the definition's crash plan and workload (what its design held equal)."""
    if spreads is None:
        spreads = aa.host_spreads({row["host_label"] for row in rows})
    ordered = [a for a in axes if a not in PARAMETER_ORDER] + list(PARAMETER_ORDER)
    return [
        *stall_findings(rows),
        *headline_findings(cells),
        *answers(rows, cells, ordered, spreads),
        *redo_findings(rows, design),
        *bound_findings(rows, cells),
        *parameter_findings(rows, ordered, spreads),
        *engine_findings(rows, spreads),
    ]


def _listed(lines: list[str]) -> list[str]:
    if len(lines) <= MAX_LISTED:
        return lines
    return [*lines[:MAX_LISTED], f"... and {len(lines) - MAX_LISTED} more (see the runs table)."]


def one_crash_caveat(runs: list) -> list[str]:
    """crash.one_crash: repetitions that restart one crash repeat the restart, not the workload.
    Where the runs restart more than one crash, cells from different crashes stand on one crash a
    side, and their intervals leave out how much crashes vary: said, with the counts."""
    if not any(getattr(r, "image_of_id", None) for r in runs):
        return []
    crashes = {r.image_of_id or r.pk for r in runs}
    if len(crashes) < 2:
        return [
            f"All {len(runs)} runs restart one crash (crash.one_crash): they differ by their restart alone."
        ]
    return [
        f"The {len(runs)} runs restart {len(crashes)} crashes (crash.one_crash): a repetition repeats the "
        "restart, not the workload. Cells from one crash differ by their restart alone; cells from "
        "different crashes stand on one crash a side, and their intervals leave out how much crashes "
        "vary (run repetitions without one_crash to compare those)."
    ]


def caveats(runs: list, cells: list[Cell]) -> list[str]:
    """What a reader must know before trusting a number: runs that failed or were left out, cells
    with too few runs or a rate not reached, imported runs, work still going."""
    found = []
    unfinished = [r for r in runs if not r.is_finished]
    # "still running" only once a run has: a queued experiment's runs wait for their host
    started = any(r.started_at or r.status not in ("queued", "cancelled") for r in runs)
    if unfinished and not started:
        waiting = (
            counted(len(runs), "run")
            if len(unfinished) == len(runs)
            else f"{len(unfinished)} of {counted(len(runs), 'run')}"
        )
        found.append(f"No run had started when this report was made: {waiting} queued.")
    elif unfinished:
        found.append(
            f"The experiment was still running when this report was made: {len(unfinished)} of "
            f"{counted(len(runs), 'run')} had not finished."
        )
    failed = [r for r in runs if r.status == "failed"]
    if failed:
        found.append(f"{len(failed)} of {len(runs)} runs failed and are not in the figures:")
        found += _listed(
            [f"run {r.pk}: {(r.error or 'no error recorded').splitlines()[0][:200]}" for r in failed]
        )
    cancelled = [r for r in runs if r.status == "cancelled"]
    if cancelled:
        one = len(cancelled) == 1
        found.append(
            f"{counted(len(cancelled), 'run')} {'was' if one else 'were'} cancelled before "
            f"{'it' if one else 'they'} finished."
        )
    found += one_crash_caveat(runs)
    found += _listed(
        [
            f"Run {r.pk} is suspect and left out of the statistics: {r.suspect_reason}"
            for r in runs
            if r.suspect
        ]
    )
    found += _listed(
        [
            f"Run {r.pk} was measured on a disturbed host (kept; comparisons say so): {r.disturbed_reason}"
            for r in runs
            if r.disturbed
        ]
    )
    found += _listed(
        [
            f"Run {r.pk} was excluded by {r.excluded_by or 'a user'}: {r.excluded_reason}"
            for r in runs
            if r.excluded
        ]
    )
    for cell in cells:
        for reason in cell.needs_more:
            found.append(f"{cell.label}: {reason}; read its values as rough.")
        if cell.rate_note:
            found.append(f"{cell.label}: the workload {cell.rate_note}.")
    missed = [cell for cell in cells if cell.target_note]
    if missed:
        found.append(f"{len(missed)} of {len(cells)} cells crashed short of their redo target:")
        found += _listed([f"{cell.label}: {cell.target_note}." for cell in missed])
    found += checkpoint_caveat(runs)
    imported = [r for r in runs if r.imported]
    if imported:
        found.append(
            f"{counted(len(imported), 'run')} {'was' if len(imported) == 1 else 'were'} imported from logs "
            f"of runs done elsewhere: {'its' if len(imported) == 1 else 'their'} method is "
            "what those servers did, not this experiment's crash plan."
        )
    return found


def checkpoint_caveat(runs: list) -> list[str]:
    """The runs whose checkpoint moved though their flushing was to be held back, as each run's
    page warns: they replayed less redo than their workloads wrote (seed 001 on MySQL 9.7, 246
    of 332 MB, had said nothing of it on the experiment's page)."""
    done = [r for r in runs if r.status == "done" and r.checkpoint_moved_bytes is not None]
    held = [r for r in done if (r.parameters or {}).get("flushing", UNSAID_DEFAULTS["flushing"]) != "natural"]
    moved = [r for r in held if moved_beyond_a_record(r.checkpoint_moved_bytes, r.log_bytes_written)]
    if not moved:
        return []
    replayed = [
        f"run {r.pk}: {binary_bytes(r.redo_bytes)} of {binary_bytes(r.log_bytes_written)}"
        for r in moved
        if r.redo_bytes is not None and r.log_bytes_written
    ]
    return [
        f"In {len(moved)} of {counted(len(held), 'run')} the checkpoint moved during the workload though "
        "flushing was to be held back: they replayed less redo than their workloads wrote"
        + (f" ({'; '.join(replayed[:MAX_LISTED])})" if replayed else "")
        + "; a larger redo log or buffer pool holds it back."
    ]


def _facts_line(facts: dict) -> str:
    parts = [facts.get("os"), facts.get("kernel") and f"kernel {facts['kernel']}"]
    if facts.get("cpu_count"):
        parts.append(f"{facts['cpu_count']} × {facts.get('cpu_model') or 'CPU'}")
    if facts.get("memory_bytes"):
        parts.append(f"{facts['memory_bytes'] / 2**30:.0f} GiB RAM")
    disk = facts.get("disk") or {}
    floor = disk.get("floor") or {}
    if floor.get("seq_read_mb_s"):
        parts.append(
            f"disk {floor['seq_read_mb_s']:,.0f} MB/s sequential read, "
            f"{floor.get('rand_read_qd1_iops') or 0:,} random reads/s at depth 1 (fio)"
        )
    return " · ".join(p for p in parts if p)


def _in_order(mapping: dict, order: tuple) -> list[tuple]:
    """A JSON object's items in the order people write them (PostgreSQL's jsonb keeps its own)."""
    return sorted(
        mapping.items(), key=lambda item: (order.index(item[0]) if item[0] in order else len(order), item[0])
    )


WORKLOAD_ORDER = ("name", "tables", "table_size", "threads", "events", "time_seconds")
CRASH_ORDER = ("method", "when", "after_seconds", "redo_bytes", "open_rows")


def restart_conditions(runs: list) -> str:
    """What each restart read from, as the runs recorded it: the page cache (warm unless said)
    and the storage (the host's disk unless a class), each value with its number of runs."""
    said = []
    for name, words in (("restart_cache", "page cache"), ("storage", "storage")):
        counts = Counter((r.parameters or {}).get(name, UNSAID_DEFAULTS[name]) for r in runs)
        said.append(
            f"{words} "
            + ", ".join(f"{value} ({n} run{'s' * (n != 1)})" for value, n in sorted(counts.items()))
        )
    return "; ".join(said) if runs else ""


def method(experiment, runs: list) -> dict:
    """How the numbers were made: hosts as they were at run time, server versions, the
    definition's parameters, workload, crash plan and repetitions."""
    definition = experiment.definition or {}
    hosts: dict[str, str] = {}
    for run in runs:
        if run.host_label not in hosts or (not hosts[run.host_label] and run.host_facts):
            hosts[run.host_label] = _facts_line(run.host_facts or {})
    versions = sorted({r.server_version for r in runs if r.server_version})
    workload = definition.get("workload") or {}
    crash = definition.get("crash") or {}
    details = ", ".join(
        f"{k} {v}" for k, v in _in_order(workload, WORKLOAD_ORDER) if k != "name" and v not in (None, 0, "")
    )
    started = [r.started_at for r in runs if r.started_at]
    finished = [r.finished_at for r in runs if r.finished_at]
    return {
        "hosts": sorted(hosts.items()),
        "server_versions": versions,
        "engines": [
            ENGINE_NAMES.get(e, e) for e in definition.get("engines") or sorted({r.engine for r in runs})
        ],
        "parameters": [
            (name, ", ".join(str(v) for v in values))
            for name, values in _in_order(definition.get("parameters") or {}, PARAMETER_ORDER)
        ],
        "server_options": [
            (name, ", ".join(str(v) for v in values))
            for name, values in (definition.get("server_options") or {}).items()
        ],
        "workload": f"{workload.get('name', '')}: {details}" if details else workload.get("name", ""),
        "crash": ", ".join(
            f"{k} {' / '.join(map(str, v)) if isinstance(v, list) else v}"  # a sweep: each value
            for k, v in _in_order(crash, CRASH_ORDER)
            if v not in (None, "")
        ),
        "restart": restart_conditions(runs),
        "repetitions": definition.get("repetitions"),
        "run_count": len(runs),
        "done_count": sum(1 for r in runs if r.status == "done"),
        "first_started": min(started) if started else None,
        "last_finished": max(finished) if finished else None,
    }
