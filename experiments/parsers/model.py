"""What the parsers return: plain dataclasses that serialize to parsed_file.schema.json."""

from dataclasses import asdict, dataclass, field
from datetime import datetime


def iso(moment: datetime | None) -> str | None:
    return moment.isoformat(timespec="microseconds") if moment else None


def seconds_between(start: datetime | None, end: datetime | None) -> float | None:
    if start is None or end is None:
        return None
    return round((end - start).total_seconds(), 6)


@dataclass
class Phase:
    """A step of a start, from its first line to its last. A step the server takes in several
    goes (MySQL scans, applies a batch, scans on) has gaps: its seconds are its goes' only."""

    name: str
    start: datetime | None = None
    end: datetime | None = None
    gaps: list[tuple[datetime, datetime]] = field(default_factory=list)

    @property
    def seconds(self) -> float | None:
        whole = seconds_between(self.start, self.end)
        if whole is None:
            return None
        return round(whole - sum((to - since).total_seconds() for since, to in self.gaps), 6)

    def parts(self) -> list[tuple[datetime | None, datetime | None]]:
        """Each go of the step, (start, end), in order."""
        edges = [self.start] + [m for gap in self.gaps for m in gap] + [self.end]
        return list(zip(edges[::2], edges[1::2], strict=True))

    def resume(self, moment: datetime | None) -> None:
        """Another go of a step that ended: the time since its end is no part of it."""
        if self.end is not None and moment is not None and moment >= self.end:
            if moment > self.end:
                self.gaps.append((self.end, moment))
            self.end = None

    def add(self, start: datetime | None, end: datetime | None) -> None:
        """A closed go from start to end, after the goes it has."""
        if self.end is None or start is None or end is None or start < self.end:
            return
        self.resume(start)
        self.end = end

    def to_dict(self) -> dict:
        found = {"name": self.name, "start": iso(self.start), "end": iso(self.end), "seconds": self.seconds}
        if self.gaps:
            found["parts"] = [[iso(start), iso(end)] for start, end in self.parts()]
        return found


@dataclass
class Batch:
    """One batch of a recovery that applies its redo in several: where it began, the LSN its
    redo was read up to (MariaDB; None for the final batch, which reads to the end), and the
    pages it applied to as the server logged them (MySQL's "N redo log records" counts pages; only
    TokuFT counts records)."""

    start: datetime | None
    lsn: int | None = None
    pages: int | None = None
    records: int | None = None

    def to_dict(self) -> dict:
        return {"start": iso(self.start), "lsn": self.lsn, "pages": self.pages, "records": self.records}


@dataclass
class Progress:
    """A progress line of a recovery: the redo read up to an LSN, or the pages left to recover."""

    at: datetime | None
    lsn: int | None = None
    pages: int | None = None

    def to_dict(self) -> dict:
        return {"at": iso(self.at), "lsn": self.lsn, "pages": self.pages}


# Progress lines kept per start (a recovery of 8 GB logs thousands).
MAX_PROGRESS = 2000

# Phases a server finishes before it is ready for connections.
BEFORE_READY = ("crash_recovery", "redo_scan", "redo_apply", "innodb_init", "tokudb_recovery")


@dataclass(eq=False)  # one start is itself only: compared, hashed and found in lists by identity
class Episode:
    """One server start found in a log, with what its crash recovery reported."""

    started_at: datetime | None = None
    crash_recovery: bool = False
    engine: str | None = None
    checkpoint_lsn: int | None = None
    crash_lsn: int | None = None
    pages_to_recover: int | None = None
    redo_records_applied: int | None = None
    trx_rolled_back: int | None = None
    rows_undone: int | None = None
    ready_at: datetime | None = None
    # A clean stop was logged ("Shutdown complete", "MySQL Server - end"): the next start is no
    # crash restart. One ready and never stopped is one (MySQL 8+ at log_error_verbosity 2 logs no
    # recovery line at all).
    shut_down: bool = False
    # This start came after one that was ready and logged no stop (killed, or the power lost).
    after_unclean_stop: bool = False
    wal_files: list[int] = field(default_factory=list)
    phases: list[Phase] = field(default_factory=list)
    # A recovery whose redo does not fit its buffer pool at once applies it in batches (MariaDB:
    # "Multi-batch recovery needed at LSN"; MySQL: "Applying a batch of N redo log records", N pages).
    batches: list[Batch] = field(default_factory=list)
    multi_batch_lsn: int | None = None
    # The seed's own interval (MySQL: "Starting crash recovery" to the last "Apply batch
    # completed!"), beside the phases the product times from the scan's first line.
    crash_started_at: datetime | None = None
    last_batch_applied_at: datetime | None = None
    progress: list[Progress] = field(default_factory=list)
    _progress_seen: int = 0
    _progress_stride: int = 1
    _progress_tail: Progress | None = None
    # The last timestamp seen in this start (not serialized): no duration may outlast it.
    last_seen: datetime | None = None
    # The start failed before it was ready (an assertion, a signal, an abort): why, in the
    # server's words.
    failed: bool = False
    failure: str | None = None
    # Never ready, writing a buffer pool's cry for free blocks over and over: a stalled recovery
    # (how many such lines, and the first, in the server's words).
    stalled: bool = False
    stall_lines: int = 0
    stall_line: str | None = None
    # Not serialized:
    # Transactions recovered in the XA prepared state, for the binlog to resolve.
    xa_prepared: int = 0
    # A line of this start was read (a start line, InnoDB starting, a recovery...): an episode
    # that saw only the shutdown tail of an earlier process is none.
    began: bool = False
    start_logged: bool = False  # the server's own start line is in the log
    # What told of the crash when InnoDB's own recovery notes did not, in words.
    crash_evidence: str | None = None
    # (moment, beginning of the line) of every line that changed this episode: a tail pasted
    # twice is found as an episode whose lines all belong to another.
    signature: set = field(default_factory=set)
    # Where the log's time broke before this episode: the warning, and the episode before it.
    break_note: str | None = None
    broke_from: "Episode | None" = None
    # Found by "The log sequence number N ... does not match ..."; its redo end taken from the LSN
    # InnoDB started at.
    lsn_mismatch: bool = False
    crash_lsn_from_start: bool = False
    # The server said there was nothing to replay (PostgreSQL's "redo is not required"): its
    # redo is a measured zero, not an unknown.
    nothing_to_replay: bool = False

    def drop_impossible(self) -> list[str]:
        """Durations that cannot be true (negative, or outside this start's own span) and LSNs
        that run backwards are emptied, never reported; returns what was dropped, in words."""
        dropped = []
        first, last = self.started_at, self.last_seen
        for phase in self.phases:
            seconds = phase.seconds
            if seconds is None:
                continue
            outside = (first is not None and phase.start < first) or (last is not None and phase.end > last)
            ready = self.ready_at
            if phase.name in BEFORE_READY and ready is not None and (phase.end - ready).total_seconds() > 1:
                outside = True  # recovery that ends after its server was ready is not this start's
            if seconds < 0 or outside:
                dropped.append(
                    f"{phase.name} of the start at {iso(first)} would last {seconds:,.3f} s, outside "
                    "that start's own lines: left empty"
                )
                phase.end = None
        if self.ready_at is not None and first is not None and self.ready_at < first:
            dropped.append(f"the start at {iso(first)} would be ready before it began: left empty")
            self.ready_at = None
        if (
            self.checkpoint_lsn is not None
            and self.crash_lsn is not None
            and self.crash_lsn < self.checkpoint_lsn
        ):
            dropped.append(
                f"the start at {iso(first)} ends its redo at LSN {self.crash_lsn}, before its checkpoint "
                f"{self.checkpoint_lsn}: the redo to replay is left empty"
            )
            self.crash_lsn = None
        return dropped

    def add_progress(self, line: Progress) -> None:
        """A progress line. A recovery of any length keeps at most MAX_PROGRESS of them, evenly
        spaced (past it every other one kept goes and only every 2nd, 4th, ... new one is kept),
        and always its latest (memory stays flat)."""
        self._progress_seen += 1
        if (self._progress_seen - 1) % self._progress_stride:
            self._progress_tail = line
            return
        self._progress_tail = None
        if len(self.progress) >= MAX_PROGRESS:
            del self.progress[1::2]
            self._progress_stride *= 2
        self.progress.append(line)

    def progress_lines(self) -> list[Progress]:
        """The progress lines kept, the latest last."""
        return self.progress + ([self._progress_tail] if self._progress_tail else [])

    def phase(self, name: str) -> Phase | None:
        return next((p for p in self.phases if p.name == name), None)

    def open_phase(self, name: str, moment: datetime | None) -> Phase:
        existing = self.phase(name)
        if existing:
            return existing
        created = Phase(name, start=moment)
        self.phases.append(created)
        return created

    def close_phase(self, name: str, moment: datetime | None) -> None:
        phase = self.phase(name)
        if phase and phase.end is None:
            phase.end = moment

    @property
    def redo_bytes(self) -> int | None:
        if self.nothing_to_replay:
            return 0
        if self.checkpoint_lsn is None or self.crash_lsn is None or self.engine == "tokudb":
            return None  # TokuFT's LSNs number log entries: they are no byte count
        return max(self.crash_lsn - self.checkpoint_lsn, 0)

    @property
    def recovery_seconds(self) -> float | None:
        phase = self.phase("crash_recovery")
        return phase.seconds if phase else None

    @property
    def rollback_seconds(self) -> float | None:
        phase = self.phase("background_rollback")
        return phase.seconds if phase else None

    @property
    def ready_seconds(self) -> float | None:
        return seconds_between(self.started_at, self.ready_at)

    @property
    def start_to_last_batch_seconds(self) -> float | None:
        """From "Starting crash recovery" to the last "Apply batch completed!" (seed 001's timing)."""
        return seconds_between(self.crash_started_at, self.last_batch_applied_at)

    def to_dict(self) -> dict:
        return {
            "started_at": iso(self.started_at),
            "crash_recovery": self.crash_recovery,
            "engine": self.engine,
            "checkpoint_lsn": self.checkpoint_lsn,
            "crash_lsn": self.crash_lsn,
            "redo_bytes": self.redo_bytes,
            "pages_to_recover": self.pages_to_recover,
            "redo_records_applied": self.redo_records_applied,
            "start_to_last_batch_seconds": self.start_to_last_batch_seconds,
            "trx_rolled_back": self.trx_rolled_back,
            "rows_undone": self.rows_undone,
            "recovery_seconds": self.recovery_seconds,
            "rollback_seconds": self.rollback_seconds,
            "ready_at": iso(self.ready_at),
            "ready_seconds": self.ready_seconds,
            "failed": self.failed,
            "failure": self.failure,
            "stalled": self.stalled,
            "stall_lines": self.stall_lines,
            "wal_files": list(self.wal_files),
            "phases": [p.to_dict() for p in self.phases],
            "multi_batch_lsn": self.multi_batch_lsn,
            "batches": [b.to_dict() for b in self.batches],
            "progress": [p.to_dict() for p in self.progress_lines()],
        }


@dataclass
class LogSection:
    """The LOG section of SHOW ENGINE INNODB STATUS."""

    lsn: int | None = None
    flushed_lsn: int | None = None
    pages_flushed_lsn: int | None = None
    checkpoint_lsn: int | None = None
    checkpoint_age: int | None = None
    log_capacity: int | None = None


@dataclass
class RocksdbStatus:
    """SHOW ENGINE ROCKSDB STATUS: the figures that bear on WAL replay."""

    wal_bytes: int | None = None
    wal_syncs: int | None = None
    bytes_written: int | None = None
    keys_written: int | None = None
    memtable_bytes: int | None = None
    memtable_unflushed_bytes: int | None = None
    uptime_seconds: float | None = None
    stall_percent: float | None = None


@dataclass
class SysbenchReport:
    transactions: int | None = None
    tps: float | None = None
    qps: float | None = None
    total_time_s: float | None = None
    latency_ms: dict = field(default_factory=dict)
    intervals: list[dict] = field(default_factory=list)


@dataclass
class ParsedFile:
    file: str
    kind: str = "unknown"
    flavor: str | None = None
    server_version: str | None = None
    warnings: list[str] = field(default_factory=list)
    episodes: list[Episode] = field(default_factory=list)
    log: LogSection | None = None
    sysbench: SysbenchReport | None = None
    rocksdb: RocksdbStatus | None = None
    # Set when a parser raised: what it found before is kept, but nothing after that point was
    # read, so a run built on this file is suspect (never quietly "done" with missing metrics).
    parser_error: str | None = None

    def warn(self, message: str) -> None:
        # A pathological file must not grow the warnings list without bound.
        if len(self.warnings) < 50:
            self.warnings.append(message)
        elif len(self.warnings) == 50:
            self.warnings.append("further warnings suppressed")

    @property
    def crash_episodes(self) -> list[Episode]:
        return [e for e in self.episodes if e.crash_recovery]

    def to_dict(self) -> dict:
        data: dict = {
            "file": self.file,
            "kind": self.kind,
            "flavor": self.flavor,
            "server_version": self.server_version,
            "warnings": list(self.warnings),
        }
        if self.parser_error is not None:
            data["parser_error"] = self.parser_error
        if self.kind in ("error_log", "rocksdb_log"):
            data["episodes"] = [e.to_dict() for e in self.episodes]
        if self.log is not None:
            data["log"] = asdict(self.log)
        if self.rocksdb is not None:
            data["rocksdb"] = asdict(self.rocksdb)
        if self.sysbench is not None:
            report = asdict(self.sysbench)
            report.pop("intervals")
            data["sysbench"] = report
        return data
