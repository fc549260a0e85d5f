"""A parsed file as text a DBA can paste into a ticket."""

from experiments.parsers import ParsedFile


def _fmt(value, unit: str = "") -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}{unit}"
    return f"{value:,}{unit}"


def summarize(parsed: ParsedFile) -> str:
    head = f"{parsed.file}: {parsed.kind}"
    if parsed.flavor or parsed.server_version:
        head += f" ({parsed.flavor or '?'} {parsed.server_version or ''})".rstrip()
    lines = [head]
    for number, episode in enumerate(parsed.episodes, start=1):
        kind = "CRASH RECOVERY" if episode.crash_recovery else "clean start"
        if episode.engine and episode.crash_recovery:
            kind += f" ({episode.engine})"
        outcome = (
            f"FAILED before ready ({episode.failure})"
            if episode.failed
            else f"ready after {_fmt(episode.ready_seconds, ' s')}"
        )
        lines.append(f"  start {number} at {episode.started_at or '?'}: {kind}, {outcome}")
        if episode.crash_recovery:
            lines.append(
                f"    checkpoint LSN {_fmt(episode.checkpoint_lsn)} -> crash LSN "
                f"{_fmt(episode.crash_lsn)}: redo {_fmt(episode.redo_bytes, ' bytes')}, "
                f"pages to recover {_fmt(episode.pages_to_recover)}, "
                f"records applied {_fmt(episode.redo_records_applied)}, "
                f"rolled back {_fmt(episode.trx_rolled_back)} trx / {_fmt(episode.rows_undone)} rows"
            )
            if episode.start_to_last_batch_seconds is not None:
                lines.append(
                    "    'Starting crash recovery' to the last 'Apply batch completed!': "
                    f"{_fmt(episode.start_to_last_batch_seconds, ' s')}"
                )
            if episode.wal_files:
                lines.append(f"    WAL files replayed: {', '.join(map(str, episode.wal_files))}")
        for phase in episode.phases:
            lines.append(f"    {phase.name:<24} {_fmt(phase.seconds, ' s')}")
    if parsed.log is not None:
        log = parsed.log
        lines.append(
            f"  LSN {_fmt(log.lsn)}, checkpoint {_fmt(log.checkpoint_lsn)}, "
            f"checkpoint age {_fmt(log.checkpoint_age, ' bytes')}"
        )
    if parsed.rocksdb is not None:
        status = parsed.rocksdb
        lines.append(
            f"  WAL {_fmt(status.wal_bytes, ' bytes')} written, "
            f"memtables {_fmt(status.memtable_bytes, ' bytes')} "
            f"({_fmt(status.memtable_unflushed_bytes, ' bytes')} unflushed)"
        )
    if parsed.sysbench is not None:
        report = parsed.sysbench
        lines.append(
            f"  {_fmt(report.transactions)} transactions, {_fmt(report.tps)} tps, "
            f"{_fmt(report.qps)} qps, p95 {report.latency_ms.get('p95', '-')} ms"
        )
    lines += [f"  warning: {w}" for w in parsed.warnings]
    return "\n".join(lines)
