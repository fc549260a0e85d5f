"""The workload: sysbench, its rate, its report, and the warm-up after the restart."""

import os
import re
import signal
import statistics
import subprocess
import time
from collections.abc import Callable
from importlib import resources
from pathlib import Path

from .contract import DEFAULT_OPEN_ROWS, SCRIPTED_WORKLOADS, RunFailed, RunSpec
from .processes import find_binary, spawn
from .server import Server

INTERVAL_TPS = re.compile(r"^\[ *[0-9.]+s \] thds: [0-9]+ tps: ([0-9.]+)", re.MULTILINE)
INTERVAL = re.compile(r"^\[ *([0-9.]+)s \] thds: [0-9]+ tps: ([0-9.]+)", re.MULTILINE)
WARM_SHARE = 0.9
# tpcc_like's tables (runner/lua/tpcc_like.lua); the other workloads' are sbtest1..N.
TPCC_TABLES = (
    "item",
    "warehouse",
    "district",
    "customer",
    "stock",
    "orders",
    "new_orders",
    "order_line",
    "history",
)


def workload_tables(workload: dict) -> list[str]:
    """The tables the workload writes, in the sbtest database: what a checksum compares."""
    if workload["name"] == "tpcc_like":
        return list(TPCC_TABLES)
    return [f"sbtest{i}" for i in range(1, workload["tables"] + 1)]


class Sysbench:
    def __init__(self, server: Server, spec: RunSpec, work: Path):
        self.server, self.work = server, work
        self.workload = spec.workload
        self.engine = spec.engine
        self.rate = spec.parameters.get("insert_rate", 0)
        self.binary = find_binary("sysbench")
        self.process: subprocess.Popen | None = None
        self.output = None
        self.test = self.workload["name"]
        if self.test in SCRIPTED_WORKLOADS:  # the runner's own Lua script, written beside the run
            script = work / f"{self.test}.lua"
            script.write_text((resources.files(__package__) / "lua" / f"{self.test}.lua").read_text())
            self.test = str(script)

    def _common(self) -> list[str]:
        args = [
            self.binary,
            self.test,
            *self.server.sysbench_args(),
            f"--tables={self.workload['tables']}",
            f"--table-size={self.workload['table_size']}",
        ]
        if self.workload["name"] == "long_transaction":
            args.append(f"--open-rows={self.workload.get('open_rows') or DEFAULT_OPEN_ROWS}")
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
