"""MariaDB's storage engines, one class each (their base class: runner/engine.py). Everything the
runner does differently for an engine is in its class: its server options and method defaults,
the settings read back, the counters sampled each second, the redo a crash leaves and how much
of it there is, the files recovery reads, how its log is made durable, its workload's arguments
and how the probe finds it. Nothing else in the runner compares an engine's name. Standard
library only (shipped in the runner's zip); the dashboard's side of the same engines is
experiments/engines.py.

A new engine: a subclass of engine.Engine in ENGINES below, and its dashboard entry
(docs/architecture.md).
"""

import contextlib
import os
import re
import stat
import time
from pathlib import Path

from ...engine import Engine
from ...errors import RunFailed
from ...files import copy_regular

MYSQL_VERSION = re.compile(r"Ver ([0-9]+)\.([0-9]+)\.([0-9]+)")


# Options of every engine MariaDB runs: the binary log.
BINARY_LOG_OPTIONS: dict[str, tuple | range] = {"log_bin": (0, 1), "sync_binlog": range(0, 1000 + 1)}


class InnoDB(Engine):
    name = "innodb"
    server = "mariadb"
    label, colour = "InnoDB", "#1f77b4"
    redo_bounded_by_log = True
    # its async flushing starts at 7/8 of the log's capacity; 0.75 leaves room to stop
    reachable_share_of_log = 0.75
    recovery_holds = "the redo scan and apply, 'Starting crash recovery' to the last batch applied"
    storage = "InnoDB"
    # buf0lru.cc: MySQL's (buf_LRU_get_free_block) and MariaDB's (buf_pool.LRU_warn) words for
    # a buffer pool with no block to give
    stall_signs = (
        "Difficult to find free blocks in the buffer pool",
        "Could not free any blocks in the buffer pool",
    )
    options = {
        "innodb_flush_log_at_trx_commit": (0, 1, 2),
        "innodb_doublewrite": (0, 1),
        "innodb_flush_method": ("fsync", "O_DSYNC", "O_DIRECT", "O_DIRECT_NO_FSYNC"),
        "innodb_io_capacity": range(100, 1_000_000 + 1),
        "innodb_max_dirty_pages_pct": range(0, 99 + 1),
        "innodb_adaptive_flushing": (0, 1),
        "innodb_buffer_pool_load_at_startup": (0, 1),
        "innodb_fast_shutdown": (0, 1, 2),
        # How often a log written at each commit but not synced (flush_log_at_trx_commit 0 or 2)
        # is synced, in seconds.
        "innodb_flush_log_at_timeout": range(1, 2700 + 1),
        **BINARY_LOG_OPTIONS,
    }
    counters = {
        "pages_written": "Innodb_pages_written",
        "log_bytes_written": "Innodb_os_log_written",
        "data_bytes_written": "Innodb_data_written",
    }
    # MariaDB's statements counted: what its engines' samples share
    STATEMENTS = {
        "rows_changed": ("Handler_write", "Handler_update", "Handler_delete"),
        "commits": ("Com_commit",),
        "queries": ("Questions",),
    }
    samples = {
        "lsn": ("Innodb_lsn_current",),
        "checkpoint_lsn": ("Innodb_lsn_last_checkpoint",),
        "checkpoint_age_bytes": ("Innodb_checkpoint_age",),
        "dirty_pages": ("Innodb_buffer_pool_pages_dirty",),
        "pages_written": ("Innodb_pages_written",),
        "log_bytes_written": ("Innodb_os_log_written",),
        "data_bytes_written": ("Innodb_data_written",),
        **STATEMENTS,
    }
    redo_to_replay_sql = (
        "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS"
        " WHERE VARIABLE_NAME = 'INNODB_CHECKPOINT_AGE'"
    )
    # Hold the checkpoint back during the workload (no pre-flushing, no adaptive flushing below
    # 70% of the log, dirty pages up to 99%), so the redo written is the redo recovery replays.
    held_back = {
        "innodb_max_dirty_pages_pct": "99",
        "innodb_max_dirty_pages_pct_lwm": "0",
        "innodb_adaptive_flushing_lwm": "70",
    }

    def server_options(self, buffer_pool: str, redo_log: str, build: str) -> list[str]:
        return [f"--innodb-buffer-pool-size={buffer_pool}", redo_log_option(build, redo_log)]

    def redo_read_direct(self, settings: dict) -> bool | None:
        """MariaDB 10.8 and later open ib_logfile0 with O_DIRECT unless innodb_log_file_buffering
        is ON, which innodb_flush_log_at_trx_commit=2 turns on (MDEV-28766): seed 000's 8 GiB
        of redo was read through the page cache."""
        return {"OFF": True, "ON": False}.get(str(settings.get("innodb_log_file_buffering", "")).upper())

    def slow_shutdown_sql(self) -> str:
        return "SET GLOBAL innodb_fast_shutdown = 0"

    def make_log_durable(self, server, table: str, deadline: float, poll_s: float) -> None:
        """An open transaction's redo sits in the log buffer until something writes it: commit
        a trivial change on another connection (which writes the whole buffer) and wait until
        the log is flushed up to where it was, so the kill finds the transaction in the log."""
        server.query(f"CREATE TABLE IF NOT EXISTS {table} (id INT PRIMARY KEY) ENGINE=InnoDB")
        server.query(f"REPLACE INTO {table} VALUES (1)")
        wanted = None
        while time.monotonic() < deadline:
            lsn = server.global_values("STATUS", ("Innodb_lsn_current", "Innodb_lsn_flushed"))
            wanted = wanted or int(lsn["Innodb_lsn_current"])
            if int(lsn["Innodb_lsn_flushed"]) >= wanted:
                return
            time.sleep(poll_s)
        raise RunFailed("the open transaction's redo was not flushed in time")


class MyRocks(Engine):
    name = "rocksdb"
    server = "mariadb"
    label, colour = "MyRocks", "#d62728"
    own_log_upload = "rocksdb_log"
    own_log_missing = "MyRocks recovery is read from RocksDB's LOG: upload it"
    replay_phases = ("wal_replay",)
    recovery_holds = "RocksDB's WAL replay, from its LOG"
    storage = "ROCKSDB"
    status_of = ("INNODB", "ROCKSDB")
    plugin = "ha_rocksdb"
    options = {
        "rocksdb_flush_log_at_trx_commit": (0, 1, 2),
        "rocksdb_max_background_jobs": range(1, 64 + 1),
        **BINARY_LOG_OPTIONS,
    }
    own_recovery_log = "rocksdb_LOG"
    held_back: dict[str, str] = {}  # nothing of its flushing: held_back and natural run it alike
    counters = {"log_bytes_written": "Rocksdb_wal_bytes", "data_bytes_written": "Rocksdb_bytes_written"}
    samples = {
        "wal_bytes": ("Rocksdb_wal_bytes",),
        "engine_bytes_written": ("Rocksdb_bytes_written",),
        "memtable_bytes": ("Rocksdb_memtable_total",),
        "memtable_unflushed_bytes": ("Rocksdb_memtable_unflushed",),
        **InnoDB.STATEMENTS,
    }

    def server_options(self, buffer_pool: str, redo_log: str, build: str) -> list[str]:
        # the block cache plays the buffer pool; max_total_wal_size bounds the WAL that
        # recovery may have to replay, as the redo log size does for InnoDB
        return [
            f"--plugin-load-add={self.plugin}",
            f"--rocksdb-block-cache-size={buffer_pool}",
            f"--rocksdb-max-total-wal-size={redo_log}",
            "--default-storage-engine=ROCKSDB",
        ]

    def slow_shutdown_sql(self) -> str:
        return "SET GLOBAL rocksdb_force_flush_memtable_now = 1"

    def redo_to_replay(self, server, client) -> int:
        return sum(wal_sizes(server.datadir).values())

    def sample_extras(self, datadir: Path) -> dict:
        return {"wal_on_disk_bytes": sum(wal_sizes(datadir).values())}

    def at_crash(self, server) -> dict:
        return {"wal_bytes_at_crash": wal_sizes(server.datadir)}

    def keep_recovery_log(self, datadir: Path, work: Path) -> None:
        # RocksDB starts a new LOG at every open: keep the one of the crash recovery
        copy_regular(datadir / "#rocksdb" / "LOG", work / self.own_recovery_log)

    def workload_args(self) -> list[str]:
        return ["--mysql-storage-engine=rocksdb"]


ENGINES = (InnoDB(), MyRocks())


def redo_log_option(build: str, size: str) -> str:
    """redo_log_size as the server build names it: MySQL 8.0.30+ sizes its redo log with
    innodb_redo_log_capacity (innodb_log_file_size is deprecated there); MariaDB and older MySQL
    with innodb_log_file_size. `build` is what `mariadbd --version` / `mysqld --version` print."""
    found = MYSQL_VERSION.search(build)
    version = tuple(int(part) for part in found.groups()) if found else (0, 0, 0)
    if "MariaDB" not in build and version >= (8, 0, 30):
        return f"--innodb-redo-log-capacity={size}"
    return f"--innodb-log-file-size={size}"


def wal_sizes(datadir: Path) -> dict:
    """Sizes of MyRocks' WAL files: the 'redo' its recovery will replay after a crash. The
    datadir is the server's user's: its folders are opened, and its files looked at, without
    following a link, and only regular files count."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        data = os.open(datadir, flags)
    except OSError:
        return {}
    try:
        folder = os.open("#rocksdb", flags, dir_fd=data)
    except OSError:
        return {}
    finally:
        os.close(data)
    try:
        sizes = {}
        for name in os.listdir(folder):
            stem, _, suffix = name.partition(".")
            if suffix == "log" and stem.isdigit():
                with contextlib.suppress(OSError):
                    info = os.stat(name, dir_fd=folder, follow_symlinks=False)
                    if stat.S_ISREG(info.st_mode):
                        sizes[str(int(stem))] = info.st_size
        return sizes
    finally:
        os.close(folder)
