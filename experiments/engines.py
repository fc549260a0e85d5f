"""The storage engines as the dashboard knows them, one entry each: label and colour, whether the
runner drives it, which log records its recovery (a run's bundle file, an import's upload), and
the rules ingest and the definition checks apply to it. Nothing else in the dashboard compares
an engine's name (the parsers, which read one format each, may). The runner's side of the same
engines is workers/runner/engines.py; the engines it drives are the ones runnable here.

A new engine: an entry here, its class there, and their test (docs/architecture.md).
"""

from dataclasses import dataclass

from workers.runner import contract


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
        Engine("innodb", "InnoDB", "#1f77b4", redo_bounded_by_log=True, reachable_share_of_log=0.75),
        Engine(
            "rocksdb",
            "MyRocks",
            "#d62728",
            own_log_file="rocksdb_LOG",
            own_log_upload="rocksdb_log",
            own_log_missing="MyRocks recovery is read from RocksDB's LOG: upload it",
        ),
        Engine(
            "tokudb",
            "TokuDB",
            "#2ca02c",
            not_runnable="TokuDB does not run on MariaDB 10.11 hosts: import its logs instead",
        ),
        # A checkpoint starts when the WAL since the last one reaches max_wal_size / (1 +
        # checkpoint_completion_target), 1/1.9 of it by default.
        Engine("postgresql", "PostgreSQL", "#9467bd", reachable_share_of_log=0.45),
    )
}
RUNNABLE_ENGINES = tuple(name for name, engine in ENGINES.items() if engine.runnable)
# The engine a form offers first.
DEFAULT_ENGINE = RUNNABLE_ENGINES[0]


def engine(name: str) -> Engine:
    return ENGINES[name]


def engine_order(name: str) -> int:
    """Where an engine sorts: the registry's order (InnoDB first)."""
    return list(ENGINES).index(name) if name in ENGINES else len(ENGINES)
