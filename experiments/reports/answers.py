"""The questions an experiment's design asks, answered in a sentence each (docs/sentences.md):

- did the repeats take the same time (seed 001): each cell's range and spread, said;
- what a bigger redo log buys while running and costs at recovery (seed 004): pages written,
  crash recovery and throughput, largest log against smallest, every other setting equal;
- a parameter whose phase is not crash recovery (seed 003: binary log files, whose binlog / XA
  recovery runs after it): compared on the downtime, every value against the fewest, with its own
  phase beside it, and said plainly where nothing changed.

Plain rows and cells in, sentences out; no Django."""

import statistics
from collections import defaultdict

from experiments.analysis import aa, stats
from experiments.analysis.cells import ENGINE_NAMES, Cell, analysable, log_bytes, settings_text
from experiments.metrics import moved_beyond_a_record
from recovery_lab_cli.units import duration_text, seconds_text
from runner.contract import UNSAID_DEFAULTS

# A cell's repeats are listed one sentence each up to this many cells; beyond, one sentence says
# the widest and how many were within 10%.
REPEATS_LISTED = 6
# Parameters that act outside crash recovery: the phase they act on, and how a reader says them.
STARTUP_PARAMETERS = {"binlog_files": ("binlog_recovery", "binary log files", "binlog / XA recovery")}


def repeat_answers(cells: list[Cell]) -> list[str]:
    """Per cell of two or more runs: the range of its crash recovery and how far it spreads
    around its median, in words; the widest named where there are many cells."""
    spread = []
    for cell in cells:
        summary = cell.summaries["recovery_seconds"]
        if summary.n >= 2 and summary.median:
            share = (summary.max - summary.min) / summary.median
            spread.append((share, cell, summary))
    if not spread:
        return []
    if len(spread) > REPEATS_LISTED:
        widest, cell, summary = max(spread, key=lambda item: item[0])
        within = sum(share <= 0.1 for share, *_ in spread)
        return [
            f"Repeats: in {within} of {len(spread)} settings the runs' crash recovery spread within 10% of "
            f"their median; the widest, {cell.label}, took {seconds_text(summary.min)} to "
            f"{seconds_text(summary.max)} ({widest:.0%} of its median, {summary.n} runs)."
        ]
    return [
        f"{cell.label}: its {summary.n} runs took {seconds_text(summary.min)} to {seconds_text(summary.max)} "
        f"of crash recovery, a spread of {share:.0%} of their median ({seconds_text(summary.median)})"
        + (": the repeats agree" if share <= 0.1 else "")
        + "."
        for share, cell, summary in spread
    ]


def _values(rows_by_id: dict, cell: Cell, metric: str) -> list[float]:
    return [
        rows_by_id[i][metric]
        for i in cell.run_ids
        if i in rows_by_id and rows_by_id[i].get(metric) is not None
    ]


def tradeoff_answers(rows: list[dict], cells: list[Cell]) -> list[str]:
    """Per engine and other settings, the largest redo log against the smallest, where both
    measured pages written while running: 'log 1G wrote about 10x fewer pages than log 128M
    (... medians) for 11.5x the crash recovery (...), with no measurable gain in throughput (...)'."""
    rows_by_id = {row["id"]: row for row in rows if analysable(row)}
    groups: dict[tuple, list[Cell]] = defaultdict(list)
    for cell in cells:
        if "redo_log_size" in cell.parameters and log_bytes(cell):
            rest = {k: v for k, v in cell.parameters.items() if k != "redo_log_size"}
            groups[
                (
                    cell.host,
                    cell.engine,
                    settings_text({"parameters": rest, "server_options": cell.server_options}),
                )
            ].append(cell)
    found = []
    for (_, engine, rest), group in sorted(groups.items()):
        ordered = sorted(group, key=log_bytes)
        small, large = ordered[0], ordered[-1]
        if small is large:
            continue
        pages = [c.median("pages_written") for c in (small, large)]
        took = [c.median("recovery_seconds") for c in (small, large)]
        if None in pages or None in took or not all(took):
            continue
        names = [f"log {c.parameters['redo_log_size']}" for c in (small, large)]
        where = f"{ENGINE_NAMES.get(engine, engine)}" + (f" at {rest}" if rest else "")
        if not pages[0]:  # the smallest log wrote none: what a bigger one bought is said from why
            said = _nothing_to_buy(rows_by_id, small, large, names) if not pages[1] else ""
            if said:
                found.append(
                    f"{where}: {said}{_recovery_cost(rows_by_id, small, large, took)}"
                    f"{_throughput(rows_by_id, small, large)}."
                )
            continue
        if pages[1] == 0:
            wrote = f"{names[1]} wrote no pages while running, {names[0]} {pages[0]:,.0f} (medians),"
        elif pages[1] < pages[0]:
            wrote = (
                f"{names[1]} wrote about {pages[0] / pages[1]:.3g}x fewer pages than {names[0]} while "
                f"running ({pages[1]:,.0f} against {pages[0]:,.0f}, medians)"
            )
        else:
            wrote = (
                f"{names[1]} wrote at least as many pages as {names[0]} while running "
                f"({pages[1]:,.0f} against {pages[0]:,.0f}, medians)"
            )
        cost = _recovery_cost(rows_by_id, small, large, took)
        found.append(f"{where}: {wrote}{cost}{_throughput(rows_by_id, small, large)}.")
    return found


def _recovery_cost(rows_by_id: dict, small: Cell, large: Cell, took: list[float]) -> str:
    recovery = stats.compare(
        _values(rows_by_id, small, "recovery_seconds"), _values(rows_by_id, large, "recovery_seconds")
    )
    sure = "" if recovery.significant else "; not beyond the noise"
    return (
        f" for {took[1] / took[0]:.3g}x the crash recovery ({seconds_text(took[1])} against "
        f"{seconds_text(took[0])}{sure})"
    )


def _nothing_to_buy(rows_by_id: dict, small: Cell, large: Cell, names: list[str]) -> str:
    """Where the smallest log wrote no page while running, why, from what the runs recorded:
    flushing held back (the method's; nothing to read here), or the server's own with no log
    filled (the checkpoint stayed in every run: a bigger log bought nothing). Seed 004 at 500
    tx/s for 45 s, natural, had got no sentence at all. '' where the runs cannot say."""
    runs = [rows_by_id[i] for cell in (small, large) for i in cell.run_ids if i in rows_by_id]
    flushing = {(row["parameters"] or {}).get("flushing", UNSAID_DEFAULTS["flushing"]) for row in runs}
    if flushing != {"natural"}:
        return ""  # held back: no page is written by design; the chart's note says what to run
    moved = [row.get("checkpoint_moved_bytes") for row in runs]
    if None in moved or any(
        moved_beyond_a_record(m, row.get("log_bytes_written")) for m, row in zip(moved, runs, strict=True)
    ):
        return ""
    return (
        f"no log filled with the server's own flushing (the checkpoint stayed in every run; {names[0]} "
        f"and {names[1]} wrote no pages while running), so a bigger log bought nothing here"
    )


def _throughput(rows_by_id: dict, small: Cell, large: Cell) -> str:
    before, after = _values(rows_by_id, small, "workload_tps"), _values(rows_by_id, large, "workload_tps")
    if not before or not after:
        return ""
    result = stats.compare(before, after)
    tps = f"TPS {statistics.median(after):,.0f} against {statistics.median(before):,.0f}"
    if result.ratio_ci:
        tps += f", 95% CI {result.ratio_ci[0]:.2f}-{result.ratio_ci[1]:.2f}x"
    if not result.significant:
        return f", with no measurable gain in throughput ({tps})"
    if result.ratio > 1:
        return f", and {result.ratio:.2f}x the throughput ({tps})"
    return f", and {1 / result.ratio:.2f}x less throughput ({tps})"


def startup_answers(rows: list[dict], axes: list[str], spreads: dict | None = None) -> list[str]:
    """For a varied parameter that acts outside crash recovery (STARTUP_PARAMETERS): every value
    against the fewest on the downtime (kill to first query), one family of tests, with its own
    phase's medians; "did not change the restart" where no value moved it beyond the noise."""
    found = []
    for axis in axes:
        if axis not in STARTUP_PARAMETERS:
            continue
        phase, plural, phase_words = STARTUP_PARAMETERS[axis]
        groups: dict[tuple, dict] = defaultdict(lambda: defaultdict(list))
        for row in rows:
            value = row["parameters"].get(axis)
            if analysable(row) and isinstance(value, int | float) and row.get("downtime_seconds") is not None:
                rest = {k: v for k, v in row["parameters"].items() if k != axis}
                key = (
                    row["host_label"],
                    row["engine"],
                    settings_text({"parameters": rest, "server_options": row["server_options"]}),
                )
                groups[key][value].append(row)
        for (host, engine, rest), per_value in sorted(groups.items(), key=lambda item: str(item[0])):
            if len(per_value) < 2:
                continue
            values = sorted(per_value)
            fewest = values[0]
            floor = aa.floor({host}, "downtime_seconds", spreads or {})
            results = stats.compare_many(
                [
                    (
                        [r["downtime_seconds"] for r in per_value[fewest]],
                        [r["downtime_seconds"] for r in per_value[v]],
                    )
                    for v in values[1:]
                ],
                [floor] * (len(values) - 1),
                family=True,
            )
            where = f"{ENGINE_NAMES.get(engine, engine)}" + (f" at {rest}" if rest else "")
            downtimes = ", ".join(
                f"{statistics.median(r['downtime_seconds'] for r in per_value[v]):.2f} s at {v:,}"
                for v in values
            )
            own = ", ".join(_phase_at(per_value[v], phase, v) for v in values)
            versus = "; ".join(
                _against(v, fewest, result) for v, result in zip(values[1:], results, strict=True)
            )
            moved = [v for v, result in zip(values[1:], results, strict=True) if result.significant]
            if not moved:
                head = (
                    f"{where}: the number of {plural} ({values[0]:,} to {values[-1]:,}) did not change the "
                    f"restart beyond the noise"
                )
            else:
                at = ", ".join(f"{v:,}" for v in moved)
                head = f"{where}: the number of {plural} changed the restart at {at}"
            found.append(f"{head}: downtime {downtimes} (medians; {versus}); {phase_words} {own} (medians).")
    return found


def _against(value, fewest, result) -> str:
    if result.ratio is None:
        return f"{value:,} against {fewest:,}: not compared"
    ci = (
        f", 95% CI {result.ratio_ci[0]:.2f}-{result.ratio_ci[1]:.2f}x" if result.ratio_ci else ", no interval"
    )
    verdict = "beyond the noise" if result.significant else "within the noise"
    return f"{value:,} against {fewest:,}: {result.ratio:.2f}x{ci}, {verdict}"


def _phase_at(rows: list[dict], phase: str, value) -> str:
    return f"{duration_text(_median_phase(rows, phase), _resolution(rows, phase))} at {value:,}"


def _median_phase(rows: list[dict], phase: str) -> float | None:
    values = [(r.get("phases") or {}).get(phase) for r in rows]
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def _resolution(rows: list[dict], phase: str) -> float:
    return max(((r.get("phase_resolution") or {}).get(phase, 0.0) for r in rows), default=0.0)


def answers(rows: list[dict], cells: list[Cell], axes: list[str], spreads: dict | None = None) -> list[str]:
    """The design's questions answered: startup parameters, the log's trade-off, the repeats."""
    return [*startup_answers(rows, axes, spreads), *tradeoff_answers(rows, cells), *repeat_answers(cells)]
