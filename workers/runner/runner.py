#!/usr/bin/env python3
"""The host runner: one crash-recovery run on a benchmark host. Standard library only.

It is copied to the host and run as `python3 runner.py --spec SPEC.json --out BUNDLE_DIR`. It
starts a private mariadbd (own datadir, port and socket under its work directory; never the
host's own server), loads data with sysbench, snapshots engine status and counters, runs the
workload, kills its server with SIGKILL as the crash plan says, restarts it and times everything
on the host's monotonic clock. Each error-log line is stamped the moment it appears, so phases
have millisecond resolution though MariaDB logs whole seconds. Then a clean shutdown and a
restart give the baseline. It writes `result.json` and the raw files into BUNDLE_DIR.

Progress goes to stdout as JSON lines ({"event": "progress", "message": ...}); the last line is
{"event": "done"} or {"event": "failed", "error": ...}. Every process it started is stopped
before it exits, whatever happened; it never signals a process it did not start.
"""

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import re
import select
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

try:
    from .contract import (
        BUILDS_DIR,
        CONTRACT_VERSION,
        POWER_CUT_FILE,
        SYSTEM_BUILD,
        RunFailed,
        RunSpec,
        size_bytes,
    )
    from .probe import build_programs, host_facts
except ImportError:  # run as a script: python3 runner.py
    from contract import (
        BUILDS_DIR,
        CONTRACT_VERSION,
        POWER_CUT_FILE,
        SYSTEM_BUILD,
        RunFailed,
        RunSpec,
        size_bytes,
    )
    from probe import build_programs, host_facts

POLL_S = 0.005
# Method defaults that hold InnoDB's checkpoint back during the workload (no pre-flushing, no
# adaptive flushing below 70% of the log, dirty pages up to 99%), so the redo written is the redo
# recovery replays. A user's server_options override them; the run records what was in effect.
HOLD_CHECKPOINTS = {
    "innodb_max_dirty_pages_pct": "99",
    "innodb_max_dirty_pages_pct_lwm": "0",
    "innodb_adaptive_flushing_lwm": "70",
}
# Read back from the running server and kept with the run: requested beside effective.
EFFECTIVE_VARIABLES = (
    "version",
    "innodb_buffer_pool_size",
    "innodb_log_file_size",
    "innodb_redo_log_capacity",
    "innodb_flush_log_at_trx_commit",
    "innodb_flush_method",
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
DATASETS_KEPT = 4
INTERVAL_TPS = re.compile(r"^\[ *[0-9.]+s \] thds: [0-9]+ tps: ([0-9.]+)", re.MULTILINE)
INTERVAL = re.compile(r"^\[ *([0-9.]+)s \] thds: [0-9]+ tps: ([0-9.]+)", re.MULTILINE)
WARM_SHARE = 0.9
# Every process this runner started, so the stdin watchdog can stop them all (by pid, nothing else).
STARTED: list[subprocess.Popen] = []
HELD: list = []  # the work directory's lock file, open for the whole run


# util-linux's setpriv asks the kernel to SIGKILL a process when the one that started it dies,
# then execs it (same pid): a runner killed with SIGKILL, which no handler sees, takes its server
# and sysbench with it. Where setpriv is missing they are still stopped on every other way out.
SETPRIV = shutil.which("setpriv")


def spawn(args: list[str], **options) -> subprocess.Popen:
    if SETPRIV:
        args = [SETPRIV, "--pdeathsig", "KILL", "--", *args]
    process = subprocess.Popen(args, **options)
    STARTED.append(process)
    return process


def stop_started() -> None:
    for process in STARTED:
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGKILL)
    for mount in MOUNTS:
        unmount(mount, lazy=True)


MOUNTS: list[Path] = []  # power-cut layers this runner mounted and has not unmounted yet


def unmount(directory: Path, lazy: bool = False) -> bool:
    done = subprocess.run(
        ["fusermount3", "-u", *(["-z"] if lazy else []), str(directory)], capture_output=True, timeout=60
    )
    return done.returncode == 0


def unmount_stale(base: Path) -> None:
    """Power-cut layers left mounted under the work directory by a runner that was killed before
    it could unmount them (this runner holds the work directory now, so none is in use)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mounts").read_text().splitlines():
            fields = line.split()
            if len(fields) > 2 and fields[2].startswith("fuse") and fields[1].startswith(f"{base}/"):
                unmount(Path(fields[1].replace("\\040", " ")), lazy=True)


class PowerCutLayer:
    """The power-cut file system (powercut.py) mounted over a directory, in a process of its own
    (this runner's package run with -m, from wherever the runner runs: the source tree or its zip)."""

    def __init__(self, directory: Path, log: Path):
        env = dict(os.environ)
        if __package__:  # in a package (the source tree, or the runner's zip)
            env["PYTHONPATH"] = str(Path(__file__).absolute().parents[len(__package__.split("."))])
            command = [sys.executable, "-m", f"{__package__}.powercut", str(directory)]
        else:  # run as a script: powercut.py beside it
            command = [sys.executable, str(Path(__file__).with_name("powercut.py")), str(directory)]
        self.directory = directory
        with log.open("ab") as errors:
            self.process = spawn(command, stdout=subprocess.PIPE, stderr=errors, text=True, env=env)
        ready, _, _ = select.select([self.process.stdout], [], [], 60)
        said = self.process.stdout.readline().strip() if ready else ""
        if said != "mounted":
            self.process.kill()
            tail = log.read_text(errors="replace")[-600:]
            said = tail or "no answer in 60 s"
            raise RunFailed(f"the power-cut layer did not mount over {directory}: {said}")
        MOUNTS.append(directory)

    def cut(self) -> None:
        """Drop every write no disk would hold (the server must be dead already)."""
        fd = os.open(self.directory / POWER_CUT_FILE, os.O_WRONLY)
        try:
            os.write(fd, b"cut")
        finally:
            os.close(fd)

    def unmount(self, timeout: float = 60) -> None:
        """Unmount, once the dead server's files are released; the layer's process then ends."""
        deadline = time.monotonic() + timeout
        while not unmount(self.directory):
            if time.monotonic() > deadline:
                unmount(self.directory, lazy=True)
                break
            time.sleep(POLL_S)  # the kernel releases the killed server's files shortly
        MOUNTS.remove(self.directory)
        self.process.wait(timeout=timeout)


LEDGER_TABLE = "recovery_lab.ledger"


class Ledger:
    """Commits the runner knows were acknowledged: one client inserts ids 1, 2, 3... each in its
    own autocommit transaction, each followed by a SELECT of the id, so an id printed back is a
    commit the server acknowledged. It runs until the crash; after recovery the ids missing among
    the acknowledged ones are commits lost (power_loss)."""

    def __init__(self, server: "Server", engine: str):
        storage = "ROCKSDB" if engine == "rocksdb" else "InnoDB"
        server.query("CREATE DATABASE IF NOT EXISTS recovery_lab")
        server.query(f"CREATE TABLE {LEDGER_TABLE} (id BIGINT UNSIGNED PRIMARY KEY) ENGINE={storage}")
        self.client = server.session()
        self.acknowledged = 0
        self.feeder = threading.Thread(target=self._feed, daemon=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.feeder.start()
        self.reader.start()

    def _feed(self) -> None:
        number = 0
        with contextlib.suppress(OSError, ValueError):  # the server (and its client) went away
            while True:
                number += 1
                self.client.stdin.write(f"INSERT INTO {LEDGER_TABLE} VALUES ({number}); SELECT {number};\n")

    def _read(self) -> None:
        for line in self.client.stdout:
            if line.strip().isdigit():
                self.acknowledged = int(line)

    def stop(self) -> int:
        """After the crash: every acknowledgement the client received is read; returns the last."""
        self.reader.join(timeout=60)
        self.client.kill()
        return self.acknowledged

    @staticmethod
    def lost(server: "Server", acknowledged: int) -> int:
        sql = f"SELECT COUNT(*) FROM {LEDGER_TABLE} WHERE id <= {int(acknowledged)}"
        present = server.query(sql, timeout=3600)
        return acknowledged - int(present.strip())


def watch_stdin() -> None:
    """Stop everything this runner started, and itself, the moment its stdin closes: the SSH
    session dropped or the worker that started it died. Without this a lost runner would go on
    loading and crashing its server until it next wrote a line."""

    def watch() -> None:
        # os.read on the descriptor: a buffered reader's lock would stall interpreter shutdown
        while os.read(sys.stdin.fileno(), 4096):
            pass
        stop_started()
        os._exit(3)

    def stopped(signum, _frame) -> None:
        # SIGTERM/SIGHUP/SIGINT reach the runner with its worker (a stopped service signals the
        # whole process group): the servers it started, in sessions of their own, must go too.
        stop_started()
        os._exit(128 + signum)

    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(signum, stopped)
    threading.Thread(target=watch, daemon=True, name="stdin-watchdog").start()


# A file system with less free space than this (or 1% of its size) is called full in a failure.
FULL_BELOW_BYTES = 64 * 1024 * 1024


def disk_full(path: Path) -> str:
    """Why a step failed, when the cause was no space left: the server and its tools say it in
    lines a failure's tail may not show."""
    try:
        usage = shutil.disk_usage(path)
    except OSError:
        return ""
    if usage.free >= FULL_BELOW_BYTES and usage.free >= usage.total / 100:
        return ""
    return (
        f"the file system of the work directory {path} is full ({usage.free / 2**20:.0f} MiB free of "
        f"{usage.total / 2**20:.0f} MiB): free space there, or give the host another work_dir"
    )


def hold_work_dir(base: Path) -> None:
    """One runner at a time per work directory, whichever dashboard sent it: a crash cycle must
    not share a machine. The lock goes with this process (kill -9 included)."""
    handle = open(base / ".runner.lock", "a+")  # noqa: SIM115 - held until this process exits
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "?"
        raise RunFailed(
            f"the host is busy elsewhere: another runner (pid {holder}) is working in {base}",
            permanent=False,
        ) from None
    handle.seek(0)
    handle.truncate()
    handle.write(str(os.getpid()))
    handle.flush()
    HELD.append(handle)


EMITTING = threading.Lock()  # the sampler's thread emits too: one whole line at a time


def emit(event: str, **fields) -> None:
    line = json.dumps({"event": event, **fields}) + "\n"
    with EMITTING:
        sys.stdout.write(line)
        sys.stdout.flush()


def progress(message: str, percent: float) -> None:
    """A step of the run, and how far through the whole run it is (0-100), for the live page."""
    emit("progress", message=message, percent=round(percent, 1))


class Clock:
    """Host monotonic time, expressed as Unix seconds so it lines up with the server's log."""

    def __init__(self):
        self._wall0 = time.time()
        self._mono0 = time.monotonic()

    def now(self) -> float:
        return self._wall0 + (time.monotonic() - self._mono0)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def find_binary(*names: str) -> str:
    for name in names:
        path = shutil.which(name) or (f"/usr/sbin/{name}" if Path(f"/usr/sbin/{name}").exists() else None)
        if path:
            return path
    raise RunFailed(f"none of {', '.join(names)} is installed on this host")


class LogStamper(threading.Thread):
    """Tails the server's error log and writes each line, prefixed with when it appeared."""

    def __init__(self, source: Path, target: Path, clock: Clock):
        super().__init__(daemon=True)
        self.source, self.target, self.clock = source, target, clock
        self._stopping = threading.Event()
        self.lines: list[tuple[float, str]] = []
        self._lock = threading.Lock()

    def run(self) -> None:
        offset, pending = 0, b""
        with self.target.open("w", encoding="utf-8") as out:
            while True:
                stopping = self._stopping.is_set()
                try:
                    with self.source.open("rb") as handle:
                        handle.seek(offset)
                        chunk = handle.read()
                except FileNotFoundError:
                    chunk = b""
                if chunk:
                    offset += len(chunk)
                    moment = self.clock.now()
                    pending += chunk
                    *complete, pending = pending.split(b"\n")
                    for raw in complete:
                        text = raw.decode("utf-8", errors="replace").rstrip("\r")
                        out.write(f"[runner {moment:.6f}] {text}\n")
                        with self._lock:
                            self.lines.append((moment, text))
                    out.flush()
                if stopping:
                    if pending:
                        text = pending.decode("utf-8", errors="replace")
                        out.write(f"[runner {self.clock.now():.6f}] {text}\n")
                    return
                self._stopping.wait(POLL_S)

    def stop(self) -> None:
        self._stopping.set()
        self.join(timeout=10)

    def tail(self, count: int = 12) -> str:
        with self._lock:
            return "\n".join(text for _, text in self.lines[-count:])


class Server:
    """A private mariadbd. Only the process it spawned is ever signalled, by its pid."""

    def __init__(self, work: Path, spec: dict, clock: Clock, stamper: LogStamper):
        self.work, self.spec, self.clock, self.stamper = work, spec, clock, stamper
        self.datadir = work / "data"
        # Under a power cut the binary log must be on the cut disk too: in the datadir, below the
        # power-cut layer; otherwise beside it.
        self.binlog_dir = self.datadir if spec["crash"].get("method") == "power_loss" else work
        self.socket = work / "mysqld.sock"
        self.error_log = work / "error.log"
        self.port = free_port()
        self.process: subprocess.Popen | None = None
        self.programs = server_programs(
            Path(spec["work_dir"]), spec["parameters"].get("server_build", SYSTEM_BUILD)
        )
        self.mariadbd = self.programs["server"]
        self.client = self.programs["client"] or find_binary("mariadb", "mysql")
        self.admin = self.programs["admin"] or find_binary("mariadb-admin", "mysqladmin")
        self.build = self.binary_version()

    def _build_args(self) -> list[str]:
        """Where a build of its own finds its files (none for the system's server)."""
        args = [f"--basedir={self.programs['basedir']}"] if self.programs.get("basedir") else []
        return args + (
            [f"--plugin-dir={self.programs['plugin_dir']}"] if self.programs.get("plugin_dir") else []
        )

    def _user_args(self) -> list[str]:
        return ["--user=root"] if os.geteuid() == 0 else []

    def server_args(self, loading: bool = False) -> list[str]:
        """The run's server; `loading`: the one that loads the dataset, without a binary log
        (the load is not the run's, and its binlog files would be counted at the crash)."""
        params = self.spec["parameters"]
        args = [
            self.mariadbd,
            "--no-defaults",
            *self._user_args(),
            *self._build_args(),
            f"--datadir={self.datadir}",
            f"--socket={self.socket}",
            f"--port={self.port}",
            "--bind-address=127.0.0.1",
            f"--pid-file={self.work / 'mysqld.pid'}",
            f"--log-error={self.error_log}",
            f"--tmpdir={self.work / 'tmp'}",
            "--skip-name-resolve",
            "--max-connections=300",
        ]
        buffer_pool = params.get("buffer_pool_size", "128M")
        redo = params.get("redo_log_size", "96M")
        if self.spec["engine"] == "rocksdb":
            # MyRocks: the block cache plays the buffer pool; max_total_wal_size bounds the WAL
            # that recovery may have to replay, as the redo log size does for InnoDB.
            args += [
                "--plugin-load-add=ha_rocksdb",
                f"--rocksdb-block-cache-size={buffer_pool}",
                f"--rocksdb-max-total-wal-size={redo}",
                "--default-storage-engine=ROCKSDB",
            ]
        else:
            args += [f"--innodb-buffer-pool-size={buffer_pool}", redo_log_option(self.build, redo)]
        options = dict(self.spec.get("server_options", {}))
        if self.spec["engine"] == "innodb":
            options = {**HOLD_CHECKPOINTS, **options}
        wants_binlog = str(options.pop("log_bin", "0")) == "1" or params.get("binlog_files", 0) > 0
        if wants_binlog and not loading:
            args += [f"--log-bin={self.binlog_dir / 'binlog'}", "--server-id=1"]
        args += [f"--{name}={value}" for name, value in options.items()]
        return args

    def install(self) -> None:
        installer = self.programs["installer"] or find_binary("mariadb-install-db", "mysql_install_db")
        (self.work / "tmp").mkdir(exist_ok=True)
        args = [
            installer,
            "--no-defaults",
            *self._user_args(),
            *(
                [f"--basedir={self.programs['basedir']}"]
                if self.programs["installer"] and self.programs["basedir"]
                else []
            ),
            f"--datadir={self.datadir}",
            "--auth-root-authentication-method=normal",
            "--skip-test-db",
        ]
        with (self.work / "install.log").open("wb") as log:
            done = subprocess.run(args, stdout=log, stderr=subprocess.STDOUT, timeout=300)
        if done.returncode != 0:
            tail = (self.work / "install.log").read_text(errors="replace")[-800:]
            raise RunFailed(f"mariadb-install-db failed (exit {done.returncode}): {tail}")

    def start(self, loading: bool = False) -> float:
        spawned = self.clock.now()
        self.process = spawn(
            self.server_args(loading),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        return spawned

    def _connection_args(self, binary: str, connect_timeout_s: int = 2) -> list[str]:
        """How every client call of the runner reaches its own server: the socket, as root."""
        return [
            binary,
            "--no-defaults",
            "--protocol=socket",
            f"--socket={self.socket}",
            "-uroot",
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

    def wait_until_ready(self, timeout_s: float) -> float:
        """Poll with a real query until one succeeds; return the moment it did."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RunFailed(
                    f"mariadbd exited with code {self.process.returncode} while starting. "
                    f"Last lines of its error log:\n{self.stamper.tail()}"
                )
            probe = subprocess.run(
                [*self._connection_args(self.client, 1), "-N", "-B", "-e", "SELECT 1"],
                capture_output=True,
                timeout=30,
            )
            if probe.returncode == 0:
                return self.clock.now()
            time.sleep(POLL_S)
        raise RunFailed(
            f"the server never came back: no successful query within {timeout_s:.0f} s. "
            f"Last lines of its error log:\n{self.stamper.tail()}"
        )

    def kill9(self) -> float:
        moment = self.clock.now()
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait()
        return moment

    def shutdown(self, timeout_s: float) -> None:
        subprocess.run([*self._connection_args(self.admin), "shutdown"], capture_output=True, timeout=60)
        try:
            self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise RunFailed(f"mariadbd did not shut down within {timeout_s:.0f} s") from None

    def stop_if_running(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def slow_shutdown(self, engine: str, timeout_s: float) -> None:
        """Every change written to the data files before the server stops: InnoDB's slow
        shutdown (the checkpoint ends up at the end of the log), MyRocks' memtables flushed."""
        if engine == "rocksdb":
            self.query("SET GLOBAL rocksdb_force_flush_memtable_now = 1", timeout=3600)
        else:
            self.query("SET GLOBAL innodb_fast_shutdown = 0")
        self.shutdown(timeout_s)

    def binary_version(self) -> str:
        done = subprocess.run([self.mariadbd, "--version"], capture_output=True, text=True, timeout=60)
        return done.stdout.strip()

    def pairs(self, sql: str, timeout: float = 60) -> dict:
        """A two-column result (name, value) as a dict."""
        return dict(line.split("\t", 1) for line in self.query(sql, timeout).splitlines() if "\t" in line)

    def global_values(self, kind: str, names) -> dict:
        """SHOW GLOBAL STATUS or VARIABLES (`kind`), only the names asked for (our own constants)."""
        listed = ", ".join(f"'{name}'" for name in names)
        return self.pairs(f"SHOW GLOBAL {kind} WHERE Variable_name IN ({listed})")

    def effective_settings(self) -> dict:
        """The server variables in effect, as the server reports them."""
        return self.global_values("VARIABLES", EFFECTIVE_VARIABLES)


def server_programs(work_dir: Path, build: str) -> dict:
    """The programs of the build a run names: the system's installed server, or the build in
    WORK_DIR/builds/NAME/ (the host probe lists them)."""
    if build == SYSTEM_BUILD:
        return {
            "server": find_binary("mariadbd", "mysqld"),
            "installer": None,
            "client": None,
            "admin": None,
            "plugin_dir": None,
            "basedir": None,
        }
    folder = work_dir / BUILDS_DIR / build
    programs = build_programs(folder) if folder.is_dir() else None
    if programs is None:
        raise RunFailed(
            f"this host has no server build {build!r}: no mariadbd or mysqld under {folder}/bin, sbin or "
            "libexec (unpack the build there, then probe the host again)"
        )
    return programs


SERVER_BUILD = re.compile(r"Ver ([0-9]+)\.([0-9]+)\.([0-9]+)")


def redo_log_option(build: str, size: str) -> str:
    """redo_log_size as the server build names it: MySQL 8.0.30+ sizes its redo log with
    innodb_redo_log_capacity (innodb_log_file_size is deprecated there); MariaDB and older MySQL
    with innodb_log_file_size. `build` is what `mariadbd --version` / `mysqld --version` print."""
    found = SERVER_BUILD.search(build)
    version = tuple(int(part) for part in found.groups()) if found else (0, 0, 0)
    if "MariaDB" not in build and version >= (8, 0, 30):
        return f"--innodb-redo-log-capacity={size}"
    return f"--innodb-log-file-size={size}"


def copy_tree(source: Path, target: Path) -> None:
    """A datadir copied whole (reflinks where the filesystem has them: instant on btrfs/xfs)."""
    done = subprocess.run(
        ["cp", "-a", "--reflink=auto", "--", str(source), str(target)], capture_output=True, text=True
    )
    if done.returncode != 0:
        raise RunFailed(f"copying {source} to {target} failed: {done.stderr.strip()[:300]}")


class DatasetCache:
    """Loaded datasets, one per engine, server build, table count and size: loaded once, shut
    down slowly, and copied for each run, so a run's redo is its workload's and not the load's,
    and the load is paid once. The most recently used DATASETS_KEPT are kept. Only one runner
    works in a work directory at a time (hold_work_dir), so no two write one entry."""

    def __init__(self, base: Path):
        self.root = base / "datasets"

    @staticmethod
    def key(spec: dict, server_build: str) -> str:
        workload = spec["workload"]
        identity = [spec["engine"], server_build, workload["tables"], workload["table_size"]]
        return hashlib.sha256(json.dumps(identity).encode()).hexdigest()[:16]

    def ready(self, key: str) -> bool:
        return (self.root / key / "READY").exists()

    def restore(self, key: str, datadir: Path) -> None:
        copy_tree(self.root / key / "data", datadir)
        os.utime(self.root / key / "READY")  # recently used

    def keep(self, key: str, datadir: Path, about: dict) -> None:
        partial = self.root / f"{key}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        copy_tree(datadir, partial / "data")
        (partial / "READY").write_text(json.dumps(about))
        shutil.rmtree(self.root / key, ignore_errors=True)
        partial.rename(self.root / key)
        self.prune()

    def prune(self) -> None:
        entries = sorted(
            (p for p in self.root.iterdir() if (p / "READY").exists()),
            key=lambda p: (p / "READY").stat().st_mtime,
            reverse=True,
        )
        for stale in entries[DATASETS_KEPT:]:
            shutil.rmtree(stale, ignore_errors=True)


class Sysbench:
    def __init__(self, server: Server, spec: dict, work: Path):
        self.server, self.work = server, work
        self.workload = spec["workload"]
        self.engine = spec["engine"]
        self.rate = spec["parameters"].get("insert_rate", 0)
        self.binary = find_binary("sysbench")
        self.process: subprocess.Popen | None = None
        self.output = None

    def _common(self) -> list[str]:
        args = [
            self.binary,
            self.workload["name"],
            "--db-driver=mysql",
            f"--mysql-socket={self.server.socket}",
            "--mysql-user=root",
            "--mysql-db=sbtest",
            f"--tables={self.workload['tables']}",
            f"--table-size={self.workload['table_size']}",
        ]
        if self.engine == "rocksdb":
            args.append("--mysql-storage-engine=rocksdb")
        return args

    def prepare(self) -> None:
        threads = min(self.workload["tables"], self.workload["threads"])
        with (self.work / "sysbench_prepare.txt").open("wb") as out:
            loading = spawn(
                [*self._common(), f"--threads={threads}", "prepare"],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
            returncode = loading.wait(timeout=6 * 3600)
        if returncode != 0:
            tail = (self.work / "sysbench_prepare.txt").read_text(errors="replace")[-600:]
            raise RunFailed(f"sysbench prepare failed (exit {returncode}): {tail}")

    def start_run(self) -> None:
        args = [
            *self._common(),
            f"--threads={self.workload['threads']}",
            f"--events={self.workload['events']}",
            f"--time={self.workload.get('time_seconds', 0)}",
            f"--rate={self.rate}",
            "--report-interval=1",
            "--percentile=95",
            "run",
        ]
        self.output = (self.work / "sysbench_report.txt").open("wb")
        self.process = spawn(
            args,
            stdout=self.output,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )

    def pre_crash_tps(self) -> float | None:
        """The workload's throughput before the crash: the median of its per-second reports,
        its first second (connections opening) left out."""
        text = (self.work / "sysbench_report.txt").read_text(errors="replace")
        rates = [float(tps) for tps in INTERVAL_TPS.findall(text)]
        rates = rates[1:] or rates
        return statistics.median(rates) if rates else None

    def measure_warmup(self, max_seconds: int, before: float) -> dict:
        """After recovery: the same workload again, until a one-second report reaches
        WARM_SHARE of the pre-crash throughput (then stopped) or max_seconds pass."""
        args = [
            *self._common(),
            f"--threads={self.workload['threads']}",
            "--events=0",
            f"--time={max_seconds}",
            f"--rate={self.rate}",
            "--report-interval=1",
            "run",
        ]
        report = self.work / "sysbench_warmup.txt"
        seconds = None
        with report.open("wb") as out:
            process = spawn(
                args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
            )
            while seconds is None:
                finished = process.poll() is not None
                for second, tps in INTERVAL.findall(report.read_text(errors="replace")):
                    if float(tps) >= WARM_SHARE * before:
                        seconds = float(second)
                        break
                if finished:
                    break
                time.sleep(0.1)
            if process.poll() is None:
                os.kill(process.pid, signal.SIGKILL)
            process.wait()
        found = {"seconds": seconds, "pre_crash_tps": round(before, 3), "max_seconds": max_seconds}
        if seconds is None:
            found["warning"] = (
                f"throughput was not back to {WARM_SHARE:.0%} of its pre-crash {before:,.0f} tps "
                f"within {max_seconds} s after the restart"
            )
        return found

    def wait(self, timeout_s: float | None) -> int | None:
        try:
            return self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def follow(self, timeout_s: float | None, on_share: Callable[[float], None]) -> int | None:
        """Wait like `wait`, telling `on_share` every second which share (0-1) of the workload
        is done: of the time before a planned crash, of the events (from sysbench's per-second
        reports) or of the time the workload is set to run."""
        started = time.monotonic()
        while True:
            left = None if timeout_s is None else timeout_s - (time.monotonic() - started)
            exit_code = self.wait(1.0 if left is None else max(0.0, min(1.0, left)))
            if exit_code is not None or (left is not None and left <= 1.0):
                return exit_code
            elapsed = time.monotonic() - started
            if timeout_s:
                on_share(elapsed / timeout_s)
            elif self.workload.get("events"):
                on_share(self.events_done() / self.workload["events"])
            elif self.workload.get("time_seconds"):
                on_share(elapsed / self.workload["time_seconds"])

    def events_done(self) -> float:
        """Transactions so far: the sum of the per-second TPS sysbench reports."""
        text = (self.work / "sysbench_report.txt").read_text(errors="replace")
        return sum(float(tps) for tps in INTERVAL_TPS.findall(text))

    def stop_if_running(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait()
        if self.output is not None:
            self.output.close()


COUNTERS = {
    "innodb": {
        "pages_written": "Innodb_pages_written",
        "log_bytes_written": "Innodb_os_log_written",
        "data_bytes_written": "Innodb_data_written",
    },
    "rocksdb": {"log_bytes_written": "Rocksdb_wal_bytes", "data_bytes_written": "Rocksdb_bytes_written"},
}


# Sampled every second during the workload, up to the crash (SAMPLES_FILE): where the redo to
# replay, the dirty pages and the write rates stood second by second. Counters are kept raw; the
# dashboard turns them into rates. MyRocks: its WAL and memtables, and the WAL on disk.
SAMPLED_STATUS = {
    "innodb": (
        "Innodb_lsn_current",
        "Innodb_lsn_last_checkpoint",
        "Innodb_checkpoint_age",
        "Innodb_buffer_pool_pages_dirty",
        "Innodb_pages_written",
        "Innodb_os_log_written",
        "Innodb_data_written",
        "Handler_write",
        "Handler_update",
        "Handler_delete",
        "Com_commit",
        "Questions",
    ),
    "rocksdb": (
        "Rocksdb_wal_bytes",
        "Rocksdb_wal_synced",
        "Rocksdb_bytes_written",
        "Rocksdb_memtable_total",
        "Rocksdb_memtable_unflushed",
        "Handler_write",
        "Handler_update",
        "Handler_delete",
        "Com_commit",
        "Questions",
    ),
}
SAMPLES_FILE = "samples.jsonl"
SAMPLE_INTERVAL_S = 1.0
SAMPLE_END = "recovery-lab-sample-end"


class Sampler(threading.Thread):
    """The server's counters every second, on one open client connection, one JSON line each
    ({"t": host time, name: value, ...}) written the moment it is taken: the crash ends the
    connection and the file holds every second before it."""

    def __init__(self, server: "Server", engine: str, clock: Clock, target: Path):
        super().__init__(daemon=True, name="sampler")
        self.server, self.engine, self.clock, self.target = server, engine, clock, target
        self._stopping = threading.Event()
        self.taken = 0
        listed = ", ".join(f"'{name}'" for name in SAMPLED_STATUS[engine])
        self.sql = f"SHOW GLOBAL STATUS WHERE Variable_name IN ({listed}); SELECT '{SAMPLE_END}';\n"
        self.client = server.session()

    def run(self) -> None:
        due = time.monotonic()
        with self.target.open("w", encoding="utf-8") as out, contextlib.suppress(OSError, ValueError):
            while not self._stopping.is_set():
                moment, asked = self.clock.now(), time.monotonic()
                sample = self._take()
                if sample is None:  # the connection ended: the server is gone
                    return
                took_ms = round((time.monotonic() - asked) * 1000, 3)  # what sampling costs, kept with it
                sample = {"t": round(moment, 3), "took_ms": took_ms, **sample}
                out.write(json.dumps(sample) + "\n")
                out.flush()
                emit("sample", sample=sample)  # for the run page while the run goes
                self.taken += 1
                due += SAMPLE_INTERVAL_S
                self._stopping.wait(max(0.0, due - time.monotonic()))

    def _take(self) -> dict | None:
        self.client.stdin.write(self.sql)
        self.client.stdin.flush()
        sample: dict = {}
        for line in self.client.stdout:
            name, tab, value = line.rstrip("\n").partition("\t")
            if name == SAMPLE_END:
                if self.engine == "rocksdb":
                    sample["wal_on_disk_bytes"] = sum(wal_sizes(self.server.datadir).values())
                return sample
            if not tab:  # an error line (the server went away mid-query)
                return None
            if value.isdigit():
                sample[name] = int(value)
        return None

    def stop(self) -> int:
        """After the crash (or on the way out): the samples taken."""
        self._stopping.set()
        with contextlib.suppress(OSError, ValueError):
            self.client.stdin.close()
        self.join(timeout=30)
        return self.taken


def read_counters(server: Server, engine: str) -> dict:
    wanted = COUNTERS[engine]
    found = server.global_values("STATUS", wanted.values())
    by_lower = {k.lower(): v for k, v in found.items()}
    return {
        metric: int(by_lower[var.lower()])
        for metric, var in wanted.items()
        if by_lower.get(var.lower(), "").isdigit()
    }


def checksum_tables(server: Server, tables: int) -> dict:
    names = ", ".join(f"sbtest.sbtest{i}" for i in range(1, tables + 1))
    return server.pairs(f"CHECKSUM TABLE {names}", timeout=3600)


def snapshot(server: Server, engine: str, label: str, work: Path) -> None:
    (work / f"innodb_status_{label}.txt").write_text(server.query("SHOW ENGINE INNODB STATUS", vertical=True))
    if engine == "rocksdb":
        (work / f"rocksdb_status_{label}.txt").write_text(
            server.query("SHOW ENGINE ROCKSDB STATUS", vertical=True)
        )


def wal_sizes(datadir: Path) -> dict:
    """Sizes of MyRocks' WAL files at the crash: the 'redo' its recovery will replay."""
    folder = datadir / "#rocksdb"
    if not folder.is_dir():
        return {}
    return {str(int(p.stem)): p.stat().st_size for p in folder.glob("*.log") if p.stem.isdigit()}


OPEN_TRX_TABLE = "sbtest.recovery_lab_open_trx"


def crash_server(server: Server, method: str, layer: PowerCutLayer | None = None) -> float:
    """The crash itself; returns its moment. sigkill: the process is killed and the operating
    system keeps every write it had made. power_loss: killed the same way, then every write not
    yet synced is dropped and the layer unmounted, so the server restarts on what a disk would
    hold. Each method of contract.CRASH_METHODS has its branch."""
    if method == "sigkill":
        return server.kill9()
    if method == "power_loss" and layer is not None:
        moment = server.kill9()
        layer.cut()
        layer.unmount()
        return moment
    raise RunFailed(f"crash method {method!r} is not supported by this runner")


def hold_binlog_files(server: Server, files: int) -> None:
    """binlog_files N: the server holds N binary log files when it crashes (the workload writes
    to the last one), so recovery and restart meet the index and files a busy server has."""
    if files > 1:
        progress(f"rotating the binary log to {files} files", 23)
        server.query("FLUSH BINARY LOGS; " * (files - 1), timeout=600)


def wait_for_redo(server: Server, sysbench: Sysbench, engine: str, target: str, on_share) -> dict:
    """Crash plan at_redo_bytes: let the workload run until the redo recovery will replay
    (InnoDB's checkpoint age; MyRocks' WAL on disk) reaches the target, then return at once for
    the kill. Polled on one open client connection, every few milliseconds."""
    goal = size_bytes(target)
    reached, exit_code = 0, None
    client = server.session()
    try:
        while reached < goal:
            exit_code = sysbench.process.poll()
            if exit_code is not None:
                break
            if engine == "rocksdb":
                reached = sum(wal_sizes(server.datadir).values())
            else:
                client.stdin.write("SHOW GLOBAL STATUS LIKE 'Innodb_checkpoint_age';\n")
                client.stdin.flush()
                line = client.stdout.readline()
                name, _, value = line.strip().partition("\t")
                if name != "Innodb_checkpoint_age" or not value.isdigit():
                    raise RunFailed(f"could not read the checkpoint age: {line.strip() or 'connection lost'}")
                reached = int(value)
            on_share(reached / goal)
            time.sleep(POLL_S)
    finally:
        with contextlib.suppress(OSError):
            client.stdin.close()
        client.wait(timeout=30)
    plan = {"target_bytes": goal, "reached_bytes": reached}
    if reached < goal:
        plan["warning"] = (
            f"the workload ended (exit {exit_code}) with {reached:,} bytes of redo to replay, short of "
            f"the {goal:,} asked for: give it more events or time"
        )
    return plan


def open_transaction(server: Server, engine: str, rows: int, timeout: float) -> dict:
    """Crash plan during_transaction: one transaction inserts `rows` rows and stays open (its
    client connected, no COMMIT) until the kill, so recovery has them to roll back."""
    storage = "ROCKSDB" if engine == "rocksdb" else "InnoDB"
    server.query(
        f"CREATE TABLE {OPEN_TRX_TABLE} (id INT UNSIGNED PRIMARY KEY, pad CHAR(60) NOT NULL) ENGINE={storage}"
    )
    client = server.session()
    client.stdin.write(
        f"BEGIN; INSERT INTO {OPEN_TRX_TABLE} SELECT seq, REPEAT('x', 60) FROM sbtest.seq_1_to_{rows}; "
        "SELECT 'transaction open';\n"
    )
    client.stdin.flush()
    said: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([client.stdout], [], [], max(0.0, deadline - time.monotonic()))
        line = client.stdout.readline() if ready else ""
        if line.strip() == "transaction open":
            if engine != "rocksdb":
                wait_for_log_on_disk(server, deadline)
            return {"open_rows": rows}  # the client stays connected: the transaction is open at the kill
        if not line:
            break
        if line.strip().strip("-"):
            said.append(line.strip())
    raise RunFailed(
        f"could not open a transaction of {rows:,} rows: {' '.join(said)[-300:] or 'no answer in time'}"
    )


def wait_for_log_on_disk(server: Server, deadline: float) -> None:
    """An open transaction's redo sits in the log buffer until something writes it: commit a
    trivial change on another connection (which writes the whole buffer) and wait until the log
    is flushed up to where it was, so the kill finds the transaction in the redo log."""
    server.query(f"CREATE TABLE IF NOT EXISTS {OPEN_TRX_TABLE}_flush (id INT PRIMARY KEY) ENGINE=InnoDB")
    server.query(f"REPLACE INTO {OPEN_TRX_TABLE}_flush VALUES (1)")
    wanted = None
    while time.monotonic() < deadline:
        lsn = server.global_values("STATUS", ("Innodb_lsn_current", "Innodb_lsn_flushed"))
        wanted = wanted or int(lsn["Innodb_lsn_current"])
        if int(lsn["Innodb_lsn_flushed"]) >= wanted:
            return
        time.sleep(POLL_S)
    raise RunFailed("the open transaction's redo was not flushed in time")


def prepare_dataset(spec: dict, server: Server, sysbench: Sysbench, base: Path, timeout: float) -> dict:
    """The run's datadir, loaded and cleanly shut down: from the cache, or loaded now (and kept
    for the next runs). Returns what was done, for the result."""
    started = time.monotonic()
    cache = DatasetCache(base)
    key = cache.key(spec, server.build)
    reuse = spec.get("reuse_dataset", True)
    (server.work / "tmp").mkdir(exist_ok=True)
    if reuse and cache.ready(key):
        progress("copying the cached dataset", 5)
        cache.restore(key, server.datadir)
        return {"key": key, "reused": True, "seconds": round(time.monotonic() - started, 3)}
    progress("creating a private server instance", 1)
    server.install()
    server.start(loading=True)
    server.wait_until_ready(timeout)
    server.query("CREATE DATABASE sbtest")
    progress(f"loading {spec['workload']['tables']} x {spec['workload']['table_size']} rows", 5)
    sysbench.prepare()
    progress("slow shutdown: the loaded dataset written out whole", 18)
    server.slow_shutdown(spec["engine"], timeout)
    if reuse:
        cache.keep(
            key,
            server.datadir,
            {"engine": spec["engine"], **{k: spec["workload"][k] for k in ("tables", "table_size")}},
        )
    return {"key": key, "reused": False, "seconds": round(time.monotonic() - started, 3)}


def execute(spec: dict, work: Path, out: Path, result: dict) -> dict:
    """The run, measured into `result` as it goes: a run that fails part way keeps what was
    measured before (the moments of the kill and the restart, the counters, the dataset)."""
    clock = Clock()
    timeout = float(spec.get("start_timeout_s", 600))
    stamper = LogStamper(work / "error.log", work / "error.log.stamped", clock)
    server = Server(work, spec, clock, stamper)
    sysbench = Sysbench(server, spec, work)
    crash = spec["crash"]
    engine = spec["engine"]
    times: dict[str, float] = {}
    result.update(times=times, port=server.port, server_args=server.server_args())
    stamper.start()
    try:
        result["dataset"] = prepare_dataset(spec, server, sysbench, Path(spec["work_dir"]), timeout)
        layer = None
        if crash.get("method") == "power_loss":
            progress("mounting the power-cut layer over the datadir", 21)
            layer = PowerCutLayer(server.datadir, work / "powercut.log")
        progress("starting the server on the loaded dataset", 22)
        times["server_spawned"] = server.start()
        times["server_ready"] = server.wait_until_ready(timeout)
        result["server_version"] = server.query("SELECT VERSION()").strip()
        result["effective_settings"] = server.effective_settings()
        hold_binlog_files(server, spec["parameters"].get("binlog_files", 0))
        snapshot(server, engine, "before_run", work)
        counters_before = read_counters(server, engine)

        workload = spec["workload"]["name"]
        progress(f"running {workload}", 25)

        def workload_progress(share: float) -> None:
            progress(f"running {workload}: {min(share, 1.0):.0%}", 25 + 45 * min(share, 1.0))

        ledger = Ledger(server, engine) if layer is not None else None
        sampler = Sampler(server, engine, clock, work / SAMPLES_FILE)
        times["workload_started"] = clock.now()
        sampler.start()
        sysbench.start_run()
        checksums = None
        if crash["when"] == "during_workload":
            exit_code = sysbench.follow(float(crash["after_seconds"]), workload_progress)
            if exit_code is not None:
                result["warning"] = "the workload ended before the planned crash"
        elif crash["when"] == "at_redo_bytes":
            result["crash_plan"] = wait_for_redo(
                server, sysbench, engine, crash["redo_bytes"], workload_progress
            )
        else:  # after_workload, during_transaction: the whole workload, then a consistent state
            exit_code = sysbench.follow(None, workload_progress)
            if exit_code != 0:
                tail = (work / "sysbench_report.txt").read_text(errors="replace")[-600:]
                raise RunFailed(f"sysbench run failed (exit {exit_code}): {tail}")
            checksums = checksum_tables(server, spec["workload"]["tables"])
        times["workload_ended"] = clock.now()
        if crash["when"] == "during_transaction":
            progress(f"opening a transaction that changes {crash['open_rows']:,} rows", 70)
            result["crash_plan"] = open_transaction(server, engine, crash["open_rows"], timeout)
        snapshot(server, engine, "at_crash", work)
        counters_after = read_counters(server, engine)
        result["counters"] = {k: counters_after[k] - counters_before.get(k, 0) for k in counters_after}

        progress(f"crashing the server ({crash.get('method', 'sigkill')})", 72)
        times["killed"] = crash_server(server, crash.get("method", "sigkill"), layer)
        if layer is not None:
            times["power_restored"] = clock.now()  # what a disk holds is ready: downtime starts
        acknowledged = ledger.stop() if ledger is not None else None
        result["samples_taken"] = sampler.stop()
        result["binlog_files_at_crash"] = len(list(server.binlog_dir.glob("binlog.[0-9]*")))
        sysbench.wait(60)
        sysbench.stop_if_running()
        if engine == "rocksdb":
            result["wal_bytes_at_crash"] = wal_sizes(server.datadir)

        progress("restarting after the crash", 75)
        times["recovery_spawned"] = server.start()
        times["recovery_first_query"] = server.wait_until_ready(timeout)
        snapshot(server, engine, "after_recovery", work)
        if engine == "rocksdb":
            # RocksDB starts a new LOG at every open: keep the one of the crash recovery.
            shutil.copyfile(server.datadir / "#rocksdb" / "LOG", work / "rocksdb_LOG")
        if acknowledged is not None:
            result["durability"] = {
                "acknowledged_commits": acknowledged,
                "lost_commits": Ledger.lost(server, acknowledged),
            }
        if checksums is not None:
            result["verified"] = checksum_tables(server, spec["workload"]["tables"]) == checksums
            if crash["when"] == "during_transaction":  # and none of the open transaction's rows
                left = int(server.query(f"SELECT COUNT(*) FROM {OPEN_TRX_TABLE}", timeout=3600).strip())
                result["crash_plan"]["rows_left_after_recovery"] = left
                result["verified"] = result["verified"] and left == 0

        warmup_max = spec["workload"].get("warmup_max_seconds", 0)
        before = sysbench.pre_crash_tps() if warmup_max else None
        if warmup_max and before:
            progress("the workload again, until throughput is back", 82)
            result["warmup"] = sysbench.measure_warmup(warmup_max, before)

        progress("clean shutdown and restart for the baseline", 88)
        server.shutdown(timeout)
        times["clean_spawned"] = server.start()
        times["clean_first_query"] = server.wait_until_ready(timeout)
        server.shutdown(timeout)
    finally:
        sysbench.stop_if_running()
        server.stop_if_running()
        stamper.stop()
        collect(work, out)
    return result


def collect(work: Path, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name in (
        "error.log",
        "error.log.stamped",
        "sysbench_report.txt",
        "sysbench_prepare.txt",
        "sysbench_warmup.txt",
        "innodb_status_before_run.txt",
        "innodb_status_at_crash.txt",
        "innodb_status_after_recovery.txt",
        "rocksdb_status_at_crash.txt",
        "rocksdb_status_before_run.txt",
        "rocksdb_status_after_recovery.txt",
        "install.log",
        "rocksdb_LOG",
        SAMPLES_FILE,
    ):
        if (work / name).exists():
            shutil.copyfile(work / name, out / name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", help="the run's JSON spec")
    parser.add_argument("--out", help="where to write the bundle")
    parser.add_argument("--keep", action="store_true", help="keep the datadir for inspection")
    parser.add_argument("--probe", metavar="WORK_DIR", help="print this host's facts as JSON and exit")
    parser.add_argument(
        "--watch-stdin", action="store_true", help="stop everything when stdin closes (transports set it)"
    )
    args = parser.parse_args(argv)
    if args.probe:
        print(json.dumps(host_facts(args.probe)), flush=True)
        return 0
    if not args.spec or not args.out:
        parser.error("--spec and --out are required to run")
    if args.watch_stdin:
        watch_stdin()
    out = Path(args.out)
    result: dict = {"contract_version": CONTRACT_VERSION}
    status, error, permanent, work = "failed", None, True, None
    try:
        spec = asdict(RunSpec.from_dict(json.loads(Path(args.spec).read_text())))
        result["spec"] = spec
        base = Path(spec["work_dir"])
        base.mkdir(parents=True, exist_ok=True)
        hold_work_dir(base)
        unmount_stale(base)
        work = Path(tempfile.mkdtemp(prefix=f"run-{spec['run_id']}-", dir=base))
        result["facts"] = host_facts(str(base))
        execute(spec, work, out, result)
        status = "done"
    except RunFailed as exc:
        error, permanent = str(exc), exc.permanent
    except (OSError, ValueError) as exc:
        error = f"bad run spec or work directory: {exc}"
    except subprocess.TimeoutExpired as exc:
        error = f"timed out: {' '.join(map(str, exc.cmd[:2]))}"
    except Exception as exc:  # reported to the worker with context, never swallowed
        error = f"runner error: {exc.__class__.__name__}: {exc}"
    finally:
        stop_started()
        if status != "done" and work is not None:  # measured before the run's files are removed
            full = disk_full(work.parent)
            error = f"{full}; {error}" if full else error
        if work is not None and not args.keep:
            with contextlib.suppress(OSError):
                shutil.rmtree(work)
    result.update(status=status, error=error, permanent=permanent if status == "failed" else None)
    out.mkdir(parents=True, exist_ok=True)
    (out / "result.json").write_text(json.dumps(result, indent=2))
    if status == "done":
        emit("done")
        return 0
    emit("failed", error=error, permanent=permanent)
    return 1


if __name__ == "__main__":
    sys.exit(main())
