"""Crash plans: when to crash (after a time, at a redo volume, with a transaction left open, with
binlog files held) and how (kill -9, or a power cut through the power-cut layer, with the ledger
of acknowledged commits that counts what the cut lost)."""

import contextlib
import os
import select
import subprocess
import sys
import threading
import time
from pathlib import Path

from .contract import POWER_CUT_FILE, RunFailed, size_bytes
from .events import progress
from .processes import MOUNTS, POLL_S, spawn, unmount
from .server import Server
from .workload import Sysbench


class PowerCutLayer:
    """The power-cut file system (powercut.py) mounted over a directory, in a process of its own
    (this runner's package run with -m, from wherever the runner runs: the source tree or its zip)."""

    def __init__(self, directory: Path, log: Path):
        env = dict(os.environ)
        env["PYTHONPATH"] = str(Path(__file__).absolute().parents[len(__package__.split("."))])
        command = [sys.executable, "-m", f"{__package__}.powercut", str(directory)]
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
