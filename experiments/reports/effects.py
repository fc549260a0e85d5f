"""Each varied parameter's effect on crash recovery, with the experiment read as the designed
experiment it is: its cells' repetitions estimate the host's noise together (the variance of the
log recovery times within each cell, pooled per host and engine), so a cell of 2 runs borrows the
precision of the others, and a parameter is also read over every pair of cells that differ in it
alone (its main effect: seed 002's RAID10 class took 4-7x as long in each pair of cells of 2 runs,
and each pair alone had read "no significant difference"). Plain rows in, sentences out."""

from collections import Counter, defaultdict

from experiments import parameters
from experiments.analysis import aa, stats
from experiments.analysis.cells import (
    PARAMETER_LABELS,
    analysable,
    counted_at_resolution,
    resolved,
    scalar_key,
    settings_text,
)
from experiments.analysis.noise import disturbed_text
from experiments.analysis.sentences import finding_sentence
from experiments.reports.answers import STARTUP_PARAMETERS
from experiments.reports.moved import what_moved
from experiments.reports.redo import engine_where, fit_says, redo_fits
from recovery_lab_cli.prediction import server_named
from recovery_lab_cli.units import SizeError, parse_size
from runner.contract import SYSTEM_BUILD, UNSAID_DEFAULTS

SIZE_PARAMETERS = parameters.SIZE_PARAMETERS
# The noise is the experiment's where it pools this many cells or more (two cells alone: the pair's
# own test, Welch's, which does not take their spreads to be equal).
POOLED_CELLS = 3


def _order(axis: str, value) -> tuple:
    """Values of one axis in their natural order: sizes by bytes, numbers by value, and a
    parameter's default first (the local disk, a warm cache): the others are read against it."""
    if axis in UNSAID_DEFAULTS and value == scalar_key(UNSAID_DEFAULTS[axis]):
        return (-1, 0, "")
    if axis in SIZE_PARAMETERS:
        try:
            return (0, parse_size(value), "")
        except SizeError:
            return (1, 0, str(value))
    try:
        return (0, float(value), "")
    except (TypeError, ValueError):
        return (1, 0, str(value))


def _axis_value(row: dict, axis: str):
    """The row's value on an axis, as a key (a stored list or object as its JSON text)."""
    if axis in UNSAID_DEFAULTS:
        return scalar_key(row["parameters"].get(axis, UNSAID_DEFAULTS[axis]))
    if axis in row["parameters"]:
        return scalar_key(row["parameters"][axis])
    return scalar_key(row["server_options"].get(axis))


def _without(row: dict, axis: str) -> dict:
    return {
        "parameters": {k: v for k, v in row["parameters"].items() if k != axis},
        "server_options": {k: v for k, v in row["server_options"].items() if k != axis},
    }


def _described(axis: str, value, rows: list[dict] = ()) -> str:
    """A cell's value in words; a build's with the server its runs said they were (MySQL 9.7.4)."""
    label = PARAMETER_LABELS.get(axis)
    text = f"{label} {value}" if label else f"{axis}={value}"
    versions = Counter(
        (row["server_version"], row.get("server_family", "")) for row in rows if row.get("server_version")
    )
    named = server_named(*versions.most_common(1)[0][0]) if axis == "server_build" and versions else None
    return f"{text} ({named})" if named else text


def cell_noise(rows: list[dict]) -> dict[tuple, tuple[float, int]]:
    """Per (host, engine): the variance of log recovery times within the experiment's cells,
    pooled, and its degrees of freedom, where it pools POOLED_CELLS cells or more."""
    cells: dict[tuple, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        if analysable(row) and row["recovery_seconds"] is not None:
            key = (row["host_label"], row["engine"])
            cells[key][settings_text(row)].append(resolved(row)["recovery_seconds"])
    found = {}
    for key, per_cell in cells.items():
        pooled = stats.pooled_noise(list(per_cell.values()))
        spread_cells = sum(len(values) >= 2 for values in per_cell.values())
        if pooled is not None and spread_cells >= POOLED_CELLS:
            found[key] = pooled
    return found


def parameter_findings(rows: list[dict], axes: list[str], spreads: dict | None = None) -> list[str]:
    """For each varied parameter or server option: its highest value against its lowest, every
    other setting equal, on crash recovery (ratio of typical values, 95% CI, significant beyond
    the host's noise floor: analysis/aa.py), on the noise the experiment's cells share; and
    where several pairs of cells differ in it alone, first its effect over all of them."""
    requests = []
    compared_rows: dict[tuple, tuple] = {}
    for axis in axes:
        # a parameter acting outside crash recovery is compared on the downtime (answers.py)
        if axis in ("engine", "host", "server_version") or axis in STARTUP_PARAMETERS:
            continue
        groups: dict[tuple, dict] = defaultdict(lambda: defaultdict(list))
        for row in rows:
            value = _axis_value(row, axis)
            if analysable(row) and value is not None and row["recovery_seconds"] is not None:
                rest = _without(row, axis)
                groups[(row["host_label"], row["engine"])][settings_text(rest)].append((value, row))
        for (host, engine), per_rest in sorted(groups.items(), key=lambda item: str(item[0])):
            requests += _axis_requests(axis, host, engine, per_rest, compared_rows)
    several_hosts = len({r[1] for r in requests}) > 1
    fits, noise = redo_fits(rows), cell_noise(rows)
    tested = [(request, _tested(request, noise, spreads or {})) for request in requests]
    requests = [request for request, result in tested if result is not None]
    results = stats.adjusted([result for _, result in tested if result is not None])
    found = []
    for (axis, host, engine, rest, low, high, _), result in zip(requests, results, strict=True):
        label = engine_where(engine, host, several_hosts) + (f" at {rest}" if rest else "")
        low_rows, high_rows = compared_rows[(axis, host, engine, rest, low, high)]
        if rest is None:  # over every pair of cells
            pairs = len({settings_text(_without(row, axis)) for row in low_rows})
            label = engine_where(engine, host, several_hosts) + f", over its {pairs} pairs of cells"
        names = (_described(axis, low, low_rows), _described(axis, high, high_rows))
        said = result.as_dict()
        said["at_resolution"] = counted_at_resolution(
            [resolved(row) for row in (*low_rows, *high_rows)], "recovery_seconds"
        )
        sentence = finding_sentence("crash recovery", names[1], names[0], label, said, False)
        moved = what_moved(axis, (low_rows, high_rows), result.significant, names)
        if not result.significant:
            moved += fit_says(fits.get((host, engine)), (low_rows, high_rows), names)
        disturbed = sum(bool(row.get("disturbed")) for row in (*low_rows, *high_rows))
        total = len(low_rows) + len(high_rows)
        found.append(sentence + moved + (disturbed_text(disturbed, total) if disturbed else "") + ".")
    return found


def _axis_requests(axis: str, host: str, engine: str, per_rest: dict, compared_rows: dict) -> list[tuple]:
    """The comparisons of one axis on one host and engine: where several pairs of cells (every
    other setting equal within each) hold its lowest and highest values, their effect over all of
    them first (rest None); then each pair's own, its highest value against its lowest (each build
    against the system's, or the first)."""
    requests, over_all = [], []
    for rest in sorted(per_rest):
        per_value: dict = defaultdict(list)
        for value, row in per_rest[rest]:
            per_value[value].append(row)
        if len(per_value) < 2:
            continue
        ordered = sorted(per_value, key=lambda v: _order(axis, v))
        pairs = [(ordered[0], ordered[-1])]
        if axis == "server_build":
            baseline = SYSTEM_BUILD if SYSTEM_BUILD in per_value else ordered[0]
            pairs = [(baseline, value) for value in ordered if value != baseline]
        for low, high in pairs:
            requests.append((axis, host, engine, rest, low, high, [(per_value[low], per_value[high])]))
            compared_rows[(axis, host, engine, rest, low, high)] = (per_value[low], per_value[high])
        if axis != "server_build":
            over_all.append((ordered[0], ordered[-1], per_value[ordered[0]], per_value[ordered[-1]]))
    extremes = {(low, high) for low, high, *_ in over_all}
    if len(over_all) >= 2 and len(extremes) == 1:  # every pair spans the same two values
        ((low, high),) = extremes
        key = (axis, host, engine, None, low, high)
        compared_rows[key] = (
            [row for _, _, low_rows, _ in over_all for row in low_rows],
            [row for *_, high_rows in over_all for row in high_rows],
        )
        requests.insert(0, (*key, [(low_rows, high_rows) for _, _, low_rows, high_rows in over_all]))
    return requests


def _tested(request: tuple, noise: dict, spreads: dict) -> stats.Comparison | None:
    """One request's comparison: on the experiment's pooled noise where it has one (a pair, or
    the pairs' mean difference), else the pair's own Welch test; None for the pairs together
    where the experiment has no noise of its own to read them on."""
    _, host, engine, rest, *_, pairs = request
    floor = aa.floor({host}, "recovery_seconds", spreads)
    values = [tuple([resolved(row)["recovery_seconds"] for row in side] for side in pair) for pair in pairs]
    pooled = noise.get((host, engine))
    if pooled is not None:
        result = stats.contrast(values, *pooled, min_effect=floor)
        return None if rest is None and result.ratio is None else result  # pairs together, or nothing
    return None if rest is None else stats.compare_many(values, [floor])[0]
