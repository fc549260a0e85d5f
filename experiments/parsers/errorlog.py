"""Server error logs (MariaDB, MySQL, Percona): one episode per server start.

A streaming state machine: each line is matched against a few patterns and updates the current
episode. The traps named in DESIGN.md are handled where they bite: "ready for connections" of the
X Plugin and WSREP is not the server's; MariaDB 10.8+ logs no "Apply batch completed", so the
redo apply ends with the first line logged after its final batch started; a clean MySQL 8.0.30+
start logs "Applying a batch of 0 redo log records" and is not a crash recovery.
"""

import re
from collections.abc import Iterable

from .lines import Line
from .model import Episode, ParsedFile

_START_MARIADB = re.compile(r"Starting MariaDB (\S+)")
_START_MYSQLD = re.compile(
    r"(?:mysqld|mariadbd)(?:\.exe)? \((?:mysqld|mariadbd) ([^)\s]+)[^)]*\) starting as process"
)
_VERSION_LINE = re.compile(r"^Version: '([^']+)'.*?(Percona Server|MariaDB|MySQL)?")
_READY = re.compile(r"(?:mysqld|mariadbd)(?:\.exe)?: ready for connections")
_NOT_SERVER_READY = re.compile(r"X Plugin|WSREP|mysqlx", re.IGNORECASE)
_IMPLICIT_START = re.compile(
    r"InnoDB: (?:The InnoDB memory heap is disabled|Mutexes and rw_locks use"
    r"|Compressed tables use zlib|Initializing buffer pool)"
)
_SHUTDOWN_DONE = re.compile(r"(?:mysqld|mariadbd)(?:\.exe)?: Shutdown complete|Shutdown completed")

_CRASH_START = re.compile(r"InnoDB: Starting crash recovery(?: from checkpoint LSN=([0-9]+)(?:,[0-9]+)?)?")
_NOT_SHUT_DOWN = re.compile(r"InnoDB: Database was not shut ?down normally")
_MYSQL_CHECKPOINT = re.compile(r"Log scan progressed past the checkpoint lsn ([0-9]+)")
_MYSQL_SCANNED = re.compile(r"Doing recovery: scanned up to log sequence number ([0-9]+)")
_MARIADB_END_OF_LOG = re.compile(r"InnoDB: End of log at LSN=([0-9]+)")
_MARIADB_READ_UP_TO = re.compile(r"InnoDB: Read redo log up to LSN=([0-9]+)")
_FINAL_BATCH = re.compile(
    r"InnoDB: (?:Starting final batch to recover +([0-9]+) pages|To recover: ([0-9]+) pages)"
)
_APPLY_BATCH = re.compile(
    r"InnoDB: (?:Starting an apply batch|Applying a batch of ([0-9]+) redo log records)"
)
_APPLY_DONE = re.compile(r"InnoDB: Apply batch completed")
_APPLY_PROGRESS = re.compile(
    r"InnoDB: (?:To recover: |Read redo log up to|Progress in percent|Applying a batch|Applied)"
    r"|^[0-9 ]+$"
)
_TRX_TO_ROLLBACK = re.compile(
    r"InnoDB: ([0-9]+) transaction\(s\) which must be rolled back or cleaned up"
    r"(?: in total ([0-9]+) row operations to undo)?"
)
_ROLLBACK_START = re.compile(r"InnoDB: Starting in background the rollback")
_ROLLBACK_DONE = re.compile(r"InnoDB: Rollback of non-prepared transactions completed")
_LSN_LINE = re.compile(r"InnoDB: (?:[0-9.]+ started; )?log sequence number ([0-9]+)")
_BINLOG_RECOVERY_START = re.compile(r"Recovering after a crash using")
_BINLOG_RECOVERY_DONE = re.compile(r"Crash table recovery finished|Crash recovery finished")
_BP_LOAD_START = re.compile(r"InnoDB: Loading buffer pool\(s\) from")
_BP_LOAD_DONE = re.compile(r"InnoDB: Buffer pool\(s\) load completed")


class ErrorLogParser:
    """Feed lines in order; `finish()` returns the ParsedFile."""

    def __init__(self, parsed: ParsedFile):
        self.parsed = parsed
        self.parsed.kind = "error_log"
        self.episode: Episode | None = None
        self._apply_open = False
        # Set by "ready for connections" or "Shutdown complete": InnoDB lines after it belong to
        # a new start even without a start line (MySQL 5.5/5.6 print none).
        self._ends_episode = False

    def _new_episode(self, line: Line) -> Episode:
        self.episode = Episode(started_at=line.moment)
        self.parsed.episodes.append(self.episode)
        self._apply_open = False
        self._ends_episode = False
        return self.episode

    def feed(self, line: Line) -> None:
        text = line.text
        version = _START_MARIADB.search(text)
        if version:
            self._set_version(version.group(1))
            self._new_episode(line)
            return
        version = _START_MYSQLD.search(text)
        if version:
            self._set_version(version.group(1))
            self._new_episode(line)
            return
        version_line = _VERSION_LINE.match(text)
        if version_line:
            self._set_version(version_line.group(1), text)
            return
        if self._ends_episode and _IMPLICIT_START.search(text):
            self._new_episode(line)
        episode = self.episode or self._new_episode(line)
        self._feed_recovery(episode, line)

    def _feed_recovery(self, episode: Episode, line: Line) -> None:
        text, moment = line.text, line.moment
        if self._apply_open and not _APPLY_PROGRESS.search(text):
            # MariaDB 10.8+ applies its final batch, then goes on: the next line ends the apply.
            self._end_redo_apply(episode, moment)
        if match := _CRASH_START.search(text):
            episode.crash_recovery = True
            episode.engine = "innodb"
            episode.open_phase("crash_recovery", moment)
            episode.open_phase("redo_scan", moment)
            if match.group(1):
                episode.checkpoint_lsn = int(match.group(1))
        elif _NOT_SHUT_DOWN.search(text):
            episode.crash_recovery = True
            episode.engine = "innodb"
            episode.open_phase("crash_recovery", moment)
            episode.open_phase("redo_scan", moment)
        elif match := _MYSQL_CHECKPOINT.search(text):
            episode.checkpoint_lsn = int(match.group(1))
        elif match := _MYSQL_SCANNED.search(text):
            episode.crash_lsn = max(episode.crash_lsn or 0, int(match.group(1)))
        elif match := _MARIADB_END_OF_LOG.search(text):
            if episode.crash_recovery:
                episode.crash_lsn = int(match.group(1))
                episode.close_phase("redo_scan", moment)
        elif match := _MARIADB_READ_UP_TO.search(text):
            if episode.crash_recovery:
                episode.crash_lsn = max(episode.crash_lsn or 0, int(match.group(1)))
        elif match := _FINAL_BATCH.search(text):
            if episode.crash_recovery:
                pages = int(match.group(1) or match.group(2))
                if episode.pages_to_recover is None:
                    episode.pages_to_recover = pages
                episode.close_phase("redo_scan", moment)
                episode.open_phase("redo_apply", moment)
                self._apply_open = True
        elif match := _APPLY_BATCH.search(text):
            records = int(match.group(1)) if match.group(1) else None
            if records:
                episode.crash_recovery = True
                episode.engine = "innodb"
                episode.redo_records_applied = (episode.redo_records_applied or 0) + records
            if episode.crash_recovery and records != 0:
                episode.close_phase("redo_scan", moment)
                episode.open_phase("redo_apply", moment)
        elif _APPLY_DONE.search(text):
            self._end_redo_apply(episode, moment)
        elif match := _TRX_TO_ROLLBACK.search(text):
            episode.trx_rolled_back = int(match.group(1))
            if match.group(2):
                episode.rows_undone = int(match.group(2))
        elif _ROLLBACK_START.search(text):
            episode.open_phase("background_rollback", moment)
        elif _ROLLBACK_DONE.search(text):
            episode.close_phase("background_rollback", moment)
        elif _LSN_LINE.search(text):
            # InnoDB is up: whatever recovery did not announce its end has ended by now.
            self._end_redo_apply(episode, moment)
            episode.close_phase("redo_scan", moment)
            episode.close_phase("crash_recovery", moment)
        elif _BINLOG_RECOVERY_START.search(text):
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

    def _end_redo_apply(self, episode: Episode, moment) -> None:
        if self._apply_open or episode.phase("redo_apply"):
            episode.close_phase("redo_apply", moment)
            episode.close_phase("crash_recovery", moment)
        self._apply_open = False

    def _set_version(self, version: str, line: str = "") -> None:
        if not self.parsed.server_version:
            self.parsed.server_version = version
        lowered = (version + " " + line).lower()
        if "mariadb" in lowered:
            self.parsed.flavor = "mariadb"
        elif "percona" in lowered or re.search(r"-\d+\.\d+(-\d+)?$", version):
            self.parsed.flavor = self.parsed.flavor or "percona"
        elif self.parsed.flavor is None:
            self.parsed.flavor = "mysql"

    def finish(self) -> ParsedFile:
        for episode in self.parsed.episodes:
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
