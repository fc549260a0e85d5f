"""What a run's own files give reason to doubt, said as warnings on the run: redo flushed before the
crash that recovery did not replay, an insert rate not reached, a checkpoint that moved while the
method held it back. No Django. Each takes the run's analysis so far (bundle.RunAnalysis) and
adds to its warnings."""

from experiments.metrics import moved_beyond_a_record
from experiments.vocabulary import RATE_REACHED_SHARE


def cross_check_crash_lsn(analysis) -> None:
    """The status snapshot taken just before the kill must agree with what recovery found: redo
    that was flushed to the log ("Log flushed up to") must have been replayed. (Redo still in the
    log buffer at the kill, such as purge's, is lost by design and proves nothing.)"""
    status = analysis.parsed.get("innodb_status_at_crash.txt")
    crash_lsn = analysis.metrics.get("crash_lsn")
    if status is None or status.log is None or crash_lsn is None:
        return
    durable = status.log.flushed_lsn
    if durable is not None and crash_lsn < durable and not analysis.xa_prepared:
        # (With the binary log on, commits need not reach InnoDB's log: the binlog has them and
        # XA recovery commits the prepared transactions, so a shorter log is expected there.)
        analysis.warnings.append(
            f"recovery ended at LSN {crash_lsn}, before the LSN {durable} flushed to the log just "
            "before the crash: committed work may be missing"
        )


def rate_reached(analysis, asked: int | None) -> None:
    """A run that did not reach the insert rate asked for did not do the same work as its
    neighbours at that rate: it says so (the summary's cells say it too)."""
    reached = analysis.metrics.get("achieved_insert_rate")
    if asked and reached is not None and reached < RATE_REACHED_SHARE * asked:
        analysis.warnings.append(
            f"insert rate not reached: {reached:,.0f} of the {asked:,} rows/s asked for "
            f"(below {RATE_REACHED_SHARE:.0%}); this host could not sustain it with these settings"
        )


def checkpoint_moved(analysis, flushing: str | None) -> None:
    """How far the checkpoint moved during the workload, kept as `checkpoint_moved_bytes`
    whatever the flushing (what the run did, which its pages say: held back or not). The method
    holds it back; where it moved all the same, the redo recovery replayed is less than the redo
    the workload wrote, and the run says so. With natural flushing a checkpoint moving is what
    production does: no warning."""
    before = analysis.parsed.get("innodb_status_before_run.txt")
    at_crash = analysis.parsed.get("innodb_status_at_crash.txt")
    if before is None or at_crash is None or before.log is None or at_crash.log is None:
        return
    start, end = before.log.checkpoint_lsn, at_crash.log.checkpoint_lsn
    if not (start and end):
        return
    analysis.metrics["checkpoint_moved_bytes"] = max(0, end - start)
    written = analysis.metrics.get("log_bytes_written")
    if flushing != "natural" and moved_beyond_a_record(end - start, written):
        replayed = analysis.metrics.get("redo_bytes")
        sizes = f" ({replayed:,} of {written:,} bytes)" if written and replayed else ""
        analysis.warnings.append(
            f"a checkpoint moved during the workload (LSN {start} to {end}): the redo replayed is "
            f"less than the redo written{sizes}; a larger redo log or buffer pool holds it back"
        )
