"""The storage engines as the dashboard knows them, one entry each: label and colour, whether the
runner drives it, which log records its recovery (a run's bundle file, an import's upload), and
the rules ingest and the definition checks apply to it. Nothing else in the dashboard compares
an engine's name (the parsers, which read one format each, may). The runner's side of the same
engines is in the runner's families (runner/families/); the engines it drives are the ones
runnable here.

A new engine: an entry here, its class there, and their test (docs/architecture.md).
"""

from dataclasses import dataclass

from runner import contract


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


ENGINES: dict[str, Engine] = {
    engine.name: engine
    for engine in (
        # InnoDB's async flushing starts at 7/8 of the log's capacity; 0.75 leaves room to stop
        Engine(
            "innodb",
            "InnoDB",
            "#1f77b4",
            redo_bounded_by_log=True,
            reachable_share_of_log=0.75,
            recovery_holds="the redo scan and apply, 'Starting crash recovery' to the last batch applied",
        ),
        Engine(
            "rocksdb",
            "MyRocks",
            "#d62728",
            own_log_file="rocksdb_LOG",
            own_log_upload="rocksdb_log",
            own_log_missing="MyRocks recovery is read from RocksDB's LOG: upload it",
            replay_phases=("wal_replay",),
            recovery_holds="RocksDB's WAL replay, from its LOG",
        ),
        Engine(
            "tokudb",
            "TokuDB",
            "#2ca02c",
            not_runnable="TokuDB does not run on MariaDB 10.11 hosts: import its logs instead",
            recovery_holds="TokuFT's log replay, backward to the checkpoint and forward",
        ),
        # A checkpoint starts when the WAL since the last one reaches max_wal_size / (1 +
        # checkpoint_completion_target), 1/1.9 of it by default.
        Engine(
            "postgresql",
            "PostgreSQL",
            "#9467bd",
            reachable_share_of_log=0.45,
            replay_phases=("wal_replay",),
            recovery_holds=(
                "the data directory's fsync, the WAL replay ('redo starts at' to 'redo done at') and "
                "the end-of-recovery checkpoint"
            ),
        ),
    )
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
