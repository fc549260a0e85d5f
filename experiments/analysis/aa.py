"""A/A checks and the noise floor a difference must clear.

A t-test on 3 repetitions against 3 sees only the noise inside each experiment: runs made in the
same half hour. Two experiments run apart also differ by what the host did in between (another
job's cache, the disk's own housekeeping), and that share of the noise no within-experiment
test can see. So a difference is called significant only when the test says so *and* the ratio
is beyond a floor: DEFAULT_MIN_EFFECT, raised to the largest difference this host's own A/A
checks showed between identical copies of one definition. The reasoning, and the false-alarm
rate and power measured on A/A pairs and known steps, are in docs/statistics.md
(`make bench` prints them).

An A/A check is one experiment whose repetitions alternate between two identical copies:
odd repetitions are copy A, even ones copy B, so the round-robin order interleaves them and a
slow hour falls on both alike. Plain rows in (cells.ROW_FIELDS), plain dicts out; at the end the
one reader of the database here, host_checks().
"""

import math
from collections import defaultdict

from experiments.analysis import stats
from experiments.analysis.cells import ENGINE_NAMES, ROW_FIELDS, analysable, settings_text
from experiments.models import Run

# The floor when a host has no A/A check on record: measured, see docs/statistics.md.
DEFAULT_MIN_EFFECT = 1.25
# What an A/A check compares between its copies.
AA_METRICS = {"recovery_seconds": "crash recovery", "downtime_seconds": "downtime"}


def copy_of(row: dict) -> str:
    """'A' for odd repetitions, 'B' for even ones."""
    return "A" if row["repetition"] % 2 else "B"


def aa_cells(rows: list[dict]) -> list[dict]:
    """One A/A check's cells: per engine and settings, each metric's copy B over copy A, and
    whether the plain test (no floor) and the calibrated one (the default floor) would have
    called that difference of identical copies significant: a false alarm."""
    cells: dict[tuple, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        if analysable(row):
            key = (row["engine"], settings_text(row))
            cells[key][copy_of(row)].append(row)
    keys = [key for key in sorted(cells) if len(cells[key]) == 2]
    pairs = [
        ([r[m] for r in cells[key]["A"]], [r[m] for r in cells[key]["B"]]) for key in keys for m in AA_METRICS
    ]
    plain = stats.compare_many(pairs)
    calibrated = stats.compare_many(pairs, [DEFAULT_MIN_EFFECT] * len(pairs))
    answers, position = [], 0
    for engine, settings in keys:
        metrics = {}
        for metric in AA_METRICS:
            result = plain[position]
            metrics[metric] = {
                **result.as_dict(),
                "n": [len(cells[(engine, settings)][copy]) for copy in "AB"],
                "plain_test_significant": result.significant,
                "significant": calibrated[position].significant,
            }
            position += 1
        answers.append(
            {
                "engine": engine,
                "label": f"{ENGINE_NAMES.get(engine, engine)}" + (f" at {settings}" if settings else ""),
                "metrics": metrics,
            }
        )
    return answers


def spread(checks: list[list[dict]]) -> dict[str, dict]:
    """A host's A/A spread from its checks' cells: per metric, the largest difference seen
    between identical copies (as a ratio above 1), and how many checks and cells it stands on."""
    found: dict[str, dict] = {}
    for metric in AA_METRICS:
        ratios = [
            cell["metrics"][metric]["ratio"]
            for cells in checks
            for cell in cells
            if cell["metrics"][metric]["ratio"]
        ]
        if ratios:
            largest = max(math.exp(abs(math.log(r))) for r in ratios)
            found[metric] = {
                "ratio": round(largest, 4),
                "checks": sum(1 for cells in checks if cells),
                "cells": len(ratios),
            }
    return found


def floor(hosts: set[str], metric: str, spreads: dict[str, dict]) -> float:
    """The ratio a difference of `metric` on these hosts must exceed: the default, or the
    largest A/A difference any of them showed if larger."""
    learned = [spreads.get(host, {}).get(metric, {}).get("ratio", 0.0) for host in hosts]
    return round(max(DEFAULT_MIN_EFFECT, *learned), 4)


def spread_text(host: str, metric_spread: dict | None) -> str:
    """'local's A/A spread: 1.12x (largest difference between identical copies, 2 checks)'"""
    if not metric_spread:
        return (
            f"no A/A check of {host} on record: differences within {DEFAULT_MIN_EFFECT:g}x are "
            "called noise (run one from the hosts page)"
        )
    checks = metric_spread["checks"]
    return (
        f"{host}'s A/A spread {metric_spread['ratio']:.2f}x (the largest difference between identical "
        f"copies in {checks} check{'s' if checks != 1 else ''})"
    )


def host_checks(hosts: set[str]) -> dict[str, list[dict]]:
    """Each host's A/A checks, newest first: {"local": [{"id", "name", "status", "cells"}]}."""
    rows = Run.objects.filter(experiment__aa_check=True, host_label__in=hosts).values(
        *ROW_FIELDS, "experiment__name", "experiment__status", "experiment__created_at"
    )
    grouped: dict[tuple[str, int], list[dict]] = defaultdict(list)
    for row in rows:
        grouped[(row["host_label"], row["experiment_id"])].append(row)
    found: dict[str, list[dict]] = defaultdict(list)
    for (host, experiment_id), check_rows in sorted(grouped.items(), key=lambda item: -item[0][1]):
        first = check_rows[0]
        found[host].append(
            {
                "id": experiment_id,
                "name": first["experiment__name"],
                "status": first["experiment__status"],
                "created_at": first["experiment__created_at"],
                "cells": aa_cells(check_rows),
            }
        )
    return dict(found)


def host_spreads(hosts: set[str]) -> dict[str, dict]:
    """Each host's A/A spread (spread()), for the hosts that have A/A checks on record."""
    checks = host_checks(hosts)
    return {
        host: found
        for host, host_checks_ in checks.items()
        if (found := spread([c["cells"] for c in host_checks_]))
    }
