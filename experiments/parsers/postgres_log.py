"""PostgreSQL's server log (plain stderr format, the default `log_line_prefix = '%m [%p] '`, or
`%t` without milliseconds; csvlog and jsonlog too): each start of the server, and of a crash
recovery its WAL replay ("redo starts at" to "redo done at"), the end-of-recovery checkpoint and
the moment the server accepts connections.

A start after a crash says so ("database system was interrupted", "was not properly shut down;
automatic recovery in progress"). The redo to replay runs from the LSN redo starts at to the
LSN redo is done at; "redo is not required" is a crash recovery with nothing to replay.
Before the replay, between "was interrupted" and "was not properly shut down", the startup
process fsyncs every file of the data directory (recovery_init_sync_method = fsync; syncfs syncs
the file system instead): the phase data_directory_sync.
PostgreSQL 15 logs its own timing of the replay ("elapsed: 0.21 s") on the "redo done" line;
the phases are the line stamps', milliseconds with `%m`.
"""

import csv
import itertools
import json
import re
from collections import deque
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta, timezone, tzinfo

from experiments.parsers.model import Episode, ParsedFile

# "2026-11-26 18:50:30.799 UTC [13466] LOG:  redo starts at 0/1511B00"
LINE = re.compile(
    r"^(?:\[runner (?P<runner>[0-9]+\.[0-9]+)\] )?"
    r"(?P<date>\d{4}-\d{2}-\d{2}) (?P<time>\d{2}:\d{2}:\d{2})(?:\.(?P<ms>\d{3}))? (?P<zone>[A-Za-z+\-0-9:]+) "
    r"\[(?P<pid>\d+)\] (?P<level>LOG|FATAL|PANIC|WARNING|ERROR|DETAIL|HINT|CONTEXT|STATEMENT|DEBUG\d?):  "
    r"(?P<message>.*)$"
)
HINT = re.compile(r"\[\d+\] (?:LOG|FATAL|PANIC):  (?:starting PostgreSQL|database system )")
# csvlog: log_time,user,database,pid,...,error_severity,sql_state,message,...
_FIRST_WORDS = r"(?:starting PostgreSQL|database system )"
CSV_HINT = re.compile(
    r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3} [^,]+,.*,(?:LOG|FATAL|PANIC),[0-9A-Z]{5},\"" + _FIRST_WORDS
)
# jsonlog (PostgreSQL 15+): one object a line
JSON_HINT = re.compile(
    r'^\{"timestamp":"\d{4}-.*"error_severity":"(?:LOG|FATAL|PANIC)".*"message":"' + _FIRST_WORDS
)
# csvlog's columns, as far as the parser reads them
CSV_TIME, CSV_PID, CSV_LEVEL, CSV_MESSAGE = 0, 3, 11, 13
STAMP = re.compile(
    r"^(?P<date>\d{4}-\d{2}-\d{2}) (?P<time>\d{2}:\d{2}:\d{2})(?:\.(?P<ms>\d{3}))? (?P<zone>\S+)$"
)


def looks_like_postgres(line: str) -> bool:
    return bool(HINT.search(line) or CSV_HINT.match(line) or JSON_HINT.match(line))


_STARTING = re.compile(r"^starting PostgreSQL (\S+)")
_LSN = r"([0-9A-F]+)/([0-9A-F]+)"
_REDO_STARTS = re.compile(rf"^redo starts at {_LSN}")
_REDO_DONE = re.compile(rf"^redo done at {_LSN}(?:.*elapsed: ([0-9.]+) s)?")
_CRASHED = (
    "database system was interrupted",
    "database system was not properly shut down",
)
_FAILED = ("aborting startup due to startup process failure", "startup process (PID")


# What the parser reads in a PostgreSQL log: a large log is stored as these lines (and the last
# ones, which date the end of the last start), re-parsed to the same starts and recoveries.
KEPT_WORDS = (
    "starting PostgreSQL",
    "database system ",
    "redo ",
    "checkpoint starting: end-of-recovery",
    "checkpoint complete",
    "startup process",
    "PANIC",
)
LAST_LINES_KEPT = 100


def postgres_lines_kept(lines: Iterable[str]) -> Iterator[str]:
    """The lines of a PostgreSQL log the parser reads, in order, and its last LAST_LINES_KEPT."""
    last: deque[str] = deque(maxlen=LAST_LINES_KEPT)  # since the last line kept
    for line in lines:
        if any(word in line for word in KEPT_WORDS):
            last.clear()
            yield line
        else:
            last.append(line)
    yield from last


def lsn(high: str, low: str) -> int:
    """PostgreSQL's "0/1511B00": the high and low 32 bits in hexadecimal."""
    return (int(high, 16) << 32) | int(low, 16)


def _zone(text: str, local_tz: tzinfo) -> tzinfo:
    if text in ("UTC", "GMT", "Z"):
        return UTC
    if match := re.fullmatch(r"([+-])(\d{2}):?(\d{2})?", text):
        sign = 1 if match.group(1) == "+" else -1
        return timezone(sign * timedelta(hours=int(match.group(2)), minutes=int(match.group(3) or 0)))
    return local_tz  # an abbreviation (CET, EST...) names no offset on its own: the zone given


def _moment(parsed: ParsedFile, match: re.Match, local_tz: tzinfo) -> datetime | None:
    if match.groupdict().get("runner"):  # the runner's own stamp, when it wrote the line (microseconds)
        return datetime.fromtimestamp(float(match.group("runner")), tz=UTC)
    try:
        moment = datetime.fromisoformat(f"{match.group('date')} {match.group('time')}")
    except ValueError:
        parsed.warn(f"a line stamped with an impossible date: {match.group(0)[:60]}")
        return None
    moment = moment.replace(microsecond=int(match.group("ms") or 0) * 1000)
    return moment.replace(tzinfo=_zone(match.group("zone"), local_tz))


def _stderr_records(parsed: ParsedFile, lines: Iterable[str], local_tz: tzinfo) -> Iterator[tuple]:
    for text in lines:
        if match := LINE.match(text):
            yield _moment(parsed, match, local_tz), match.group("level"), match.group("message")


def _stamped(parsed: ParsedFile, stamp: str, local_tz: tzinfo) -> datetime | None:
    match = STAMP.match(stamp)
    if match is None:
        parsed.warn(f"a record stamped {stamp[:40]!r}, not a date and time")
        return None
    return _moment(parsed, match, local_tz)


def _csv_records(parsed: ParsedFile, lines: Iterable[str], local_tz: tzinfo) -> Iterator[tuple]:
    """csvlog: a record a row, a message with newlines quoted across lines."""
    for row in csv.reader(f"{line}\n" for line in lines):
        if len(row) > CSV_MESSAGE:
            yield _stamped(parsed, row[CSV_TIME], local_tz), row[CSV_LEVEL], row[CSV_MESSAGE]
        elif row:
            parsed.warn(f"a csvlog row of {len(row)} columns, not PostgreSQL's")


def _json_records(parsed: ParsedFile, lines: Iterable[str], local_tz: tzinfo) -> Iterator[tuple]:
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            if line.strip():
                parsed.warn(f"a jsonlog line that is no JSON: {line[:60]}")
            continue
        if isinstance(record, dict) and isinstance(record.get("message"), str):
            moment = _stamped(parsed, str(record.get("timestamp", "")), local_tz)
            yield moment, str(record.get("error_severity", "")), record["message"]


def parse_postgres_log(parsed: ParsedFile, lines: Iterable[str], local_tz: tzinfo = UTC) -> ParsedFile:
    """The server log in any of its formats, told apart by its first line that is PostgreSQL's."""
    lines = iter(lines)
    head = []
    for line in lines:
        head.append(line)
        if looks_like_postgres(line):
            break
    everything = itertools.chain(head, lines)
    if CSV_HINT.match(head[-1] if head else ""):
        return _parse_records(parsed, _csv_records(parsed, everything, local_tz))
    if JSON_HINT.match(head[-1] if head else ""):
        return _parse_records(parsed, _json_records(parsed, everything, local_tz))
    return _parse_records(parsed, _stderr_records(parsed, everything, local_tz))


def _parse_records(parsed: ParsedFile, records: Iterable[tuple]) -> ParsedFile:
    """(moment, severity, message) records: the starts, recoveries and failures they tell."""
    parsed.kind = "error_log"
    parsed.flavor = "postgresql"
    episode: Episode | None = None
    for moment, level, message in records:
        if found := _STARTING.match(message):
            episode = Episode(started_at=moment, engine="postgresql", began=True, start_logged=True)
            parsed.episodes.append(episode)
            parsed.server_version = parsed.server_version or f"PostgreSQL {found.group(1)}"
            continue
        if episode is None:
            if not message.startswith(_CRASHED):
                continue
            episode = Episode(started_at=moment, engine="postgresql", began=True)  # its start cut off
            parsed.episodes.append(episode)
        if moment is not None:
            episode.last_seen = moment
        if message.startswith(_CRASHED):
            episode.crash_recovery = True
            episode.crash_evidence = episode.crash_evidence or message
            episode.open_phase("crash_recovery", moment)
            # Between the two lines the startup process fsyncs the whole data directory
            # (recovery_init_sync_method): a cost that grows with the number of files.
            if message.startswith(_CRASHED[0]):
                episode.open_phase("data_directory_sync", moment)
            else:
                episode.close_phase("data_directory_sync", moment)
        elif found := _REDO_STARTS.match(message):
            episode.checkpoint_lsn = lsn(found.group(1), found.group(2))
            episode.open_phase("wal_replay", moment)
        elif found := _REDO_DONE.match(message):
            episode.crash_lsn = lsn(found.group(1), found.group(2))
            episode.close_phase("wal_replay", moment)
        elif message.startswith("redo is not required"):
            episode.nothing_to_replay = True
        elif message.startswith("checkpoint starting: end-of-recovery"):
            episode.open_phase("recovery_checkpoint", moment)
        elif message.startswith("checkpoint complete") and episode.phase("recovery_checkpoint"):
            episode.close_phase("recovery_checkpoint", moment)
            episode.close_phase("crash_recovery", moment)
        elif message.startswith("database system is ready to accept connections"):
            episode.ready_at = moment
            episode.close_phase("crash_recovery", moment)
            if episode.started_at is not None and moment is not None:
                episode.open_phase("ready_for_connections", episode.started_at).end = moment
        elif message.startswith(_FAILED) or level == "PANIC":
            if episode.ready_at is None:
                episode.failed = True
                episode.failure = episode.failure or message[:300]
    return parsed
