"""The storage engines as the dashboard knows them, one entry each: label and colour, whether the
runner drives it, which log records its recovery (a run's bundle file, an import's upload), and
the rules ingest and the definition checks apply to it. Nothing else in the dashboard compares
an engine's name (the parsers, which read one format each, may). An engine the runner drives is
taken from its family (runner/families/NAME/engines.py), which says all of this; an engine only
imported is listed here.

A new engine: its class in its family, and its test (docs/architecture.md).
"""

from dataclasses import dataclass

from runner import contract
from runner.families import ENGINES as RUNNER_ENGINES


@dataclass(frozen=True)
class Engine:
    name: str
    label: str
    colour: str
    # Why a definition may not name it where the runner does not drive it (its runs are imported).
    not_runnable: str = ""
    # Its recovery is recorded in a log of its own rather than the server's error log: the run
    # bundle's file, the import's upload field that carries it, and what to say when it is missing.
    own_log_file: str | None = None
    own_log_upload: str | None = None
    own_log_missing: str = ""
    # More redo to replay than its log files hold is impossible (a sign of a misread log).
    redo_bounded_by_log: bool = False
    # It checkpoints before its log is full, when this share of the redo log size (redo_log_size)
    # is written since the last checkpoint: a crash at a redo target must fit under it.
    reachable_share_of_log: float | None = None
    # Its log replay, the phase engines are compared on like for like (the stored phases summed;
    # the apply rate is the redo over it), and what its crash recovery figure holds, in words.
    replay_phases: tuple[str, ...] = ("redo_scan", "redo_apply")
    recovery_holds: str = ""

    @property
    def runnable(self) -> bool:
        return self.name in contract.ENGINES

    @property
    def recovery_upload(self) -> str:
        """The import's upload field whose log records this engine's recovery."""
        return self.own_log_upload or "error_log"


def _driven(kind) -> Engine:
    """An engine the runner drives, as its family says it is (runner/families/NAME/engines.py)."""
    return Engine(
        kind.name,
        kind.label,
        kind.colour,
        own_log_file=kind.own_recovery_log,
        own_log_upload=kind.own_log_upload,
        own_log_missing=kind.own_log_missing,
        redo_bounded_by_log=kind.redo_bounded_by_log,
        reachable_share_of_log=kind.reachable_share_of_log,
        replay_phases=kind.replay_phases,
        recovery_holds=kind.recovery_holds,
    )


# Engines no family of the runner drives: their runs are imported, from their logs.
IMPORT_ONLY = (
    Engine(
        "tokudb",
        "TokuDB",
        "#2ca02c",
        not_runnable="TokuDB does not run on MariaDB 10.11 hosts: import its logs instead",
        recovery_holds="TokuFT's log replay, backward to the checkpoint and forward",
    ),
)
# Every engine the dashboard knows: the runner's (the families' order) then the imported ones.
ENGINES: dict[str, Engine] = {
    engine.name: engine for engine in (*map(_driven, RUNNER_ENGINES.values()), *IMPORT_ONLY)
}
RUNNABLE_ENGINES = tuple(name for name, engine in ENGINES.items() if engine.runnable)
# The engine a form offers first.
DEFAULT_ENGINE = RUNNABLE_ENGINES[0]


def engine(name: str) -> Engine:
    return ENGINES[name]


def replay_seconds(name: str, phases: dict) -> float | None:
    """An engine's log replay in seconds from a run's stored phases; None where none was timed."""
    if name not in ENGINES:
        return None
    timed = [phases[phase] for phase in ENGINES[name].replay_phases if phases.get(phase) is not None]
    return round(sum(timed), 6) if timed else None


def engine_order(name: str) -> int:
    """Where an engine sorts: the registry's order (InnoDB first)."""
    return list(ENGINES).index(name) if name in ENGINES else len(ENGINES)
