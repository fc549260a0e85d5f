"""RocksDB's own `LOG` (MyRocks): recovery_started / recovery_finished events, WAL replayed."""

import json
import re
from collections.abc import Iterable
from datetime import UTC, datetime, tzinfo

from experiments.parsers.model import Episode, ParsedFile

_EVENT = re.compile(r"EVENT_LOG_v1 (\{.*\})\s*$")
_OPEN = re.compile(r"^(\d{4})/(\d{2})/(\d{2})-(\d{2}):(\d{2}):(\d{2})\.(\d{6}) \S+\s+RocksDB version: (\S+)")
_RECOVERING_LOG = re.compile(r"Recovering log #([0-9]+)")


def _event_time(parsed: ParsedFile, event: dict) -> datetime | None:
    """The event's own stamp; None, with a warning, where it is no moment a clock can show."""
    micros = event.get("time_micros")
    if micros is None:
        return None
    if not isinstance(micros, int) or isinstance(micros, bool):
        parsed.warn(f"an event's time_micros {str(micros)[:30]} is no whole number; its phase stays open")
        return None
    try:
        return datetime.fromtimestamp(micros / 1e6, tz=UTC)
    except (OverflowError, OSError, ValueError):
        parsed.warn(f"an event's time_micros {str(micros)[:30]} is no possible moment; its phase stays open")
        return None


def _wal_numbers(parsed: ParsedFile, event: dict) -> list[int]:
    numbers = event.get("wal_files", [])
    if isinstance(numbers, list) and all(isinstance(n, int) and not isinstance(n, bool) for n in numbers):
        return list(numbers)
    parsed.warn(f"recovery_started lists wal_files that are not log numbers: {str(numbers)[:80]}")
    return []


def _opened_at(parsed: ParsedFile, match: re.Match, local_tz: tzinfo) -> datetime | None:
    y, mo, d, h, mi, s, us = (int(g) for g in match.groups()[:7])
    try:
        # RocksDB writes the host's local time.
        return datetime(y, mo, d, h, mi, s, us, tzinfo=local_tz)
    except ValueError:
        parsed.warn(f"a RocksDB start stamped with an impossible date: {match.group(0)[:40]}")
        return None


def parse_rocksdb_log(parsed: ParsedFile, lines: Iterable[str], local_tz: tzinfo = UTC) -> ParsedFile:
    parsed.kind = "rocksdb_log"
    episode: Episode | None = None
    for text in lines:
        if match := _OPEN.match(text):
            episode = Episode(started_at=_opened_at(parsed, match, local_tz))
            parsed.episodes.append(episode)
            parsed.server_version = parsed.server_version or f"RocksDB {match.group(8)}"
            continue
        if episode is None and ("EVENT_LOG_v1" in text or "Recovering log #" in text):
            episode = Episode()
            parsed.episodes.append(episode)
        if episode is None:
            continue
        if match := _RECOVERING_LOG.search(text):
            wal = int(match.group(1))
            if wal not in episode.wal_files:
                episode.wal_files.append(wal)
        elif match := _EVENT.search(text):
            try:
                event = json.loads(match.group(1))
            except json.JSONDecodeError:
                parsed.warn(f"an EVENT_LOG_v1 line is not valid JSON: {text[:120]}")
                continue
            name = event.get("event") if isinstance(event, dict) else None
            if name == "recovery_started":
                episode.engine = "rocksdb"
                episode.wal_files = _wal_numbers(parsed, event)
                episode.crash_recovery = bool(episode.wal_files)
                episode.open_phase("crash_recovery", _event_time(parsed, event))
                episode.open_phase("wal_replay", _event_time(parsed, event))
            elif name == "recovery_finished":
                episode.close_phase("wal_replay", _event_time(parsed, event))
                episode.close_phase("crash_recovery", _event_time(parsed, event))
    return parsed
