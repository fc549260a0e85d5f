"""The runner's private server: its build's programs, the options it starts with, starting, querying,
killing and stopping it. Never the host's own server: its own datadir and socket. `Server` is what
every server shares (the process, its readiness, its end); each family's server.py holds its own
(families/mariadb: mariadbd, families/postgresql: postgres), and `families.server_class` picks the
one a run's engine runs on.

Nobody else on the host reaches it: it listens on no TCP port, only on a socket in the run's
directory, which only the runner's user and the server's may enter; its accounts authenticate
by the connecting process's OS user (unix_socket), so the socket alone grants nothing; files go
in and out of SQL only within the run's own folder (secure_file_priv); and where the runner runs
as root, the server runs as an unprivileged OS user (mysql, else nobody)."""

import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import time
from pathlib import Path

from .engine import DEFAULT_FLUSHING, Engine
from .errors import RunFailed
from .events import Clock
from .files import server_home
from .processes import POLL_S, SETPRIV, spawn
from .stall import Progress
from .stamper import LogStamper


class Server:
    """A private server. Only the processes it spawned are ever signalled, by their pids.

    Its class methods are what the probe asks of its family: the programs the host has
    installed, whether a build's programs hold this family's server, and the version it says."""

    name = "the server"
    # Who it runs as where the runner is root: the first of these OS users the host has.
    os_users = ("mysql", "nobody")

    @classmethod
    def system_programs(cls) -> dict:
        """The installed server's entries of builds.programs() (none: not installed)."""
        raise NotImplementedError

    @classmethod
    def system_servers(cls) -> dict[str, str]:
        """The installed server's programs by name, for the host's facts: {"mariadbd": path}."""
        raise NotImplementedError

    @classmethod
    def build_path(cls, programs: dict) -> str | None:
        """Where a build's programs hold this family's server; None: they do not."""
        raise NotImplementedError

    @classmethod
    def version_line(cls, programs: dict) -> str:
        """What the build's server says it is (builds.version_line), whichever family's it is:
        the family's declaration claims it or not (families.build_version). BuildUnusable: it
        cannot start."""
        raise NotImplementedError

    def __init__(self, work: Path, spec, clock: Clock, stamper: LogStamper, engine: Engine):
        # `work`: the run's folder, root's (its launchers, reports, the bundle's files); `home`:
        # the server's folder in it, its OS user's (files.py says why the two are apart)
        # spec: the run's contract.RunSpec (not imported here: the contract imports the families)
        self.work, self.spec, self.clock, self.stamper = work, spec, clock, stamper
        self.home = server_home(work)
        self.engine = engine  # the run's (spec.engine), from the families' registry
        self.datadir = self.home / "data"
        self.binlog_dir = self.home
        self.error_log = self.home / "error.log"
        self.os_user = server_os_user(self.os_users)
        self.account = client_account()
        self.process: subprocess.Popen | None = None
        self.cgroup: Path | None = None  # a storage class's group the server starts in (throttle.py)
        self.build = ""

    def options(self) -> dict:
        """The engine's flushing held back (unless the run asks for the server's natural
        flushing), then the definition's server options."""
        flushing = self.spec.parameters.get("flushing", DEFAULT_FLUSHING)
        held_back = self.engine.held_back if flushing == "held_back" else {}
        return {**held_back, **self.spec.server_options}

    def own_work_dir(self) -> None:
        """The server's folder: entered by the runner's user and the server's only; its tmpdir
        and the one folder SQL may read files from or write them to. Made whole while it is
        still root's, then handed over: root names nothing inside a folder another user owns."""
        self.home.mkdir(mode=0o700)  # new, in the run's folder (root's): nobody else made it
        for folder in (self.home / "tmp", self.home / "files"):
            folder.mkdir(mode=0o700)
        for folder in (self.home / "tmp", self.home / "files", self.home):  # the folder itself last
            folder.chmod(0o700)
            if self.os_user:
                shutil.chown(folder, user=self.os_user)  # its group may differ in name (nobody: nogroup)

    def take_datadir(self, staged: Path) -> None:
        """A datadir root made in the run's own folder (a copy of a cached dataset) becomes the
        server's, then moves into its folder: handed over file by file, the deepest first, while
        the folders that hold them are still root's, so the server's user cannot swap a name
        root is about to change; then renamed into place (a rename follows no link)."""
        if self.os_user:
            entry = pwd.getpwnam(self.os_user)
            for root, folders, files in os.walk(staged, topdown=False):
                for name in (*files, *folders):
                    os.chown(os.path.join(root, name), entry.pw_uid, entry.pw_gid, follow_symlinks=False)
            os.chown(staged, entry.pw_uid, entry.pw_gid, follow_symlinks=False)
        os.rename(staged, self.datadir)

    def take_log(self, staged: Path) -> None:
        """An error log root wrote in the run's own folder (a crash image's) becomes the server's,
        then moves into its folder as its error log, before the server appends to it."""
        if self.os_user:
            entry = pwd.getpwnam(self.os_user)
            os.chown(staged, entry.pw_uid, entry.pw_gid, follow_symlinks=False)
        os.rename(staged, self.error_log)

    def spawn_server(self, args: list[str], output) -> float:
        """Start the server's process as its OS user, in a session of its own; its moment."""
        spawned = self.clock.now()
        self.process = spawn(
            args,
            as_user=self.os_user if SETPRIV else None,
            cgroup=self.cgroup,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=output,
            start_new_session=True,
        )
        return spawned

    def wait_until_ready(self, timeout_s: float, watch=None) -> float:
        """Poll with a real query until one succeeds; return the moment it did. `watch`
        (stall.StallWatch): checked between polls, it ends a restart that stopped moving. The
        timeout counts from the last sign of progress the watch saw (without one, the server's
        own reads, writes and log lines): a recovery still moving is never cut off by it."""
        if watch is None:
            watch = Progress(self.process.pid, self.stamper, self.engine.stall_signs)
        while True:
            watch.check()
            if self.process.poll() is not None:
                self.stamper.settle()  # its last lines, the reason it gave, read before they are quoted
                raise RunFailed(
                    f"{self.name} exited with code {self.process.returncode} while starting. "
                    f"Last lines of its error log:\n{self.stamper.tail()}"
                )
            probe = subprocess.run(self.ready_probe(), capture_output=True, timeout=30)
            if probe.returncode == 0:
                return self.clock.now()
            now = time.monotonic()
            if now - watch.moved_at >= timeout_s:
                break
            time.sleep(POLL_S)
        raise RunFailed(
            f"the server never came back: no successful query, and nothing moved for {timeout_s:.0f} s "
            f"(no reads or writes but to its own log, no wait on the disk, no new line in it), "
            f"{now - watch.started:.0f} s "
            f"into the start. Last lines of its error log:\n{self.stamper.tail()}"
        )

    def exited_unasked(self, grace_s: float = 0) -> str | None:
        """How the server ended, if it ended without the runner asking ("was killed by SIGKILL",
        "exited with status 1"); None while it runs. `grace_s`: how long to wait for an end
        already under way (a killed process closes its sockets, so its clients fail, a moment
        before it can be reaped)."""
        if self.process is None:
            return None
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=grace_s)
        if self.process.poll() is None:
            return None
        code = self.process.returncode
        if code < 0:
            with contextlib.suppress(ValueError):
                return f"was killed by {signal.Signals(-code).name}"
            return f"was killed by signal {-code}"
        return f"exited with status {code}"

    def kill9(self) -> float:
        moment = self.clock.now()
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait()
        return moment

    def stop_if_running(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.kill9()

    def wait_for_exit(self, timeout_s: float) -> None:
        try:
            self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise RunFailed(f"{self.name} did not shut down within {timeout_s:.0f} s") from None

    def slow_shutdown(self, timeout_s: float) -> None:
        """Every change written to the data files before the server stops (InnoDB's slow
        shutdown, MyRocks' memtables flushed, PostgreSQL's checkpoint)."""
        self.query(self.engine.slow_shutdown_sql(), timeout=3600)
        self.shutdown(timeout_s)

    def pairs(self, sql: str, timeout: float = 60) -> dict:
        """A two-column result (name, value) as a dict."""
        return dict(line.split("\t", 1) for line in self.query(sql, timeout).splitlines() if "\t" in line)

    def version(self) -> str:
        """What the running server says it is ('10.11.19-MariaDB-0+deb12u1')."""
        return self.query("SELECT VERSION()").strip()

    def create_workload_schema(self) -> None:
        """The schema sbtest the workload's tables go in (and every statement of the runner names)."""
        self.query(self.engine.create_schema_sql("sbtest"))

    # What each server does its own way.
    def ready_probe(self) -> list[str]:
        raise NotImplementedError

    def query(self, sql: str, timeout: float = 60, vertical: bool = False) -> str:
        raise NotImplementedError

    def shutdown(self, timeout_s: float) -> None:
        raise NotImplementedError


def server_os_user(names: tuple[str, ...]) -> str | None:
    """Who the private server runs as where the runner is root: an unprivileged OS user (the
    first of `names` the host has). None elsewhere: the runner's own user."""
    if os.geteuid() != 0:
        return None
    for name in names:
        try:
            pwd.getpwnam(name)
        except KeyError:
            continue
        return name
    raise RunFailed(
        f"this host has no unprivileged OS user ({' or '.join(names)}) to run the private server as"
    )


def client_account() -> str:
    """The server account the runner logs in as: its own OS user's name, which the installer
    made an account of that authenticates by that OS user (root's is root)."""
    return pwd.getpwuid(os.geteuid()).pw_name
