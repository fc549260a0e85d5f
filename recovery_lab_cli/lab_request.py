"""`recovery-lab predict --measure`: the lab runs that would stand for a live server, asked of the
dashboard as an experiment. No Django: the client builds the definition, the dashboard checks it
by its own rules.

The runs copy what recovery depends on from the server as it was read: its build (a build on the
lab host that reports the same version, else one of its release series), buffer pool, redo log
size and how it makes a commit durable. They crash at three redo targets up to three quarters of
the most its log lets a run build up (or of its worst case, where that is less: a target near
the engine's own checkpoint might never be reached), so the fit's line spans most of the redo a
crash of it would replay, and a prediction at its worst case stays within what the fit reaches.
"""

from recovery_lab_cli.live import ServerState
from recovery_lab_cli.prediction import release_of, server_named
from recovery_lab_cli.units import MIB
from runner.contract import SYSTEM_BUILD, engine_workloads, largest_redo_target, server_option_allowed
from runner.families import declared_for

SHARES = (0.1, 0.4, 0.75)  # of the most a run can build up: three redo volumes for the line
UNBOUNDED_TARGET = 64 * MIB  # where nothing bounds the redo (MyRocks without a WAL limit)
WORKLOAD = {"name": "oltp_insert", "tables": 2, "table_size": 5000, "threads": 2, "time_seconds": 1800}


class RequestRefused(Exception):
    """Why the lab cannot be asked for these runs."""


def build_for(host: dict, version: str) -> tuple[str, str]:
    """The build of the lab host (its probed facts) that runs `version`: (name, what it is) where
    one reports that very version, else one of its release series; RequestRefused names what
    the host has. A build's servers are named by the families that claim their version lines."""
    builds = [b for b in (host.get("facts") or {}).get("server_builds") or [] if not b.get("error")]
    wanted, release = server_named(version), release_of(version)
    described = {b["name"]: list(filter(None, map(_build_named, _version_lines(b)))) for b in builds}
    for name, servers in described.items():
        if wanted and wanted in [named for named, _ in servers]:
            return name, wanted
    for name, servers in described.items():
        for named, series in servers:
            if release and series == release:
                return name, f"{named}, of {version}'s release series {release[0]} {release[1]}"
    has = "; ".join(
        f"{name}: {', '.join(named for named, _ in servers)}" for name, servers in described.items()
    )
    raise RequestRefused(
        f"the lab host {host.get('name')} has no build of {wanted or version} or its release series "
        f"({has or 'no build probed yet: probe the host'}); install one there (manage.py installbuild)"
    )


def _version_lines(build: dict) -> list[tuple[str, str]]:
    """(family, --version line) of each server a build holds (family '' where the probe that
    listed it did not say)."""
    return list((build.get("versions") or {}).items()) or [("", build.get("version") or "")]


def _build_named(entry: tuple[str, str]) -> tuple[str, tuple[str, str]] | None:
    """('MySQL 9.7.4', ('MySQL', '9.7')) for a build's server, as the family that claims its
    --version line names it; None where no family does."""
    family, line = entry
    declared = declared_for(line, family, build=True)
    if declared is None or not declared.claims_build(line):
        return None
    return declared.named(line, build=True), declared.series(line, build=True)


def redo_targets(state: ServerState) -> list[str]:
    """Three crash targets, as sizes in MiB (SHARES of the most the server's log lets build up)."""
    bounds = [b for b in (largest_redo_target(state.engine, state.redo_log_bytes), state.worst_redo) if b]
    largest = min(bounds) if bounds else max(UNBOUNDED_TARGET, 2 * state.redo_to_replay)
    return [f"{size}M" for size in sorted({max(1, int(largest * share) // MIB) for share in SHARES})]


def measuring_definition(state: ServerState, lab_host: str, build: str, repetitions: int) -> dict:
    """The experiment whose runs would stand for this server in a prediction."""
    parameters = {"insert_rate": [0]}
    if build != SYSTEM_BUILD:
        parameters["server_build"] = [build]
    for name, size in (
        ("buffer_pool_size", state.buffer_pool_bytes),
        ("redo_log_size", state.redo_log_bytes),
    ):
        if size:
            parameters[name] = [_size(size)]
    workloads = engine_workloads(state.engine)
    workload = dict(WORKLOAD)
    if workloads is not None and workload["name"] not in workloads:
        workload["name"] = workloads[0]
    return {
        "name": f"predict {state.server}: downtime against redo at its settings",
        "description": f"How long would {state.server} ({state.version}) be down after a crash, at its "
        "own settings? Asked by recovery-lab predict --measure.",
        "hosts": [lab_host],
        "engines": [state.engine],
        "parameters": parameters,
        "server_options": {
            name: [value]
            for name, value in state.server_options.items()
            if server_option_allowed(name, value)
        },
        "workload": workload,
        "crash": {"method": "sigkill", "when": "at_redo_bytes", "redo_bytes": redo_targets(state)},
        "repetitions": repetitions,
    }


def _size(size: int) -> str:
    """A size as a definition takes it: the largest unit that divides it (MiB at the least,
    rounded up: a definition's sizes are whole MiB or larger)."""
    for unit, power in (("G", 30), ("M", 20)):
        if size % (1 << power) == 0:
            return f"{size >> power}{unit}"
    return f"{-(-size // MIB)}M"
