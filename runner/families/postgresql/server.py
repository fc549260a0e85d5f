"""The runner's private PostgreSQL: a cluster of its own made with initdb in the run's datadir,
started as `postgres -D` with its socket in the run's folder and no TCP port, crashed by killing
the postmaster and every process of it, by pid. Never the host's own cluster.

As for MariaDB: where the runner runs as root the cluster runs as an unprivileged OS user
(postgres, else nobody), its only account is the runner's OS user's name, authenticated by the
connecting process's OS user (peer), and it listens on a socket only the run's folder holds.
Its log is its stderr, in the run's error.log, each line prefixed with the milliseconds."""

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

from ...builds import BUILDS_DIR, SYSTEM_BUILD, folder_programs, launching_script, version_line
from ...errors import RunFailed
from ...files import Refused, append_regular, open_to_others
from ...processes import POLL_S, SETPRIV, spawn, stat_fields
from ...server import Server

# The socket's file name is .s.PGSQL.PORT in the run's own folder: a port number, and no TCP.
PORT = 5432
DATABASE = "postgres"
PROGRAMS = ("postgres", "initdb", "psql", "pg_controldata")
SYSTEM_ROOT = Path("/usr/lib/postgresql")
# Read back from the running server and kept with the run: requested beside effective.
EFFECTIVE_SETTINGS = (
    "server_version",
    "shared_buffers",
    "max_wal_size",
    "min_wal_size",
    "checkpoint_timeout",
    "checkpoint_completion_target",
    "full_page_writes",
    "wal_compression",
    "wal_buffers",
    "wal_level",
    "wal_segment_size",
    "recovery_prefetch",
    "synchronous_commit",
    "fsync",
)
# pg_controldata's lines kept at the crash: where recovery will start reading the WAL.
CONTROL_FIELDS = {
    "Database cluster state": "state",
    "Latest checkpoint location": "checkpoint_lsn",
    "Latest checkpoint's REDO location": "redo_lsn",
    "Latest checkpoint's TimeLineID": "timeline",
    "Time of latest checkpoint": "checkpoint_time",
}


def system_bin() -> str | None:
    """The newest PostgreSQL installed the Debian way (/usr/lib/postgresql/N/bin) with every
    program the runner needs; None where there is none."""
    found = []
    for folder in SYSTEM_ROOT.glob("*/bin") if SYSTEM_ROOT.is_dir() else []:
        if folder.parent.name.isdigit() and all((folder / name).is_file() for name in PROGRAMS):
            found.append((int(folder.parent.name), str(folder)))
    return max(found)[1] if found else None


def postgres_bin(work_dir: Path, build: str, run_folder: Path) -> Path:
    """The folder of the build's PostgreSQL programs: the system's, or those of the build in
    WORK_DIR/builds/NAME/ (through its loader: see shim_folder)."""
    if build == SYSTEM_BUILD:
        found = system_bin()
        if found is None:
            raise RunFailed(
                f"this host has no PostgreSQL: none of {SYSTEM_ROOT}/N/bin holds {', '.join(PROGRAMS)} "
                "(apt-get install postgresql)"
            )
        return Path(found)
    found = folder_programs(work_dir, build)
    if not found["postgres_bin"]:
        raise RunFailed(f"this host has no PostgreSQL build {build!r} under {work_dir / BUILDS_DIR / build}")
    bin_folder = Path(found["postgres_bin"])
    missing = [name for name in PROGRAMS if not (bin_folder / name).is_file()]
    if missing:
        raise RunFailed(f"server build {build!r} lacks {', '.join(missing)} in {bin_folder}")
    return shim_folder(bin_folder, found["launcher"], run_folder) if found["launcher"] else bin_folder


def shim_folder(bin_folder: Path, launcher: list[str], run_folder: Path) -> Path:
    """A build of another release runs through its own loader: scripts of the programs' names
    that start each through it, told their own path (--argv0), in a folder laid out as the
    build's (.../usr/lib/postgresql/N/bin beside .../usr/share/postgresql/N and its lib/). initdb
    then starts this folder's postgres, and postgres finds its share and library folders
    beside itself, as PostgreSQL finds them relative to where it runs from."""
    major = bin_folder.parent.name
    usr = bin_folder.parent.parent.parent.parent  # BUILD/usr of BUILD/usr/lib/postgresql/N/bin
    shim = run_folder / "postgresql-shim" / "usr"
    (shim / "lib" / "postgresql" / major / "bin").mkdir(parents=True, exist_ok=True)
    (shim / "share" / "postgresql").mkdir(parents=True, exist_ok=True)
    (shim / "share" / "postgresql" / major).symlink_to(usr / "share" / "postgresql" / major)
    (shim / "lib" / "postgresql" / major / "lib").symlink_to(bin_folder.parent / "lib")
    shimmed = shim / "lib" / "postgresql" / major / "bin"
    for name in PROGRAMS:
        launching_script(shimmed / name, [*launcher, "--argv0", str(shimmed / name)], str(bin_folder / name))
    open_to_others(run_folder / "postgresql-shim")  # its programs run as the server's user
    return shimmed


def pg_lsn(text: str) -> int:
    """'0/1E58DE0' -> its byte position."""
    high, _, low = text.strip().partition("/")
    return (int(high, 16) << 32) + int(low, 16)


class PostgresServer(Server):
    """A private PostgreSQL cluster."""

    name = "postgres"
    os_users = ("postgres", "nobody")

    @classmethod
    def system_programs(cls) -> dict:
        return {"postgres_bin": system_bin()}

    @classmethod
    def system_servers(cls) -> dict[str, str]:
        found = system_bin()
        return {"postgres": f"{found}/postgres"} if found else {}

    @classmethod
    def build_path(cls, programs: dict) -> str | None:
        return programs["postgres_bin"]

    @classmethod
    def version_line(cls, programs: dict) -> str:
        """'postgres (PostgreSQL) 17.12 (Debian 17.12-0+deb13u1)', whole."""
        command = [*programs["launcher"], f"{programs['postgres_bin']}/postgres"]
        return version_line(command, "(PostgreSQL)")[:200]

    def __init__(self, work: Path, spec, clock, stamper, engine):
        super().__init__(work, spec, clock, stamper, engine)
        if self.os_user and not SETPRIV:
            raise RunFailed(
                "PostgreSQL does not run as root: this host needs setpriv (util-linux) to start it"
            )
        build = spec.parameters.get("server_build", SYSTEM_BUILD)
        self.bin = postgres_bin(Path(spec.work_dir), build, work)
        self.socket = self.home / f".s.PGSQL.{PORT}"
        self.build = self.binary_version()
        self.own_work_dir()

    def _as_server_user(self, args: list[str], output) -> subprocess.Popen:
        return spawn(args, as_user=self.os_user, stdin=subprocess.DEVNULL, stdout=output, stderr=output)

    def install(self) -> None:
        """initdb: the cluster, its superuser the runner's own OS user's name, authenticated by
        that OS user over the socket (peer), every TCP login refused."""
        args = [
            str(self.bin / "initdb"),
            f"--pgdata={self.datadir}",
            f"--username={self.account}",
            "--auth-local=peer",
            "--auth-host=reject",
            "--encoding=UTF8",
            "--locale=C",
            "--no-sync",  # the loaded dataset is checkpointed and shut down cleanly before use
        ]
        with (self.work / "install.log").open("wb") as log:
            done = self._as_server_user(args, log).wait(timeout=300)
        if done != 0:
            output = (self.work / "install.log").read_text(errors="replace")
            raise RunFailed(f"initdb failed (exit {done}): {output[-800:]}")

    def server_args(self, loading: bool = False) -> list[str]:
        params = self.spec.parameters
        settings = {
            "listen_addresses": "",  # the socket only: no TCP port for anyone on the host
            "port": PORT,
            "unix_socket_directories": self.home,
            "unix_socket_permissions": "0700",
            "log_destination": "stderr",
            "logging_collector": "off",
            "log_line_prefix": "%m [%p] ",
            "log_timezone": "UTC",
            "lc_messages": "C",  # the parser reads the English lines
            "log_checkpoints": "on",
            "max_connections": 300,
        }
        args = [str(self.bin / "postgres"), "-D", str(self.datadir)]
        for name, value in settings.items():
            args += ["-c", f"{name}={value}"]
        for option in self.engine.server_options(
            params.get("buffer_pool_size", "128M"), params.get("redo_log_size", "96M"), self.build
        ):
            args += ["-c", option]
        for name, value in self.options().items():
            args += ["-c", f"{name}={value}"]
        return args

    def start(self, loading: bool = False) -> float:
        # the server holds its own descriptor, opened by root in the server's folder: a link
        # planted at its name is not followed, nor anything but a plain file of one name appended
        # to (a hard link to root's file would have had the server's log written into it)
        try:
            fd = append_regular(self.error_log)
        except Refused as exc:
            who = self.os_user or "the runner's own"
            raise RunFailed(
                f"the server's error log was refused: {exc}. Only the server's OS user ({who}) "
                "could have put it there: see who acts as that user on this host"
            ) from None
        with os.fdopen(fd, "ab") as log:
            return self.spawn_server(self.server_args(loading), log)

    def _psql(self, connect_timeout_s: int = 2) -> list[str]:
        conninfo = (
            f"host={self.home} port={PORT} user={self.account} dbname={DATABASE} "
            f"connect_timeout={connect_timeout_s}"
        )
        return [str(self.bin / "psql"), "-X", "-q", "-A", "-t", "-F", "\t", "-d", conninfo]

    def session(self) -> subprocess.Popen:
        """An open connection: statements in on stdin, each result's rows out on stdout as soon
        as it is ready (errors too). A transaction on it stays open while it is connected."""
        return spawn(
            self._psql(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )

    def query(self, sql: str, timeout: float = 60, vertical: bool = False) -> str:
        args = [*self._psql(), "-v", "ON_ERROR_STOP=1", *(["-x"] if vertical else []), "-c", sql]
        done = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            raise RunFailed(f"query {sql!r} failed: {done.stderr.strip()[:300]}")
        return done.stdout

    def ready_probe(self) -> list[str]:
        return [*self._psql(1), "-c", "SELECT 1"]

    def kill9(self) -> float:
        """The crash: the postmaster stopped where it is (it forks no one more), then it and
        every process it started killed with SIGKILL, and waited for until none is left."""
        moment = self.clock.now()
        postmaster = self.process.pid
        os.kill(postmaster, signal.SIGSTOP)
        children = children_of(postmaster)
        os.kill(postmaster, signal.SIGKILL)
        for child in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)
        self.process.wait()
        deadline = time.monotonic() + 60
        while any(alive(child) for child in children):
            if time.monotonic() > deadline:
                raise RunFailed(f"the killed cluster's processes {children} did not end within 60 s")
            time.sleep(POLL_S)
        return moment

    def shutdown(self, timeout_s: float) -> None:
        """A fast shutdown (SIGINT to the postmaster): sessions ended, a checkpoint, then it exits."""
        os.kill(self.process.pid, signal.SIGINT)
        self.wait_for_exit(timeout_s)

    def binary_version(self) -> str:
        done = subprocess.run(
            [str(self.bin / "postgres"), "--version"], capture_output=True, text=True, timeout=60
        )
        return done.stdout.strip()

    def version(self) -> str:
        """'PostgreSQL 15.20 (Debian 15.20-0+deb12u1)' (VERSION() adds the platform and compiler)."""
        return f"PostgreSQL {self.query('SHOW server_version').strip()}"

    def effective_settings(self) -> dict:
        listed = ", ".join(f"'{name}'" for name in EFFECTIVE_SETTINGS)
        return self.pairs(f"SELECT name, current_setting(name) FROM pg_settings WHERE name IN ({listed})")

    def create_workload_schema(self) -> None:
        """The schema sbtest, first on the database's search path: sysbench's unqualified tables
        land there, and the runner's statements name them sbtest.NAME as for MariaDB."""
        self.query("CREATE SCHEMA IF NOT EXISTS sbtest")
        self.query(f"ALTER DATABASE {DATABASE} SET search_path = sbtest, public")

    def checksums(self, tables: list[str]) -> dict:
        """An md5 of each table's rows in order: equal before and after recovery."""
        sql = " UNION ALL ".join(
            f"SELECT '{name}', md5(string_agg(t::text, ',' ORDER BY t::text)) FROM sbtest.{name} t"
            for name in tables
        )
        return self.pairs(sql, timeout=3600)

    def integrity(self, tables: list[str]) -> list[str]:
        """amcheck's checks of each table's heap (verify_heapam) and of each of its B-tree indexes
        against it (bt_index_check, every heap tuple indexed): what they found wrong."""
        self.query("CREATE EXTENSION IF NOT EXISTS amcheck")
        found = []
        for name in tables:
            heap = f"SELECT blkno, offnum, msg FROM verify_heapam('sbtest.{name}')"
            found += [f"{name}: {line}" for line in self.query(heap, timeout=3600).splitlines()]
            indexes = (
                "SELECT bt_index_check(indexrelid, true) FROM pg_index "
                f"WHERE indrelid = 'sbtest.{name}'::regclass"
            )
            try:
                self.query(indexes, timeout=3600)
            except RunFailed as exc:  # amcheck raises on the first inconsistency it meets
                found.append(f"{name}: {exc}")
        return found

    def sysbench_args(self) -> list[str]:
        return [
            "--db-driver=pgsql",
            f"--pgsql-host={self.home}",
            f"--pgsql-port={PORT}",
            f"--pgsql-user={self.account}",
            f"--pgsql-db={DATABASE}",
        ]

    def control_data(self) -> dict:
        """The cluster's control file (pg_controldata) as it is now: after the kill, the
        checkpoint recovery will start from."""
        # as the server's OS user: its datadir is that user's to change
        reader = spawn(
            [str(self.bin / "pg_controldata"), "-D", str(self.datadir)],
            as_user=self.os_user,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "LC_ALL": "C"},
        )
        stdout, stderr = reader.communicate(timeout=60)
        if reader.returncode != 0:
            return {"error": (stderr or stdout).strip()[:300]}
        found = {}
        for line in stdout.splitlines():
            name, _, value = line.partition(":")
            if name.strip() in CONTROL_FIELDS:
                found[CONTROL_FIELDS[name.strip()]] = value.strip()
        for key in ("checkpoint_lsn", "redo_lsn"):
            with contextlib.suppress(ValueError):
                found[f"{key}_bytes"] = pg_lsn(found[key])
        return found


def children_of(pid: int) -> list[int]:
    """The processes whose parent is `pid` now (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := stat_fields(entry.name)) and int(fields[1]) == pid:
            found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    """Whether a process runs still (a zombie does not: it holds no memory and no file)."""
    fields = stat_fields(pid)
    return fields is not None and fields[0] not in ("Z", "X")


SERVER = PostgresServer
