"""Crash plans: when to crash (after a time, at a redo volume, with a transaction left open, with
binlog files held) and how (kill -9, or a power cut through the power-cut layer, with the ledger
of acknowledged commits that counts what the cut lost)."""

import contextlib
import ctypes
import importlib.util
import os
import select
import shutil
import stat
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

from .contract import POWER_CUT_FILE, RunFailed, size_bytes
from .events import progress
from .processes import MOUNTS, POLL_S, spawn, unmount
from .server import Server
from .workload import Sysbench


class PowerCutLayer:
    """The power-cut file system (powercut.py) mounted over a directory, served by a process of
    its own that runs as `os_user` (the server's), so that nothing through it is done with more
    rights than the server has. Where the runner is root it mounts the layer itself (mount(2):
    `default_permissions,allow_other`, `nosuid,nodev`, owned by root so only root unmounts it)
    on the directory it opened without following a link, and hands the mount's descriptor to that
    process; elsewhere the process mounts it as the runner's user. Its code is a copy of this
    runner in the run's folder (root's, readable by the server's user), or the source tree it
    runs from."""

    def __init__(self, directory: Path, log: Path, os_user: str | None = None):
        self.directory = directory
        code = layer_code(log.parent)
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "PYTHONPATH": os.pathsep.join(code)}
        command = [layer_python(), "-m", f"{__package__}.powercut"]
        fds: tuple[int, ...] = ()
        if os.geteuid() == 0:
            fuse_fd, root_fd = mount_layer(directory)
            fds = (fuse_fd, root_fd)
            command += ["--fuse-fd", str(fuse_fd), "--root-fd", str(root_fd)]
            MOUNTS.append(directory)
        else:
            command.append(str(directory))
        try:
            with log.open("ab") as errors:
                self.process = spawn(
                    command,
                    as_user=os_user,
                    stdout=subprocess.PIPE,
                    stderr=errors,
                    text=True,
                    env=env,
                    pass_fds=fds,
                    cwd="/",
                )
        finally:
            for fd in fds:  # the layer's process holds them now
                os.close(fd)
        ready, _, _ = select.select([self.process.stdout], [], [], 60)
        said = self.process.stdout.readline().strip() if ready else ""
        if said != "mounted":
            self.process.kill()
            if fds:
                unmount(directory, lazy=True)
                MOUNTS.remove(directory)
            tail = log.read_text(errors="replace")[-600:]
            said = tail or "no answer in 60 s"
            raise RunFailed(f"the power-cut layer did not mount over {directory}: {said}")
        if not fds:
            MOUNTS.append(directory)

    def cut(self) -> None:
        """Drop every write no disk would hold (the server must be dead already)."""
        fd = os.open(self.directory / POWER_CUT_FILE, os.O_WRONLY | os.O_NOFOLLOW)
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


MS_NOSUID, MS_NODEV = 2, 4


def mount_layer(directory: Path) -> tuple[int, int]:
    """As root: /dev/fuse opened and mounted over `directory` (opened first, without following
    a link: the server's user owns the folder it is in), the kernel checking permissions. Returns
    the two descriptors the layer's process serves: /dev/fuse's and the directory's beneath."""
    root_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        fuse_fd = os.open("/dev/fuse", os.O_RDWR)
    except OSError:
        os.close(root_fd)
        raise
    options = f"fd={fuse_fd},rootmode=40000,user_id=0,group_id=0,default_permissions,allow_other"
    # the target named by the descriptor: a link put at the directory's name since is not followed
    target = f"/proc/self/fd/{root_fd}".encode()
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.mount(b"powercut", target, b"fuse.powercut", MS_NOSUID | MS_NODEV, options.encode()) != 0:
        error = ctypes.get_errno()
        os.close(fuse_fd)
        os.close(root_fd)
        raise RunFailed(f"the power-cut layer could not be mounted over {directory}: {os.strerror(error)}")
    return fuse_fd, root_fd


def layer_code(run_folder: Path) -> list[str]:
    """Where the layer's process imports this package (and mfusepy) from: a zip in the run's
    folder (root's, 644), readable by the server's user wherever the runner itself lies (a
    bundle folder of root's, a checkout under /root). The runner's own zip is copied (it
    carries mfusepy); a source tree is zipped, with the environment's mfusepy."""
    package_root = Path(__file__).absolute().parents[len(__package__.split("."))]
    copy = run_folder / "powercut.pyz"
    if package_root.is_file():  # runner.pyz
        shutil.copyfile(package_root, copy)
    else:
        package = Path(__file__).absolute().parent
        with zipfile.ZipFile(copy, "w") as archive:
            for path in package.rglob("*.py"):
                archive.write(path, (Path(*__package__.split(".")) / path.relative_to(package)).as_posix())
            archive.write(importlib.util.find_spec("mfusepy").origin, "mfusepy.py")  # found, not loaded
    copy.chmod(0o644)
    return [str(copy)]


def layer_python() -> str:
    """A python3 the server's user may run: this one, unless it lies in a folder others may not
    enter (a virtual environment under /root), then the system's."""
    mine = Path(os.path.realpath(sys.executable))
    if (
        all(os.stat(folder).st_mode & stat.S_IXOTH for folder in mine.parents)
        and os.stat(mine).st_mode & stat.S_IXOTH
    ):
        return str(mine)
    return shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin") or str(mine)


LEDGER_TABLE = "recovery_lab.ledger"


class Ledger:
    """Commits the runner knows were acknowledged: one client inserts ids 1, 2, 3... each in its
    own autocommit transaction, each followed by a SELECT of the id, so an id printed back is a
    commit the server acknowledged. It runs until the crash; after recovery the ids missing among
    the acknowledged ones are commits lost (power_loss)."""

    def __init__(self, server: "Server", engine: str):
        kind = server.engine
        server.query(kind.create_schema_sql("recovery_lab"))
        server.query(f"CREATE TABLE {LEDGER_TABLE} (id BIGINT PRIMARY KEY){kind.table_clause()}")
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
            reached = server.engine.redo_to_replay(server, client)
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
    kind = server.engine
    server.query(
        f"CREATE TABLE {OPEN_TRX_TABLE} (id INT PRIMARY KEY, pad CHAR(60) NOT NULL){kind.table_clause()}"
    )
    client = server.session()
    client.stdin.write(
        f"BEGIN; INSERT INTO {OPEN_TRX_TABLE} SELECT seq, REPEAT('x', 60) FROM {kind.numbers_sql(rows)}; "
        "SELECT 'transaction open';\n"
    )
    client.stdin.flush()
    said: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([client.stdout], [], [], max(0.0, deadline - time.monotonic()))
        line = client.stdout.readline() if ready else ""
        if line.strip() == "transaction open":
            server.engine.make_log_durable(server, f"{OPEN_TRX_TABLE}_flush", deadline, POLL_S)
            return {"open_rows": rows}  # the client stays connected: the transaction is open at the kill
        if not line:
            break
        if line.strip().strip("-"):
            said.append(line.strip())
    raise RunFailed(
        f"could not open a transaction of {rows:,} rows: {' '.join(said)[-300:] or 'no answer in time'}"
    )
