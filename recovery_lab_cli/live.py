"""A live server, read for `recovery-lab predict` and `recovery-lab exporter`: its version, buffer
pool, the redo it would replay if it crashed now and the most its redo capacity lets that grow to.

Read-only and bounded: a session marked read only, SHOW and SELECT statements only, a connect
and read timeout on every call. The credentials stay in this process (the dashboard is asked with
the version and redo volumes only). No Django.

The redo to replay is read with the SQL the lab's runner reads it with: the engine's
`redo_to_replay_sql` in the family that claims the server's version (runner/families/). Its bound:
- InnoDB on MariaDB: Innodb_checkpoint_max_age (where InnoDB forces a checkpoint, about 80% of
  the log).
- InnoDB on MySQL: the redo capacity (innodb_redo_log_capacity, or innodb_log_file_size x
  innodb_log_files_in_group; InnoDB checkpoints before it, so it is an upper bound). A server no
  family claims, or a MySQL before 8.0.30, has its redo read from SHOW ENGINE INNODB STATUS'
  "Log sequence number" less "Last checkpoint at".
- MyRocks: the WAL files on disk, which SQL does not show: read from the WAL folder when
  predict runs on the database host (--rocksdb-wal-dir). Bounded by rocksdb_max_total_wal_size.
- PostgreSQL: pg_current_wal_lsn() less the last checkpoint's redo location, bounded by
  max_wal_size (a soft limit: a burst can pass it before the checkpoint it triggers ends).
"""

import contextlib
import gc
import os
import re
import socket
import threading
from dataclasses import dataclass, field
from pathlib import Path

from recovery_lab_cli.server_url import LiveError, ServerUrl, mysql_tls, scrubbed
from runner.families import (
    ENGINES,
    FAMILIES,
    FAMILY_ENGINES,
    declared_for,
    families_running,
    live_scheme,
)

# MyRocks: the one engine whose redo to replay is files SQL does not show.
ENGINE_OF_WAL_FILES = "rocksdb"
FILE_WAL_ENGINES = (ENGINE_OF_WAL_FILES,)
# where MariaDB's InnoDB forces a checkpoint
CHECKPOINT_MAX_AGE = "Innodb_checkpoint_max_age"
INNODB_SETTINGS = (
    "innodb_buffer_pool_size",
    "innodb_log_file_size",
    "innodb_log_files_in_group",
    "innodb_redo_log_capacity",
    "innodb_flush_log_at_trx_commit",
)
ROCKSDB_SETTINGS = ("rocksdb_max_total_wal_size", "rocksdb_block_cache_size")
_LSN = re.compile(r"^(Log sequence number|Last checkpoint at)\s+(\d+)", re.M)


@dataclass
class ServerState:
    server: str
    engine: str
    version: str
    redo_to_replay: int
    worst_redo: int | None  # None: the server sets no bound
    bound: str  # what sets worst_redo, in words
    buffer_pool_bytes: int | None = None
    notes: list[str] = field(default_factory=list)
    # the redo log's size as the lab's redo_log_size names it (innodb_redo_log_capacity on MySQL
    # 8.0.30+, innodb_log_file_size before and on MariaDB, max_wal_size): the fit prefers runs of it
    redo_log_bytes: int | None = None
    # how it makes a commit durable, as a definition's server_options name it: runs measured for
    # it (predict --measure) take these
    server_options: dict = field(default_factory=dict)


def read_server(url: ServerUrl, engine: str, timeout_s: float, wal_dir: str = "") -> ServerState:
    """The server read once, on a connection of its own (predict)."""
    reader = LiveReader(url, engine, timeout_s, wal_dir)
    try:
        return reader.read()
    finally:
        reader.close()


class LiveReader:
    """A live server read again and again on one connection (the exporter: one login, not one per
    scrape), made again after an error. Once connected, every read ends within `timeout_s`: a
    watchdog shuts the connection's socket down when it is over, whatever the driver waits for
    (a relay that stalls after authentication answers nothing, and neither PostgreSQL's
    statement_timeout nor a TCP keepalive ends that); the login itself is bounded by the driver's
    connect timeout (libpq's is 2 s at the least). One read at a time."""

    def __init__(self, url: ServerUrl, engine: str, timeout_s: float, wal_dir: str = ""):
        scheme, self.kind = reader_of(engine)
        if scheme != url.scheme:
            runs = " or ".join(name for name in ENGINES if reader_of(name)[0] == url.scheme)
            raise LiveError(f"a {url.scheme}:// server runs {runs}, not {engine}")
        self.url, self.engine, self.timeout_s, self.wal_dir = url, engine, timeout_s, wal_dir
        self.connection = None
        self.lock = threading.Lock()
        self._overdue = threading.Event()

    def read(self) -> ServerState:
        with self.lock:
            self._overdue.clear()
            watchdog = threading.Timer(self.timeout_s, self._abort)
            watchdog.daemon = True
            watchdog.start()
            try:
                if self.connection is None:
                    self.connection = self.kind.connect(self.url, self.timeout_s)
                return self.kind.read(self.connection, self.url, self.engine, self.wal_dir)
            except Exception as exc:  # ours, the driver's, or a socket shut by the watchdog
                self._drop()
                if self._overdue.is_set():
                    raise LiveError(f"{self.url.name}: no answer within {self.timeout_s:g} s") from None
                if isinstance(exc, LiveError):
                    said = str(exc)
                else:
                    first = str(exc).strip().splitlines()[0] if str(exc).strip() else exc.__class__.__name__
                    said = f"{self.url.name}: {first}"
                raise LiveError(scrubbed(said, self.url)) from None
            finally:
                watchdog.cancel()

    def _abort(self) -> None:
        """The read is overdue: its socket shut down, so the driver's wait ends with an error."""
        self._overdue.set()
        fd = self.kind.socket_of(self.connection) if self.connection is not None else None
        if fd is not None and fd >= 0:
            with contextlib.suppress(OSError):
                duplicate = socket.socket(fileno=os.dup(fd))
                try:
                    duplicate.shutdown(socket.SHUT_RDWR)
                finally:
                    duplicate.close()

    def _drop(self) -> None:
        connection, self.connection = self.connection, None
        if connection is not None:
            with contextlib.suppress(Exception):
                connection.close()

    def close(self) -> None:
        with self.lock:
            self._drop()


class MySQLKind:
    """MariaDB and MySQL through PyMySQL: read_timeout and write_timeout bound each socket call."""

    @staticmethod
    def connect(url: ServerUrl, timeout_s: float):
        import pymysql

        socket_path = url.host if url.host.startswith("/") else None
        try:
            return pymysql.connect(
                host=None if socket_path else url.host,
                unix_socket=socket_path,
                port=url.port,
                user=url.user,
                password=url.password,
                connect_timeout=timeout_s,
                read_timeout=timeout_s,
                write_timeout=timeout_s,
                **mysql_tls(url),
            )
        except pymysql.MySQLError as exc:
            raise LiveError(f"cannot connect to {url.name}: {exc.args[-1] if exc.args else exc}") from None

    @staticmethod
    def socket_of(connection) -> int | None:
        sock = getattr(connection, "_sock", None)
        return sock.fileno() if sock is not None else None

    @staticmethod
    def read(connection, url: ServerUrl, engine: str, wal_dir: str) -> ServerState:
        import pymysql

        try:
            return _read_mysql(connection, url, engine, wal_dir)
        except pymysql.MySQLError as exc:
            raise LiveError(f"{url.name}: {exc.args[-1] if exc.args else exc}") from None


def _read_mysql(connection, url: ServerUrl, engine: str, wal_dir: str) -> ServerState:
    with connection.cursor() as cursor:
        cursor.execute("SET SESSION TRANSACTION READ ONLY")
        cursor.execute("SELECT VERSION()")
        version = cursor.fetchone()[0]
        if engine in FILE_WAL_ENGINES:
            cursor.execute("SHOW GLOBAL VARIABLES WHERE Variable_name IN (%s, %s)", ROCKSDB_SETTINGS)
            return _mysql_rocksdb(url, version, _named(cursor.fetchall()), wal_dir)
        cursor.execute("SHOW GLOBAL STATUS WHERE Variable_name = %s", (CHECKPOINT_MAX_AGE,))
        status = _named(cursor.fetchall())
        cursor.execute("SHOW GLOBAL VARIABLES WHERE Variable_name IN (%s, %s, %s, %s, %s)", INNODB_SETTINGS)
        settings = _named(cursor.fetchall())
        redo = None
        kind = engine_of(version, engine)
        if kind is not None and kind.redo_to_replay_sql is not None:
            cursor.execute(kind.redo_to_replay_sql)
            found = cursor.fetchone()[0]
            redo = int(found) if found is not None else None  # NULL: a MySQL before 8.0.30
        if redo is None:
            cursor.execute("SHOW ENGINE INNODB STATUS")
            lsn = dict(_LSN.findall(cursor.fetchone()[2]))
            if len(lsn) < 2:
                raise LiveError(f"{url.name}: SHOW ENGINE INNODB STATUS gave no log sequence numbers")
            redo = int(lsn["Log sequence number"]) - int(lsn["Last checkpoint at"])
        capacity = int(settings.get("innodb_redo_log_capacity") or 0)
        log_size = capacity or int(settings["innodb_log_file_size"])
        if CHECKPOINT_MAX_AGE.lower() in status:
            worst, bound = int(status[CHECKPOINT_MAX_AGE.lower()]), CHECKPOINT_MAX_AGE
        elif capacity:
            worst, bound = capacity, "innodb_redo_log_capacity (an upper bound)"
        else:
            files = int(settings.get("innodb_log_files_in_group") or 1)
            worst = int(settings["innodb_log_file_size"]) * files
            bound = "innodb_log_file_size x innodb_log_files_in_group (an upper bound)"
        pool = int(settings["innodb_buffer_pool_size"])
        flush = settings.get("innodb_flush_log_at_trx_commit")
        options = {"innodb_flush_log_at_trx_commit": int(flush)} if flush else {}
        return ServerState(
            url.name,
            engine,
            version,
            redo,
            worst,
            bound,
            pool,
            redo_log_bytes=log_size,
            server_options=options,
        )


def engine_of(version: str, engine: str):
    """The engine of that name in the family whose release `version` names (its
    redo_to_replay_sql is what the lab's runner reads its redo to replay with); None where no
    family claims the version."""
    family = declared_for(version)
    return FAMILY_ENGINES[family.name].get(engine) if family is not None else None


def _named(rows) -> dict[str, str]:
    return {name.lower(): value for name, value in rows}


def _mysql_rocksdb(url: ServerUrl, version: str, settings: dict, wal_dir: str) -> ServerState:
    if "rocksdb_max_total_wal_size" not in settings:
        raise LiveError(f"{url.name} has no MyRocks (rocksdb_max_total_wal_size is not a variable there)")
    if not wal_dir:
        raise LiveError(
            "MyRocks does not report the size of its live WAL over SQL: run predict on the database "
            "host with --rocksdb-wal-dir (the datadir's .rocksdb folder, or rocksdb_wal_dir)"
        )
    folder = Path(wal_dir)
    try:
        redo = sum(path.stat().st_size for path in folder.glob("*.log"))
    except OSError as exc:
        raise LiveError(f"cannot read the WAL folder {folder}: {exc.strerror}") from None
    limit = int(settings["rocksdb_max_total_wal_size"] or 0)
    return ServerState(
        url.name,
        ENGINE_OF_WAL_FILES,
        version,
        redo,
        limit or None,
        "rocksdb_max_total_wal_size" if limit else "none: rocksdb_max_total_wal_size is 0 (unbounded)",
        int(settings.get("rocksdb_block_cache_size") or 0) or None,
    )


class PostgreSQLKind:
    """PostgreSQL through psycopg: connect_timeout bounds the login (2 s at the least: libpq's
    shortest), the reader's watchdog the rest."""

    @staticmethod
    def connect(url: ServerUrl, timeout_s: float):
        import psycopg

        try:
            return psycopg.connect(
                host=url.host,
                port=url.port,
                user=url.user or None,
                password=url.password or None,
                dbname=url.database or "postgres",
                connect_timeout=max(1, round(timeout_s)),
                options=f"-c default_transaction_read_only=on -c statement_timeout={int(timeout_s * 1000)}",
                autocommit=True,
                **url.tls,  # sslmode, sslrootcert: libpq's own
            )
        except psycopg.Error as exc:
            said = str(exc).strip().splitlines()[0]
        # psycopg leaves a failed attempt's socket in a reference cycle: freed now, not at the
        # collector's leisure (each failed scrape had left its sockets open behind it)
        gc.collect()
        raise LiveError(f"cannot connect to {url.name}: {said}")

    @staticmethod
    def socket_of(connection) -> int | None:
        with contextlib.suppress(Exception):
            return connection.pgconn.socket
        return None

    @staticmethod
    def read(connection, url: ServerUrl, engine: str, wal_dir: str) -> ServerState:
        import psycopg

        try:
            version, in_recovery, worst, buffers, durable = connection.execute(
                "SELECT current_setting('server_version'), pg_is_in_recovery(), "
                "pg_size_bytes(current_setting('max_wal_size')), "
                "pg_size_bytes(current_setting('shared_buffers')), current_setting('synchronous_commit')"
            ).fetchone()
            if in_recovery:
                raise LiveError(
                    f"{url.name} is a standby (in recovery): a crash there replays what its primary sends"
                )
            kind = engine_of(f"PostgreSQL {version}", engine)
            if kind is None or kind.redo_to_replay_sql is None:
                raise LiveError(f"{url.name}: PostgreSQL {version} is no release the lab knows how to read")
            redo = connection.execute(kind.redo_to_replay_sql).fetchone()[0]
        except psycopg.Error as exc:
            raise LiveError(f"{url.name}: {str(exc).strip().splitlines()[0]}") from None
        return ServerState(
            url.name,
            engine,
            f"PostgreSQL {version}",
            int(redo),
            int(worst),
            "max_wal_size (a soft limit)",
            int(buffers),
            redo_log_bytes=int(worst),
            server_options={"synchronous_commit": durable},
        )


# How a server is reached and read, by the scheme of its address; each server family says which
# scheme its servers speak (its FAMILY.live, runner/families/NAME/__init__.py).
KINDS = {"mysql": MySQLKind, "postgresql": PostgreSQLKind}
READERS = {family: (scheme, KINDS[scheme]) for family in FAMILIES if (scheme := live_scheme(family)) in KINDS}


def reader_of(engine: str) -> tuple:
    """The scheme and reader of the server an engine runs on (its families share them: InnoDB's
    MariaDB and MySQL are both read through PyMySQL); (None, None) for one no family runs."""
    readers = {READERS[family] for family in families_running(engine) if family in READERS}
    return readers.pop() if len(readers) == 1 else (None, None)
