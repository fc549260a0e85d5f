"""What else used the host while a run was measured. Standard library only.

A recovery of 100 ms measured while another job holds the CPUs is not the recovery of a quiet
host, and two experiments compared across such a difference read as a regression. The runner
records, over the workload and over the restart after the crash, the CPU time the rest of the
host used (the host's busy time from /proc/stat less that of the runner and every process it
started), the share of time lost to iowait and to steal, the memory and I/O pressure stalls
(/proc/pressure, where the kernel has it), and the load; and before the run a short
calibration: a fixed CPU loop and a fixed fsync loop, timed, which the dashboard holds against
the same host's earlier runs. The dashboard decides what is disturbed; this module measures.
"""

import os
import time
from dataclasses import dataclass
from pathlib import Path

from .processes import STARTED, stat_fields

TICKS = os.sysconf("SC_CLK_TCK")
CPUS = os.cpu_count() or 1
# /proc/stat's cpu line: user nice system idle iowait irq softirq steal (guest is inside user)
BUSY = (0, 1, 2, 5, 6)
IOWAIT, STEAL = 4, 7
CPU_LOOP = 200_000
FSYNC_LOOP = 20


@dataclass(frozen=True)
class Mark:
    """The host's counters at a moment."""

    at: float
    busy_s: float
    iowait_s: float
    steal_s: float
    own_s: float
    memory_stall_s: float | None
    io_stall_s: float | None


def _cpu_line() -> list[float]:
    with open("/proc/stat") as stat:
        fields = stat.readline().split()[1:]
    return [int(value) / TICKS for value in fields]


def _process_seconds(pid: str | int) -> float:
    """utime + stime + cutime + cstime of a process (its reaped children included); 0 once gone."""
    fields = stat_fields(pid)
    return sum(int(value) for value in fields[11:15]) / TICKS if fields else 0.0


def _own_seconds() -> float:
    """The runner's CPU time and that of every process it started and still holds. A process
    that ends is reaped by the runner, and its time moves into the runner's own children's time:
    the sum goes on without a jump."""
    return _process_seconds("self") + sum(_process_seconds(p.pid) for p in STARTED if p.returncode is None)


def _stall_seconds(resource: str) -> float | None:
    """Total time some task stalled on `resource` (memory or io), from /proc/pressure; None
    where the kernel has no pressure accounting."""
    try:
        line = Path(f"/proc/pressure/{resource}").read_text().splitlines()[0]
    except (OSError, IndexError):
        return None
    total = dict(part.split("=") for part in line.split()[1:]).get("total")
    return int(total) / 1e6 if total is not None else None


def mark() -> Mark:
    cpu = _cpu_line()
    return Mark(
        at=time.monotonic(),
        busy_s=sum(cpu[i] for i in BUSY if i < len(cpu)),
        iowait_s=cpu[IOWAIT] if len(cpu) > IOWAIT else 0.0,
        steal_s=cpu[STEAL] if len(cpu) > STEAL else 0.0,
        own_s=_own_seconds(),
        memory_stall_s=_stall_seconds("memory"),
        io_stall_s=_stall_seconds("io"),
    )


def window(start: Mark) -> dict:
    """What the rest of the host did since `start`: shares of the host's CPU capacity (all its
    CPUs over the window) and of the window's time."""
    end = mark()
    wall = max(end.at - start.at, 1e-6)
    capacity = wall * CPUS
    others = max(0.0, (end.busy_s - start.busy_s) - (end.own_s - start.own_s))
    found = {
        "seconds": round(wall, 3),
        "cpus": CPUS,
        "others_cpu_seconds": round(others, 3),
        "others_cpu_share": round(min(others / capacity, 1.0), 4),
        "iowait_share": round(max(0.0, end.iowait_s - start.iowait_s) / capacity, 4),
        "steal_share": round(max(0.0, end.steal_s - start.steal_s) / capacity, 4),
        "load_1m": round(os.getloadavg()[0], 2),
    }
    for name, before, after in (
        ("memory_stall_share", start.memory_stall_s, end.memory_stall_s),
        ("io_stall_share", start.io_stall_s, end.io_stall_s),
    ):
        if before is not None and after is not None:
            found[name] = round(max(0.0, after - before) / wall, 4)
    return found


def calibrate(directory: Path) -> dict:
    """A fixed CPU loop and a fixed fsync loop, each timed (the median of three for the CPU): on
    a quiet host they take what they took before; slower, something else holds the CPUs or the
    disk."""
    loops = []
    for _ in range(3):
        began = time.perf_counter()
        total = 0
        for number in range(CPU_LOOP):
            total += number * number % 7
        loops.append(time.perf_counter() - began)
    probe = directory / "calibration.fsync"
    began = time.perf_counter()
    with open(probe, "wb") as handle:
        for _ in range(FSYNC_LOOP):
            handle.write(b"\0" * 4096)
            handle.flush()
            os.fsync(handle.fileno())
    fsync_seconds = time.perf_counter() - began
    probe.unlink()
    return {"cpu_loop_s": round(sorted(loops)[1], 4), "fsync_loop_s": round(fsync_seconds, 4)}
