"""InnoDB on Oracle MySQL 8.0.30 and later. What differs from MariaDB's InnoDB (whose class it
extends): the redo log sized by innodb_redo_log_capacity; its LSNs read from the
Innodb_redo_log_* status variables (MariaDB's Innodb_lsn_current and Innodb_checkpoint_age do
not exist here), its checkpoint age their difference; the checkpoint held back by MySQL's own
settings (innodb_checkpoint_disabled is in debug builds only); no Sequence engine for a table of
numbers. Standard library only."""

import time

from ...errors import RunFailed
from ..mariadb.engines import InnoDB as MariaDBInnoDB

# MySQL's redo LSNs, each as one whole number
_STATUS = (
    "CAST((SELECT VARIABLE_VALUE FROM performance_schema.global_status WHERE VARIABLE_NAME = '{}')"
    " AS UNSIGNED)"
)
CURRENT, CHECKPOINT = (
    _STATUS.format("Innodb_redo_log_current_lsn"),
    _STATUS.format("Innodb_redo_log_checkpoint_lsn"),
)
FLUSHED = _STATUS.format("Innodb_redo_log_flushed_to_disk_lsn")


class InnoDB(MariaDBInnoDB):
    server = "mysql"
    options = {
        **MariaDBInnoDB.options,
        "innodb_io_capacity_max": range(100, 2_000_000 + 1),
        # 2 is the server's default, as production runs it: no InnoDB recovery Notes then
        "log_error_verbosity": (1, 2, 3),
    }
    # the checkpoint age is the two LSNs' difference (sample_of)
    samples = {
        **{name: own for name, own in MariaDBInnoDB.samples.items() if name != "checkpoint_age_bytes"},
        "lsn": ("Innodb_redo_log_current_lsn",),
        "checkpoint_lsn": ("Innodb_redo_log_checkpoint_lsn",),
    }
    redo_to_replay_sql = f"SELECT {CURRENT} - {CHECKPOINT}"
    # What held the checkpoint still through 40 s of load on MySQL 9.7 (its own flushing:
    # adaptive flushing off, no pre-flushing below 90% dirty, the background flush slowed).
    held_back = {
        "innodb_max_dirty_pages_pct": "90",
        "innodb_max_dirty_pages_pct_lwm": "0",
        "innodb_adaptive_flushing": "OFF",
        "innodb_io_capacity": "100",
        "innodb_io_capacity_max": "200",
    }

    def server_options(self, buffer_pool: str, redo_log: str, build: str) -> list[str]:
        return [f"--innodb-buffer-pool-size={buffer_pool}", f"--innodb-redo-log-capacity={redo_log}"]

    def redo_read_direct(self, settings: dict) -> bool | None:
        """MySQL opens its redo log files without O_DIRECT: innodb_flush_method's O_DIRECT is for
        the data files only."""
        return False

    def sample_of(self, own: dict[str, int]) -> dict[str, int]:
        found = super().sample_of(own)
        if "lsn" in found and "checkpoint_lsn" in found:
            found["checkpoint_age_bytes"] = found["lsn"] - found["checkpoint_lsn"]
        return found

    def make_log_durable(self, server, table: str, deadline: float, poll_s: float) -> None:
        """As MariaDB's: a trivial commit on another connection writes the log buffer; then wait
        until the log is flushed up to where it was."""
        server.query(f"CREATE TABLE IF NOT EXISTS {table} (id INT PRIMARY KEY) ENGINE=InnoDB")
        server.query(f"REPLACE INTO {table} VALUES (1)")
        wanted = None
        while time.monotonic() < deadline:
            current, flushed = server.query(f"SELECT {CURRENT}, {FLUSHED}").split()
            wanted = wanted or int(current)
            if int(flushed) >= wanted:
                return
            time.sleep(poll_s)
        raise RunFailed("the open transaction's redo was not flushed in time")

    def numbers_sql(self, rows: int) -> str:
        """1..rows from a cross join of digits (MySQL has no Sequence engine)."""
        digits = (
            "(SELECT 0 d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 "
            "UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)"
        )
        places = len(str(max(int(rows) - 1, 1)))  # 0 .. rows-1, plus 1
        joined = ", ".join(f"{digits} p{i}" for i in range(places))
        number = " + ".join(f"p{i}.d * {10**i}" for i in range(places))
        return f"(SELECT {number} + 1 AS seq FROM {joined} HAVING seq <= {int(rows)}) numbers"

    def available(self, programs: dict) -> bool:
        return bool(programs.get("server"))


ENGINES = (InnoDB(),)
