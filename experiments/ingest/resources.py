"""Where the restart's time went: CPU per thread and I/O over the recovery and the rest of start-up,
from the runner's readings of the server's threads (resources.jsonl, see runner/resources.py), and the
verdict naming the resource that bound the recovery (verdict.py). No Django.

A reading every 50 ms (0.1 s in the first bundles) holds each thread's counters as they grew; a
counter at a moment between two readings is taken on the straight line between them. The recovery is
the crash episode's phases from the first to the last (the error log's stamps, on the same host
clock); the rest of start-up is the spawn to the first query answered, less the recovery. Moments
are seconds from the kill, the restart timeline's zero.
"""

import json
import math
from bisect import bisect_left
from dataclasses import dataclass

from experiments.ingest.verdict import CAP_COUNTS, CAP_NAMES, SECOND_AT_CAP, verdict
from experiments.parsers import Episode
from runner.contract import MEMORY_FILE_SYSTEMS

RESOURCES_FILE = "resources.jsonl"
# The phases of an episode that are its recovery: the window the verdict speaks of.
RECOVERY_PHASES = (
    "crash_recovery",
    "redo_scan",
    "redo_apply",
    "wal_replay",
    "data_directory_sync",
    "recovery_checkpoint",
    "tokudb_recovery",
    "binlog_recovery",
)
# [pid, tid, name, state, utime, stime, on_cpu_ns, waited_ns, read_bytes, write_bytes, rchar, wchar]
PID, TID, NAME, STATE = 0, 1, 2, 3
UTIME, STIME, ON_CPU, WAITED = 4, 5, 6, 7
READ, WRITTEN, RCHAR, WCHAR = 8, 9, 10, 11
THREADS_SHOWN = 8
MB = 1e6
# The runner's row for the I/O threads did after their last reading (runner/resources.py): no thread
ENDED_TID = 0


@dataclass
class Thread:
    """One thread's readings: moments and cumulative counters."""

    pid: int
    tid: int
    name: str
    moments: list
    rows: list
    estimated: frozenset = frozenset()  # moments no reading was taken at (_time_ended_io)

    def at(self, moment: float, column: int) -> float:
        """The counter at `moment`: 0 before the thread was first seen, its last value after it
        was last seen (it ended), on the line between two readings otherwise."""
        if moment <= self.moments[0]:
            return self.rows[0][column] if moment == self.moments[0] else 0.0
        if moment >= self.moments[-1]:
            return self.rows[-1][column]
        i = bisect_left(self.moments, moment)
        t0, t1 = self.moments[i - 1], self.moments[i]
        v0, v1 = self.rows[i - 1][column], self.rows[i][column]
        return v0 + (v1 - v0) * (moment - t0) / (t1 - t0)

    def over(self, start: float, end: float, column: int) -> float:
        return max(self.at(end, column) - self.at(start, column), 0.0)

    def waiting_on_disk(self, start: float, end: float) -> float | None:
        """The share of its readings within the window in which it waited on the disk (state D)."""
        states = [row[STATE] for t, row in zip(self.moments, self.rows, strict=True) if start <= t <= end]
        return states.count("D") / len(states) if states else None

    threads_of_process: int = 1

    @property
    def label(self) -> str:
        """Its name and id: a single-threaded process (PostgreSQL's) by its pid, a thread by its
        tid, the main thread of a threaded server so called."""
        if self.tid == ENDED_TID:
            return self.name
        if self.threads_of_process == 1:
            return f"{self.name} (pid {self.pid})"
        main = " (main thread)" if self.pid == self.tid else ""
        return f"{self.name} {self.tid}{main}"


def _interval(header: dict) -> float:
    """The runner's reading interval, as its header says (0.05 s where it says nothing usable)."""
    interval = header.get("interval_s")
    return float(interval) if _number(interval) and 0 < interval <= 10 else 0.05


def _number(value) -> bool:
    """A value as the runner writes it: a finite number (a host's bundle may hold anything)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _task(task) -> bool:
    """A thread's reading as the runner writes it (the columns above); any other is skipped."""
    return (
        isinstance(task, list)
        and len(task) == 12
        and all(isinstance(task[i], int) and not isinstance(task[i], bool) for i in (PID, TID))
        and isinstance(task[STATE], str)
        and all(_number(task[i]) for i in range(UTIME, WCHAR + 1))
    )


def _time_ended_io(threads: list[Thread]) -> None:
    """What threads did after their last reading shows in the ENDED row at the next reading. They
    did it before they ended, at about their own pace: the row reaches its new value that long
    after their last reading, not on the line over the whole interval. (A fast PostgreSQL
    recovery's startup process reads 14 MB a reading and exits: on the line, a CI run counted
    85% of its WAL in the recovery.) Timed by the column that grew most; a pace unknown (too few
    readings, or none of that column) leaves the interval as it was."""
    ended = next((thread for thread in threads if thread.tid == ENDED_TID), None)
    if ended is None:
        return
    gone: dict[float, list[Thread]] = {}  # by the moment they were last seen
    for thread in threads:
        if thread.tid != ENDED_TID and len(thread.moments) >= 2 and thread.moments[-1] > thread.moments[-2]:
            gone.setdefault(thread.moments[-1], []).append(thread)
    moments, rows = ended.moments[:1], ended.rows[:1]
    for i in range(1, len(ended.moments)):
        (t0, t1), (r0, r1) = ended.moments[i - 1 : i + 1], ended.rows[i - 1 : i + 1]
        column = max((READ, WRITTEN, RCHAR, WCHAR), key=lambda c: r1[c] - r0[c])
        pace = sum(
            (thread.rows[-1][column] - thread.rows[-2][column]) / (thread.moments[-1] - thread.moments[-2])
            for thread in gone.get(t0, [])
        )
        done = t0 + (r1[column] - r0[column]) / pace if pace > 0 else t1
        if t0 < done < t1:  # (nothing grew: done is t0)
            moments.append(done)
            rows.append(r1)
        moments.append(t1)
        rows.append(r1)
    ended.estimated = frozenset(moments) - frozenset(ended.moments)
    ended.moments, ended.rows = moments, rows


def read_resources(content: bytes, zero: float) -> tuple[dict, list[Thread], list[str]]:
    """(the file's header, its threads with moments from `zero`, warnings)."""
    header, by_tid, skipped, took, stopped = {}, {}, 0, [], ""
    for line in content.splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            skipped += 1
            continue
        if not isinstance(row, dict):
            skipped += 1
        elif "interval_s" in row:
            header = row
        elif "error" in row:  # the runner's reader stopped: the readings before it stand
            stopped = f"{RESOURCES_FILE}: the runner's reader stopped early ({str(row['error'])[:200]})"
        elif _number(row.get("t")) and isinstance(row.get("tasks"), list):
            took.append(row["took_ms"] if _number(row.get("took_ms")) else 0)
            if isinstance(row.get("group"), dict):  # a storage class's counts at this reading
                counts = {k: v for k, v in row["group"].items() if k in GROUP_COUNTS and _number(v)}
                header.setdefault("group", []).append((row["t"] - zero, counts))
            for task in row["tasks"]:
                if _task(task):
                    thread = by_tid.setdefault(task[TID], Thread(task[PID], task[TID], "", [], []))
                    thread.moments.append(row["t"] - zero)
                    thread.rows.append(task)
                    thread.name = str(task[NAME])[:60]
    _time_ended_io(list(by_tid.values()))
    for thread in by_tid.values():
        thread.threads_of_process = sum(
            other.pid == thread.pid and other.tid != ENDED_TID for other in by_tid.values()
        )
    if took:
        header["reading_ms_median"] = sorted(took)[len(took) // 2]
        header["readings"] = len(took)
    warnings = [f"{RESOURCES_FILE}: {skipped} line(s) that are no reading were skipped"] if skipped else []
    warnings += [stopped] if stopped else []
    return header, list(by_tid.values()), warnings


def recovery_window(crash: Episode | None, zero: float) -> tuple[float, float] | None:
    """From the first of the episode's recovery phases to the last, in seconds from `zero`."""
    if crash is None:
        return None
    moments = [
        moment.timestamp() - zero
        for name in RECOVERY_PHASES
        if (phase := crash.phase(name)) is not None
        for start, end in phase.parts()
        for moment in (start, end)
        if moment is not None
    ]
    return (min(moments), max(moments)) if len(moments) >= 2 and max(moments) > min(moments) else None


def _use(threads: list[Thread], spans: list[tuple[float, float]]) -> dict:
    """What the threads used over the spans (seconds, bytes), their sum, and per thread."""
    seconds = sum(end - start for start, end in spans)

    def total(thread: Thread, column: int) -> float:
        return sum(thread.over(start, end, column) for start, end in spans)

    per_thread = []
    for thread in threads:
        on_cpu = total(thread, ON_CPU) / 1e9
        runnable = total(thread, WAITED) / 1e9  # ready to run, waiting for a core (schedstat)
        ticks = total(thread, UTIME) + total(thread, STIME)
        user_share = total(thread, UTIME) / ticks if ticks else 1.0
        waits = [thread.waiting_on_disk(start, end) for start, end in spans]
        waits = [w for w in waits if w is not None]
        per_thread.append(
            {
                "name": thread.label,
                "tid": thread.tid,
                "cpu_s": round(on_cpu, 4),
                "user_s": round(on_cpu * user_share, 4),
                "system_s": round(on_cpu * (1 - user_share), 4),
                "cpu_share": round(on_cpu / seconds, 4) if seconds else None,
                "runqueue_share": round(runnable / seconds, 4) if seconds else None,
                "read_bytes": int(total(thread, READ)),
                "rchar": int(total(thread, RCHAR)),
                "write_bytes": int(total(thread, WRITTEN)),
                "disk_wait_share": round(sum(waits) / len(waits), 3) if waits else None,
            }
        )
    per_thread.sort(key=lambda t: (t["tid"] == ENDED_TID, -t["cpu_s"], -t["read_bytes"]))
    summed = {
        key: round(sum(t[key] for t in per_thread), 4)
        for key in ("cpu_s", "user_s", "system_s", "read_bytes", "rchar", "write_bytes")
    }
    summed["runqueue_s"] = round(sum(t["runqueue_share"] or 0 for t in per_thread) * seconds, 4)
    summed["seconds"] = round(seconds, 4)
    summed["cores"] = round(summed["cpu_s"] / seconds, 3) if seconds else None
    summed["read_mb_s"] = round(summed["read_bytes"] / MB / seconds, 3) if seconds else None
    summed["rchar_mb_s"] = round(summed["rchar"] / MB / seconds, 3) if seconds else None
    shown = per_thread[:THREADS_SHOWN]
    rest = per_thread[THREADS_SHOWN:]
    if rest:
        shown.append(
            {
                "name": f"{len(rest)} other threads",
                "cpu_s": round(sum(t["cpu_s"] for t in rest), 4),
                "read_bytes": sum(t["read_bytes"] for t in rest),
                "rchar": sum(t["rchar"] for t in rest),
                "cpu_share": round(sum(t["cpu_s"] for t in rest) / seconds, 4) if seconds else None,
            }
        )
    return {**summed, "threads": shown}


def rate_steps(moments: list[float], interval: float) -> list[tuple[float, float]]:
    """The spans a rate is drawn over: from one reading to the next one at least most of an
    interval later. A reading a busy host delayed, and the next right after it (5 ms), had made a
    step whose bytes, counted over the slow reading's 40 ms, drew 7,000 MB/s on a disk that reads
    1,150: a rate over less than an interval says more than its readings allow."""
    steps, start = [], moments[0] if moments else None
    for moment in moments[1:]:
        if moment - start >= 0.9 * interval:
            steps.append((start, moment))
            start = moment
    if steps and moments[-1] > steps[-1][1]:  # the last readings, too close to stand alone
        steps[-1] = (steps[-1][0], moments[-1])
    return steps


def _series(threads: list[Thread], shown: list[str], interval: float) -> dict:
    """Cores per thread (the threads shown, the others summed) and the read rates, over each span
    of at least an interval between readings (rate_steps), at its midpoint: for the timeline's
    second panel."""
    moments = sorted({t for thread in threads for t in thread.moments if t not in thread.estimated})
    steps = rate_steps(moments, interval)
    if not steps:
        return {}
    middles = [round((a + b) / 2, 4) for a, b in steps]
    by_label = {thread.label: thread for thread in threads}
    cores = {}
    for label in shown:
        if label in by_label:
            thread = by_label[label]
            cores[label] = [round(thread.over(a, b, ON_CPU) / 1e9 / (b - a), 3) for a, b in steps]
    others = [thread for thread in threads if thread.label not in cores]
    if others:
        cores["other threads"] = [
            round(sum(t.over(a, b, ON_CPU) for t in others) / 1e9 / (b - a), 3) for a, b in steps
        ]
    rate = lambda column: [  # noqa: E731 - a rate of one column, named once
        round(sum(t.over(a, b, column) for t in threads) / MB / (b - a), 3) for a, b in steps
    ]
    return {"t": middles, "cores": cores, "read_mb_s": rate(READ), "rchar_mb_s": rate(RCHAR)}


def restart_resources(
    content: bytes, times: dict, crash: Episode | None, disk: dict | None = None, cpus: int | None = None
) -> tuple[dict, list[str]]:
    """The run's `resources`: its recovery and rest of start-up (what each used, per thread),
    the series the timeline draws and the verdict; {} without readings. `disk`: the host's facts
    about its work folder's disk (its file system, the floor fio measured)."""
    zero = times.get("killed")
    spawned, first_query = times.get("recovery_spawned"), times.get("recovery_first_query")
    if zero is None or spawned is None or first_query is None:
        return {}, []
    header, threads, warnings = read_resources(content, zero)
    if not threads:
        return {}, warnings
    start_up = (spawned - zero, first_query - zero)
    window = recovery_window(crash, zero)
    found = {
        "interval_s": header.get("interval_s"),
        "readings": header.get("readings", 0),
        "reading_ms_median": header.get("reading_ms_median"),
        "cpus": cpus if isinstance(cpus, int) and not isinstance(cpus, bool) and cpus > 0 else None,
        "start_up": [round(v, 4) for v in start_up],
    }
    if window is not None:
        window = (max(window[0], start_up[0]), min(window[1], start_up[1]))
    if window is not None and window[1] > window[0]:  # (a recovery logged outside the restart: none)
        found["recovery"] = {"window": [round(v, 4) for v in window], **_use(threads, [window])}
        rest = [(start_up[0], window[0]), (window[1], start_up[1])]
        found["rest"] = _use(threads, [(a, b) for a, b in rest if b > a])
    else:
        found["rest"] = _use(threads, [start_up])
    used = (found.get("recovery") or found["rest"])["threads"]
    shown = [t["name"] for t in used if t.get("tid") not in (None, ENDED_TID)]  # CPU by thread
    found["series"] = _series(threads, shown[:5], _interval(header))
    disk = disk if isinstance(disk, dict) else {}
    floor = disk.get("floor") if isinstance(disk.get("floor"), dict) else {}
    if isinstance(disk.get("file_system"), str) and disk["file_system"] in MEMORY_FILE_SYSTEMS:
        found["in_memory"] = disk["file_system"]
    elif floor:
        found["floor"] = {key: floor[key] for key in FLOOR_KEYS if _number(floor.get(key))}
        for key in ("device", "storage"):  # storage: a class's floor, fio's in its cap
            if isinstance(floor.get(key), str):
                found["floor"][key] = floor[key][:200]
        if isinstance(floor.get("caps"), dict):  # a class's caps, and what the recovery asked of them
            found["floor"]["caps"] = {k: v for k, v in floor["caps"].items() if k in CAP_NAMES and _number(v)}
            caps = found["floor"]["caps"]
            if asked := group_use(header.get("group") or [], found.get("recovery", {}).get("window"), caps):
                found["floor"]["recovery_io"] = asked
    found["verdict"] = verdict(found, crash)
    return found, warnings


# a storage class's group's counts, as the runner keeps them with each reading (throttle.SERVED)
GROUP_COUNTS = ("read_requests", "write_requests", "read_bytes", "write_bytes")
FLOOR_KEYS = ("seq_read_mb_s", "rand_read_qd1_iops", "rand_read_qd32_iops", "fsync_per_s", "device")


def group_use(
    readings: list[tuple[float, dict]], window: list[float] | None, caps: dict | None = None
) -> dict | None:
    """What a storage class's group asked of the disk over the recovery: its counts at the
    window's two ends, each drawn straight between the readings around it (a reading every 50 ms
    would widen a 1 s window by up to a tenth), and the window's seconds. With the class's `caps`,
    also each whole second of the window the group spent at a cap (SECOND_AT_CAP of it or more):
    `at_cap_s` per cap, `held_s` at any, over `whole_s` seconds. A recovery under two caps
    alternates: seed 000's read at the class's 320 requests/s, then wrote at its 160/s, 87 and
    105 a second on average. None without two readings or a window."""
    if window is None or len(readings) < 2 or window[1] <= window[0]:
        return None
    moments = [moment for moment, _ in readings]

    def at(moment: float, key: str) -> float:
        later = min(bisect_left(moments, moment), len(readings) - 1)
        earlier = later if moments[later] <= moment else max(later - 1, 0)
        (t0, a), (t1, b) = readings[earlier], readings[later]
        return a[key] if t1 <= t0 else a[key] + (b[key] - a[key]) * (moment - t0) / (t1 - t0)

    keys = [k for k in GROUP_COUNTS if all(k in counts for _, counts in readings)]
    counted = {k: round(at(window[1], k) - at(window[0], k)) for k in keys}
    asked = {"seconds": round(window[1] - window[0], 4), **counted}
    limits = {cap: caps[cap] for cap in CAP_COUNTS if (caps or {}).get(cap) and CAP_COUNTS[cap] in keys}
    if limits:
        whole = int(window[1] - window[0])
        # each cap's count at every whole second's boundary, read once; a second at it or not
        counts = {cap: [at(window[0] + s, CAP_COUNTS[cap]) for s in range(whole + 1)] for cap in limits}
        reached = {
            cap: [b - a >= SECOND_AT_CAP * limits[cap] for a, b in zip(c, c[1:], strict=False)]
            for cap, c in counts.items()
        }
        asked.update(
            whole_s=whole,
            at_cap_s={cap: sum(seconds) for cap, seconds in reached.items()},
            held_s=sum(map(any, zip(*reached.values(), strict=True))),
        )
    return asked
