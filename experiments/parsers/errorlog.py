"""Server error logs (MySQL 5.0-9.x, Percona Server, MariaDB 5.5-11.x): one episode per start.

A streaming state machine: each line is matched against a few patterns and updates the current
episode. The traps are handled where they bite:

- "ready for connections" of the X Plugin and WSREP is not the server's;
- on 5.5-5.7 the redo scan ("Log scan progressed past the checkpoint", "Doing recovery: scanned
  up to") is logged before "Starting crash recovery": recovery starts with the scan; MySQL 8.0
  logs "Starting to parse redo log" on every start, so it only dates a recovery found later;
- a clean MySQL 8.0.30+ start logs "Applying a batch of 0 redo log records": not a recovery;
- MariaDB 10.8+ logs no "Apply batch completed": the redo apply ends with the first line logged
  after its final batch started;
- at default verbosity MySQL 8.0+ logs no InnoDB notes: the recovery is then only known from the
  rollback progress, and bounded by "InnoDB initialization has started/ended" (with a warning);
- TokuFT writes its own lines with ctime stamps; its LSNs count log entries, not bytes.

`TRIGGERS` lists literal words at least one of which is in every line a pattern here can match:
the scanner (scan.py) feeds only such lines of a large file. A pattern added here needs its word.
"""

import re
from collections.abc import Iterable

from .lines import Line
from .model import Episode, ParsedFile

TRIGGERS = (
    "Starting MariaDB", "starting as process", "MySQL Server - start", "Version: '",
    "ready for connections", "Shutdown complete", "hutdown completed",
    "memory heap", "Mutexes and rw_locks", "Compressed tables", "Initializing buffer pool",
    "initialization has",
    "crash recovery", "shut down normally", "shutdown normally", "recovery from log files",
    "past the checkpoint", "scanned up to", "Starting log scan", "log sequence number",
    "parse redo log", "latest found checkpoint",
    "End of log at", "Read redo log up to", "final batch", "To recover:",
    "apply batch", "Applying a batch", "Apply batch", "Progress in percent",
    "transaction(s)", "row operations", "background the rollback", "rollback of uncommitted",
    "ransactions completed",
    "Recovering after a crash", "recovery finished", "Loading buffer pool", "load completed",
    "] 100%", "InnoDB: Started", "TokuFT recovery", "Tokudb recovery", "Rolling back trx",
    "init function returned error", "] Aborting", "got signal", "got exception", "Fatal error",
    "XA prepared state",
)  # fmt: skip

_IB = r"(?:InnoDB:\s+|\[InnoDB\]\s+)"  # "InnoDB: msg" up to 5.7 and in MariaDB; "[InnoDB] msg" in 8.0
_LSN = r"([0-9]+)(?: ([0-9]+)\b)?"  # before 5.5 an LSN was two 32-bit words: "0 13674004"

_START_MARIADB = re.compile(r"Starting MariaDB (\S+)")
_START_MYSQLD = re.compile(r"\((?:mysqld|mariadbd) ([^)\s]+)[^)]*\) starting as process")
_START_MYSQL84 = re.compile(r"\[Server\] MySQL Server - start\.")
_VERSION = re.compile(r"(?:^|ready for connections\.? )Version: '([^']+)'(.*)")
_READY = re.compile(r"\S+: ready for connections")
_NOT_SERVER_READY = re.compile(r"X Plugin|WSREP|mysqlx", re.IGNORECASE)
_IMPLICIT_START = re.compile(
    _IB + r"(?:The InnoDB memory heap is disabled|Mutexes and rw_locks use"
    r"|Compressed tables use zlib|Initializing buffer pool)|\[InnoDB\] InnoDB initialization has started"
)
_SHUTDOWN_DONE = re.compile(r"\S+: Shutdown complete|Shutdown completed")

_INIT_START = re.compile(r"\[InnoDB\] InnoDB initialization has started")
_INIT_END = re.compile(r"\[InnoDB\] InnoDB initialization has ended")
_PARSE_REDO = re.compile(
    _IB + r"Starting to parse redo log at lsn = [0-9]+, whereas checkpoint_lsn = ([0-9]+)"
)
_LATEST_CHECKPOINT = re.compile(_IB + r"The latest found checkpoint is at lsn = ([0-9]+)")
_CRASH_START = re.compile(
    _IB + r"(?:Starting crash recovery(?: from checkpoint LSN=([0-9]+)(?:,[0-9]+)?)?"
    r"|Starting recovery from log files)"
)
_NOT_SHUT_DOWN = re.compile(_IB + r"Database was not shut ?down normally")
_CHECKPOINT_PASSED = re.compile(r"Log scan progressed past the checkpoint (?:lsn|LSN) " + _LSN)
_SCAN_FROM_CHECKPOINT = re.compile(r"Starting log scan based on checkpoint at")
_CHECKPOINT_CONTINUED = re.compile(r"^(?:InnoDB: )?log sequence number " + _LSN)
_SCANNED = re.compile(r"Doing recovery: scanned up to log sequence number " + _LSN)
_END_OF_LOG = re.compile(_IB + r"End of log at LSN=([0-9]+)")
_READ_UP_TO = re.compile(_IB + r"Read redo log up to LSN=([0-9]+)")
_FINAL_BATCH = re.compile(
    _IB + r"(?:Starting final batch to recover +([0-9]+) pages|To recover: ([0-9]+) pages)"
)
_APPLY_BATCH = re.compile(_IB + r"(?:Starting an apply batch|Applying a batch of ([0-9]+) redo log records)")
_APPLY_DONE = re.compile(_IB + r"Apply batch completed")
_PROGRESS = re.compile(_IB + r"Progress in percents?:")
_APPLY_PROGRESS = re.compile(
    _IB + r"(?:To recover: |Read redo log up to|Progress in percent|Applying a batch|Applied|[0-9]+%)"
    r"|^[0-9 ]+$"
)
_TRX_TO_ROLLBACK = re.compile(
    r"([0-9]+) (?:uncommitted )?transaction\(s\) which must be rolled back(?: or cleaned up)?"
    r"(?: in total ([0-9]+) row)?"
)
_XA_PREPARED = re.compile(_IB + r"Transaction [0-9]+ was in the XA prepared state")
_ROWS_TO_UNDO = re.compile(r"^(?:InnoDB: )?(?:in )?total ([0-9]+) row operations to undo")
_ROLLBACK_START = re.compile(
    _IB + r"(?:Starting in background the rollback|Starting rollback of uncommitted)"
)
_ROLLING_BACK = re.compile(_IB + r"Rolling back trx (?:with id|no) ")
_ROLLBACK_DONE = re.compile(_IB + r"Rollback of (?:non-prepared|uncommitted) transactions completed")
_INNODB_STARTED = re.compile(
    r"(?:" + _IB + r"|\d (?=Percona))(?:Percona XtraDB \(http://www\.percona\.com\) )?"
    r"(?:([0-9][\w.-]*) started|Started)\b"
    r"|InnoDB Plugin [0-9.]+ started|" + _IB + r"log sequence number [0-9]+; transaction id"
)
_STARTED_LSN = re.compile(r"log sequence number " + _LSN)


def _recovery_begins(text: str) -> bool:
    return any(
        pattern.search(text)
        for pattern in (
            _CRASH_START,
            _NOT_SHUT_DOWN,
            _CHECKPOINT_PASSED,
            _SCAN_FROM_CHECKPOINT,
            _PARSE_REDO,
            _SCANNED,
            _APPLY_BATCH,
            _FINAL_BATCH,
        )
    )


# Lines of one start-up more than this far apart, before the server is ready, are two excerpts
# (the longest recoveries print progress far more often); time running backwards by more than
# this tolerance is another excerpt too.
MAX_STARTUP_SILENCE_S = 2 * 3600
BACKWARDS_TOLERANCE_S = 1.0
_BINLOG_RECOVERY_START = re.compile(r"Recovering after a crash using|\] Starting XA crash recovery")
_BINLOG_RECOVERY_DONE = re.compile(
    r"Crash table recovery finished|Crash recovery finished|XA crash recovery finished"
)
_BP_LOAD_START = re.compile(_IB + r"Loading buffer pool\(s\) from")
_BP_LOAD_DONE = re.compile(_IB + r"Buffer pool\(s\) load completed")
_SERVER_FAILED = re.compile(
    r"Plugin '\w+' init function returned error|\[ERROR\] (?:\[MY-\d+\] \[Server\] )?Aborting"
    r"|got (?:signal [0-9]+|exception 0x[0-9a-f]+)|\[ERROR\] .*Fatal error"
)
_TOKU = re.compile(r"(?:TokuFT|Tokudb) recovery (.*)")
_TOKU_BACKWARD = re.compile(r"scanning backward from ([0-9]+)")
_TOKU_TURN = re.compile(r"turning around at begin checkpoint ([0-9]+)")
_TOKU_FORWARD = re.compile(r"starts scanning forward to ([0-9]+) from ([0-9]+) left ([0-9]+)")

_VERSION_RANK_SERVER = 2  # the server's own start and Version lines
_VERSION_RANK_ENGINE = 1  # "InnoDB: 5.7.20 started": MariaDB 10.2 prints its InnoDB's version


def _lsn(high: str, low: str | None) -> int:
    return (int(high) << 32) + int(low) if low is not None else int(high)


def flavor_of(version: str, context: str = "") -> str:
    text = f"{version} {context}".lower()
    if "mariadb" in text:
        return "mariadb"
    major = re.match(r"([0-9]+)\.", version)
    if major and int(major.group(1)) >= 10:  # MySQL went from 8.0 to 8.4 and 9.x; 10.x+ is MariaDB
        return "mariadb"
    if "percona" in text or re.search(r"-rel\d|^\d+\.\d+\.\d+-\d+(?:\.\d+)?$", version):
        return "percona"
    return "mysql"


class ErrorLogParser:
    """Feed lines in order; `finish()` returns the ParsedFile."""

    def __init__(self, parsed: ParsedFile):
        self.parsed = parsed
        self.parsed.kind = "error_log"
        self.episode: Episode | None = None
        self._version_rank = 0
        self._stamped_lines = 0
        self._last_moment = None
        self._reset_episode_state()

    def _reset_episode_state(self) -> None:
        self._apply_open = False
        # Set by "ready for connections" or "Shutdown complete": InnoDB lines after it belong to
        # a new start even without a start line (MySQL 5.5/5.6 print none).
        self._ends_episode = False
        # Nothing but noise seen since the episode began: a start line now does not begin
        # another (MySQL 8.4 logs two; mysqld_safe and entrypoint lines come before them).
        self._fresh_start: str | None = None
        # MySQL 8.0 "Starting to parse redo log": when the recovery began, if it is one.
        self._scan_started_at = None
        self._checkpoint_next = False
        self._innodb_up = False

    def _new_episode(self, line: Line, from_start_line: bool = False) -> Episode:
        if from_start_line and self._fresh_start and self.episode is not None:
            if self._fresh_start == "implicit":  # the process starts here, not at mysqld_safe
                self.episode.started_at = line.moment
                self._fresh_start = "start_line"
            return self.episode
        self.episode = Episode(started_at=line.moment)
        self.parsed.episodes.append(self.episode)
        self._reset_episode_state()
        self._fresh_start = "start_line" if from_start_line else "implicit"
        return self.episode

    def feed(self, line: Line) -> None:
        text = line.text
        if line.moment is not None:
            self._stamped_lines += 1
            if self._time_breaks(line.moment):
                # Two unrelated excerpts glued together: what follows is not this start's.
                self._new_episode(line)
            self._last_moment = line.moment
            if self.episode is not None:
                self.episode.last_seen = line.moment
        if match := (_START_MARIADB.search(text) or _START_MYSQLD.search(text)):
            self._set_version(match.group(1), text, _VERSION_RANK_SERVER)
            self._new_episode(line, from_start_line=True)
            return
        if _START_MYSQL84.search(text):
            self._new_episode(line, from_start_line=True)
            return
        if match := _VERSION.search(text):
            self._set_version(match.group(1), match.group(2), _VERSION_RANK_SERVER)
        if self._ends_episode and _IMPLICIT_START.search(text) or self._starts_again(text):
            self._new_episode(line)
        episode = self.episode or self._new_episode(line)
        if self._feed_recovery(episode, line):
            self._fresh_start = None

    def _time_breaks(self, moment) -> bool:
        """Time runs backwards, or jumps further than any start-up waits between two lines before
        the server is ready: the lines after the break are another excerpt's."""
        last, episode = self._last_moment, self.episode
        if last is None or episode is None or self._fresh_start is not None:
            # (nothing of this start read yet: a wrapper's line in local time, like mysqld_safe's)
            return False
        gap = (moment - last).total_seconds()
        backwards = gap < -BACKWARDS_TOLERANCE_S
        stalled = gap > MAX_STARTUP_SILENCE_S and episode.ready_at is None and not self._ends_episode
        if backwards or stalled:
            self.parsed.warn(
                f"the log's time {'runs backwards' if backwards else 'jumps'} from {last} to {moment} "
                "inside a start: read as two excerpts, and no duration spans the break"
            )
        return backwards or stalled

    def _starts_again(self, text: str) -> bool:
        """A once-per-start event seen twice: a start whose first lines are not in the log."""
        episode = self.episode
        if episode is None:
            return False
        return bool(
            (self._innodb_up and _INNODB_STARTED.search(text))
            # a recovery beginning after this start was ready is another start's
            or (episode.ready_at is not None and _recovery_begins(text))
            # a load asked for at run time (innodb_buffer_pool_load_now) comes after "ready"
            or (
                episode.ready_at is None and episode.phase("buffer_pool_load") and _BP_LOAD_START.search(text)
            )
        )

    def _feed_recovery(self, episode: Episode, line: Line) -> bool:
        """Update the episode from one line; False where the line meant nothing here."""
        text, moment = line.text, line.moment
        if self._apply_open and not _APPLY_PROGRESS.search(text):
            # MariaDB 10.8+ applies its final batch, then goes on: the next line ends the apply.
            self._apply_completed(episode, moment)
        if self._checkpoint_next:
            self._checkpoint_next = False
            if match := _CHECKPOINT_CONTINUED.search(text):
                episode.checkpoint_lsn = _lsn(*match.groups())
                return True
        return (
            self._feed_start_and_scan(episode, text, moment)
            or self._feed_apply_and_rollback(episode, text, moment)
            or self._feed_server(episode, text, moment)
            or self._feed_tokudb(episode, text, moment)
        )

    @staticmethod
    def _mark_crash(episode: Episode) -> None:
        """A crash is known (InnoDB's, unless another engine claimed it) but not yet its timing."""
        episode.crash_recovery = True
        episode.engine = episode.engine or "innodb"

    def _begin_crash_recovery(self, episode: Episode, moment) -> None:
        self._mark_crash(episode)
        start = self._scan_started_at or moment
        episode.open_phase("crash_recovery", start)
        if not episode.phase("redo_apply"):
            episode.open_phase("redo_scan", start)

    def _feed_start_and_scan(self, episode: Episode, text: str, moment) -> bool:
        if match := _PARSE_REDO.search(text):
            episode.checkpoint_lsn = int(match.group(1))
            self._scan_started_at = self._scan_started_at or moment
        elif match := _LATEST_CHECKPOINT.search(text):
            episode.checkpoint_lsn = int(match.group(1))
            self._scan_started_at = self._scan_started_at or moment
        elif match := _CRASH_START.search(text):
            self._begin_crash_recovery(episode, moment)
            if match.group(1):
                episode.checkpoint_lsn = int(match.group(1))
        elif _NOT_SHUT_DOWN.search(text):
            self._begin_crash_recovery(episode, moment)
        elif match := _CHECKPOINT_PASSED.search(text):
            # Printed where the scan finds redo past the checkpoint: a recovery is needed.
            self._begin_crash_recovery(episode, moment)
            if episode.checkpoint_lsn is None:  # 8.0 logs the exact "checkpoint_lsn =" before it
                episode.checkpoint_lsn = _lsn(*match.groups())
        elif _SCAN_FROM_CHECKPOINT.search(text):
            self._begin_crash_recovery(episode, moment)
            self._checkpoint_next = True
        elif match := _SCANNED.search(text):
            self._begin_crash_recovery(episode, moment)
            episode.crash_lsn = max(episode.crash_lsn or 0, _lsn(*match.groups()))
        elif match := _END_OF_LOG.search(text):
            if episode.crash_recovery:
                episode.crash_lsn = int(match.group(1))
                episode.close_phase("redo_scan", moment)
        elif match := _READ_UP_TO.search(text):
            if episode.crash_recovery:
                episode.crash_lsn = max(episode.crash_lsn or 0, int(match.group(1)))
        else:
            return False
        return True

    def _feed_apply_and_rollback(self, episode: Episode, text: str, moment) -> bool:
        if match := _FINAL_BATCH.search(text):
            if episode.crash_recovery:
                pages = int(match.group(1) or match.group(2))
                if episode.pages_to_recover is None:
                    episode.pages_to_recover = pages
                self._start_apply(episode, moment)
                self._apply_open = True
        elif match := _APPLY_BATCH.search(text):
            records = int(match.group(1)) if match.group(1) else None
            if records != 0:  # 5.x "Starting an apply batch" is only ever a recovery
                self._begin_crash_recovery(episode, moment)
            if records:
                episode.redo_records_applied = (episode.redo_records_applied or 0) + records
            if episode.crash_recovery and records != 0:
                self._start_apply(episode, moment)
        elif _APPLY_DONE.search(text):
            if episode.phase("redo_apply"):
                self._apply_completed(episode, moment)
        elif _PROGRESS.search(text):
            if self._innodb_up:
                # After InnoDB is up, the percentages are the rollback of recovered transactions
                # (MySQL 8.0 prints them even at default verbosity): there was a crash.
                self._mark_crash(episode)
        elif match := _TRX_TO_ROLLBACK.search(text):
            episode.trx_rolled_back = int(match.group(1))
            if match.group(2):
                episode.rows_undone = int(match.group(2))
        elif match := _ROWS_TO_UNDO.search(text):
            episode.rows_undone = int(match.group(1))
        elif _XA_PREPARED.search(text):
            episode.xa_prepared += 1  # the binlog will commit or roll it back
        elif _ROLLING_BACK.search(text):
            # Only transactions recovered after a crash are rolled back at startup.
            self._mark_crash(episode)
        elif _ROLLBACK_START.search(text):
            episode.open_phase("background_rollback", moment)
        elif _ROLLBACK_DONE.search(text):
            episode.close_phase("background_rollback", moment)
        else:
            return False
        return True

    def _feed_server(self, episode: Episode, text: str, moment) -> bool:
        if match := _INNODB_STARTED.search(text):
            self._innodb_started(episode, match, text, moment)
        elif _INIT_START.search(text):
            episode.open_phase("innodb_init", moment)
        elif _INIT_END.search(text):
            episode.close_phase("innodb_init", moment)
            self._innodb_up = True
        elif _BINLOG_RECOVERY_START.search(text):
            if "Recovering after a crash" in text:  # the binlog or tc.log was not closed
                self._mark_crash(episode)
            episode.open_phase("binlog_recovery", moment)
        elif _BINLOG_RECOVERY_DONE.search(text):
            episode.close_phase("binlog_recovery", moment)
        elif _BP_LOAD_START.search(text):
            episode.open_phase("buffer_pool_load", moment)
        elif _BP_LOAD_DONE.search(text):
            episode.close_phase("buffer_pool_load", moment)
        elif _READY.search(text) and not _NOT_SERVER_READY.search(text):
            if episode.ready_at is None:
                episode.ready_at = moment
                phase = episode.open_phase("ready_for_connections", episode.started_at)
                phase.end = moment
            self._ends_episode = True
        elif _SHUTDOWN_DONE.search(text):
            self._ends_episode = True
        elif match := _SERVER_FAILED.search(text):
            message = text[match.start() :][:200]
            self.parsed.warn(f"the server failed at {moment or 'a line without a timestamp'}: {message}")
        else:
            return False
        return True

    def _feed_tokudb(self, episode: Episode, text: str, moment) -> bool:
        match = _TOKU.search(text)
        if not match:
            return False
        message = match.group(1)
        if message.startswith("starting"):
            # TokuFT prints nothing when no recovery is needed: this is a crash recovery.
            episode.crash_recovery = True
            episode.engine = "tokudb"
            episode.checkpoint_lsn = episode.crash_lsn = None
            recovery = episode.open_phase("crash_recovery", moment)
            recovery.end = None  # it may follow InnoDB's recovery: the server's spans both
            episode.open_phase("tokudb_recovery", moment)
            episode.open_phase("redo_scan", moment)
        elif found := _TOKU_BACKWARD.search(message):
            episode.crash_lsn = int(found.group(1))
        elif found := _TOKU_TURN.search(message):
            episode.checkpoint_lsn = int(found.group(1))
        elif found := _TOKU_FORWARD.search(message):
            episode.redo_records_applied = int(found.group(3))
            episode.close_phase("redo_scan", moment)
            episode.open_phase("redo_apply", moment)
        elif message.startswith("done"):
            for name in ("redo_apply", "tokudb_recovery", "crash_recovery"):
                episode.close_phase(name, moment)
        return True

    def _start_apply(self, episode: Episode, moment) -> None:
        episode.close_phase("redo_scan", moment)
        apply = episode.open_phase("redo_apply", moment)
        apply.end = None  # a later batch (5.7 scans and applies in several) extends the apply

    def _apply_completed(self, episode: Episode, moment) -> None:
        """The last batch is applied: crash recovery ends here unless another batch follows."""
        for name in ("redo_apply", "crash_recovery"):
            phase = episode.phase(name)
            if phase:
                phase.end = moment
        self._apply_open = False

    def _innodb_started(self, episode: Episode, match: re.Match, text: str, moment) -> None:
        if match.group(1):
            self._set_version(match.group(1), text, _VERSION_RANK_ENGINE)
        lsn_match = _STARTED_LSN.search(text)
        lsn = _lsn(*lsn_match.groups()) if lsn_match else None
        if self._apply_open:
            self._apply_completed(episode, moment)
        for name in ("redo_scan", "redo_apply", "crash_recovery"):
            episode.close_phase(name, moment)
        if episode.crash_recovery and episode.engine == "innodb" and episode.crash_lsn is None and lsn:
            # Servers that log no scan progress (MariaDB 10.5+ at default verbosity): the LSN
            # InnoDB starts at is where the redo it replayed ended.
            episode.crash_lsn = lsn
        self._innodb_up = True

    def _set_version(self, version: str, context: str, rank: int) -> None:
        flavor = flavor_of(version, context)
        if rank > self._version_rank:
            self.parsed.server_version = version
            self.parsed.flavor = flavor
            self._version_rank = rank
        elif rank == self._version_rank and self.parsed.flavor == "mysql" and flavor != "mysql":
            self.parsed.flavor = flavor  # "Version: '5.5.34-55' ... Percona XtraDB Cluster"

    def finish(self) -> ParsedFile:
        if self.parsed.episodes and not self._stamped_lines:
            self.parsed.warn("no line carries a timestamp: phases are found, their durations are unknown")
            return self.parsed
        for episode in self.parsed.episodes:
            for problem in episode.drop_impossible():
                self.parsed.warn(problem)
            init = episode.phase("innodb_init")
            bounded = init is not None and init.seconds is not None
            if episode.crash_recovery and not episode.phase("crash_recovery") and bounded:
                bound = episode.open_phase("crash_recovery", init.start)
                bound.end = init.end
                self.parsed.warn(
                    f"the start at {episode.started_at} logged no InnoDB recovery notes (MySQL 8 at "
                    "log_error_verbosity < 3): its recovery time is InnoDB initialization, an upper bound"
                )
            if episode.crash_recovery and episode.recovery_seconds is None:
                self.parsed.warn(
                    "a crash recovery starting at "
                    f"{episode.started_at} has no end in the log (truncated, or the server died)"
                )
        return self.parsed


def parse_error_log(parsed: ParsedFile, lines: Iterable[Line]) -> ParsedFile:
    parser = ErrorLogParser(parsed)
    for line in lines:
        parser.feed(line)
    return parser.finish()
