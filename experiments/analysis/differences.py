"""What differs between the definitions of experiments that are compared: every key of the
matrix and of how a run is made (workload and its events, time or rate, crash plan,
repetitions, server options, builds, hosts), so a comparison never reads as like for like when
it is not. Plain dicts in and out."""

import json

from runner.contract import DEFAULT_FLUSHING, SYSTEM_BUILD

# Keys that do not change what a run measures: what the experiment is called and why.
NOT_COMPARED = {"name", "description", "tags", "imported"}
# A key absent from a stored definition where the server assumes a value.
ABSENT_MEANS = {"parameters.server_build": SYSTEM_BUILD, "parameters.flushing": DEFAULT_FLUSHING}
KINDS = {
    "workload": "workload",
    "crash": "crash plan",
    "parameters": "parameter",
    "server_options": "server option",
    "hosts": "hosts",
    "engines": "engines",
    "repetitions": "repetitions",
}
NOT_STATED = "-"


def flattened(definition: dict) -> dict[str, str]:
    """{"workload.events": "6000", "parameters.buffer_pool_size": "128M, 1G", ...}."""
    flat: dict[str, str] = {}
    for key, value in (definition or {}).items():
        if key in NOT_COMPARED:
            continue
        if isinstance(value, dict):
            for name, inner in value.items():
                flat[f"{key}.{name}"] = _text(inner)
        else:
            flat[key] = _text(value)
    for key, meaning in ABSENT_MEANS.items():
        if definition and not definition.get("imported"):
            flat.setdefault(key, meaning)
    return flat


def _text(value: object) -> str:
    if isinstance(value, list | tuple):
        return ", ".join(_text(v) for v in value)
    return "" if value is None else str(value)


def definition_differences(definitions: dict[str, dict]) -> list[dict]:
    """Each key whose value is not the same in every definition, in a stable order: {"key",
    "kind", "values": {experiment id: text, or "-" where that definition does not state it},
    "text"}."""
    flat = {side: flattened(definition) for side, definition in definitions.items()}
    keys = sorted({key for values in flat.values() for key in values}, key=_order)
    found = []
    for key in keys:
        values = {side: flat[side].get(key, NOT_STATED) for side in flat}
        if len(set(values.values())) > 1:
            found.append(
                {
                    "key": key,
                    "kind": KINDS.get(key.split(".")[0], key),
                    "values": values,
                    "text": f"{key}: " + ", ".join(f"{value} in #{side}" for side, value in values.items()),
                }
            )
    return found


def _order(key: str) -> tuple:
    """Crash plan and workload first (they change what is measured), then the matrix."""
    head = key.split(".")[0]
    rank = ["crash", "workload", "repetitions", "engines", "hosts", "parameters", "server_options"]
    return (rank.index(head) if head in rank else len(rank), key)


def crash_plans_differ(differences: list[dict]) -> list[dict]:
    return [d for d in differences if d["key"].startswith("crash.")]


def settings_to_leave_out(runs, experiments: int, ignore: frozenset) -> list[str]:
    """Where no cell matched: the parameters and server options whose values differ between the
    experiments' runs (`runs`: (experiment id, parameters, server options) each), which "Leave
    out of the match" would pool. Two builds compared had answered "nothing to match" and no more."""
    seen: dict[str, dict[int, set]] = {}
    for experiment, parameters, options in runs:
        for name, value in {**(parameters or {}), **(options or {})}.items():
            seen.setdefault(name, {}).setdefault(experiment, set()).add(json.dumps(value, sort_keys=True))
    return sorted(
        name
        for name, by_side in seen.items()
        if name not in ignore
        and (len(by_side) < experiments or len({frozenset(values) for values in by_side.values()}) > 1)
    )
