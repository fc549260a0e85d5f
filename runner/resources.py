"""The restart's resources: what the server's processes and threads used from the spawn after the crash
to the first query answered. Standard library only.

Every INTERVAL_S (50 ms; a reading takes under 1 ms) a line of resources.jsonl: the moment, what the
reading took, and for each process of the server (the one the runner spawned and its children:
PostgreSQL's startup process does its recovery) and each of their threads: its name, its state (R
running, D waiting on the disk, S sleeping), its CPU time (user and system, in clock ticks; on the
CPU and waiting for one, in ns, from schedstat) and its I/O (/proc/PID/task/TID/io: bytes read from
and written to the device, and read and written through system calls, the page cache included).
A thread read last 50 ms before it ended takes the I/O of those 50 ms with it: PostgreSQL's startup
process reads its last WAL and exits, and a CI run counted 12 of the 17 MB it replayed. So each reading
also holds a row (tid 0, ENDED) for what ended unseen: the server process's own I/O, which the kernel
keeps for its ended threads and the children it reaped, less what its live threads and every thread
seen to end were last read at. (Their CPU is not recovered this way: 50 ms at most per thread.)
Under a storage class, each reading also holds the class's group's counts ("group": requests and
bytes read and written, throttle.Throttle.served), so the dashboard can set the recovery's own rates
against the class's caps. Counters are kept raw, as they grow; the dashboard turns them into shares
of the recovery and the rest of start-up (experiments/ingest/resources.py). A thread that cannot be
read is left out; a reader that fails says why in the file's last line. Reading it never fails a run.
"""

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from .events import Clock

RESOURCES_FILE = "resources.jsonl"
INTERVAL_S = 0.05
TICKS = os.sysconf("SC_CLK_TCK")
NAME_CHARS = 60
# The dynamic loader a build of another release starts through (builds.py): its processes carry
# the loader's name, which says nothing, so they are named by the program it runs.
LOADER = "ld-linux"
LOADER_OPTIONS_WITH_VALUES = ("--library-path", "--preload", "--argv0", "--audit", "--inhibit-rpath")
# /proc/PID/task/TID/io's lines kept, in this order
IO_FIELDS = ("read_bytes", "write_bytes", "rchar", "wchar")
# The name of the row for the I/O of threads and processes after they were last read
ENDED = "I/O after a thread's last reading"


class Resources(threading.Thread):
    """Reads the server's process tree every INTERVAL_S into `target` until stopped."""

    def __init__(self, pid: int, clock: Clock, target: Path, group: Callable[[], dict] | None = None):
        super().__init__(daemon=True, name="resources")
        self.pid, self.clock, self.target = pid, clock, target
        self.group = group  # a storage class's counts (throttle.Throttle.served), kept with each reading
        self._stopping = threading.Event()
        self._labels: dict[tuple, str] = {}
        self.pids: set[int] = set()  # every process of the server's seen
        self.taken = 0
        # bytes each thread of the server's read and wrote through system calls, and read from
        # and wrote to the disk (a log read through mmap faults its pages in; asynchronous I/O
        # makes no read or write call), as last read (those gone keep theirs), and their sum:
        # stall.py reads it as progress
        self._io_of: dict[tuple[int, int], int] = {}
        self.io_total = 0
        self.on_disk = False  # a thread of the server's in state D at the last reading (stall.py)
        self._last_io: dict[tuple[int, int], list[int]] = {}  # each thread's IO_FIELDS as last read
        self._ended = [0] * len(IO_FIELDS)

    def run(self) -> None:
        with self.target.open("w", encoding="utf-8") as out, contextlib.suppress(OSError, ValueError):
            out.write(json.dumps({"interval_s": INTERVAL_S, "ticks_per_s": TICKS, "pid": self.pid}) + "\n")
            try:
                self._read(out)
            except Exception as exc:  # a reader that failed is said in its file, never fails the run
                out.write(json.dumps({"error": f"{exc.__class__.__name__}: {exc}"[:300]}) + "\n")

    def _read(self, out) -> None:
        """A reading every INTERVAL_S, and a last one once stopped (the moment of the first query)."""
        due = time.monotonic()
        while True:  # a last reading once stopped: the moment of the first query
            moment, asked = self.clock.now(), time.monotonic()
            tasks = self._tasks()
            if not tasks and not os.path.exists(f"/proc/{self.pid}"):
                return  # the server is gone
            tasks += self._ended_row(tasks)
            took_ms = round((time.monotonic() - asked) * 1000, 3)
            # read_bytes + write_bytes + rchar + wchar: asynchronous direct I/O (InnoDB's page
            # writes through libaio or io_uring) passes no read() or write() call, and seed 000's
            # recovery under a class's caps wrote pages for 90 s and read none: "stalled"
            self._io_of.update({(row[0], row[1]): sum(row[-4:]) for row in tasks})
            self.io_total = sum(self._io_of.values())
            self.on_disk = any(row[3] == "D" for row in tasks)
            reading = {"t": round(moment, 4), "took_ms": took_ms, "tasks": tasks}
            if self.group is not None:
                reading["group"] = self.group()
            out.write(json.dumps(reading) + "\n")
            self.taken += 1
            if self._stopping.is_set():
                return
            due += INTERVAL_S
            self._stopping.wait(max(0.0, due - time.monotonic()))

    def stop(self) -> int:
        """After the first query: one last reading, then the readings taken."""
        self._stopping.set()
        self.join(timeout=10)
        return self.taken

    def _tasks(self) -> list[list]:
        """[pid, tid, name, state, utime, stime, on_cpu_ns, waited_ns, *IO_FIELDS] per thread."""
        rows = []
        for pid in self._processes():
            for task in listing(f"/proc/{pid}/task"):
                row = self._task(pid, int(task))
                if row is not None:
                    rows.append(row)
        return rows

    def _ended_row(self, tasks: list[list]) -> list[list]:
        """[the ENDED row] (none once the server process is gone): its process's I/O (its ended
        threads' and its reaped children's kept in it) less its live threads' and the last readings
        of the threads that ended. A child ended but not yet reaped is subtracted before the kernel
        adds it: the row keeps its largest value, as a counter does."""
        width = len(IO_FIELDS)
        for row in tasks:
            self._last_io[(row[0], row[1])] = row[-width:]
        try:
            lines = Path(f"/proc/{self.pid}/io").read_text().splitlines()
            whole = dict(line.split(": ") for line in lines)
        except (OSError, ValueError):
            return []
        live = {(row[0], row[1]) for row in tasks}
        for i, name in enumerate(IO_FIELDS):
            seen = sum(io[i] for key, io in self._last_io.items() if key not in live)
            own = sum(row[-width + i] for row in tasks if row[0] == self.pid)
            self._ended[i] = max(self._ended[i], int(whole.get(name, 0)) - own - seen)
        return [[self.pid, 0, ENDED, "X", 0, 0, 0, 0, *self._ended]]

    def _processes(self) -> list[int]:
        found = process_tree(self.pid)
        self.pids.update(found)
        return found

    def _task(self, pid: int, tid: int) -> list | None:
        folder = f"/proc/{pid}/task/{tid}"
        try:
            stat = Path(f"{folder}/stat").read_text()
            fields = stat.rsplit(")", 1)[1].split()
            sched = Path(f"{folder}/schedstat").read_text().split()
            io = dict(line.split(": ") for line in Path(f"{folder}/io").read_text().splitlines())
        except (OSError, IndexError, ValueError):
            return None
        return [
            pid,
            tid,
            self._label(pid, tid, stat),
            fields[0],
            int(fields[11]),
            int(fields[12]),
            int(sched[0]),
            int(sched[1]),
            *(int(io.get(name, 0)) for name in IO_FIELDS),
        ]

    def _label(self, pid: int, tid: int, stat: str) -> str:
        """A thread's name (comm); a process's main thread by its command line where PostgreSQL
        set it to what the process does ("postgres: startup recovering ..."). Text the server's
        user controls: kept as data, cut short. (The first readings may still name setpriv, which
        then becomes the server.)"""
        name = stat[stat.find("(") + 1 : stat.rfind(")")]
        if tid == pid and (name == "postgres" or name.startswith(LOADER)):
            if ("role", pid) not in self._labels:
                with contextlib.suppress(OSError):
                    line = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").strip()
                    if line.startswith(b"postgres:"):  # set once the process knows its role
                        self._labels[("role", pid)] = line.decode("utf-8", "replace")
            if ("role", pid) in self._labels:
                return self._labels[("role", pid)][:NAME_CHARS]
        if name.startswith(LOADER):  # a build started through its release's loader: the program's name
            name = self._program(pid) or name
        return name[:NAME_CHARS]

    def _program(self, pid: int) -> str | None:
        """The program a loader runs, from its command line (`ld-linux... --library-path DIR
        /path/mariadbd ...`): its file's name. Read once per process."""
        if ("program", pid) not in self._labels:
            with contextlib.suppress(OSError):
                args = Path(f"/proc/{pid}/cmdline").read_bytes().decode("utf-8", "replace").split("\0")
                index = 1
                while index < len(args) and args[index].startswith("--"):
                    index += 2 if args[index] in LOADER_OPTIONS_WITH_VALUES else 1
                if index < len(args) and args[index]:
                    self._labels[("program", pid)] = Path(args[index]).name[:NAME_CHARS]
        return self._labels.get(("program", pid))

    @property
    def program(self) -> str | None:
        """The server's program name, where it runs through a loader (for the profile's stacks)."""
        return self._labels.get(("program", self.pid))


def process_tree(pid: int) -> list[int]:
    """The process `pid` and its descendants, from the kernel's children lists (stall.py's too)."""
    found, queue = [], [pid]
    while queue:
        current = queue.pop()
        found.append(current)
        for task in listing(f"/proc/{current}/task"):
            with contextlib.suppress(OSError, ValueError):
                children = Path(f"/proc/{current}/task/{task}/children").read_text()
                queue += [int(child) for child in children.split()]
    return found


def listing(folder: str) -> list[str]:
    """A folder's names; none where it is gone (a thread or process that ended)."""
    try:
        return os.listdir(folder)
    except OSError:
        return []
