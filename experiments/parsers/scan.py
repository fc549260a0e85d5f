"""Finding the few lines of a large error log that the parser can act on, at grep's speed.

A production error log is mostly repeated warnings (aborted connections, page cleaner notes); the
lines about server starts and crash recovery are a handful per start. Running the parser's Python
state machine over every line would be ~50x slower than `grep`. Instead, Hyperscan (Intel's
multi-literal matcher, SIMD, released-GIL C) looks in 4 MiB blocks for the literal words every
parser pattern needs (`errorlog.TRIGGERS`), and only these lines are decoded and fed, with:

- the first line of the file (a log without start lines starts its first episode there);
- the lines after each one until one with a timestamp (a line without a timestamp borrows the
  next stamped line's moment; MariaDB's last apply batch ends at the next line, whatever it is).

The result is the same as reading every line (tests check this on every fixture). Without the
hyperscan package, every line is read.
"""

import logging
from collections.abc import Iterator
from typing import BinaryIO

from .lines import decode_line, has_timestamp, read_lines, warn_read

logger = logging.getLogger(__name__)

BLOCK_BYTES = 4 * 1024 * 1024
# A keyword line followed by thousands of un-timestamped lines is not a log we can date anyway.
MAX_CONTEXT_LINES = 200

try:
    import hyperscan
except ImportError:  # pragma: no cover - the package is a pinned dependency; this is for forks
    hyperscan = None

_databases: dict[tuple[bytes, ...], object] = {}


def _database(keywords: tuple[bytes, ...]):
    if keywords not in _databases:
        # NUL bytes are looked for too: such lines are counted (and cleaned) as in a full read.
        expressions = [_literal(k) for k in (*keywords, b"\x00")]
        database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        database.compile(
            expressions=expressions,
            ids=list(range(len(expressions))),
            elements=len(expressions),
            flags=[0] * len(expressions),
        )
        _databases[keywords] = database
    return _databases[keywords]


def _literal(keyword: bytes) -> bytes:
    # Hyperscan compiles regular expressions; the keywords are plain text.
    return b"".join(b"\\x%02x" % byte for byte in keyword)


def _blocks(handle: BinaryIO) -> Iterator[bytes]:
    """The file in blocks that end at a line end (the last one may not)."""
    carry = b""
    while True:
        data = handle.read(BLOCK_BYTES)
        if not data:
            if carry:
                yield carry
            return
        data = carry + data
        cut = data.rfind(b"\n") + 1
        if cut == 0:  # one line longer than a block: keep reading
            carry = data
            continue
        carry = data[cut:]
        yield data[:cut]


def keyword_lines(handle: BinaryIO, keywords: tuple[bytes, ...], warn) -> Iterator[tuple[int, str]]:
    """Numbered lines of the file that hold a keyword, with their context (see module doc)."""
    if hyperscan is None:
        yield from read_lines(handle, warn)
        return
    database = _database(keywords)
    number = 0  # lines before the current block
    context_left = 0  # lines still owed to the last keyword line
    first = True
    nul_lines = 0
    for block in _blocks(handle):
        ends: list[int] = []
        database.scan(block, match_event_handler=_collect_ends, context=ends)
        starts = {block.rfind(b"\n", 0, end) + 1 for end in ends}
        if first:
            starts.add(0)
            first = False
        queue = sorted(starts)
        queued = 0
        offset = counted_to = 0
        lines_before = number
        while offset < len(block):
            if not context_left:
                while queued < len(queue) and queue[queued] < offset:
                    queued += 1
                if queued == len(queue):
                    break
                offset = queue[queued]
            lines_before += block.count(b"\n", counted_to, offset)
            counted_to = offset
            end = block.find(b"\n", offset)
            end = len(block) if end < 0 else end + 1
            raw = block[offset:end]
            if b"\x00" in raw:
                nul_lines += 1
                raw = raw.replace(b"\x00", b"")
            text = decode_line(raw, lines_before + 1, warn)
            yield lines_before + 1, text
            if offset in starts:
                context_left = MAX_CONTEXT_LINES
            elif has_timestamp(text):
                context_left = 0
            else:
                context_left -= 1
            offset = end
        number = lines_before + block.count(b"\n", counted_to)
    warn_read(warn, nul_lines, empty=first)


def _collect_ends(_id, _start, end, _flags, ends: list[int]) -> None:
    ends.append(end)
