"""Server error logs (MySQL 5.0-9.x, Percona Server, MariaDB 5.5-11.x): one episode per start.

A streaming state machine: each line is matched against a few patterns and updates the current
episode. The traps are handled where they bite:

- "ready for connections" of the X Plugin and WSREP is not the server's;
- on 5.5-5.7 the redo scan ("Log scan progressed past the checkpoint", "Doing recovery: scanned
  up to") is logged before "Starting crash recovery": recovery starts with the scan; MySQL 8.0
  logs "Starting to parse redo log" on every start, so it only dates a recovery found later;
- a clean MySQL 8.0.30+ start logs "Applying a batch of 0 redo log records": not a recovery; the
  number of a batch counts the pages it applies to, not records;
- MariaDB 10.8+ logs no "Apply batch completed": the redo apply ends with the first line logged
  after its final batch started;
- at default verbosity MySQL 8.0+ logs no InnoDB notes: the recovery is then only known from the
  rollback progress, and bounded by "InnoDB initialization has started/ended" (with a warning);
- at default verbosity the crash may show only in the server's layer: MySQL 8.0.1x "[Server]
  Starting crash recovery..." (binary log recovery, printed only after a crash; 8.0.20+ prints
  "Starting XA crash recovery..." at every start), MariaDB "Recovering after a crash using tc.log";
  older servers show it through "The log sequence number N in the system tablespace does not match
  the log sequence number M in the ib_logfiles!" (M is the checkpoint; MariaDB 10.1 with nothing
  to replay logs nothing else, and its recovery runs from that line to InnoDB's start);
- TokuFT writes its own lines with ctime stamps; its LSNs count log entries, not bytes.

Episodes are counted as a DBA counts them, one per server start: the shutdown tail of a process
whose start is not in the excerpt opens none; lines pasted twice (`systemctl status`, then
`journalctl`) are counted once; a start that dies before it is ready ends failed; in interleaved
output (docker compose, kubectl --prefix) each container's lines are read apart.

`TRIGGERS` lists literal words at least one of which is in every line a pattern here can match:
the scanner (scan.py) feeds only such lines of a large file. A pattern added here needs its word.
"""

import re
from collections.abc import Iterable

from experiments.parsers.lines import Line
from experiments.parsers.model import Batch, Episode, ParsedFile, Progress, iso

TRIGGERS = (
    "Starting MariaDB", "starting as process", "MySQL Server - start", "Version: '",
    "ready for connections", "Shutdown complete", "hutdown completed",
    "memory heap", "Mutexes and rw_locks", "Compressed tables", "Initializing buffer pool",
    "initialization has",
    "crash recovery", "shut down normally", "shutdown normally", "recovery from log files",
    "past the checkpoint", "scanned up to", "Starting log scan", "log sequence number",
    "parse redo log", "latest found checkpoint",
    "End of log at", "Read redo log up to", "final batch", "To recover:", "Multi-batch",
    "apply batch", "Applying a batch", "Apply batch", "Progress in percent",
    "transaction(s)", "row operations", "background the rollback", "rollback of uncommitted",
    "ransactions completed",
    "Recovering after a crash", "recovery finished", "Loading buffer pool", "load completed",
    "Difficult to find free blocks", "Could not free any blocks",
    "] 100%", "InnoDB: Started", "TokuFT recovery", "Tokudb recovery", "Rolling back trx",
    "init function returned error", "] Aborting", "got signal", "got exception", "Fatal error",
    "XA prepared state", "not match the log sequence number", "MY-010931", "Can't start server",
    "Assertion failure", "Failing assertion", "Can't init tc log", "initialization aborted",
    "Recovery failed",
)  # fmt: skip

_IB = r"(?:InnoDB:\s+|\[InnoDB\]\s+)"  # "InnoDB: msg" up to 5.7 and in MariaDB; "[InnoDB] msg" in 8.0
_LSN = r"([0-9]+)(?: ([0-9]+)\b)?"  # before 5.5 an LSN was two 32-bit words: "0 13674004"

# the server's own line, not Bitnami's "Starting MariaDB setup" or systemd's "Starting MariaDB
# 12.2.1 database server..."
_START_MARIADB = re.compile(r"Starting MariaDB ([0-9]\S*) .*\bas process\b")
_START_MYSQLD = re.compile(r"\((?:mysqld|mariadbd) ([^)\s]+)[^)]*\) starting as process")
_START_MYSQL84 = re.compile(r"\[Server\] MySQL Server - start\.")
_VERSION = re.compile(r"(?:^|ready for connections\.? )Version: '([^']+)'(.*)")
# "[MY-010931]" alone: the server's ready line cut after its code (the X Plugin's is MY-011323)
_READY = re.compile(r"\S+: ready for connections|\[MY-010931\]")
_NOT_SERVER_READY = re.compile(r"X Plugin|WSREP|mysqlx", re.IGNORECASE)
_IMPLICIT_START = re.compile(
    _IB + r"(?:The InnoDB memory heap is disabled|Mutexes and rw_locks use"
    r"|Compressed tables use zlib|Initializing buffer pool)|\[InnoDB\] InnoDB initialization has started"
)
_SHUTDOWN_DONE = re.compile(r"\S+: Shutdown complete|Shutdown completed|\[Server\] MySQL Server - end\.")

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
# 5.6-8.0: the system tablespace's flushed LSN is not the checkpoint: a crash recovery follows.
_LSN_MISMATCH = re.compile(
    r"do(?:es)? not match the log sequence number ([0-9]+) in the (?:ib_logfiles|redo log files)"
)
_CHECKPOINT_PASSED = re.compile(r"Log scan progressed past the checkpoint (?:lsn|LSN) " + _LSN)
_SCAN_FROM_CHECKPOINT = re.compile(r"Starting log scan based on checkpoint at")
_CHECKPOINT_CONTINUED = re.compile(r"^(?:InnoDB: )?log sequence number " + _LSN)
_SCANNED = re.compile(r"Doing recovery: scanned up to log sequence number " + _LSN)
_END_OF_LOG = re.compile(_IB + r"End of log at LSN=([0-9]+)")
_READ_UP_TO = re.compile(_IB + r"Read redo log up to LSN=([0-9]+)")
_FINAL_BATCH = re.compile(
    _IB + r"(?:Starting final batch to recover +([0-9]+) pages|To recover: ([0-9]+) pages)"
)
# MariaDB 10.6+: the redo does not fit the buffer pool; it is applied a batch at a time, each
# batch logged as it begins with the LSN its redo was read up to ("To recover: LSN a/end; N pages";
# the same line every 15 s while a batch goes on), the last as "To recover: N pages".
_MULTI_BATCH = re.compile(_IB + r"Multi-batch recovery needed at LSN ([0-9]+)")
_BATCH_TO_LSN = re.compile(_IB + r"To recover: LSN ([0-9]+)/([0-9]+); ([0-9]+) pages")
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
# Printed only when the binary log or tc.log was left open: a crash. (The server layer's "Starting
# crash recovery..." comes from ha_recover() with a list to commit, which only a crash gives; not
# InnoDB's "Starting crash recovery." and not 8.0.20+'s "Starting XA crash recovery...".)
_AFTER_CRASH = re.compile(
    r"Recovering after a crash using (\S+)|(?:\[Server\]|\[Note\]) Starting crash recovery\.\.\."
)
# What "Recovering after a crash using NAME" names; MariaDB 10.1's excerpts often keep only the
# "Starting crash recovery..." that follows, which either log's recovery prints.
_XA_EVIDENCE = {
    "tc.log": "tc.log's crash recovery",
    None: "the server's XA crash recovery (of tc.log or the binary log)",
}
# The server's own recovery: after a crash, or 8.0.20+'s at every start.
_BINLOG_RECOVERY_START = re.compile(_AFTER_CRASH.pattern + r"|\] Starting XA crash recovery")
_BINLOG_RECOVERY_DONE = re.compile(
    r"Crash table recovery finished|Crash recovery finished|XA crash recovery finished"
)
_BP_LOAD_START = re.compile(_IB + r"Loading buffer pool\(s\) from")
_BP_LOAD_DONE = re.compile(_IB + r"Buffer pool\(s\) load completed")
_PLUGIN_FAILED = re.compile(r"Plugin '\w+' init function returned error")
# A buffer pool with no block to give, over and over (buf0lru.cc: MySQL's buf_LRU_get_free_block,
# MariaDB's buf_pool.LRU_warn; the runner's InnoDB stall_signs are the same words): a start that
# writes these and never gets ready has stalled.
_STALL_SIGN = re.compile(
    r"Difficult to find free blocks in the buffer pool|Could not free any blocks in the buffer pool"
)
# The process dies, or gives up starting.
_SERVER_FAILED = re.compile(
    r"\[ERROR\] (?:\[MY-\d+\] \[Server\] )?Aborting|got (?:signal [0-9]+|exception 0x[0-9a-f]+)"
    r"|\[ERROR\] .*Fatal error|Assertion failure|Failing assertion|Can't start server"
    r"|Can't init tc log|Plugin initialization aborted|\[ERROR\] Recovery failed"
)
_ERROR_PREFIX = re.compile(r"^\[ERROR\] (?:\[MY-\d+\] \[Server\] )?")
# How much of a line identifies it in a repeated paste (`systemctl status` cuts long lines).
SIGNATURE_CHARS = 40
MAX_SIGNATURE_LINES = 10_000
# docker compose output of more containers than this is read as one (a runaway prefix match).
MAX_SOURCES = 16
_TOKU = re.compile(r"(?:TokuFT|Tokudb) recovery (.*)")
_TOKU_BACKWARD = re.compile(r"scanning backward from ([0-9]+)")
_TOKU_TURN = re.compile(r"turning around at begin checkpoint ([0-9]+)")
_TOKU_FORWARD = re.compile(r"starts scanning forward to ([0-9]+) from ([0-9]+) left ([0-9]+)")

_VERSION_RANK_SERVER = 2  # the server's own start and Version lines
_VERSION_RANK_ENGINE = 1  # "InnoDB: 5.7.20 started": MariaDB 10.2 prints its InnoDB's version


def _lsn(high: str, low: str | None) -> int:
    return (int(high) << 32) + int(low) if low is not None else int(high)


NO_SHUTDOWN_EVIDENCE = "a start with no shutdown logged since the server was last ready"
_DISTRIBUTION = re.compile(r"\(+(?:Debian|Ubuntu)\)+")


def flavor_of(version: str, context: str = "") -> str:
    text = f"{version} {context}".lower()
    if "mariadb" in text:
        return "mariadb"
    major = re.match(r"([0-9]+)\.", version)
    if major and int(major.group(1)) >= 10:  # MySQL went from 8.0 to 8.4 and 9.x; 10.x+ is MariaDB
        return "mariadb"
    if "percona" not in text and _DISTRIBUTION.search(context):
        return "mysql"  # Oracle's server as Debian or Ubuntu packaged it: "9.7.4-2 ... (Debian)"
    if "percona" in text or re.search(r"-rel\d", version):
        return "percona"
    # "5.6.31-77.0", "8.0.32-25": Percona's build after the version. A one-digit one from 8.0 on
    # is a distribution's revision (Debian's Oracle MySQL "9.7.4-2", whose lines at
    # log_error_verbosity 2 had been read as Percona's); a Percona log that says so is one anyway
    build = re.search(r"^\d+\.\d+\.\d+-(\d+)(?:\.\d+)?$", version)
    if build and (int(major.group(1)) < 8 or int(build.group(1)) >= 10):
        return "percona"
    return "mysql"


class _SourceReader:
    """The starts of one server's lines (one container's, where output was interleaved)."""

    def __init__(self, parsed: ParsedFile):
        self.parsed = parsed
        self.episode: Episode | None = None
        self._version_rank = 0
        self.stamped_lines = 0
        self._last_moment = None
        self._reset_episode_state()

    def _reset_episode_state(self) -> None:
        self._apply_open = False
        # Set by "ready for connections" or "Shutdown complete": InnoDB lines after it belong to
        # a new start even without a start line (MySQL 5.5/5.6 print none).
        self._ends_episode = False
        # Nothing but noise seen since the episode began ("implicit"), or since its start line
        # ("banner": MySQL 8.4's "MySQL Server - start.", "process": "starting as process"): a
        # start line now does not begin another (8.4 logs both; mysqld_safe and entrypoint lines
        # come before them), unless both are a process's own (a start that never got further).
        self._fresh_start: str | None = None
        # MySQL 8.0 "Starting to parse redo log": when the recovery began, if it is one.
        self._scan_started_at = None
        self._checkpoint_next = False
        self._innodb_up = False
        # "The log sequence number N ... does not match ...": InnoDB's crash recovery begins here
        # (recv_init_crash_recovery follows it), whether or not it says so in a line of its own.
        self._mismatch_at = None

    def _new_episode(self, line: Line, start: str | None = None, after_break: str | None = None) -> Episode:
        """A new episode from this line; `start` is the kind of start line it is, if one."""
        fresh = self._fresh_start
        if start and fresh and self.episode is not None and not (start == fresh == "process"):
            if fresh == "implicit":  # the process starts here, not at mysqld_safe
                self.episode.started_at = line.moment
            self._fresh_start = start
            self.episode.began = self.episode.start_logged = True
            return self.episode
        previous = self.episode
        self.episode = Episode(started_at=line.moment, began=bool(start), start_logged=bool(start))
        if after_break:
            self.episode.break_note = after_break
            self.episode.broke_from = previous
        elif (
            start
            and previous is not None
            and previous.ready_at
            and not (previous.shut_down or previous.failed)
        ):
            # the server was ready and logged no stop before this start: it was killed (or lost its
            # power); at log_error_verbosity 2 MySQL 8+ says nothing else of the crash (_explain)
            self.episode.after_unclean_stop = True
        self.parsed.episodes.append(self.episode)
        self._reset_episode_state()
        self._fresh_start = start or "implicit"
        return self.episode

    def feed(self, line: Line) -> None:
        text = line.text
        failure = _SERVER_FAILED.search(text)
        # A crash banner may be stamped on another clock (5.7's InnoDB prints local time where
        # the log is in UTC): it neither breaks nor moves this start's time.
        if line.moment is not None and not failure:
            self.stamped_lines += 1
            if note := self._time_break(line.moment):
                # Two unrelated excerpts glued together: what follows is not this start's.
                self._new_episode(line, after_break=note)
            self._last_moment = line.moment
            if self.episode is not None and (self.episode.last_seen or line.moment) <= line.moment:
                self.episode.last_seen = line.moment
        if match := (_START_MARIADB.search(text) or _START_MYSQLD.search(text)):
            self._set_version(match.group(1), text, _VERSION_RANK_SERVER)
            self._remember(self._new_episode(line, start="process"), line)
            return
        if _START_MYSQL84.search(text):
            self._remember(self._new_episode(line, start="banner"), line)
            return
        if match := _VERSION.search(text):
            self._set_version(match.group(1), match.group(2), _VERSION_RANK_SERVER)
        implicit_start = bool(_IMPLICIT_START.search(text))
        if self._ends_episode and implicit_start or self._starts_again(text):
            self._new_episode(line)
        episode = self.episode or self._new_episode(line)
        if implicit_start:
            episode.began = True
        if failure:
            message = _ERROR_PREFIX.sub("", text[failure.start() :])[:200]
            self._failed(episode, message, line.moment)
            self._fresh_start = None
        elif (sign := _STALL_SIGN.search(text)) and episode.ready_at is None:
            episode.stall_lines += 1
            episode.stall_line = episode.stall_line or text[sign.start() :][:300]
        elif self._feed_recovery(episode, line):
            self._fresh_start = None
            if not _SHUTDOWN_DONE.search(text):  # a shutdown tail is no start
                episode.began = True
                self._remember(episode, line)

    @staticmethod
    def _remember(episode: Episode, line: Line) -> None:
        if len(episode.signature) < MAX_SIGNATURE_LINES:
            episode.signature.add((line.moment, line.text[:SIGNATURE_CHARS].rstrip(" .…")))

    def _failed(self, episode: Episode, message: str, moment) -> None:
        """The process died or gave up: a start that was not ready yet ends failed; its recovery
        did not finish (a phase the failure line would close stays open)."""
        self._ends_episode = True
        self._apply_open = False
        if episode.began and episode.ready_at is None:
            if not episode.failed:
                episode.failed, episode.failure = True, message
        elif not episode.failed:
            self.parsed.warn(f"the server stopped at {moment or 'a line without a timestamp'}: {message}")

    def _time_break(self, moment) -> str | None:
        """Time runs backwards, or jumps further than any start-up waits between two lines before
        the server is ready: the lines after the break are another excerpt's. Returns the break
        in words (warned of at the end, unless it was a repeated paste)."""
        last, episode = self._last_moment, self.episode
        if last is None or episode is None or self._fresh_start is not None:
            # (nothing of this start read yet: a wrapper's line in local time, like mysqld_safe's)
            return None
        gap = (moment - last).total_seconds()
        backwards = gap < -BACKWARDS_TOLERANCE_S
        stalled = gap > MAX_STARTUP_SILENCE_S and episode.ready_at is None and not self._ends_episode
        if not (backwards or stalled):
            return None
        return (
            f"the log's time {'runs backwards' if backwards else 'jumps'} from {last} to {moment} "
            "inside a start: read as two excerpts, and no duration spans the break"
        )

    def _starts_again(self, text: str) -> bool:
        """A once-per-start event seen twice: a start whose first lines are not in the log."""
        episode = self.episode
        if episode is None:
            return False
        return bool(
            (self._innodb_up and _INNODB_STARTED.search(text))
            # a start that failed is over: a server ready or recovering is a start not in the log
            or (episode.failed and (_READY.search(text) or _recovery_begins(text)))
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
    def _mark_crash(episode: Episode, evidence: str | None = None) -> None:
        """A crash is known (InnoDB's, unless another engine claimed it) but not yet its timing;
        `evidence` says how, where it is not InnoDB's own recovery notes."""
        episode.crash_recovery = True
        episode.engine = episode.engine or "innodb"
        if evidence and not episode.crash_evidence:
            episode.crash_evidence = evidence

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
            episode.crash_started_at = episode.crash_started_at or moment
            if match.group(1):
                episode.checkpoint_lsn = int(match.group(1))
        elif _NOT_SHUT_DOWN.search(text):
            self._begin_crash_recovery(episode, moment)
        elif match := _LSN_MISMATCH.search(text):
            # "Database was not shutdown normally!" follows at once and starts the recovery
            self._mark_crash(episode, "the LSN mismatch")
            episode.checkpoint_lsn = episode.checkpoint_lsn or int(match.group(1))
            episode.lsn_mismatch = True
            self._mismatch_at = self._mismatch_at or moment
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
            lsn = _lsn(*match.groups())
            episode.crash_lsn = max(episode.crash_lsn or 0, lsn)
            episode.add_progress(Progress(moment, lsn=lsn))
        elif match := _END_OF_LOG.search(text):
            # (the scan goes on to the first batch: what InnoDB does between is reading too)
            if episode.crash_recovery:
                episode.crash_lsn = int(match.group(1))
        elif match := _READ_UP_TO.search(text):
            if episode.crash_recovery:
                lsn = int(match.group(1))
                episode.crash_lsn = max(episode.crash_lsn or 0, lsn)
                episode.add_progress(Progress(moment, lsn=lsn))
        elif match := _MULTI_BATCH.search(text):
            if episode.crash_recovery:
                episode.multi_batch_lsn = int(match.group(1))
        else:
            return False
        return True

    def _feed_apply_and_rollback(self, episode: Episode, text: str, moment) -> bool:
        if match := _BATCH_TO_LSN.search(text):
            if episode.crash_recovery:
                lsn, end, pages = (int(group) for group in match.groups())
                episode.crash_lsn = max(episode.crash_lsn or 0, end)
                episode.add_progress(Progress(moment, lsn=lsn, pages=pages))
                if not episode.batches or episode.batches[-1].lsn != lsn:  # not a 15-s report
                    episode.batches.append(Batch(moment, lsn=lsn, pages=pages))
                    self._start_apply(episode, moment)
        elif match := _FINAL_BATCH.search(text):
            if episode.crash_recovery:
                pages = int(match.group(1) or match.group(2))
                episode.add_progress(Progress(moment, pages=pages))
                if not episode.batches or episode.batches[-1].lsn is not None:
                    episode.batches.append(Batch(moment, pages=pages))
                if episode.pages_to_recover is None:
                    episode.pages_to_recover = sum(batch.pages or 0 for batch in episode.batches)
                self._start_apply(episode, moment)
                self._apply_open = True
        elif match := _APPLY_BATCH.search(text):
            # "Applying a batch of N redo log records": N is the recovery hash's page addresses
            # (recv_sys->n_addrs, later n_pages_to_recover, in log0recv.cc), not records: pages to
            # recover, as MariaDB's "To recover: N pages" (46.6 MiB of redo had read as 2,185 records)
            pages = int(match.group(1)) if match.group(1) else None
            if pages != 0:  # 5.x "Starting an apply batch" is only ever a recovery
                self._begin_crash_recovery(episode, moment)
            if pages:
                episode.pages_to_recover = (episode.pages_to_recover or 0) + pages
            if episode.crash_recovery and pages != 0:
                episode.batches.append(Batch(moment, pages=pages))
                self._start_apply(episode, moment)
        elif _APPLY_DONE.search(text):
            if episode.crash_recovery and episode.crash_started_at:
                episode.last_batch_applied_at = moment
            if episode.phase("redo_apply"):
                self._apply_completed(episode, moment)
        elif _PROGRESS.search(text):
            if self._innodb_up:
                # After InnoDB is up, the percentages are the rollback of recovered transactions
                # (MySQL 8.0 prints them even at default verbosity): there was a crash.
                self._mark_crash(episode, "the rollback of recovered transactions")
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
            self._mark_crash(episode, "the rollback of recovered transactions")
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
            if after := _AFTER_CRASH.search(text):  # the binlog or tc.log was not closed
                self._mark_crash(episode, _XA_EVIDENCE.get(after.group(1), "the binary log's crash recovery"))
            episode.open_phase("binlog_recovery", moment)
        elif _BINLOG_RECOVERY_DONE.search(text):
            episode.close_phase("binlog_recovery", moment)
        elif _BP_LOAD_START.search(text):
            episode.open_phase("buffer_pool_load", moment)
        elif _BP_LOAD_DONE.search(text):
            episode.close_phase("buffer_pool_load", moment)
        elif _READY.search(text) and not _NOT_SERVER_READY.search(text):
            if episode.ready_at is None and not episode.failed:
                episode.ready_at = moment
                phase = episode.open_phase("ready_for_connections", episode.started_at)
                phase.end = moment
            self._ends_episode = True
        elif _SHUTDOWN_DONE.search(text):
            self._ends_episode = True
            episode.shut_down = True
        elif match := _PLUGIN_FAILED.search(text):
            self.parsed.warn(f"at {moment or 'a line without a timestamp'}: {text[match.start() :][:200]}")
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

    @staticmethod
    def _start_apply(episode: Episode, moment) -> None:
        """A batch begins. The first ends the scan; one after a batch that completed (MySQL
        scans, applies, scans on) makes the time between a go of the scan, not of the apply."""
        apply = episode.phase("redo_apply")
        if apply is None:
            episode.close_phase("redo_scan", moment)
            episode.open_phase("redo_apply", moment)
        elif apply.end is not None:
            scan = episode.phase("redo_scan")
            if scan is not None:
                scan.add(apply.end, moment)
            apply.resume(moment)

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
        if episode.lsn_mismatch and self._mismatch_at and not episode.phase("crash_recovery"):
            # MariaDB 10.1 with nothing past the checkpoint logs no "Database was not shutdown
            # normally!": its recovery (the doublewrite buffer) runs from the mismatch to here.
            episode.open_phase("crash_recovery", self._mismatch_at)
        for name in ("redo_scan", "redo_apply", "crash_recovery"):
            episode.close_phase(name, moment)
        if episode.crash_recovery and episode.engine == "innodb" and episode.crash_lsn is None and lsn:
            # Servers that log no scan progress (MariaDB 10.5+ at default verbosity): the LSN
            # InnoDB starts at is where the redo it replayed ended.
            episode.crash_lsn = lsn
            episode.crash_lsn_from_start = True
        self._innodb_up = True

    def _set_version(self, version: str, context: str, rank: int) -> None:
        flavor = flavor_of(version, context)
        if rank > self._version_rank:
            self.parsed.server_version = version
            self.parsed.flavor = flavor
            self._version_rank = rank
        elif rank == self._version_rank and self.parsed.flavor == "mysql" and flavor != "mysql":
            self.parsed.flavor = flavor  # "Version: '5.5.34-55' ... Percona XtraDB Cluster"
        elif rank == self._version_rank and flavor == "mysql" and _DISTRIBUTION.search(context):
            self.parsed.flavor = flavor  # "Version: '9.7.4-2' ... (Debian)": a package, not Percona


class ErrorLogParser:
    """Feed lines in order; `finish()` returns the ParsedFile."""

    def __init__(self, parsed: ParsedFile):
        self.parsed = parsed
        self.parsed.kind = "error_log"
        self.readers: dict[str | None, _SourceReader] = {}

    def feed(self, line: Line) -> None:
        source = line.source if line.source in self.readers or len(self.readers) < MAX_SOURCES else None
        reader = self.readers.get(source)
        if reader is None:
            reader = self.readers[source] = _SourceReader(self.parsed)
        reader.feed(line)

    def finish(self) -> ParsedFile:
        parsed = self.parsed
        if parsed.episodes and not any(r.stamped_lines for r in self.readers.values()):
            parsed.warn("no line carries a timestamp: phases are found, their durations are unknown")
            parsed.episodes = [e for e in parsed.episodes if e.began]
            return parsed
        repeats = _repeated(parsed.episodes)
        for episode in parsed.episodes:
            if episode.break_note and not (episode in repeats or episode.broke_from in repeats):
                parsed.warn(episode.break_note)
        copies: dict[str, int] = {}  # start -> times its lines appear again, in the log's order
        for episode in (e for e in parsed.episodes if e in repeats):
            copies[iso(episode.started_at)] = copies.get(iso(episode.started_at), 0) + 1
        for started, again in copies.items():
            times = "twice" if again == 1 else f"{again + 1} times"
            parsed.warn(
                f"the lines of the start at {started} are in the log {times} (a tail pasted again, "
                "as `systemctl status` and `journalctl` both print it): counted once"
            )
        # A shutdown tail of a process whose start is not in the excerpt is no start.
        parsed.episodes = [e for e in parsed.episodes if e.began and e not in repeats]
        for episode in parsed.episodes:
            for problem in episode.drop_impossible():
                parsed.warn(problem)
            _explain(parsed, episode)
            if episode.stall_lines and episode.ready_at is None and not episode.failed:
                episode.stalled = True
                parsed.warn(
                    f"the start at {iso(episode.started_at)} never became ready: its recovery stalled, "
                    f"writing {episode.stall_lines:,} lines like: {episode.stall_line}"
                )
        return parsed


def _repeated(episodes: list[Episode]) -> set[Episode]:
    """Episodes whose every line is also another's: the same start pasted twice."""
    holders: dict[tuple, list[Episode]] = {}
    for episode in episodes:
        for key in episode.signature:
            holders.setdefault(key, []).append(episode)
    order = {id(e): n for n, e in enumerate(episodes)}
    repeats: set[Episode] = set()  # episodes hash and compare by identity
    for episode in episodes:
        if not episode.signature:
            continue
        some_key = next(iter(episode.signature))
        for other in holders[some_key]:
            if other is episode or other in repeats or not episode.signature <= other.signature:
                continue
            # a strict part of another start, or the same lines again later in the log
            if len(episode.signature) < len(other.signature) or order[id(other)] < order[id(episode)]:
                repeats.add(episode)
                break
    return repeats


def _explain(parsed: ParsedFile, episode: Episode) -> None:
    """Warnings for what an episode cannot tell, and the upper bound MySQL 8 gives where InnoDB
    logged nothing."""
    started = iso(episode.started_at)
    if episode.after_unclean_stop and episode.ready_at and not (episode.crash_recovery or episode.failed):
        # a start that got ready after one that never stopped: a crash restart whose recovery
        # logged nothing (MySQL 8+ at log_error_verbosity 2); a failed or cut-off one is left be
        episode.crash_recovery, episode.engine = True, episode.engine or "innodb"
        episode.crash_evidence = episode.crash_evidence or NO_SHUTDOWN_EVIDENCE
    if episode.failed:
        parsed.warn(
            f"the start at {started} failed before it was ready: {episode.failure}"
            + (" (its crash recovery did not finish)" if episode.crash_recovery else "")
        )
    if not episode.crash_recovery:
        return
    init = episode.phase("innodb_init")
    bounded = init is not None and init.seconds is not None
    if not episode.phase("crash_recovery") and bounded:
        bound = episode.open_phase("crash_recovery", init.start)
        bound.end = init.end
        parsed.warn(
            f"the start at {started} logged no InnoDB recovery notes (MySQL 8+ at log_error_verbosity 2, "
            f"the default; the crash known from {episode.crash_evidence or 'the rollback'}): its recovery "
            "time is InnoDB initialization, an upper bound"
        )
    elif not episode.phase("crash_recovery"):
        binlog = episode.phase("binlog_recovery")
        done_by = ""
        if binlog is not None and binlog.start and episode.started_at and episode.start_logged:
            # InnoDB recovers while the storage engines start, before the server's own recovery
            done_by = (
                f"; InnoDB had finished by {iso(binlog.start)}, "
                f"{(binlog.start - episode.started_at).total_seconds():.3f} s after the start"
            )
        measured = ""
        if binlog is not None and binlog.seconds is not None:
            whole = all(m.microsecond == 0 for m in (binlog.start, binlog.end))
            took = f"{binlog.seconds:.3f} s"
            if whole and not binlog.seconds:
                took = "under a second (whole-second stamps)"
            measured = f"; what was measured is the server's own XA recovery (binlog_recovery): {took}"
        parsed.warn(
            f"the start at {started} recovered from a crash (known from {episode.crash_evidence}) but "
            "InnoDB logged no recovery of its own (nothing to replay, or log_error_verbosity < 3): "
            f"its redo replay and redo volume are unknown{measured}{done_by}"
        )
    elif episode.recovery_seconds is None and not episode.failed:
        parsed.warn(
            f"a crash recovery starting at {started} has no end in the log (truncated, or the server died)"
        )
    if episode.lsn_mismatch and episode.crash_lsn_from_start and not episode.phase("redo_apply"):
        parsed.warn(
            f"the start at {started} found its crash by the LSN mismatch alone and logged no redo "
            "scan or apply: its redo runs from the checkpoint to the LSN InnoDB started at; the "
            "pages and records applied are unknown"
        )


def parse_error_log(parsed: ParsedFile, lines: Iterable[Line]) -> ParsedFile:
    parser = ErrorLogParser(parsed)
    for line in lines:
        parser.feed(line)
    return parser.finish()
