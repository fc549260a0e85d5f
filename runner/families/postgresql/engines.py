"""PostgreSQL as an engine the runner drives (its server: server.py beside this). Standard library only."""

import re
import time

from ...engine import Engine
from ...errors import RunFailed


class PostgreSQL(Engine):
    """PostgreSQL: its server is postgres.py's; the redo is its WAL, replayed from the last
    checkpoint's redo location. Its views stand where MariaDB's status variables do."""

    name = "postgresql"
    server = "postgresql"
    label, colour = "PostgreSQL", "#9467bd"
    # a checkpoint starts when the WAL since the last one reaches max_wal_size / (1 +
    # checkpoint_completion_target), 1/1.9 of it by default
    reachable_share_of_log = 0.45
    replay_phases = ("wal_replay",)
    recovery_holds = (
        "the data directory's fsync, the WAL replay ('redo starts at' to 'redo done at') and "
        "the end-of-recovery checkpoint"
    )
    storage = "heap"
    status_of = ()
    binary_log = False
    # sysbench's own OLTP scripts speak its SQL; the project's Lua scripts are MariaDB's
    workloads = (
        "oltp_write_only",
        "oltp_insert",
        "oltp_read_write",
        "oltp_update_index",
        "oltp_update_non_index",
    )
    options = {
        "checkpoint_timeout": range(30, 86400 + 1),
        "full_page_writes": ("on", "off"),
        "wal_compression": ("off", "on", "pglz", "lz4", "zstd"),
        "recovery_prefetch": ("off", "on", "try"),
        "synchronous_commit": ("on", "off", "local"),
        "fsync": ("on", "off"),
        "wal_buffers": range(-1, 262143 + 1),  # in 8 kB pages; -1: 1/32 of shared_buffers
        # how crash recovery first makes the data directory durable: each file, or the file system
        "recovery_init_sync_method": ("fsync", "syncfs"),
    }
    # Hold the checkpoint back as for InnoDB: none by time, so the WAL since the last one is the
    # workload's, up to max_wal_size (the redo_log_size).
    held_back = {"checkpoint_timeout": "86400"}
    power_loss_refuses = {"fsync": "off"}
    counters = {"log_bytes_written": "wal_lsn", "commits": "xact_commit", "pages_written": "buffers_written"}
    samples = {
        "lsn": ("wal_lsn",),
        "checkpoint_lsn": ("checkpoint_redo_lsn",),
        "wal_to_replay_bytes": ("wal_to_replay",),
        "wal_bytes": ("wal_lsn",),
        "rows_changed": ("tup_inserted", "tup_updated", "tup_deleted"),
        "commits": ("xact_commit",),
    }
    # (name, SQL of one whole number): what samples and counters read
    VALUES = {
        "wal_lsn": "pg_current_wal_lsn() - '0/0'",
        "checkpoint_redo_lsn": "(SELECT redo_lsn FROM pg_control_checkpoint()) - '0/0'",
        "wal_to_replay": "pg_current_wal_lsn() - (SELECT redo_lsn FROM pg_control_checkpoint())",
        **{
            name: f"(SELECT sum({name}) FROM pg_stat_database)"
            for name in ("xact_commit", "tup_inserted", "tup_updated", "tup_deleted")
        },
    }
    redo_to_replay_sql = f"SELECT ({VALUES['wal_to_replay']})::bigint"

    def server_options(self, buffer_pool: str, redo_log: str, build: str) -> list[str]:
        return [f"shared_buffers={pg_size(buffer_pool)}", f"max_wal_size={pg_size(redo_log)}"]

    def available(self, programs: dict) -> bool:
        return bool(programs.get("postgres_bin"))

    def slow_shutdown_sql(self) -> str:
        return "CHECKPOINT"

    def _values_sql(self, names, build: str = "") -> str:
        values = {**self.VALUES, "buffers_written": buffers_written_sql(build)}
        return " UNION ALL ".join(f"SELECT '{name}', ({values[name]})::bigint" for name in names)

    def sample_sql(self, end: str) -> str:
        return f"{self._values_sql(self.own_sampled())}; SELECT '{end}';\n"

    def read_counters(self, server) -> dict:
        found = server.pairs(self._values_sql(self.counters.values(), server.build))
        return {metric: int(found[name]) for metric, name in self.counters.items() if name in found}

    def snapshots(self, server) -> dict[str, str]:
        return {
            "pg_checkpoint": server.query("SELECT * FROM pg_control_checkpoint()", vertical=True),
            "pg_stat_wal": server.query("SELECT * FROM pg_stat_wal", vertical=True),
        }

    def at_crash(self, server) -> dict:
        return {"control_data_at_crash": server.control_data()}

    def make_log_durable(self, server, table: str, deadline: float, poll_s: float) -> None:
        """The open transaction's WAL reaches the disk with the next commit's flush: commit a
        trivial change on another connection once its records are in, then the flush covers them."""
        wanted = int(server.query(f"SELECT {self.VALUES['wal_lsn']}").strip())
        server.query(f"CREATE TABLE IF NOT EXISTS {table} (id INT PRIMARY KEY)")
        server.query(f"INSERT INTO {table} VALUES (1) ON CONFLICT (id) DO UPDATE SET id = 1")
        while time.monotonic() < deadline:
            if int(server.query("SELECT pg_current_wal_flush_lsn() - '0/0'").strip()) >= wanted:
                return
            time.sleep(poll_s)
        raise RunFailed("the open transaction's WAL was not flushed in time")

    def create_schema_sql(self, name: str) -> str:
        return f"CREATE SCHEMA IF NOT EXISTS {name}"

    def table_clause(self) -> str:
        return ""

    def numbers_sql(self, rows: int) -> str:
        return f"generate_series(1, {int(rows)}) AS seq"


def buffers_written_sql(build: str) -> str:
    """Pages the server wrote to its data files (checkpointer, background writer and backends):
    pg_stat_io's from PostgreSQL 16, pg_stat_bgwriter's before. `build`: `postgres --version`."""
    found = re.search(r"\(PostgreSQL\) ([0-9]+)", build)
    if found and int(found.group(1)) >= 16:
        return "(SELECT sum(writes) FROM pg_stat_io WHERE object = 'relation')"
    return "(SELECT buffers_checkpoint + buffers_clean + buffers_backend FROM pg_stat_bgwriter)"


def pg_size(size: str) -> str:
    """'128M' -> '128MB': a size as PostgreSQL's settings take it."""
    return f"{size[:-1]}{'k' if size[-1] == 'K' else size[-1]}B"


ENGINES = (PostgreSQL(),)
