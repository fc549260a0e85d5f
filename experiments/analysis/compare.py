"""Comparisons of matched cells: between experiments (the same engine and settings, e.g. two
server versions) and between engines (the same settings). Plain rows in, plain dicts out; the
numbers come from stats.compare, the sentences are built from them. At the end, what the API and
the compare page share: their parameters parsed, and `comparison`, the one reader of the
database here (the experiments' rows)."""

from collections import Counter, defaultdict
from collections.abc import Callable, Hashable

from django.db.models import Max, Min

from experiments.analysis import aa, stats
from experiments.analysis import cells as cell_rows
from experiments.analysis.cells import ENGINE_NAMES, ROW_FIELDS, analysable, settings_text, value_order
from experiments.analysis.differences import crash_plans_differ, definition_differences, settings_to_leave_out
from experiments.analysis.noise import disturbed_text
from experiments.analysis.sentences import (
    COMPARED_METRICS,
    ENGINE_METRICS,
    RESOURCE_METRICS,
    regressions,
    sentences,
    startup_change,
)
from experiments.analysis.where import resource_sentence
from experiments.engines import ENGINES, engine_order, replay_seconds
from experiments.models import Experiment, Run
from experiments.parameters import TABLE
from recovery_lab_cli.units import GIB, as_row_id
from runner.contract import SERVER_OPTIONS

# Parameters a run names only when its definition did, and what their absence means.
ABSENT_PARAMETERS = {p.name: p.absent for p in TABLE if p.absent is not None}
# What a comparison may leave out of the match: a parameter, or a server option.
IGNORABLE = (*(p.name for p in TABLE), *sorted(SERVER_OPTIONS))


def normalised(row: dict) -> dict:
    """The row with recovery per GiB of redo and per 1000 rows inserted (comparable when two runs
    did different amounts of work), its engine's log replay alone (the like phase across
    engines), and the downtime less the crash recovery (the rest of start-up). A recovery or
    replay shorter than its log resolves counts at the resolution (cells.resolved)."""
    replay = replay_seconds(row["engine"], row.get("phases") or {})
    row = cell_rows.resolved({**row, "replay_seconds": replay})
    recovery, redo, rows = row.get("recovery_seconds"), row.get("redo_bytes"), row.get("rows_inserted")
    downtime = row.get("downtime_seconds")
    return {
        **row,
        "recovery_seconds_per_gib_redo": recovery / (redo / GIB) if recovery is not None and redo else None,
        "recovery_seconds_per_1000_rows": recovery / (rows / 1000) if recovery is not None and rows else None,
        "startup_rest_seconds": (
            max(downtime - recovery, 0.0) if downtime is not None and recovery is not None else None
        ),
    }


def _settings_key(row: dict, ignore: frozenset = frozenset()) -> tuple:
    """The settings a cell is matched on: parameters and server options, less those ignored."""
    return tuple(
        tuple(sorted((name, value) for name, value in row[part].items() if name not in ignore))
        for part in ("parameters", "server_options")
    )


def _match(
    rows: list[dict], side_of: Callable[[dict], Hashable], key_of: Callable[[dict], tuple], sides: list
) -> list[tuple[tuple, dict[Hashable, list[dict]]]]:
    """Cells present on at least two sides, each with its rows per side."""
    cells: dict[tuple, dict[Hashable, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        if analysable(row) and side_of(row) in sides:
            cells[key_of(row)][side_of(row)].append(normalised(row))
    return [(key, cells[key]) for key in sorted(cells, key=_natural) if len(cells[key]) >= 2]


def _natural(key: tuple) -> list:
    """A cell key in reading order: each setting by value (sizes by bytes), engines as registered."""
    return [
        [(name, value_order(value)) for name, value in part]
        if isinstance(part, tuple)
        else (engine_order(part), part)
        for part in key
    ]


def _metric_blocks(
    matched: list[tuple[tuple, dict]],
    sides: list[list],
    spreads: dict[str, dict],
    tested: frozenset = frozenset(),
) -> list[dict[str, dict]]:
    """Per matched cell, each metric's summary per side and each later side against the cell's
    first side (its baseline), if that side ran it, significant only beyond the noise floor of
    the cell's hosts (aa.floor). All the statistics of all cells are computed in two batches."""
    summary_requests, compare_requests, floors = [], [], []
    for position, ((_, per_side), cell_sides) in enumerate(zip(matched, sides, strict=True)):
        present = [s for s in cell_sides if s in per_side]
        hosts = {row["host_label"] for rows in per_side.values() for row in rows}
        for metric in (*COMPARED_METRICS, *RESOURCE_METRICS):
            for side in present:
                summary_requests.append((position, metric, side, [r[metric] for r in per_side[side]]))
            if present and present[0] == cell_sides[0]:
                baseline = [r[metric] for r in per_side[present[0]]]
                for side in present[1:]:
                    compare_requests.append(
                        (position, metric, side, (baseline, [r[metric] for r in per_side[side]]))
                    )
                    floors.append(aa.floor(hosts, metric, spreads))
    summaries = stats.summarize_many([values for *_, values in summary_requests])
    # the resources' tests stand alone: in the family they would raise every other test's bar; so
    # do the metrics a caller does not decide on (`tested`: a gate on two metrics had adjusted its
    # p-values over all twelve the page shows)
    in_family = lambda m: m not in RESOURCE_METRICS and (not tested or m in tested)  # noqa: E731
    family = [i for i, request in enumerate(compare_requests) if in_family(request[1])]
    alone = [i for i, request in enumerate(compare_requests) if not in_family(request[1])]
    comparisons: list = [None] * len(compare_requests)
    for indexes, in_family in ((family, True), (alone, False)):
        found = stats.compare_many(
            [compare_requests[i][3] for i in indexes], [floors[i] for i in indexes], family=in_family
        )
        for i, result in zip(indexes, found, strict=True):
            comparisons[i] = result
    blocks: list[dict[str, dict]] = [{} for _ in matched]
    for (position, metric, side, _), summary in zip(summary_requests, summaries, strict=True):
        blocks[position].setdefault(metric, {})[str(side)] = {
            "n": summary.n,
            "median": summary.median,
            "ci": list(summary.ci) if summary.ci else None,
        }
    for (position, metric, side, _), result in zip(compare_requests, comparisons, strict=True):
        rows_of = matched[position][1]
        raised = cell_rows.counted_at_resolution([*rows_of[sides[position][0]], *rows_of[side]], metric)
        said = {**result.as_dict(), "at_resolution": raised}
        blocks[position][metric].setdefault("versus", {})[str(side)] = said
    for block in blocks:
        for metric in list(block):
            versus = block[metric].get("versus")
            if not versus or all(v["n"] == 0 for k, v in block[metric].items() if k != "versus"):
                del block[metric]  # nothing to compare: the baseline is missing or nothing measured it
                continue
            block[metric].update(next(iter(versus.values())))
    return blocks


def compare_experiments(
    rows: list[dict],
    experiment_ids: list[int],
    names: dict[int, str],
    ignore: frozenset = frozenset(),
    definitions: dict[int, dict] | None = None,
    spreads: dict[str, dict] | None = None,
    tested: frozenset = frozenset(),
) -> dict:
    """GET /api/compare/: cells matched on engine and settings across experiments; each metric's
    ratio is the later experiment over the first, with its 95% interval. `ignore`: parameters and
    server options left out of the match, the change under test (a new build, a smaller buffer
    pool): each side's runs of a cell are pooled over them. `differences`: every key of the
    definitions that differs; where the crash plans differ no cell is compared as equals, and
    where the workloads or hosts differ every sentence says so. `spreads`: the hosts' A/A
    spreads (aa.spread), which raise the floor a difference must clear."""
    versions = _versions(rows)
    differences = definition_differences({str(i): (definitions or {}).get(i, {}) for i in experiment_ids})
    crash = crash_plans_differ(differences)
    unlike = [d for d in differences if d["key"].startswith(("workload.", "hosts"))]
    cells = []
    matched = _match(
        rows,
        lambda r: r["experiment_id"],
        lambda r: (r["engine"], *_settings_key(r, ignore)),
        experiment_ids,
    )
    blocks = _metric_blocks(matched, [experiment_ids] * len(matched), spreads or {}, tested)
    for (key, per_side), metrics in zip(matched, blocks, strict=True):
        engine, parameters, options = key
        cell = {
            "engine": engine,
            "parameters": dict(parameters),
            "server_options": dict(options),
            "metrics": metrics,
            "ignored_values": _ignored_values(per_side, ignore),
            "run_ids": {str(side): [row["id"] for row in rows] for side, rows in per_side.items()},
        }
        matched_on = {"parameters": dict(parameters), "server_options": dict(options)}
        label = f"{ENGINE_NAMES.get(engine, engine)} at {settings_text(matched_on) or 'the same settings'}"
        side_names = {str(i): _experiment_name(i, versions) for i in experiment_ids}
        baseline = str(experiment_ids[0])
        cell["startup_change"] = {
            side: said
            for side in side_names
            if side != baseline and (said := startup_change(cell["metrics"], side, baseline))
        }
        noted = _disturbed_notes(per_side, baseline)
        startup = cell["startup_change"]
        cell["sentences"] = sentences(cell["metrics"], side_names, baseline, label, startup, noted=noted)
        cell["sentences"] += [
            said + noted.get(side, "")
            for side in side_names
            if side != baseline
            and (
                said := resource_sentence(
                    cell["metrics"], side_names[side], side_names[baseline], side, label, baseline
                )
            )
        ]
        cell["regressions"] = regressions(cell["metrics"], side_names, baseline, label, startup, noted)
        cell["comparable"] = not crash
        if crash:  # a recovery after another crash is another measurement
            cell["not_compared"] = (
                f"{label}: not compared, the crash plans differ ({'; '.join(d['text'] for d in crash)}): "
                "recovery after a different crash is a different measurement (sweep crash.redo_bytes in one "
                "experiment to see its effect)"
            )
            cell["sentences"], cell["regressions"] = [cell["not_compared"]], []
        elif unlike:
            caveat = f" (not like for like: {'; '.join(d['text'] for d in unlike)})"
            cell["sentences"] = [line + caveat for line in cell["sentences"]]
            cell["regressions"] = [line + caveat for line in cell["regressions"]]
        cell["disturbed_runs"] = sum(bool(row.get("disturbed")) for rows in per_side.values() for row in rows)
        cells.append(cell)
    return {
        "differences": differences,
        "experiments": experiment_ids,
        "names": {str(i): names.get(i, "") for i in experiment_ids},
        "server_versions": {str(i): versions.get(i, "") for i in experiment_ids},
        "ignored": sorted(ignore),
        "cells": cells,
        "engines": compare_engines(rows, spreads),
    }


def _disturbed_notes(per_side: dict, baseline) -> dict:
    """Per side, what its sentences add where runs of it or the baseline were disturbed, counted over
    those two sides alone (a third side's runs had made "9 of 9 runs" of a comparison of 6)."""
    notes, per_side = {}, {str(side): rows for side, rows in per_side.items()}
    for side, rows in per_side.items():
        pair = [*rows, *per_side.get(str(baseline), [])] if side != str(baseline) else rows
        disturbed = sum(bool(row.get("disturbed")) for row in pair)
        notes[str(side)] = disturbed_text(disturbed, len(pair)) if disturbed else ""
    return notes


def _ignored_values(per_side: dict, ignore: frozenset) -> dict:
    """Per side, the values its runs had for each ignored name: {"3": {"buffer_pool_size": ["1G"]}}."""
    found: dict = {}
    for side, rows in per_side.items():
        for name in sorted(ignore):
            values = {
                str(row["parameters"].get(name, row["server_options"].get(name, "")))
                for row in rows
                if name in row["parameters"] or name in row["server_options"]
            }
            if not values and name in ABSENT_PARAMETERS:
                values = {ABSENT_PARAMETERS[name]}  # named by none of its runs: the system's build
            if values:
                found.setdefault(str(side), {})[name] = sorted(values)
    return found


def compare_engines(rows: list[dict], spreads: dict[str, dict] | None = None) -> dict:
    """Engines against each other at the same settings (pooled over the runs given); the
    baseline is the first of the engines' registry that ran (InnoDB where it did)."""
    present = sorted({r["engine"] for r in rows if analysable(r)}, key=lambda e: (engine_order(e), e))
    cells = []
    if len(present) >= 2:
        matched = _match(rows, lambda r: r["engine"], _settings_key, present)
        sides_per_cell = [[e for e in present if e in per_side] for _, per_side in matched]
        blocks = _metric_blocks(matched, sides_per_cell, spreads or {})
        for (key, per_side), sides, metrics in zip(matched, sides_per_cell, blocks, strict=True):
            parameters, options = key
            label = settings_text({"parameters": dict(parameters), "server_options": dict(options)})
            side_names = {e: ENGINE_NAMES.get(e, e) for e in sides}
            noted = _disturbed_notes(per_side, sides[0])
            how = {"subject_first": True, "compared": ENGINE_METRICS, "noted": noted}
            said = sentences(metrics, side_names, sides[0], f"at {label}", **how)
            disturbed = sum(bool(row.get("disturbed")) for rows in per_side.values() for row in rows)
            cell = {"parameters": dict(parameters), "server_options": dict(options), "metrics": metrics}
            cells.append({**cell, "sentences": said, "disturbed_runs": disturbed})
    return {"engines": present, "cells": cells, "holds": holds_sentence(present) if cells else ""}


def holds_sentence(engines: list[str]) -> str:
    """What each engine's crash recovery figure holds, once for a comparison of engines."""
    holds = "; ".join(
        f"{ENGINE_NAMES.get(e, e)}, {ENGINES[e].recovery_holds}" for e in engines if e in ENGINES
    )
    return (
        f"what each engine's crash recovery holds: {holds}. The log replay is the phase they share: "
        "engines are compared on it first, and the apply rates are the redo over it"
    )


def _versions(rows: list[dict]) -> dict[int, str]:
    """Each experiment's server version: the one most of its runs report, runs done here
    counting before imported ones."""
    found: dict[int, Counter] = defaultdict(Counter)
    for row in rows:
        if row["server_version"]:
            found[row["experiment_id"]][row["server_version"]] += 1 if row["imported"] else 1000
    return {experiment: counter.most_common(1)[0][0] for experiment, counter in found.items()}


def _experiment_name(experiment_id: int, versions: dict) -> str:
    """'#12', with the server version where the experiments ran different ones (the page
    header gives the full names)."""
    version = versions.get(experiment_id)
    return f"#{experiment_id}" + (f" ({version})" if version and len(set(versions.values())) > 1 else "")


MAX_COMPARED = 6


class NoSuchExperiment(ValueError):
    """Ids well formed, but not all of experiments that exist."""


def parse_experiment_ids(text: str) -> list[int]:
    """'3,7' -> [3, 7]; two to six existing experiments, each once (NoSuchExperiment naming
    those that do not exist)."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    ids = [as_row_id(p) for p in parts]
    if None in ids or not 2 <= len(ids) <= MAX_COMPARED or len(set(ids)) != len(ids):
        raise ValueError("two to six different experiment ids, comma-separated, e.g. 3,7")
    missing = set(ids) - set(Experiment.objects.filter(id__in=ids).values_list("id", flat=True))
    if missing:
        raise NoSuchExperiment(f"no experiment {', '.join(map(str, sorted(missing)))}")
    return ids


def parse_ignored(text: str) -> frozenset:
    """'server_build,buffer_pool_size' -> those names (parameter or option names, nothing else: a
    misspelt name would leave the match as it was, and say nothing)."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    bad = [name for name in names if name not in IGNORABLE]
    if bad:
        shown = ", ".join(repr(name[:64]) for name in bad[:5])
        known = ", ".join(p.name for p in TABLE)
        raise ValueError(f"not a parameter or server option: {shown} (the parameters: {known})")
    return frozenset(names)


def comparison(ids: list[int], ignore: frozenset = frozenset(), tested: frozenset = frozenset()) -> dict:
    """`tested`: the metrics the caller decides on (a gate's), the family whose p-values are
    adjusted together; by default every compared metric but the resources'."""
    rows = list(Run.objects.filter(experiment_id__in=ids).values(*ROW_FIELDS))
    experiments = Experiment.objects.filter(id__in=ids).values("id", "name", "definition")
    names = {e["id"]: e["name"] for e in experiments}
    definitions = {e["id"]: e["definition"] for e in experiments}
    hosts = {row["host_label"] for row in rows}
    spreads = aa.host_spreads(hosts, exclude=set(ids))
    result = compare_experiments(rows, ids, names, ignore, definitions, spreads, tested)
    floors = {
        host: aa.spread_text(host, spreads.get(host, {}).get("recovery_seconds"))
        for host in sorted(hosts)
        if host
    }
    runs = [(row["experiment_id"], row["parameters"], row["server_options"]) for row in rows]
    result["leave_out"] = [] if result.get("cells") else settings_to_leave_out(runs, len(ids), ignore)
    return {**result, **when_they_ran(ids), "noise_floor": floors, "aa_spreads": spreads}


def when_they_ran(ids: list[int]) -> dict:
    """Each experiment's first start and last finish, and how far apart they ran: a slow hour
    or a busy week on the host falls on one side only when they ran apart."""
    spans = {
        row["experiment_id"]: row
        for row in Run.objects.filter(experiment_id__in=ids, started_at__isnull=False)
        .values("experiment_id")
        .annotate(first=Min("started_at"), last=Max("finished_at"))
    }
    ran = {
        str(i): {"first_start": spans[i]["first"], "last_finish": spans[i]["last"]} for i in ids if i in spans
    }
    apart = None
    if len(ran) == len(ids) >= 2:
        spans_in_order = sorted((spans[i]["first"], spans[i]["last"] or spans[i]["first"]) for i in ids)
        gap, reached = 0.0, spans_in_order[0][1]
        for start, end in spans_in_order[1:]:
            gap, reached = max(gap, (start - reached).total_seconds()), max(reached, end)
        if gap <= 0:
            apart = "ran at overlapping times"
        elif gap < 60:
            apart = "ran one after the other"
        else:
            apart = (
                f"ran {_duration_text(gap)} apart (one's last finish to the next one's first start): "
                "a change on the host between them falls on one side only"
            )
    return {"ran": ran, "apart": apart}


def _duration_text(seconds: float) -> str:
    for unit, size in (("days", 86400), ("hours", 3600), ("minutes", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds:.0f} s"
