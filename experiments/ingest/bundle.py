"""From a run's bundle (result.json + raw files) to the metrics of docs/design.md. No Django.

The error log the runner stamped line by line is preferred to the raw one: its stamps come from
the host's monotonic clock with millisecond resolution. Times the runner took itself (the kill,
each process spawn, the first successful query) define ready, downtime and clean start.
"""

from dataclasses import dataclass, field
from datetime import UTC, tzinfo
from zoneinfo import ZoneInfo

from experiments.engines import engine as engine_named
from experiments.engines import replay_seconds
from experiments.ingest.doubts import checkpoint_moved, cross_check_crash_lsn, rate_reached
from experiments.ingest.profile import FOLDED_FILE, profile_summary
from experiments.ingest.resources import RESOURCES_FILE, restart_resources
from experiments.ingest.seconds import SAMPLES_FILE, lab_steps, restart_timeline, sample_series
from experiments.ingest.verdict import CAP_NAMES
from experiments.metrics import WORKLOAD_METRICS
from experiments.parsers import Episode, ParsedFile, parse_bytes
from experiments.vocabulary import INSERTS_PER_TRANSACTION
from runner.contract import POLL_S

# Phase names of the parsers -> the names a Run keeps (docs/design.md, "Metrics of a Run").
PHASE_NAMES = {
    "redo_scan": "redo_scan",
    "redo_apply": "redo_apply",
    "data_directory_sync": "data_directory_sync",
    "wal_replay": "wal_replay",
    "recovery_checkpoint": "recovery_checkpoint",
    "tokudb_recovery": "redo_apply",
    "background_rollback": "rollback",
    "binlog_recovery": "binlog_recovery",
    "buffer_pool_load": "buffer_pool_load",
}
# Whole-second logs put a line up to a second off: a margin before calling a duration impossible.
CLOCK_MARGIN_S = 1.0
# The runner's own files, read by their own modules, not by the log parsers.
NOT_PARSED = ("result.json", "install.log", "sysbench_prepare.txt", SAMPLES_FILE, RESOURCES_FILE, FOLDED_FILE)
MAX_LOG_FILES = 100


@dataclass
class RunAnalysis:
    metrics: dict = field(default_factory=dict)
    server_version: str = ""
    warnings: list[str] = field(default_factory=list)
    parsed: dict[str, ParsedFile] = field(default_factory=dict)
    phases: dict[str, float] = field(default_factory=dict)
    # per phase, how finely its lines were timed (seconds): a shorter phase is below resolution
    phase_resolution: dict[str, float] = field(default_factory=dict)
    suspect_reasons: list[str] = field(default_factory=list)
    # Transactions InnoDB found prepared, which the binary log then committed (XA recovery).
    xa_prepared: int = 0
    # The seconds before the crash (per-second samples) and after it (the restart's timeline).
    samples: dict = field(default_factory=dict)
    timeline: dict = field(default_factory=dict)
    # What the server's threads used over the recovery and the rest of start-up, and the verdict.
    resources: dict = field(default_factory=dict)


def restart_disk(facts: dict, result: dict) -> dict | None:
    """The disk the restart read from, as its verdict sets reads against it: the host's, or under
    a storage class (runner/throttle.py) the same disk with the class's floor, fio's in its cap."""
    disk, storage = facts.get("disk"), result.get("storage") or {}
    if not storage:
        return disk
    caps = {name: storage.get(name) for name in CAP_NAMES}
    floor = {**(storage.get("floor") or {"storage": storage.get("name")}), "caps": caps}
    return {**(disk or {}), "floor": floor}


def _crash_episode(parsed: ParsedFile | None, index: int = 0) -> Episode | None:
    """The index-th crash recovery of a log: a live run has one; an imported log may hold several."""
    if parsed is None:
        return None
    crashes = parsed.crash_episodes
    return crashes[index] if index < len(crashes) else None


def _local_zone(result: dict) -> tzinfo:
    """The zone of the server's zone-less timestamps: the runner's hosts log in UTC; an import
    says which zone its server was in."""
    return ZoneInfo(result["timezone"]) if result.get("timezone") else UTC


def _seconds(times: dict, start: str, end: str) -> float | None:
    if start in times and end in times:
        return round(times[end] - times[start], 6)
    return None


# How early a spawn's first line may read: runner's stamps print µs; PostgreSQL's %m truncates to ms
STAMPED_SLACK_S, OWN_STAMP_SLACK_S = 1e-6, 0.001


def _after(episodes: list[Episode], moment: float | None, slack_s: float) -> Episode | None:
    """The first episode that started at or after a runner timestamp, read within `slack_s`. A
    crash image's lines, stamped when the runner read them just before the restart, are not it
    (a slack of a millisecond had taken them for it: a start to ready of -0.00085 s)."""
    if moment is None:
        return None
    for episode in episodes:
        if episode.started_at and episode.started_at.timestamp() >= moment - slack_s:
            return episode
    return None


def analyse_run(
    result: dict, files: dict[str, bytes], engine: str, redo_log_bytes: int | None = None
) -> RunAnalysis:
    """Metrics of a run from its files. `result` is the runner's result.json, or for an import
    {"imported": true, "crash_index": i, "timezone": ..., "redo_bytes": ...}; redo_log_bytes is
    the run's redo log size, which bounds the redo InnoDB can replay."""
    analysis = RunAnalysis()
    kind = engine_named(engine)  # where its recovery is logged, and its ingest rules
    zone = _local_zone(result)
    crash_index = result.get("crash_index", 0)
    for name, content in files.items():
        if name in NOT_PARSED:
            continue
        analysis.parsed[name] = parse_bytes(name, content, local_tz=zone)
    log_name = "error.log.stamped" if "error.log.stamped" in analysis.parsed else "error.log"
    error_log = analysis.parsed.get(log_name)
    metrics = analysis.metrics
    times = result.get("times", {})

    crash = None
    ready_resolution = 0.0  # how finely the ready line was timed
    if error_log is not None:
        analysis.server_version = error_log.server_version or ""
        analysis.warnings += [f"error log: {w}" for w in error_log.warnings]
        crash = _crash_episode(error_log, crash_index)
        slack = STAMPED_SLACK_S if log_name == "error.log.stamped" else OWN_STAMP_SLACK_S
        recovery_start = _after(error_log.episodes, times.get("recovery_spawned"), slack) or crash
        if crash is not None:
            _keep_phases(analysis, crash, stamp_resolution(log_name, crash))
            analysis.xa_prepared = crash.xa_prepared
            metrics.update(
                checkpoint_lsn=crash.checkpoint_lsn,
                crash_lsn=crash.crash_lsn,
                redo_bytes=crash.redo_bytes,
                pages_to_recover=crash.pages_to_recover,
                redo_records_applied=crash.redo_records_applied,
                recovery_batches=len(crash.batches) or None,
                trx_rolled_back=crash.trx_rolled_back,
                rows_undone=crash.rows_undone,
                recovery_seconds=crash.recovery_seconds,
                rollback_seconds=crash.rollback_seconds,
            )
        clean = _after(error_log.episodes, times.get("clean_spawned"), slack)
        own_log = kind.own_log_file
        wal = _crash_episode(analysis.parsed.get(own_log), crash_index) if own_log else None
        analysis.timeline = restart_timeline(recovery_start, clean, times, wal).to_dict()
        if RESOURCES_FILE in files:
            facts = result.get("facts") or {}
            analysis.resources, warnings = restart_resources(
                files[RESOURCES_FILE], times, crash, restart_disk(facts, result), facts.get("cpu_count")
            )
            analysis.warnings += warnings
            recovery = analysis.resources.get("recovery") or {}
            if recovery.get("threads"):
                metrics.update(
                    recovery_cpu_seconds=recovery["cpu_s"],
                    recovery_busiest_cpu_share=recovery["threads"][0]["cpu_share"],
                    recovery_core_wait_share=recovery["threads"][0].get("runqueue_share"),
                    recovery_disk_read_bytes=recovery["read_bytes"],
                )
        for step in ("restart_cache", "storage"):  # runner/page_cache.py, runner/throttle.py
            if result.get(step):
                analysis.resources[step] = result[step]
        if result.get("profile"):
            analysis.resources["profile"] = profile_summary(result["profile"], files.get(FOLDED_FILE))
        if recovery_start is not None and recovery_start.ready_at is not None:
            ready_resolution = stamp_resolution(log_name, recovery_start)
            spawned = times.get("recovery_spawned")
            metrics["ready_seconds"] = (
                round(recovery_start.ready_at.timestamp() - spawned, 6)
                if spawned
                else recovery_start.ready_seconds
            )

    if SAMPLES_FILE in files:
        analysis.samples, warnings = sample_series(
            files[SAMPLES_FILE], times, files.get("sysbench_report.txt", b"")
        )
        analysis.warnings += warnings
    if kind.own_log_file:
        _own_log_metrics(result, analysis, kind.own_log_file)
    if metrics.get("redo_bytes") is None and result.get("status") == "stalled":
        # a restart that stalled logged no recovery's redo: what the crash plan read at the kill
        # (a redo target's), else the last sample's, up to a second before it
        levels = (analysis.samples.get("series") or {}) if analysis.samples else {}
        ages = [v for v in levels.get("checkpoint_age_bytes") or levels.get("wal_to_replay_bytes") or [] if v]
        reached = (result.get("crash_plan") or {}).get("reached_bytes")
        metrics["redo_bytes"] = int(reached) if isinstance(reached, int) else int(ages[-1]) if ages else None
    if metrics.get("redo_bytes") is None and result.get("redo_bytes") is not None:
        # measured elsewhere by whoever imported the run (TokuDB logs count entries, not bytes)
        metrics["redo_bytes"] = result["redo_bytes"]

    # power_loss: from the moment the power is back (the layer's cut and unmount done), so the
    # downtime is the server's own, comparable with a sigkill run's.
    start = "power_restored" if "power_restored" in times else "killed"
    metrics["downtime_seconds"] = _seconds(times, start, "recovery_first_query")
    # the runner's own steps before the restart (its page-cache step, a crash image kept: the
    # keeping run's downtime had counted its 43 s copy of seed 000's 14 GiB) are not downtime
    lab = sum(end - start for _name, start, end in lab_steps(times))
    if metrics["downtime_seconds"] is not None and lab:
        metrics["downtime_seconds"] = round(metrics["downtime_seconds"] - lab, 6)
    metrics["clean_start_seconds"] = _seconds(times, "clean_spawned", "clean_first_query")
    _ready_by_the_first_query(analysis, times, ready_resolution)
    # the rate of the log replay (PostgreSQL's recovery also syncs the data directory and
    # checkpoints: its WAL over the whole recovery had read 44 MB/s where the replay ran at 426)
    replay = replay_seconds(engine, analysis.phases) or metrics.get("recovery_seconds")
    if metrics.get("redo_bytes") and replay:
        metrics["redo_apply_mb_per_s"] = round(metrics["redo_bytes"] / 1e6 / replay, 3)

    cross_check_crash_lsn(analysis)
    _workload_metrics(analysis, result.get("spec", {}).get("workload", {}).get("name"))
    for name, value in result.get("counters", {}).items():
        metrics[name] = value
    checkpoint_moved(analysis, result.get("spec", {}).get("parameters", {}).get("flushing"))
    rate_reached(analysis, result.get("spec", {}).get("parameters", {}).get("insert_rate"))
    warmup = result.get("warmup") or {}
    if warmup.get("seconds") is not None:
        metrics["warmup_seconds"] = warmup["seconds"]
    for note in (
        result.get("warning"),
        (result.get("crash_plan") or {}).get("warning"),
        warmup.get("warning"),
    ):
        if note:
            analysis.warnings.append(note)
    if "verified" in result:
        metrics["verified"] = result["verified"]
    durability = result.get("durability") or {}
    for key in ("acknowledged_commits", "lost_commits"):
        if isinstance(durability.get(key), int):
            metrics[key] = durability[key]
    analysis.server_version = result.get("server_version") or analysis.server_version
    analysis.suspect_reasons = parser_failures(analysis.parsed)
    # the server's OS user put a link or a device where the runner reads: the files are not the run's
    analysis.suspect_reasons += [
        f"the runner refused a file of the server's folder: {why}" for why in result.get("refused_files", [])
    ]
    # an engine's own log is stamped by its own clock, not the server's
    same_clock = not kind.own_log_file
    analysis.suspect_reasons += impossible_values(metrics, crash, same_clock=same_clock)
    if kind.redo_bounded_by_log:
        analysis.suspect_reasons += more_redo_than_logs_hold(metrics.get("redo_bytes"), redo_log_bytes)
    if (result.get("image") or {}).get("restored"):  # its workload is the run that made the crash's
        for name in WORKLOAD_METRICS:  # measured once: a copy counted again would be no new sample
            metrics.pop(name, None)
    return analysis


def parser_failures(parsed: dict[str, ParsedFile]) -> list[str]:
    """A parser that raised read its file only up to that point: the run's values from it may be
    missing or wrong, whatever else looks fine."""
    return [
        f"the parser failed on {name} ({file.parser_error}): values from it may be missing or wrong; "
        "re-parse after a fix"
        for name, file in parsed.items()
        if file.parser_error
    ]


def more_redo_than_logs_hold(redo_bytes: int | None, log_size: int | None) -> list[str]:
    """InnoDB can only replay what its log files hold: at most 100 files (innodb_log_files_in_group)
    of the redo log size. More than that is two unrelated LSNs subtracted."""
    if redo_bytes is None or not log_size or redo_bytes <= MAX_LOG_FILES * log_size:
        return []
    return [
        f"redo to replay ({redo_bytes:,} bytes) is more than {MAX_LOG_FILES} times the redo log size "
        f"({log_size:,} bytes): no InnoDB log holds that much"
    ]


def _keep_phases(analysis: RunAnalysis, episode: Episode, resolution_s: float) -> None:
    for phase in episode.phases:
        name = PHASE_NAMES.get(phase.name)
        if name and phase.seconds is not None:
            analysis.phases[name] = round(analysis.phases.get(name, 0.0) + phase.seconds, 6)
            analysis.phase_resolution[name] = max(analysis.phase_resolution.get(name, 0.0), resolution_s)


def stamp_resolution(log_name: str, episode: Episode) -> float:
    """How finely the lines of a phase were timed, in seconds: the runner's stamps (it polls the
    log every POLL_S), or the server's own: whole seconds where no moment of the episode has a
    fraction (MariaDB), microseconds otherwise (MySQL 8, RocksDB's LOG). A phase shorter than
    this is "below resolution", not zero."""
    if log_name == "error.log.stamped":
        return POLL_S
    moments = [m for p in episode.phases for m in (p.start, p.end) if m is not None]
    return 1.0 if moments and all(m.microsecond == 0 for m in moments) else 1e-6


def _episode_span_seconds(episode: Episode) -> float | None:
    """From the episode's first line to the last moment it logged: no phase can be longer."""
    moments = [episode.ready_at] + [m for p in episode.phases for m in (p.start, p.end)]
    moments = [m for m in moments if m is not None]
    if episode.started_at is None or not moments:
        return None
    return (max(moments) - min([episode.started_at, *moments])).total_seconds()


# How late a stamper's thread may wake beside a server and a workload on two cores: 6 ms was seen
# on a quiet run, where a lagging stamper is tens of milliseconds behind.
STAMP_SLACK_S = 0.025


def _ready_by_the_first_query(analysis: RunAnalysis, times: dict, resolution: float) -> None:
    """The server was ready by the time it answered its first query. A "ready for connections"
    stamped later was stamped late: within the stamps' resolution (the runner stamps what it reads
    every POLL_S) and a thread's wake-up (STAMP_SLACK_S), as stamps are; beyond it, because the
    stamper lagged the server on a busy host, which the run then says. Either way start to ready
    is start to first query."""
    metrics = analysis.metrics
    ready = metrics.get("ready_seconds")
    answered = _seconds(times, "recovery_spawned", "recovery_first_query")
    if ready is None or answered is None or ready <= answered:
        return
    metrics["ready_seconds"] = answered
    if ready - answered <= resolution + STAMP_SLACK_S:
        return
    analysis.warnings.append(
        f"the error log's 'ready for connections' was stamped {ready - answered:.3f} s after the first "
        f"query was answered: its stamps lagged the server (a busy host?), so start to ready is "
        f"taken as start to first query ({answered:.3f} s), and the log's phases may read long"
    )


def impossible_values(metrics: dict, crash: Episode | None, same_clock: bool) -> list[str]:
    """Why a run's values cannot be true, if they cannot: negative durations, a recovery longer
    than the time to ready or to the first query measured on the same clock, or longer than the
    episode's own span (lines of unrelated starts read as one)."""
    reasons = []
    for name in (
        "recovery_seconds",
        "rollback_seconds",
        "ready_seconds",
        "downtime_seconds",
        "clean_start_seconds",
    ):
        if metrics.get(name) is not None and metrics[name] < 0:
            reasons.append(f"{name} is negative ({metrics[name]:.3f} s)")
    recovery = metrics.get("recovery_seconds")
    if recovery is None or recovery < 0:
        return reasons
    if same_clock:
        for name, what in (("ready_seconds", "the time to ready"), ("downtime_seconds", "the downtime")):
            other = metrics.get(name)
            if other is not None and other >= 0 and recovery > other + CLOCK_MARGIN_S:
                reasons.append(f"recovery ({recovery:.3f} s) is longer than {what} ({other:.3f} s)")
    span = _episode_span_seconds(crash) if crash is not None else None
    if span is not None and recovery > span + CLOCK_MARGIN_S:
        reasons.append(
            f"recovery ({recovery:.3f} s) is longer than its server start's own span in the log "
            f"({span:.3f} s): lines of unrelated starts read as one?"
        )
    return reasons


def _own_log_metrics(result: dict, analysis: RunAnalysis, log_name: str) -> None:
    """An engine whose recovery is in a log of its own (MyRocks: RocksDB's WAL replay in its
    LOG): its recovery time is that log's, and its 'redo' the WAL files that recovery read."""
    crash = _crash_episode(analysis.parsed.get(log_name), result.get("crash_index", 0))
    metrics = analysis.metrics
    for key in ("checkpoint_lsn", "crash_lsn", "pages_to_recover"):
        metrics.pop(key, None)
    metrics["redo_bytes"] = None
    if crash is None:
        analysis.warnings.append(f"{log_name}: no WAL recovery found")
        metrics["recovery_seconds"] = None
        return
    metrics["recovery_seconds"] = crash.recovery_seconds
    # the WAL replay, beside InnoDB's own recovery at the same start
    _keep_phases(analysis, crash, stamp_resolution(log_name, crash))
    sizes = result.get("wal_bytes_at_crash", {})
    if sizes:
        metrics["redo_bytes"] = sum(sizes.get(str(wal), 0) for wal in crash.wal_files)


def _workload_metrics(analysis: RunAnalysis, workload: str | None) -> None:
    status = analysis.parsed.get("innodb_status_at_crash.txt")
    if status is not None and status.log is not None:
        analysis.metrics["checkpoint_age_bytes"] = status.log.checkpoint_age
    report = analysis.parsed.get("sysbench_report.txt")
    if report is None or report.sysbench is None:
        return
    # An import whose workload is not known follows docs/design.md's convention of one row.
    inserts = INSERTS_PER_TRANSACTION.get(workload, 1)
    if report.sysbench.tps is not None:
        analysis.metrics["achieved_insert_rate"] = round(report.sysbench.tps * inserts, 3)
    if report.sysbench.transactions is not None:
        analysis.metrics["rows_inserted"] = report.sysbench.transactions * inserts
    analysis.metrics["workload_tps"] = report.sysbench.tps
    analysis.metrics["workload_qps"] = report.sysbench.qps
    latency = report.sysbench.latency_ms
    analysis.metrics["latency_p95_ms"] = latency.get("p95", latency.get("p95_of_intervals"))
