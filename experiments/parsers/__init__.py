"""Log and report parsers: plain Python, no Django, streaming.

`parse_path(path)` or `parse_stream(name, handle)` detects what a file is and parses it into a
`ParsedFile` (see model.py; its `to_dict()` validates against parsed_file.schema.json). Bad input
gives warnings and `kind: "unknown"` or a partial result, never an exception. A parser that raises
(a bug, not bad input) leaves what it found and `parser_error`, which makes a run suspect.
"""

import io
import itertools
import logging
import re
from datetime import UTC, tzinfo
from pathlib import Path
from typing import BinaryIO

from experiments.parsers.errorlog import TRIGGERS, parse_error_log
from experiments.parsers.innodb_status import parse_innodb_status
from experiments.parsers.lines import decode_line, read_lines, split_source, stamped_lines, strip_noise
from experiments.parsers.model import Episode, LogSection, ParsedFile, Phase, RocksdbStatus, SysbenchReport
from experiments.parsers.postgres_log import (
    CSV_HINT,
    HINT,
    JSON_HINT,
    looks_like_postgres,
    parse_postgres_log,
    postgres_lines_kept,
)
from experiments.parsers.rocksdb_log import parse_rocksdb_log
from experiments.parsers.rocksdb_status import parse_rocksdb_status
from experiments.parsers.scan import keyword_lines
from experiments.parsers.sysbench import parse_sysbench

__all__ = [
    "Episode",
    "LogSection",
    "ParsedFile",
    "Phase",
    "RocksdbStatus",
    "SNIFF_LINES",
    "SysbenchReport",
    "detect_kind",
    "parse_bytes",
    "parse_path",
    "parse_stream",
    "reduce_error_log",
]

logger = logging.getLogger(__name__)

SNIFF_LINES = 400
# Where the head holds no server line, the sniff reads on for one this far: `docker compose logs`
# prints one service's whole log after another's, so mysqld's first line may come after an app's
# thousands (and a paste may open with a build's output).
SNIFF_MORE_BYTES = 8 * 1024 * 1024
_ERROR_LOG_HINT = re.compile(
    r"\[(?:Note|Warning|ERROR|System|Error)\]|InnoDB: |ready for connections|mysqld_safe"
    r"|(?:TokuFT|Tokudb) recovery|\[MY-[0-9]{6}\]|\[InnoDB\] "
)
_TRIGGER_BYTES = tuple(t.encode() for t in TRIGGERS)
# A line _server_line() takes, found in raw bytes ("^" at each line's start), and the words one
# of which each holds: none of them, no line (a search for each runs at memchr's speed).
_SERVER_LINE_BYTES = re.compile(
    b"(?m)" + b"|".join(f"(?:{p.pattern})".encode() for p in (_ERROR_LOG_HINT, HINT, CSV_HINT, JSON_HINT))
)
_SERVER_WORDS = tuple(
    word.encode()
    for word in (
        "[Note]", "[Warning]", "[ERROR]", "[System]", "[Error]", "InnoDB: ", "[InnoDB] ", "[MY-",
        "ready for connections", "mysqld_safe", "TokuFT recovery", "Tokudb recovery",
        "starting PostgreSQL", "database system ",
    )
)  # fmt: skip


def detect_kind(head: list[str]) -> str:
    text = "\n".join(head)
    if "INNODB MONITOR OUTPUT" in text or re.search(r"^\s*Log sequence number\s+[0-9]", text, re.M):
        return "innodb_status"
    if re.search(r"^\d{4}/\d{2}/\d{2}-\d{2}:\d{2}:\d{2}\.\d{6} \S+\s+RocksDB version:", text, re.M):
        return "rocksdb_log"
    if re.search(r"Type: DBSTATS|\*\* DB Stats \*\*|rocksdb\s+\|\s+DBSTATS", text):
        return "rocksdb_status"
    if re.search(r"^sysbench [0-9.]+|^(?:SQL|OLTP test) statistics:|^\[ [0-9]+s \] thds:", text, re.M):
        return "sysbench_report"
    if any(_server_line(line) for line in head):
        return "error_log"  # MySQL's family or PostgreSQL's: the server's own log either way
    return "unknown"


def _server_line(line: str) -> bool:
    return bool(_ERROR_LOG_HINT.search(strip_noise(line))) or looks_like_postgres(line)


def _sniff(handle: BinaryIO) -> list[str]:
    """The file's first lines and, where none of them is a server's, the first one that is (up to
    SNIFF_MORE_BYTES in); the handle is left at the start."""
    handle.seek(0)
    head = [text for _, text in itertools.islice(read_lines(handle, lambda _: None), SNIFF_LINES)]
    if detect_kind(head) == "unknown":
        handle.seek(0)
        block = handle.read(SNIFF_MORE_BYTES)
        first_word = min((at for word in _SERVER_WORDS if (at := block.find(word)) >= 0), default=-1)
        line_start = block.rfind(b"\n", 0, first_word) + 1
        if first_word >= 0 and (found := _SERVER_LINE_BYTES.search(block, line_start)):
            start = block.rfind(b"\n", 0, found.start()) + 1
            end = block.find(b"\n", found.end())
            head.append(decode_line(block[start : end if end >= 0 else len(block)], "", lambda _: None))
    handle.seek(0)
    return head


def _is_postgres(head: list[str]) -> bool:
    """PostgreSQL's log, unless a MySQL-family server's lines come from another service of the
    same interleaved output (a compose file with both: the MySQL-family lines are read)."""
    postgres, mysql = set(), set()
    for line in head:
        source, text = split_source(line)
        if looks_like_postgres(line):
            postgres.add(source)
        elif _ERROR_LOG_HINT.search(text):
            mysql.add(source)
    return bool(postgres) and not mysql - postgres


def _looks_binary(sample: bytes) -> bool:
    if not sample:
        return False
    control = sum(1 for b in sample if b < 9 or 13 < b < 32)
    return b"\x00" in sample[:1024] and control / len(sample) > 0.1


def parse_stream(name: str, handle: BinaryIO, local_tz: tzinfo = UTC, scan: bool = True) -> ParsedFile:
    """Parse a seekable binary handle. Never raises: a parser's own exception is kept in
    `parser_error` (and a warning) with whatever was found before it.

    `local_tz` is the zone of timestamps that carry none (MySQL 5.5/5.6, MariaDB, TokuFT).
    `scan=False` feeds every line of an error log to the parser instead of the keyword lines
    (the same result, slower: tests compare the two).
    """
    parsed = ParsedFile(file=name)
    try:
        sample = handle.read(8192)
        if _looks_binary(sample):
            parsed.warn("the file looks binary (NUL and control bytes), not a text log")
            return parsed
        head = _sniff(handle)
        kind = detect_kind(head)
        if kind == "error_log" and _is_postgres(head):
            parse_postgres_log(parsed, (text for _, text in read_lines(handle, parsed.warn)), local_tz)
            return parsed
        if kind == "error_log":
            if scan:
                numbered = keyword_lines(handle, _TRIGGER_BYTES, parsed.warn)
            else:
                numbered = read_lines(handle, parsed.warn)
            parse_error_log(parsed, stamped_lines(numbered, local_tz, parsed.warn))
            return parsed
        texts = (text for _, text in read_lines(handle, parsed.warn))
        if kind == "innodb_status":
            parse_innodb_status(parsed, texts)
        elif kind == "sysbench_report":
            parse_sysbench(parsed, texts)
        elif kind == "rocksdb_log":
            parse_rocksdb_log(parsed, texts, local_tz)
        elif kind == "rocksdb_status":
            parse_rocksdb_status(parsed, texts)
        else:
            parsed.warn(
                "unknown format: not a MySQL/MariaDB/Percona error log, PostgreSQL server log, RocksDB LOG, "
                "InnoDB or RocksDB status, or sysbench report"
            )
    except Exception as exc:  # a parser bug must not lose the user's upload or crash ingest...
        logger.exception("parser failed on %s", name)
        # ...nor hide: the error is on the result, and whoever uses it says so (a run is suspect)
        parsed.parser_error = f"{exc.__class__.__name__}: {exc}"[:300]
        parsed.warn(f"the parser stopped early on an unexpected error ({parsed.parser_error})")
    return parsed


def reduce_error_log(handle: BinaryIO) -> bytes:
    """The lines of an error log the parser reads (keyword lines and their context), as bytes.

    Parsing them gives the same result as parsing the whole file: a large log can be stored
    this way and re-parsed later.
    """
    if _is_postgres(_sniff(handle)):  # its own lines, not MySQL's keywords
        texts = (text for _, text in read_lines(handle, lambda _: None))
        return b"".join(text.encode() + b"\n" for text in postgres_lines_kept(texts))
    lines = keyword_lines(handle, _TRIGGER_BYTES, lambda _: None)
    return b"".join(text.encode() + b"\n" for _, text in lines)


def parse_path(path: str | Path, local_tz: tzinfo = UTC, scan: bool = True) -> ParsedFile:
    path = Path(path)
    try:
        with path.open("rb") as handle:
            return parse_stream(str(path), handle, local_tz, scan)
    except OSError as exc:
        parsed = ParsedFile(file=str(path))
        parsed.warn(f"cannot read the file: {exc.strerror or exc}")
        return parsed


def parse_bytes(name: str, content: bytes, local_tz: tzinfo = UTC, scan: bool = True) -> ParsedFile:
    return parse_stream(name, io.BytesIO(content), local_tz, scan)
