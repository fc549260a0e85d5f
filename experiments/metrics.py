"""The metric names of docs/design.md, shared by the models, the API, exports and charts, and
each one's unit."""

from recovery_lab_cli.units import MB_PER_MIB, binary_bytes

INTEGER_METRICS = (
    "checkpoint_lsn",
    "crash_lsn",
    "redo_bytes",
    "pages_to_recover",
    "redo_records_applied",
    "trx_rolled_back",
    "rows_undone",
    "pages_written",
    "log_bytes_written",
    "data_bytes_written",
    "checkpoint_age_bytes",
    "checkpoint_moved_bytes",
    "rows_inserted",
    "acknowledged_commits",
    "lost_commits",
    "recovery_disk_read_bytes",
    "recovery_batches",
)
FLOAT_METRICS = (
    "recovery_seconds",
    "rollback_seconds",
    "ready_seconds",
    "downtime_seconds",
    "clean_start_seconds",
    "redo_apply_mb_per_s",
    "workload_tps",
    "workload_qps",
    "latency_p95_ms",
    "achieved_insert_rate",
    "warmup_seconds",
    "recovery_cpu_seconds",
    "recovery_busiest_cpu_share",
    "recovery_core_wait_share",
)
METRIC_NAMES = (*INTEGER_METRICS, *FLOAT_METRICS, "verified")
# What the workload measured: a run restarted from another's crash image (crash.one_crash) ran
# none, and leaves them to the run that made the crash.
WORKLOAD_METRICS = (
    "pages_written",
    "log_bytes_written",
    "data_bytes_written",
    "rows_inserted",
    "workload_tps",
    "workload_qps",
    "latency_p95_ms",
    "achieved_insert_rate",
)

LABELS = {
    "checkpoint_lsn": "checkpoint LSN",
    "crash_lsn": "crash LSN",
    "redo_bytes": "redo to replay (bytes)",
    "pages_to_recover": "pages to recover",
    "redo_records_applied": "redo records applied",
    "trx_rolled_back": "transactions rolled back",
    "rows_undone": "rows undone",
    "recovery_seconds": "crash recovery (s)",
    "rollback_seconds": "background rollback (s)",
    "ready_seconds": "start to ready (s)",
    "downtime_seconds": "kill to first query (s)",
    "clean_start_seconds": "clean start (s)",
    "redo_apply_mb_per_s": "redo apply (MB/s of 10⁶ bytes)",  # the API's decimal unit; tables show MiB/s
    "workload_tps": "workload TPS",
    "workload_qps": "workload QPS",
    "latency_p95_ms": "latency p95 (ms)",
    "pages_written": "pages written",
    "log_bytes_written": "log bytes written",
    "data_bytes_written": "data bytes written",
    "verified": "verified",
    "checkpoint_age_bytes": "checkpoint age at the crash (bytes)",
    "checkpoint_moved_bytes": "how far the checkpoint moved during the workload (bytes)",
    "achieved_insert_rate": "achieved insert rate (rows/s)",
    "rows_inserted": "rows inserted by the workload",
    "warmup_seconds": "back to 90% throughput (s)",
    "acknowledged_commits": "commits acknowledged before the crash",
    "lost_commits": "acknowledged commits lost",
    "recovery_cpu_seconds": "recovery's CPU time, all threads (s)",
    "recovery_busiest_cpu_share": "recovery's busiest thread (share of one core)",
    "recovery_core_wait_share": "recovery's busiest thread waiting for a core (share of the recovery)",
    "recovery_disk_read_bytes": "recovery's reads from the disk (bytes)",
    "recovery_batches": "batches the redo was applied in",
}
NUMERIC_METRICS = (*INTEGER_METRICS, *FLOAT_METRICS)

# Axis formatting: byte counts in binary units ("32 MiB", charts/layout.py), durations in seconds.
# The recovery phases a Run keeps in `phases` (seconds each; ingest/bundle.py names them), as
# /explore/ charts them: seed 003's binlog phase against the binary log files held at the kill.
RUN_PHASES = {
    "redo_scan": "redo scan",
    "redo_apply": "redo apply",
    "data_directory_sync": "data directory fsync",
    "wal_replay": "WAL replay",
    "recovery_checkpoint": "end-of-recovery checkpoint",
    "rollback": "rollback (background)",
    "binlog_recovery": "binlog / XA recovery",
    "buffer_pool_load": "buffer pool load",
}
PHASE_AXES = {f"phase_{name}_seconds": name for name in RUN_PHASES}
LABELS.update({axis: f"phase: {RUN_PHASES[name]} (s)" for axis, name in PHASE_AXES.items()})
UNITS = {name: "B" for name in NUMERIC_METRICS if name.endswith("_bytes") or name.endswith("_written")}
UNITS.update({name: "s" for name in (*NUMERIC_METRICS, *PHASE_AXES) if name.endswith("_seconds")})
UNITS["pages_written"] = ""

# Each metric's unit, for every value the product prints (metric_text): one table, so a byte count
# is never printed in seconds (compare had printed "reads from the disk 71,361,000.000 s").
COUNT, SECONDS, BYTES, SHARE = "count", "s", "bytes", "share"
METRIC_UNITS = {
    **{name: COUNT for name in INTEGER_METRICS},
    **{name: BYTES for name in INTEGER_METRICS if name.endswith("_bytes") or name.endswith("_bytes_written")},
    **{name: SECONDS for name in FLOAT_METRICS if name.endswith("_seconds")},
    # derived by the analysis (experiments/analysis/cells.py, compare.py)
    "replay_seconds": SECONDS,
    "startup_rest_seconds": SECONDS,
    "recovery_seconds_per_gib_redo": "s/GiB",
    "recovery_seconds_per_1000_rows": "s per 1000 rows",
    "redo_apply_mb_per_s": "MiB/s",  # stored in MB/s (the API's unit), printed in MiB/s
    "workload_tps": "TPS",
    "workload_qps": "QPS",
    "latency_p95_ms": "ms",
    "achieved_insert_rate": "rows/s",
    "recovery_busiest_cpu_share": SHARE,
    "recovery_core_wait_share": SHARE,
}


def metric_text(metric: str, value: float | None) -> str:
    """A metric's value in its own unit: '1.234 s', '68.1 MiB', '42 %', '1,980 TPS', '12,345'.
    A metric with no unit in METRIC_UNITS is an error, not a value printed in seconds."""
    if value is None:
        return "-"
    unit = METRIC_UNITS[metric]
    if unit == SECONDS:
        return f"{value:,.3f} s"
    if unit == BYTES:
        return binary_bytes(value)
    if unit == COUNT:
        return f"{value:,.0f}"
    if unit == SHARE:
        return f"{value:.0%}"
    if unit == "MiB/s":
        return f"{value * MB_PER_MIB:,.1f} MiB/s"
    if unit in ("TPS", "QPS", "rows/s"):
        return f"{value:,.0f} {unit}"
    if unit == "ms":
        return f"{value:,.1f} ms"
    return f"{value:,.4f} {unit}" if abs(value) < 100 else f"{value:,.1f} {unit}"


def moved_beyond_a_record(moved: int | None, written: int | None) -> bool:
    """Whether a checkpoint's move is a flush: a few bytes are the checkpoint record a server
    writes after starting (64 KiB, or 1% of the log written, at most)."""
    return moved is not None and moved > max(64 << 10, 0.01 * (written or 0))


def within_its_range(metric: str, interval):
    """An interval as a value can lie: a share's never passes 0% or 100% (an interval of the
    typical value on the log scale had printed "79% [57%-102%]")."""
    if not interval or METRIC_UNITS.get(metric) != SHARE:
        return interval
    low, high = interval
    return (max(0.0, low), min(1.0, high))
