"""PostgreSQL's server log (plain stderr format, the default `log_line_prefix = '%m [%p] '`, or
`%t` without milliseconds): each start of the server, and of a crash recovery its WAL replay
("redo starts at" to "redo done at"), the end-of-recovery checkpoint and the moment the server
accepts connections.

A start after a crash says so ("database system was interrupted", "was not properly shut down;
automatic recovery in progress"). The redo to replay runs from the LSN redo starts at to the
LSN redo is done at; "redo is not required" is a crash recovery with nothing to replay.
PostgreSQL 15 logs its own timing of the replay ("elapsed: 0.21 s") on the "redo done" line;
the phases are the line stamps', milliseconds with `%m`.
"""

import re
from collections.abc import Iterable
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
_STARTING = re.compile(r"^starting PostgreSQL (\S+)")
_LSN = r"([0-9A-F]+)/([0-9A-F]+)"
_REDO_STARTS = re.compile(rf"^redo starts at {_LSN}")
_REDO_DONE = re.compile(rf"^redo done at {_LSN}(?:.*elapsed: ([0-9.]+) s)?")
_CRASHED = (
    "database system was interrupted",
    "database system was not properly shut down",
)
_FAILED = ("aborting startup due to startup process failure", "startup process (PID")


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
    if match.group("runner"):  # the runner's own stamp, when it wrote the line (microseconds)
        return datetime.fromtimestamp(float(match.group("runner")), tz=UTC)
    try:
        moment = datetime.fromisoformat(f"{match.group('date')} {match.group('time')}")
    except ValueError:
        parsed.warn(f"a line stamped with an impossible date: {match.group(0)[:60]}")
        return None
    moment = moment.replace(microsecond=int(match.group("ms") or 0) * 1000)
    return moment.replace(tzinfo=_zone(match.group("zone"), local_tz))


def parse_postgres_log(parsed: ParsedFile, lines: Iterable[str], local_tz: tzinfo = UTC) -> ParsedFile:
    parsed.kind = "error_log"
    parsed.flavor = "postgresql"
    episode: Episode | None = None
    for text in lines:
        match = LINE.match(text)
        if not match:
            continue
        moment = _moment(parsed, match, local_tz)
        message = match.group("message")
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
        elif message.startswith(_FAILED) or match.group("level") == "PANIC":
            if episode.ready_at is None:
                episode.failed = True
                episode.failure = episode.failure or message[:300]
    return parsed
