"""RocksDB's own `LOG` (MyRocks): recovery_started / recovery_finished events, WAL replayed."""

import json
import re
from collections.abc import Iterable
from datetime import UTC, datetime, tzinfo

from experiments.parsers.model import Episode, ParsedFile

_EVENT = re.compile(r"EVENT_LOG_v1 (\{.*\})\s*$")
_OPEN = re.compile(r"^(\d{4})/(\d{2})/(\d{2})-(\d{2}):(\d{2}):(\d{2})\.(\d{6}) \S+\s+RocksDB version: (\S+)")
_RECOVERING_LOG = re.compile(r"Recovering log #([0-9]+)")


def _event_time(event: dict) -> datetime | None:
    micros = event.get("time_micros")
    return datetime.fromtimestamp(micros / 1e6, tz=UTC) if isinstance(micros, int) else None


def parse_rocksdb_log(parsed: ParsedFile, lines: Iterable[str], local_tz: tzinfo = UTC) -> ParsedFile:
    parsed.kind = "rocksdb_log"
    episode: Episode | None = None
    for text in lines:
        if match := _OPEN.match(text):
            y, mo, d, h, mi, s, us = (int(g) for g in match.groups()[:7])
            # RocksDB writes the host's local time.
            episode = Episode(started_at=datetime(y, mo, d, h, mi, s, us, tzinfo=local_tz))
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
            name = event.get("event")
            if name == "recovery_started":
                episode.engine = "rocksdb"
                episode.crash_recovery = bool(event.get("wal_files"))
                episode.wal_files = [int(w) for w in event.get("wal_files", [])]
                episode.open_phase("crash_recovery", _event_time(event))
                episode.open_phase("wal_replay", _event_time(event))
            elif name == "recovery_finished":
                episode.close_phase("wal_replay", _event_time(event))
                episode.close_phase("crash_recovery", _event_time(event))
    return parsed
