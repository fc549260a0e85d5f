"""Engines, workloads and crash plans, each defined once: value, label, colour, and whether the
host runner can run it. Models, forms, the definition, the API and charts read them from here.

What a runner can run is the runner's own allow-list (runner/contract.py, standard
library only, shipped alone to the hosts, where it checks every spec again); it is imported here,
not copied, so the dashboard never offers what the runner would refuse.
"""

from dataclasses import dataclass

from experiments import engines as engine_registry
from runner import contract


@dataclass(frozen=True)
class Term:
    value: str
    label: str
    colour: str = ""
    # For workloads: rows each transaction inserts (the insert rate reached is TPS times this).
    inserts_per_transaction: int = 0


# The engines' registry (experiments/engines.py) as terms, like the other vocabularies.
ENGINES = tuple(Term(engine.name, engine.label, engine.colour) for engine in engine_registry.ENGINES.values())
WORKLOADS = (
    Term("oltp_write_only", "sysbench oltp_write_only", inserts_per_transaction=1),
    Term("oltp_insert", "sysbench oltp_insert", inserts_per_transaction=1),
    Term("oltp_read_write", "sysbench oltp_read_write", inserts_per_transaction=1),
    Term("oltp_update_index", "sysbench oltp_update_index"),
    Term("oltp_update_non_index", "sysbench oltp_update_non_index"),
    Term(
        "insert_indexed",
        "insert_indexed: inserts into 3 secondary indexes (iiBench-like)",
        inserts_per_transaction=1,
    ),
    # no insert rate: its transactions insert from 0 (payment's history row aside) to 17 rows
    Term("tpcc_like", "tpcc_like: new-order, payment, delivery over warehouses (tables)"),
    Term(
        "long_transaction",
        "long_transaction: oltp_write_only beside a transaction left open (open_rows)",
        inserts_per_transaction=1,
    ),
)
CRASH_METHODS = (
    Term("sigkill", "kill -9 (SIGKILL): the OS keeps every write"),
    Term(
        "power_loss", "power loss: kill -9, every write not yet synced lost; restarts cold unless asked warm"
    ),
)
CRASH_METHOD_LABELS = {"sigkill": "kill -9", "power_loss": "power loss"}
CRASH_WHEN = (
    Term("after_workload", "after the workload"),
    Term("during_workload", "during the workload (after_seconds)"),
    Term("at_redo_bytes", "when the redo to replay reaches redo_bytes"),
    Term("during_transaction", "with a transaction of open_rows rows open"),
)

RUNNABLE_ENGINES = engine_registry.RUNNABLE_ENGINES
WORKLOAD_NAMES = tuple(t.value for t in WORKLOADS if t.value in contract.WORKLOADS)
CRASH_METHOD_NAMES = tuple(t.value for t in CRASH_METHODS if t.value in contract.CRASH_METHODS)
CRASH_WHEN_NAMES = tuple(t.value for t in CRASH_WHEN if t.value in contract.CRASH_WHEN)
ENGINE_COLOURS = {t.value: t.colour for t in ENGINES}
ENGINE_LABELS = {t.value: t.label for t in ENGINES}
INSERTS_PER_TRANSACTION = {t.value: t.inserts_per_transaction for t in WORKLOADS}
# An insert rate reached below this share of the one asked for is not the same work: flagged on
# the run and on its cell.
RATE_REACHED_SHARE = 0.9


def choices(terms: tuple[Term, ...], allowed: tuple[str, ...] | None = None) -> list[tuple[str, str]]:
    """(value, label) pairs for Django choices and forms, optionally only the allowed values."""
    return [(t.value, t.label) for t in terms if allowed is None or t.value in allowed]


# A run's stored phases (Run.phases) in words.
PHASE_WORDS = {
    "redo_scan": "redo scan",
    "redo_apply": "redo apply",
    "data_directory_sync": "data directory fsync",
    "wal_replay": "WAL replay",
    "recovery_checkpoint": "end-of-recovery checkpoint",
    "binlog_recovery": "binlog / XA recovery",
    "rollback": "background rollback",
    "buffer_pool_load": "buffer pool load",
}
