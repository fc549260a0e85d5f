"""The server's counters: a reading every second from the workload's start to the crash
(samples.jsonl), and the snapshots taken before the run, at the crash and after recovery."""

import contextlib
import json
import threading
import time
from pathlib import Path

from .events import Clock, emit
from .server import Server

# Sampled every second during the workload, up to the crash (SAMPLES_FILE): where the redo to
# replay, the dirty pages and the write rates stood second by second, under the names every
# engine shares (engine.SAMPLE_LEVELS, SAMPLE_COUNTERS: the engine's samples and sample_extras).
# Counters are kept raw; the dashboard turns them into rates.
SAMPLES_FILE = "samples.jsonl"
SAMPLE_INTERVAL_S = 1.0
SAMPLE_END = "recovery-lab-sample-end"


class Sampler(threading.Thread):
    """The server's counters every second, on one open client connection, one JSON line each
    ({"t": host time, name: value, ...}) written the moment it is taken: the crash ends the
    connection and the file holds every second before it."""

    def __init__(self, server: "Server", engine: str, clock: Clock, target: Path):
        super().__init__(daemon=True, name="sampler")
        self.server, self.engine, self.clock, self.target = server, server.engine, clock, target
        self._stopping = threading.Event()
        self.taken = 0
        self.sql = self.engine.sample_sql(SAMPLE_END)
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
        own: dict = {}
        for line in self.client.stdout:
            name, tab, value = line.rstrip("\n").partition("\t")
            if name == SAMPLE_END:
                return {**self.engine.sample_of(own), **self.engine.sample_extras(self.server.datadir)}
            if not tab:  # an error line (the server went away mid-query)
                return None
            if value.isdigit():
                own[name] = int(value)
        return None

    def stop(self) -> int:
        """After the crash (or on the way out): the samples taken."""
        self._stopping.set()
        with contextlib.suppress(OSError, ValueError):
            self.client.stdin.close()
        self.join(timeout=30)
        return self.taken


def read_counters(server: Server, engine: str) -> dict:
    return server.engine.read_counters(server)


def snapshot(server: Server, engine: str, label: str, work: Path) -> None:
    """The engine's status at a step (before_run, at_crash, after_recovery), one file each."""
    for prefix, text in server.engine.snapshots(server).items():
        (work / f"{prefix}_{label}.txt").write_text(text)
