"""What bound each cell's recovery, in a sentence: the verdicts of its runs (the resource each
recovery was held back by, experiments/ingest/resources.py) with the ranges behind them. No Django."""

from experiments.analysis.cells import BOUND_WORDS, Cell, analysable

# A busiest thread waiting for a core this share of the recovery or more: said in the sentence.
CONTENDED_SHARE = 0.1


def _span(values: list[float], fmt: str) -> str:
    low, high = min(values), max(values)
    return (
        format(low, fmt)
        if format(low, fmt) == format(high, fmt)
        else f"{format(low, fmt)}-{format(high, fmt)}"
    )


def bound_findings(rows: list[dict], cells: list[Cell]) -> list[str]:
    """Per cell whose runs were read while they recovered: what bound them, in how many runs, the
    busiest thread's share of a core, the CPU time of all threads and the reads from the disk."""
    by_id = {row["id"]: row for row in rows if analysable(row) and row.get("recovery_bound")}
    found = []
    for cell in cells:
        runs = [by_id[i] for i in cell.run_ids if i in by_id]
        if not runs:
            continue
        counts: dict[str, int] = {}
        for row in runs:
            counts[row["recovery_bound"]] = counts.get(row["recovery_bound"], 0) + 1
        most = max(counts, key=lambda bound: counts[bound])
        said = f"{cell.label}: recovery {BOUND_WORDS.get(most, most)} in {counts[most]} of {len(runs)} runs"
        others = [f"{BOUND_WORDS.get(b, b)} in {n}" for b, n in counts.items() if b != most]
        if others:
            said += f" ({'; '.join(others)})"
        details = []
        shares = [
            r["recovery_busiest_cpu_share"] * 100
            for r in runs
            if r.get("recovery_busiest_cpu_share") is not None
        ]
        if shares:
            details.append(f"its busiest thread at {_span(shares, '.0f')}% of a core")
        queued = [
            r["recovery_core_wait_share"] * 100 for r in runs if r.get("recovery_core_wait_share") is not None
        ]
        if queued and max(queued) >= CONTENDED_SHARE * 100:  # other work had the cores: said beside
            details.append(f"waiting for a core {_span(queued, '.0f')}% of the recovery")
        cpu = [r["recovery_cpu_seconds"] for r in runs if r.get("recovery_cpu_seconds") is not None]
        took = [r["recovery_seconds"] for r in runs if r.get("recovery_seconds") is not None]
        if cpu and took:
            details.append(f"{_span(cpu, '.2f')} s of CPU over {_span(took, '.2f')} s")
        rates = [
            r["recovery_disk_read_bytes"] / 1e6 / r["recovery_seconds"]
            for r in runs
            if r.get("recovery_disk_read_bytes") is not None and r.get("recovery_seconds")
        ]
        if rates:
            details.append(f"{_span(rates, ',.0f')} MB/s read from the disk")
        found.append(said + (f": {', '.join(details)}." if details else "."))
    return found
