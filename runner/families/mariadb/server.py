"""MariaDB's private server (mariadbd): its builds, its command line, its installer, its client
sessions and what it reports. The base it fills in is runner/server.py's `Server`.

Nobody else on the host reaches it: it listens on no TCP port, only on a socket in the run's
directory, which only the runner's user and the server's may enter; its accounts authenticate
by the connecting process's OS user (unix_socket), so the socket alone grants nothing; files go
in and out of SQL only within the run's own folder (secure_file_priv); and where the runner runs
as root, the server runs as an unprivileged OS user (mysql, else nobody)."""

import subprocess
from pathlib import Path

from ...builds import (
    SYSTEM_BUILD,
    build_options,
    folder_programs,
    installed,
    installer_command,
    programs,
    server_command,
    version_line,
)
from ...errors import RunFailed
from ...events import Clock
from ...processes import SETPRIV, find_binary, spawn
from ...server import Server
from ...stamper import LogStamper

# Read back from the running server and kept with the run: requested beside effective.
EFFECTIVE_VARIABLES = (
    "version",
    "innodb_buffer_pool_size",
    "innodb_log_file_size",
    "innodb_redo_log_capacity",
    "innodb_flush_log_at_trx_commit",
    "innodb_flush_method",
    "innodb_log_file_buffering",
    "innodb_doublewrite",
    "innodb_io_capacity",
    "innodb_max_dirty_pages_pct",
    "innodb_max_dirty_pages_pct_lwm",
    "innodb_adaptive_flushing",
    "innodb_adaptive_flushing_lwm",
    "rocksdb_block_cache_size",
    "rocksdb_max_total_wal_size",
    "rocksdb_flush_log_at_trx_commit",
    "log_bin",
    "sync_binlog",
)


class MariaDBServer(Server):
    """A private mariadbd."""

    name = "mariadbd"

    @classmethod
    def system_programs(cls) -> dict:
        return {"server": installed("mariadbd", "mysqld")}

    @classmethod
    def system_servers(cls) -> dict[str, str]:
        return {name: path for name in ("mariadbd", "mysqld") if (path := installed(name))}

    @classmethod
    def build_path(cls, programs: dict) -> str | None:
        return programs["server"]

    @classmethod
    def version_line(cls, programs: dict) -> str:
        """'Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64' (the path left out),
        whichever server the mysqld is: its family's declaration claims it (families/)."""
        line = version_line(server_command(programs), "Ver ")
        return line[line.index("Ver ") :][:200]

    def __init__(self, work: Path, spec, clock: Clock, stamper: LogStamper, engine):
        super().__init__(work, spec, clock, stamper, engine)
        # Under a power cut the binary log must be on the cut disk too: in the datadir, below the
        # power-cut layer; otherwise beside it.
        self.binlog_dir = self.datadir if spec.crash.get("method") == "power_loss" else self.home
        self.socket = self.home / "mysqld.sock"
        self.programs = server_programs(
            Path(spec.work_dir), spec.parameters.get("server_build", SYSTEM_BUILD)
        )
        self.client = self.programs["client"] or find_binary("mariadb", "mysql")
        self.build = self.binary_version()
        self.own_work_dir()

    def _user_args(self) -> list[str]:
        """--user where the program must drop root itself (no setpriv): never for the installers,
        which run as the server's user from their first instruction (run_installer)."""
        return [f"--user={self.os_user}"] if self.os_user else []

    def _server_user_args(self) -> list[str]:
        """The server is started as its user where setpriv can (it keeps its parent-death
        signal so); it drops root itself only where setpriv is missing."""
        return [] if SETPRIV else self._user_args()

    def server_args(self, loading: bool = False) -> list[str]:
        """The run's server; `loading`: the one that loads the dataset, without a binary log
        (the load is not the run's, and its binlog files would be counted at the crash)."""
        params = self.spec.parameters
        args = [
            *server_command(self.programs),
            "--no-defaults",
            *self._server_user_args(),
            *build_options(self.programs),
            f"--datadir={self.datadir}",
            f"--socket={self.socket}",
            "--skip-networking",  # the socket only: no TCP port for anyone on the host
            f"--secure-file-priv={self.home / 'files'}",
            f"--pid-file={self.home / 'mysqld.pid'}",
            f"--log-error={self.error_log}",
            f"--tmpdir={self.home / 'tmp'}",
            "--skip-name-resolve",
            "--max-connections=300",
        ]
        args += self.engine.server_options(
            params.get("buffer_pool_size", "128M"), params.get("redo_log_size", "96M"), self.build
        )
        options = self.options()
        wants_binlog = str(options.pop("log_bin", "0")) == "1" or params.get("binlog_files", 0) > 0
        if wants_binlog and not loading:
            args += [f"--log-bin={self.binlog_dir / 'binlog'}", "--server-id=1"]
        args += [f"--{name}={value}" for name, value in options.items()]
        return args

    def install(self) -> None:
        installer = (
            installer_command(self.programs, self.work / "install-prefix")
            if self.programs["installer"]
            else [find_binary("mariadb-install-db", "mysql_install_db")]
        )
        args = [
            *installer,
            "--no-defaults",
            f"--datadir={self.datadir}",
            # The bootstrap server's temporary tables in the run's own tmpdir, not the shared
            # /tmp: there, 3 of 24 bootstraps run three at once failed ("Could not remove
            # temporary table '/tmp/#sql-temptable-...'", then "Unknown table
            # 'mysql.tmp_user_sys'"); none of 36 with a tmpdir each.
            f"--tmpdir={self.home / 'tmp'}",
            # root@localhost (and the installing user's account) by the OS user that connects:
            # reaching the socket is not enough to log in
            "--auth-root-authentication-method=socket",
            *([f"--auth-root-socket-user={self.os_user}"] if self.os_user else []),
            "--skip-test-db",
        ]
        self.run_installer(args, "mariadb-install-db")

    def run_installer(self, args: list[str], what: str) -> None:
        """The installer run as the server's OS user from its first instruction, never as root:
        it makes the datadir in the server's folder, which that user may change while it runs
        (a link planted at `data` is then followed with that user's rights only). Its output in
        the run's install.log (root's); where it fails, its ERROR lines first: the tail of its
        output is advice that does not say what failed."""
        if self.os_user and not SETPRIV:
            raise RunFailed(f"{what} does not run as root: this host needs setpriv (util-linux) to run it")
        with (self.work / "install.log").open("wb") as log:
            process = spawn(
                args, as_user=self.os_user, stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd="/"
            )
            try:
                code = process.wait(timeout=300)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
                raise
        if code != 0:
            output = (self.work / "install.log").read_text(errors="replace")
            errors = [line for line in output.splitlines() if "ERROR" in line][:5]
            raise RunFailed(
                f"{what} failed (exit {code}): "
                + ("\n".join(errors) + "\n...\n" if errors else "")
                + output[-800:]
            )

    def start(self, loading: bool = False) -> float:
        return self.spawn_server(self.server_args(loading), subprocess.DEVNULL)

    def _connection_args(self, binary: str, connect_timeout_s: int = 2) -> list[str]:
        """How every client call of the runner reaches its own server: the socket, as the
        account of the runner's own OS user."""
        return [
            binary,
            "--no-defaults",
            "--protocol=socket",
            f"--socket={self.socket}",
            f"--user={self.account}",
            f"--connect-timeout={connect_timeout_s}",
        ]

    def session(self) -> subprocess.Popen:
        """An open client connection: queries go in on its stdin, one result line each comes out
        on its stdout (errors too) as soon as it is ready. A transaction on it stays open while
        it is connected."""
        return spawn(
            [*self._connection_args(self.client), "-N", "-B", "--unbuffered"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    def query(self, sql: str, timeout: float = 60, vertical: bool = False) -> str:
        args = [*self._connection_args(self.client), "-N", "-B", *(["-E"] if vertical else []), "-e", sql]
        done = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            raise RunFailed(f"query {sql!r} failed: {done.stderr.strip()[:300]}")
        return done.stdout

    def ready_probe(self) -> list[str]:
        return [*self._connection_args(self.client, 1), "-N", "-B", "-e", "SELECT 1"]

    def shutdown(self, timeout_s: float) -> None:
        """A clean shutdown, waited for on the process itself. The SQL statement, not
        mariadb-admin: that one polls for the pid file once a second, which cost a second per
        shutdown (three a run) where the server takes 0.1-0.2 s."""
        subprocess.run(
            [*self._connection_args(self.client), "-N", "-B", "-e", "SHUTDOWN"],
            capture_output=True,
            timeout=60,
        )
        self.wait_for_exit(timeout_s)

    def binary_version(self) -> str:
        done = subprocess.run(
            [*server_command(self.programs), "--version"], capture_output=True, text=True, timeout=60
        )
        return done.stdout.strip()

    def global_values(self, kind: str, names) -> dict:
        """SHOW GLOBAL STATUS or VARIABLES (`kind`), only the names asked for (our own constants)."""
        listed = ", ".join(f"'{name}'" for name in names)
        return self.pairs(f"SHOW GLOBAL {kind} WHERE Variable_name IN ({listed})")

    def effective_settings(self) -> dict:
        """The server variables in effect, as the server reports them."""
        return self.global_values("VARIABLES", EFFECTIVE_VARIABLES)

    def checksums(self, tables: list[str]) -> dict:
        """A checksum of each of the workload's tables (in sbtest): equal before and after recovery."""
        names = ", ".join(f"sbtest.{name}" for name in tables)
        return self.pairs(f"CHECKSUM TABLE {names}", timeout=3600)

    def integrity(self, tables: list[str]) -> list[str]:
        """The server's own check of each table and its indexes (CHECK TABLE): what it found
        wrong, none when every table is sound."""
        names = ", ".join(f"sbtest.{name}" for name in tables)
        rows = [line.split("\t") for line in self.query(f"CHECK TABLE {names}", timeout=3600).splitlines()]
        return [" ".join(row) for row in rows if len(row) == 4 and (row[2] == "error" or row[3] != "OK")]

    def sysbench_args(self) -> list[str]:
        """How sysbench reaches this server, its tables in the schema sbtest."""
        return [
            "--db-driver=mysql",
            f"--mysql-socket={self.socket}",
            f"--mysql-user={self.account}",
            "--mysql-db=sbtest",
            *self.engine.workload_args(),
        ]


def server_programs(work_dir: Path, build: str) -> dict:
    """The programs of the build a run names: the system's installed server, or the build in
    WORK_DIR/builds/NAME/ (the host probe lists them)."""
    return (
        programs(find_binary("mariadbd", "mysqld"))
        if build == SYSTEM_BUILD
        else folder_programs(work_dir, build)
    )


SERVER = MariaDBServer
