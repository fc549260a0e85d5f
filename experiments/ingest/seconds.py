"""The seconds before and after the crash, from a run's bundle. No Django.

Before: the runner's per-second samples of the server's counters (samples.jsonl, see
runner/sampler.py) turned into levels (checkpoint age, dirty pages, memtables) and
rates (log and data bytes written, rows changed), on seconds since the workload started, with the
crash and the end of the workload marked.

After: a timeline of the restart built from the stamped error log (each line carries the moment
the runner saw it) and the runner's own moments (the kill, each process spawn, the first
successful query), beside the clean start of the same server: the answer to "where did the
downtime go".
"""

import json
import math
import re
from dataclasses import dataclass, field

from experiments.parsers import Episode
from runner.contract import SAMPLE_COUNTERS, SAMPLE_LEVELS
from runner.families import REGISTRY

SAMPLES_FILE = "samples.jsonl"

# Levels: the value itself, under the name it was sampled by (what each engine's is: its
# `samples`, runner/families/). Rates: the growth per second of a counter.
LEVELS = SAMPLE_LEVELS
RATES = {f"{counter}_per_s": counter for counter in SAMPLE_COUNTERS}
SYSBENCH_INTERVAL = re.compile(rb"^\[ *([0-9.]+)s \] thds: [0-9]+ tps: ([0-9.]+)", re.MULTILINE)


def sample_series(samples: bytes, times: dict, sysbench_report: bytes = b"") -> tuple[dict, list[str]]:
    """The series of a samples.jsonl file (see series_of) and warnings. Lines that are not
    samples (a file cut short by the crash) are skipped and counted."""
    rows, skipped = [], 0
    for line in samples.splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            skipped += 1
            continue
        if is_sample(row):
            rows.append(row)
        elif line.strip():
            skipped += 1
    warnings = [f"samples: {skipped} line(s) that are no sample were skipped"] if skipped else []
    return series_of(rows, times, sysbench_report), warnings


def is_sample(row) -> bool:
    return isinstance(row, dict) and _number(row.get("t"))


def _number(value) -> bool:
    """A counter's value as the runner writes it: a finite number (a host's bundle may hold
    anything: the rest of a sample is dropped, not drawn)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def series_of(rows: list[dict], times: dict, sysbench_report: bytes = b"") -> dict:
    """{"t": [seconds since the workload started], "series": {name: [value or None]},
    "sysbench": {"t", "tps"}, "crash_at", "workload_ended_at"} from samples ({"t", counter:
    value, ...}); {} without any."""
    rows = [_shared(row) for row in rows]
    if not rows:
        return {}
    rows = sorted(rows, key=lambda row: row["t"])
    zero = times.get("workload_started") or rows[0]["t"]
    moments = [row["t"] - zero for row in rows]
    series: dict[str, list] = {}
    for name in LEVELS:
        values = [row.get(name) for row in rows]
        if any(v is not None for v in values):
            series[name] = values
    for name, counter in RATES.items():
        totals = [row.get(counter) for row in rows]
        if any(v is not None for v in totals):
            series[name] = [None] + [
                _rate(totals[i - 1], totals[i], moments[i] - moments[i - 1]) for i in range(1, len(rows))
            ]
    found = {
        "t": [round(m, 3) for m in moments],
        "series": series,
        "crash_at": _since(times, "killed", zero),
        "workload_ended_at": _since(times, "workload_ended", zero),
    }
    took = sorted(row["took_ms"] for row in rows if isinstance(row.get("took_ms"), int | float))
    if took:
        found["sample_ms_median"] = took[len(took) // 2]
    intervals = SYSBENCH_INTERVAL.findall(sysbench_report)
    if intervals:
        found["sysbench"] = {"t": [float(s) for s, _ in intervals], "tps": [float(v) for _, v in intervals]}
    return found


def _shared(row: dict) -> dict:
    """A sample's numbers under the shared names (a runner's from before them named each engine's
    own: REGISTRY.shared_sample reads those), with its moment and what it took."""
    numbers = {name: value for name, value in row.items() if _number(value)}
    kept = {name: numbers.pop(name) for name in ("t", "took_ms") if name in numbers}
    return {**kept, **REGISTRY.shared_sample(numbers)}


def _rate(before, after, seconds: float) -> float | None:
    if before is None or after is None or seconds <= 0 or after < before:
        return None  # a counter that went back was reset: no rate across it
    return round((after - before) / seconds, 3)


def _since(times: dict, name: str, zero: float) -> float | None:
    return round(times[name] - zero, 3) if name in times else None


# Phases of an episode as the timeline names them, in the order they are drawn.
PHASE_LABELS = {
    "innodb_init": "InnoDB start-up",
    "crash_recovery": "crash recovery (start to redo applied)",
    "redo_scan": "redo scan",
    "redo_apply": "redo apply",
    "data_directory_sync": "data directory fsync",
    "wal_replay": "WAL replay",
    "recovery_checkpoint": "end-of-recovery checkpoint",
    "tokudb_recovery": "TokuDB recovery",
    "binlog_recovery": "binlog / XA recovery",
    "background_rollback": "rollback (background)",
    "buffer_pool_load": "buffer pool load",
}
START_TO_READY = "start to ready for connections"
READY_TO_QUERY = "ready to the first query answered"
SUMMARY_BARS = (START_TO_READY, READY_TO_QUERY)
AFTER_CRASH = "after the crash"
CLEAN_START = "clean start"


@dataclass
class Timeline:
    """Bars (group, name, start, end) and moments (group, name, at), in seconds from each
    group's zero: the kill for the restart after the crash, the spawn for the clean start."""

    bars: list[dict] = field(default_factory=list)
    moments: list[dict] = field(default_factory=list)
    zero: dict = field(default_factory=dict)
    # The recovery after the crash, as its progress lines told it: {"t": [s from the zero],
    # "redo_read_bytes": [...], "redo_bytes": total, "batch_pages": [...]} (a batch's pages, or
    # those left of it); and its batches.
    progress: dict = field(default_factory=dict)
    batches: int = 0
    # MariaDB's batches after the first re-read their redo in the same bar; MySQL's scan between them
    batches_reread: bool = False

    def bar(self, group: str, name: str, start, end) -> None:
        if start is not None and end is not None and end >= start:
            self.bars.append({"group": group, "name": name, "start": round(start, 3), "end": round(end, 3)})

    def moment(self, group: str, name: str, at) -> None:
        if at is not None:
            self.moments.append({"group": group, "name": name, "at": round(at, 3)})

    def to_dict(self) -> dict:
        """Each group's steps in the order they began, its two summary bars last."""
        groups = [AFTER_CRASH, CLEAN_START]
        bars = sorted(
            self.bars,
            key=lambda bar: (
                groups.index(bar["group"]),
                bar["name"] in SUMMARY_BARS,
                bar["start"],
                bar["end"],
            ),
        )
        if not bars:
            return {}
        found = {"bars": bars, "moments": self.moments, "zero": self.zero}
        if self.progress:
            found["progress"] = self.progress
        if self.batches > 1:
            found["batches"] = self.batches
            found["batches_reread"] = self.batches_reread
        return found


# The runner's own steps between the kill and the restart: not downtime (a production server
# restarts without them), drawn on the timeline by name. (start, end, what the bar says)
LAB_STEPS = (
    ("image_started", "image_kept", "the lab's copy of the crash, kept as an image (not downtime)"),
    ("cache_started", "cache_settled", "the lab's page-cache step (not downtime)"),
)


def lab_steps(times: dict) -> list[tuple[str, float, float]]:
    """(what, start, end) of each of LAB_STEPS the run's moments hold."""
    return [
        (name, times[start], times[end])
        for start, end, name in LAB_STEPS
        if isinstance(times.get(start), int | float) and isinstance(times.get(end), int | float)
    ]


def restart_timeline(
    crash: Episode | None, clean: Episode | None, times: dict, wal: Episode | None = None
) -> Timeline:
    """The restart after the crash from the kill (an imported run, whose kill nobody timed, from
    its server's first line), and the clean start from its spawn. `wal`: MyRocks' recovery as
    RocksDB's own LOG tells it (its microsecond times are the same host's clock)."""
    timeline = Timeline()
    if crash is not None:
        killed = times.get("killed")
        zero = killed if killed is not None else _stamp(crash.started_at)
        timeline.zero[AFTER_CRASH] = "the kill" if killed is not None else "the server's first line"
        restored, spawned = times.get("power_restored"), times.get("recovery_spawned")
        if killed is not None and restored is not None:
            timeline.bar(AFTER_CRASH, "power cut: unsynced writes dropped", 0.0, restored - zero)
        steps = [step for step in lab_steps(times) if killed is not None and step[2] - step[1] >= 0.005]
        if killed is not None and spawned is not None:  # from the lab's last step, drawn on its own
            idle_from = max([restored or killed, *(end for _name, _start, end in steps)])
            timeline.bar(AFTER_CRASH, "nothing running", idle_from - zero, spawned - zero)
        for name, start, end in steps:
            timeline.bar(AFTER_CRASH, name, start - zero, end - zero)
        _episode_bars(timeline, AFTER_CRASH, crash, zero, spawned, times.get("recovery_first_query"))
        timeline.progress = _progress(crash, zero)
        timeline.batches = len(crash.batches)
        timeline.batches_reread = any(batch.lsn is not None for batch in crash.batches)
        replay = wal.phase("wal_replay") if wal is not None else None
        if replay is not None and replay.start is not None and replay.end is not None:
            timeline.bar(
                AFTER_CRASH,
                "WAL replay (RocksDB's LOG)",
                _stamp(replay.start) - zero,
                _stamp(replay.end) - zero,
            )
    if clean is not None and times.get("clean_spawned") is not None:
        spawned = times["clean_spawned"]
        timeline.zero[CLEAN_START] = "the server's spawn"
        _episode_bars(timeline, CLEAN_START, clean, spawned, spawned, times.get("clean_first_query"))
    return timeline


def _episode_bars(
    timeline: Timeline, group: str, episode: Episode, zero: float, spawned, first_query
) -> None:
    started, ready = _stamp(episode.started_at), _stamp(episode.ready_at)
    at = lambda moment: None if moment is None else moment - zero  # noqa: E731 - a shift, named once
    if spawned is not None:
        timeline.bar(group, "process start to its first log line", at(spawned), at(started))
    for name, label in PHASE_LABELS.items():
        phase = episode.phase(name)
        if phase is None:
            continue
        if name == "redo_apply" and len(episode.batches) > 1:
            # a bar per batch, each from its first line to the next's (the last to the apply's end)
            starts = [_stamp(batch.start) for batch in episode.batches] + [_stamp(phase.end)]
            label = f"{label} ({len(episode.batches)} batches)"
            for begin, end in zip(starts, starts[1:], strict=False):
                timeline.bar(group, label, at(begin), at(end))
            continue
        for start, end in phase.parts():
            timeline.bar(group, label, at(_stamp(start)), at(_stamp(end)))
    timeline.bar(group, START_TO_READY, at(spawned or started), at(ready))
    timeline.bar(group, READY_TO_QUERY, at(ready), at(first_query))
    timeline.moment(group, "ready for connections", at(ready))
    timeline.moment(group, "first query answered", at(first_query))


def _progress(episode: Episode, zero: float) -> dict:
    """The recovery's progress lines as series on the timeline's seconds: the redo read (from the
    checkpoint) and the pages left to recover; {} where the log has fewer than two."""
    points = [p for p in episode.progress_lines() if p.at is not None]
    if len(points) < 2:
        return {}
    found: dict = {"t": [round(_stamp(p.at) - zero, 3) for p in points]}
    checkpoint, end = episode.checkpoint_lsn, episode.crash_lsn
    if checkpoint is not None and any(p.lsn is not None for p in points):
        # the final batch reads to the end of the log
        found["redo_read_bytes"] = [
            max((p.lsn if p.lsn is not None else end or checkpoint) - checkpoint, 0) for p in points
        ]
        if end is not None:
            found["redo_bytes"] = max(end - checkpoint, 0)
    if any(p.pages is not None for p in points):
        found["batch_pages"] = [p.pages for p in points]
    return found if len(found) > 1 else {}


def _stamp(moment) -> float | None:
    return moment.timestamp() if moment is not None else None
