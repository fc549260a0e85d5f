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

import hashlib
import json
import math
from collections import defaultdict

import numpy as np
from django.core.cache import cache
from django.db import connection

from experiments.analysis import stats
from experiments.analysis.cells import ENGINE_NAMES, ROW_FIELDS, analysable, settings_text
from experiments.analysis.differences import flattened
from experiments.models import CellMedians, Experiment, Run

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


def spread(checks: list[list[dict]], apart: list[list[dict]] | None = None) -> dict[str, dict]:
    """A host's A/A spread, per metric: the ratio identical things differed by there, from its
    A/A checks' cells (the largest difference between copies) and from pairs of experiments of
    one definition run apart (their cells, pair_medians(): a 95% bound once there are MIN_PAIRS,
    the largest before). The larger of the two, with what it stands on."""
    found: dict[str, dict] = {}
    for metric in AA_METRICS:
        copies = [_above_one(c["metrics"][metric]["ratio"]) for cells in checks for c in cells]
        copies = [r for r in copies if r]
        pairs = [_above_one(c["metrics"].get(metric)) for cells in apart or [] for c in cells]
        pairs = [r for r in pairs if r]
        if not copies and not pairs:
            continue
        bound = _bound(pairs)
        found[metric] = {
            "ratio": round(max([*copies, bound or 0.0]), 4),
            "checks": sum(1 for cells in checks if cells),
            "apart_pairs": len(pairs),
            "apart_bound": round(bound, 4) if bound else None,
        }
    return found


# Pairs of identical experiments run apart before their spread is a 95% bound, not the largest.
MIN_PAIRS = 5
Z95 = 1.959964


def _above_one(ratio: float | None) -> float | None:
    return math.exp(abs(math.log(ratio))) if ratio and ratio > 0 else None


def _bound(ratios: list[float]) -> float | None:
    """Where 95% of differences between identical experiments run apart fall: from the median
    absolute log ratio (robust: a real regression among the pairs moves it little), as for a
    normal spread (sd = 1.4826 x median |log r|); the largest seen with fewer than MIN_PAIRS."""
    if len(ratios) < MIN_PAIRS:
        return max(ratios) if ratios else None
    sd = 1.4826 * float(np.median([math.log(r) for r in ratios]))
    return math.exp(Z95 * sd)


def floor(hosts: set[str], metric: str, spreads: dict[str, dict]) -> float:
    """The ratio a difference of `metric` on these hosts must exceed: the default, or the
    host's A/A spread if larger."""
    learned = [spreads.get(host, {}).get(metric, {}).get("ratio", 0.0) for host in hosts]
    return round(max(DEFAULT_MIN_EFFECT, *learned), 4)


def spread_text(host: str, metric_spread: dict | None) -> str:
    """'local's A/A spread 1.31x (from 1 A/A check and 6 pairs of identical experiments run apart)'"""
    if not metric_spread:
        return (
            f"no A/A check of {host} on record: differences within {DEFAULT_MIN_EFFECT:g}x are "
            "called noise (run one from the hosts page)"
        )
    checks, pairs = metric_spread["checks"], metric_spread["apart_pairs"]
    sources = [
        *([f"{checks} A/A check{'s' if checks != 1 else ''}"] if checks else []),
        *([f"{pairs} pair{'s' if pairs != 1 else ''} of identical experiments run apart"] if pairs else []),
    ]
    return f"{host}'s A/A spread {metric_spread['ratio']:.2f}x (from {' and '.join(sources)})"


def pair_medians(first: dict[tuple, dict[str, float]], second: dict[tuple, dict[str, float]]) -> list[dict]:
    """Two experiments of one definition, from each one's cell medians (cell_medians()): per
    cell, each metric's median in the second over the first's."""
    return [
        {
            "label": key,
            "metrics": {
                m: second[key][m] / first[key][m]
                for m in AA_METRICS
                if first[key].get(m) and second[key].get(m)
            },
        }
        for key in sorted(set(first) & set(second))
    ]


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


# The newest experiments of a host looked at for pairs of one definition.
HISTORY_EXPERIMENTS = 200


def history_pairs(hosts: set[str], exclude: set[int] = frozenset()) -> list[tuple[int, int]]:
    """The hosts' pairs of experiments of one definition (name, description and tags aside),
    each with the next one made, older first, among their HISTORY_EXPERIMENTS newest. The
    experiments in `exclude` (the ones being compared) are not among them: a comparison does
    not learn its floor from itself."""
    experiments = (
        Experiment.objects.filter(id__in=Run.objects.filter(host_label__in=hosts).values("experiment_id"))
        .filter(aa_check=False, imported=False)
        .exclude(id__in=exclude)
        .order_by("-created_at", "-id")
        .values_list("id", "definition")[:HISTORY_EXPERIMENTS]
    )
    same: dict[str, list[int]] = defaultdict(list)
    for experiment_id, definition in experiments:
        same[json.dumps(flattened(definition), sort_keys=True)].append(experiment_id)
    return [(ids[i + 1], ids[i]) for ids in same.values() for i in range(len(ids) - 1)]


def apart_pairs(
    hosts: set[str], exclude: set[int] = frozenset(), pairs: list | None = None, current: dict | None = None
) -> dict[str, list[list[dict]]]:
    """Each host's pairs of experiments of one definition (history_pairs): pair_medians() of each,
    from the cells' medians PostgreSQL took of their runs (cell_medians), never stale."""
    pairs = history_pairs(hosts, exclude) if pairs is None else pairs
    medians = cell_medians(hosts, {i for pair in pairs for i in pair}, current)
    found: dict[str, list[list[dict]]] = defaultdict(list)
    for host in hosts:
        for first, second in pairs:
            if (host, first) in medians and (host, second) in medians:
                found[host].append(pair_medians(medians[(host, first)], medians[(host, second)]))
    return dict(found)


def fingerprints(hosts: set[str], experiment_ids: set[int]) -> dict[tuple[str, int], str]:
    """{(host, experiment): the fingerprint of its runs there}: their count and the sums of their
    rows' places and transaction ids (ctid, xmin). Every insert, update and delete of a run row
    writes a new version of it elsewhere, by a later transaction unless the same one: the sums
    change. One query."""
    if not experiment_ids or not hosts:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT host_label, experiment_id,
                   count(*) || ':' || sum(xmin::text::bigint) || ':' || sum(hashtext(ctid::text))
              FROM experiments_run
             WHERE experiment_id = ANY(%s) AND host_label = ANY(%s)
             GROUP BY host_label, experiment_id
            """,
            [sorted(experiment_ids), sorted(hosts)],
        )
        return {(host, experiment): fingerprint for host, experiment, fingerprint in cursor.fetchall()}


def cell_medians(
    hosts: set[str], experiment_ids: set[int], current: dict | None = None
) -> dict[tuple[str, int], dict[tuple, dict]]:
    """{(host, experiment): {(engine, settings): {metric: median}}}: each cell's median of each
    metric over the positive values of its analysable, undisturbed runs (a busy hour is not the
    host's usual noise). Kept in CellMedians with their runs' fingerprint (`current`, or read):
    the kept medians whose fingerprint still holds are used, and only the others (a new
    experiment, a run finished, excluded or included again) are taken again."""
    found: dict[tuple[str, int], dict[tuple, dict]] = {}
    current = fingerprints(hosts, experiment_ids) if current is None else current
    current = {key: value for key, value in current.items() if key[1] in experiment_ids}
    if not current:
        return found
    kept = CellMedians.objects.filter(experiment_id__in={e for _, e in current}, host_label__in=hosts)
    for host, experiment, fingerprint, cells in kept.values_list(
        "host_label", "experiment_id", "fingerprint", "cells"
    ):
        if current.get((host, experiment)) == fingerprint:
            found[(host, experiment)] = {(engine, settings): medians for engine, settings, medians in cells}
    stale = set(current) - set(found)
    if stale:
        taken = _take_cell_medians({host for host, _ in stale}, {experiment for _, experiment in stale})
        CellMedians.objects.bulk_create(
            [
                CellMedians(
                    experiment_id=experiment,
                    host_label=host,
                    fingerprint=current[(host, experiment)],
                    cells=[[e, s, m] for (e, s), m in taken.get((host, experiment), {}).items()],
                )
                for host, experiment in stale
            ],
            update_conflicts=True,
            unique_fields=["experiment", "host_label"],
            update_fields=["fingerprint", "cells"],
        )
        found.update({key: taken.get(key, {}) for key in stale})
    return found


def _take_cell_medians(hosts: set[str], experiment_ids: set[int]) -> dict[tuple[str, int], dict[tuple, dict]]:
    """The cells' medians of these experiments' runs on these hosts, from their rows, in SQL."""
    found: dict[tuple[str, int], dict[tuple, dict]] = defaultdict(dict)
    with connection.cursor() as cursor:
        # per host, experiment and cell (percentile_cont(0.5) is numpy's median)
        cursor.execute(
            """
            SELECT host_label, experiment_id, engine, parameters, server_options,
                   percentile_cont(0.5) WITHIN GROUP (ORDER BY recovery_seconds)
                       FILTER (WHERE recovery_seconds > 0),
                   percentile_cont(0.5) WITHIN GROUP (ORDER BY downtime_seconds)
                       FILTER (WHERE downtime_seconds > 0)
              FROM experiments_run
             WHERE experiment_id = ANY(%s) AND host_label = ANY(%s)
               AND status = 'done' AND NOT suspect AND NOT excluded AND NOT disturbed
             GROUP BY host_label, experiment_id, engine, parameters, server_options
            """,
            [sorted(experiment_ids), sorted(hosts)],
        )
        for host, experiment, engine, parameters, options, recovery, downtime in cursor.fetchall():
            settings = settings_text({"parameters": _json(parameters), "server_options": _json(options)})
            values = {"recovery_seconds": recovery, "downtime_seconds": downtime}
            found[(host, experiment)][(engine, settings)] = {m: float(v) for m, v in values.items() if v}
    return found


def _json(value):
    return json.loads(value) if isinstance(value, str) else value


# How long a host's spread is kept in the cache at most (it is keyed on what it stands on, so
# it is never stale: this only bounds the memory of spreads no page asks for again).
SPREAD_CACHE_SECONDS = 3600


def host_spreads(hosts: set[str], exclude: set[int] = frozenset()) -> dict[str, dict]:
    """Each host's A/A spread (spread()), for the hosts with A/A checks or identical experiments
    on record; `exclude`: experiments not to learn from (those being compared). Kept in the cache
    under the fingerprints of every run it stands on (its history's pairs and its A/A checks),
    read in one query: a new experiment, a run changed, excluded or included again, or an A/A
    check makes another key, so it is learnt again, once."""
    pairs = history_pairs(hosts, exclude)
    check_ids = set(
        Run.objects.filter(experiment__aa_check=True, host_label__in=hosts)
        .values_list("experiment_id", flat=True)
        .distinct()
    )
    current = fingerprints(hosts, {i for pair in pairs for i in pair} | check_ids)
    stands_on = [sorted(hosts), pairs, sorted([*key, value] for key, value in current.items())]
    key = "aa-spreads:" + hashlib.sha256(json.dumps(stands_on).encode()).hexdigest()
    found = cache.get(key)
    if found is None:
        checks, apart = host_checks(hosts), apart_pairs(hosts, exclude, pairs, current)
        spreads = {
            host: spread([c["cells"] for c in checks.get(host, [])], apart.get(host, [])) for host in hosts
        }
        found = {host: value for host, value in spreads.items() if value}
        cache.set(key, found, SPREAD_CACHE_SECONDS)
    return found
