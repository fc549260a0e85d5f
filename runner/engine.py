"""What an engine is to the runner: the base class every engine's class fills in (each family's
engines.py under families/; the registry is families/__init__.py). Standard library only."""

from pathlib import Path

from .errors import RunFailed

# held_back: the engine's method settings hold its flushing (and so its checkpoint) back during the
# workload, so the redo written is the redo recovery replays; natural: the server flushes as it
# would in production (what a bigger log buys while running). Each engine's are its `held_back`.
FLUSHING = ("held_back", "natural")
DEFAULT_FLUSHING = "held_back"
# Where the system's MariaDB packages put their plugins.
PLUGIN_DIRS = ("/usr/lib/mysql/plugin", "/usr/lib64/mysql/plugin", "/usr/lib/mariadb/plugin")
# What a run samples each second (samples.jsonl), under names every engine shares; each engine
# says which of its own values each one is (Engine.samples). Levels are drawn as they are:
SAMPLE_LEVELS = (
    "checkpoint_age_bytes",  # redo written since the last checkpoint, which a crash now replays
    "wal_to_replay_bytes",  # WAL written since the last checkpoint's redo point
    "wal_on_disk_bytes",  # WAL files on disk (an engine whose redo to replay is its WAL files)
    "lsn",
    "checkpoint_lsn",
    "dirty_pages",
    "memtable_bytes",
    "memtable_unflushed_bytes",
)
# and counters, which only grow, as their growth per second:
SAMPLE_COUNTERS = (
    "pages_written",
    "log_bytes_written",
    "data_bytes_written",
    "wal_bytes",
    "engine_bytes_written",  # bytes given to the engine to write, before its log and compaction
    "rows_changed",
    "commits",
    "queries",
)


class Engine:
    name = ""
    # What the dashboard shows and applies (experiments/engines.py takes them from here): its
    # label and colour; with a log of its own (own_recovery_log, below) the import's upload field
    # and what to say when it is missing; whether more redo than its log files hold is impossible
    # (a misread log); the share of the redo log size written since the last checkpoint at which
    # it checkpoints anyway (a crash at a redo target must fit under it); its log replay's phases
    # (what engines are compared on, like for like); and what its recovery figure holds, in words.
    label = ""
    colour = ""
    own_log_upload: str | None = None
    own_log_missing = ""
    redo_bounded_by_log = False
    reachable_share_of_log: float | None = None
    replay_phases: tuple[str, ...] = ("redo_scan", "redo_apply")
    recovery_holds = ""
    # The family whose server runs it: the name of its folder under families/.
    server = ""
    # The server options a definition may give its runs, with the values each takes (a tuple
    # lists them, a range bounds a whole number): the contract's allow-list is their union.
    options: dict[str, tuple | range] = {}
    # The workloads it runs (None: every one the contract knows).
    workloads: tuple[str, ...] | None = None
    # What its server writes, over and over, when a recovery cannot go on (runner/stall.py).
    stall_signs: tuple[str, ...] = ()
    # Whether its server keeps a binary log (binlog_files, log_bin).
    binary_log = True
    # Settings under which a power cut corrupts data by design (refused for power_loss).
    power_loss_refuses: dict[str, object] = {}
    # its tables' ENGINE= clause, and SHOW ENGINE ... STATUS snapshots kept at each step
    storage = ""
    status_of = ("INNODB",)
    plugin: str | None = None  # the server plugin it needs, loaded at the start
    # The run's end-of-run counters (metric: status variable), and what it samples every second
    # during the workload: a shared name (SAMPLE_LEVELS, SAMPLE_COUNTERS) -> the values of its own
    # whose sum it is (status variables; names its sample_sql gives rows).
    counters: dict[str, str] = {}
    samples: dict[str, tuple[str, ...]] = {}
    # What a crash now would replay, as one whole number (None: not a number SQL shows).
    redo_to_replay_sql: str | None = None
    # Its flushing held back (parameters.flushing held_back, the default): settings a user's
    # server_options override; natural flushing gives none (the run records what was in effect).
    held_back: dict[str, str] = {}
    # Whether the server's clock stamps its recovery lines (the error log) or a log of its own.
    own_recovery_log: str | None = None

    def redo_read_direct(self, settings: dict) -> bool | None:
        """Whether its recovery reads its redo with O_DIRECT, past the page cache, under the server
        settings in effect (a warm restart then reads it from the disk all the same); None where
        that is not known. The base: through the page cache (PostgreSQL's WAL, RocksDB's)."""
        return False

    def server_options(self, buffer_pool: str, redo_log: str, build: str) -> list[str]:
        """buffer_pool_size and redo_log_size as this engine's options on `build` (what
        `mariadbd --version` printed)."""
        raise NotImplementedError

    def available(self, programs: dict) -> bool:
        """Whether a build with these programs (builds.programs) can run it: its server is
        MariaDB's, with the plugin in its plugin folder (the system's: the packages' folders)."""
        if not programs.get("server"):
            return False
        folders = [programs["plugin_dir"]] if programs.get("plugin_dir") else PLUGIN_DIRS
        wanted = f"{self.plugin}.so"
        return self.plugin is None or any(Path(folder, wanted).exists() for folder in folders)

    def slow_shutdown_sql(self) -> str:
        """What makes the next shutdown leave every change in the data files."""
        raise NotImplementedError

    def redo_to_replay(self, server, client) -> int:
        """How much redo recovery would replay if the server were killed now; `client` is an
        open session (server.session()) for engines that ask the server."""
        if self.redo_to_replay_sql is None:
            raise NotImplementedError
        return self.read_number(client, self.redo_to_replay_sql, "the redo to replay")

    @staticmethod
    def read_number(client, sql: str, what: str) -> int:
        """One whole number from an open session (server.session()): `sql` asked, its one line
        read; RunFailed naming `what` where the answer is not one."""
        client.stdin.write(f"{sql};\n")
        client.stdin.flush()
        line = client.stdout.readline().strip()
        if not line.isdigit():
            raise RunFailed(f"could not read {what}: {line or 'connection lost'}")
        return int(line)

    def sample_extras(self, datadir: Path) -> dict:
        """Values read beside the sampled status each second (files on disk)."""
        return {}

    def at_crash(self, server) -> dict:
        """What the crash left that recovery will read, kept in the result."""
        return {}

    def keep_recovery_log(self, datadir: Path, work: Path) -> None:
        """After recovery: copy the log that recorded it where the engine has one of its own."""

    def make_log_durable(self, server, table: str, deadline: float, poll_s: float) -> None:
        """An open transaction's changes written to the log on disk before the kill (`table`: a
        name the runner gives it for a table of its own, if it needs one)."""

    def workload_args(self) -> list[str]:
        """sysbench's arguments that put its tables in this engine."""
        return []

    def own_sampled(self) -> tuple[str, ...]:
        """Its own values that its samples are made of, each once, in order."""
        return tuple(dict.fromkeys(own for parts in self.samples.values() for own in parts))

    def sample_sql(self, end: str) -> str:
        """One sample: (own name, whole number) rows, then a row of `end` alone."""
        listed = ", ".join(f"'{name}'" for name in self.own_sampled())
        return f"SHOW GLOBAL STATUS WHERE Variable_name IN ({listed}); SELECT '{end}';\n"

    def sample_of(self, own: dict[str, int]) -> dict[str, int]:
        """A sample under the shared names, from its own values (a name whose values are not all
        there is left out)."""
        found = {}
        for name, parts in self.samples.items():
            values = [own.get(part) for part in parts]
            if values and None not in values:
                found[name] = sum(values)
        return found

    def read_counters(self, server) -> dict:
        """The end-of-run counters now (metric: whole number)."""
        found = server.global_values("STATUS", self.counters.values())
        by_lower = {k.lower(): v for k, v in found.items()}
        return {
            metric: int(by_lower[var.lower()])
            for metric, var in self.counters.items()
            if by_lower.get(var.lower(), "").isdigit()
        }

    def snapshots(self, server) -> dict[str, str]:
        """The engine's status at a step of the run: file name prefix -> text."""
        return {
            f"{storage.lower()}_status": server.query(f"SHOW ENGINE {storage} STATUS", vertical=True)
            for storage in self.status_of
        }

    def create_schema_sql(self, name: str) -> str:
        return f"CREATE DATABASE IF NOT EXISTS {name}"

    def table_clause(self) -> str:
        """What follows a CREATE TABLE's columns to put the table in this engine."""
        return f" ENGINE={self.storage}"

    def numbers_sql(self, rows: int) -> str:
        """A FROM clause of the whole numbers 1..rows in a column `seq`."""
        return f"sbtest.seq_1_to_{int(rows)}"
