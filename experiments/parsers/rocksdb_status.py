"""SHOW ENGINE ROCKSDB STATUS: what the WAL holds and what the memtables have not flushed.

The figures that bear on a MyRocks crash recovery: WAL bytes written and synced (what replay may
read), keys written, and the unflushed memtable bytes (what replay must rebuild).
"""

import re
from collections.abc import Iterable

from experiments.parsers.lines import status_lines
from experiments.parsers.model import ParsedFile, RocksdbStatus

_TICKERS = {
    "rocksdb.wal.bytes": "wal_bytes",
    "rocksdb.wal.synced": "wal_syncs",
    "rocksdb.bytes.written": "bytes_written",
    "rocksdb.number.keys.written": "keys_written",
}
_TICKER = re.compile(r"(rocksdb\.[a-z0-9.]+) COUNT : ([0-9]+)\s*$")
_MEMTABLE = re.compile(r"^MemTable (Total|Unflushed): ([0-9]+)")
_UPTIME = re.compile(r"^Uptime\(secs\): ([0-9.]+) total")
_STALL = re.compile(r"^Cumulative stall: .*?, ([0-9.]+) percent")


def parse_rocksdb_status(parsed: ParsedFile, lines: Iterable[str]) -> ParsedFile:
    parsed.kind = "rocksdb_status"
    status = RocksdbStatus()
    for text in status_lines(lines):
        if match := _TICKER.search(text):
            name = _TICKERS.get(match.group(1))
            if name and getattr(status, name) is None:
                setattr(status, name, int(match.group(2)))
        elif match := _MEMTABLE.match(text):
            field = "memtable_bytes" if match.group(1) == "Total" else "memtable_unflushed_bytes"
            setattr(status, field, int(match.group(2)))
        elif (match := _UPTIME.match(text)) and status.uptime_seconds is None:
            status.uptime_seconds = float(match.group(1))
        elif (match := _STALL.match(text)) and status.stall_percent is None:
            status.stall_percent = float(match.group(1))
    if status.wal_bytes is None and status.memtable_bytes is None:
        parsed.warn("no WAL or memtable figures were found in this RocksDB status")
    parsed.rocksdb = status
    return parsed
