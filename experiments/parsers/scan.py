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
import os
from collections import deque
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import BinaryIO

from experiments.parsers.lines import MAX_PENDING_LINES, decode_line, has_timestamp, read_lines, warn_read

logger = logging.getLogger(__name__)

BLOCK_BYTES = 4 * 1024 * 1024
SCAN_THREADS = min(2, os.cpu_count() or 1)
# As many as the clock keeps waiting for a stamp (lines.MAX_PENDING_LINES): both read alike.
MAX_CONTEXT_LINES = MAX_PENDING_LINES

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


def _blocks(handle: BinaryIO, buffers: list[bytearray]) -> Iterator[tuple[bytearray, int]]:
    """The file as (buffer, length) blocks that end at a line end (the last one may not).

    The buffers are reused in turn: a block stays valid while the next len(buffers) - 1 are
    produced. Fresh 4 MiB objects per block would cost as much as the scan itself.
    """
    turn = 0
    carry = b""  # an unfinished line, moved to the front of the next buffer
    while True:
        buffer = buffers[turn % len(buffers)]
        buffer[: len(carry)] = carry
        read = handle.readinto(memoryview(buffer)[len(carry) :])
        filled = len(carry) + read
        if not read:
            if carry:
                yield buffer, len(carry)
            return
        cut = buffer.rfind(b"\n", 0, filled) + 1
        if cut == 0:  # one line longer than the buffer: grow it and keep reading
            carry = bytes(buffer[:filled])
            if filled == len(buffer):
                buffer.extend(bytes(len(buffer)))
            continue
        carry = bytes(buffer[cut:filled])
        yield buffer, cut
        turn += 1


def _scanned_blocks(handle: BinaryIO, database) -> Iterator[tuple[bytearray, int, list[int]]]:
    """Blocks with the end offsets of their keyword matches; the next block is scanned (and the
    one after read) on other cores while the caller reads this one."""
    with ThreadPoolExecutor(max_workers=SCAN_THREADS) as pool:
        scratches = [hyperscan.Scratch(database) for _ in range(SCAN_THREADS)]
        in_flight: deque = deque()

        def oldest_scanned() -> tuple[bytearray, int, list[int]]:
            job, buffer, length, ends = in_flight.popleft()
            job.result()
            return buffer, length, ends

        buffers = [bytearray(BLOCK_BYTES) for _ in range(SCAN_THREADS + 1)]
        for turn, (buffer, length) in enumerate(_blocks(handle, buffers)):
            ends: list[int] = []
            view = memoryview(buffer)[:length]
            scratch = scratches[turn % SCAN_THREADS]
            job = pool.submit(
                database.scan, view, match_event_handler=_collect_ends, context=ends, scratch=scratch
            )
            in_flight.append((job, buffer, length, ends))
            if len(in_flight) == SCAN_THREADS:
                yield oldest_scanned()
        while in_flight:
            yield oldest_scanned()


def keyword_lines(handle: BinaryIO, keywords: tuple[bytes, ...], warn) -> Iterator[tuple[int | None, str]]:
    """Lines of the file that hold a keyword, with their context (see module doc).

    Lines are not numbered: counting every line end would cost half the scan.
    """
    if hyperscan is None:
        yield from read_lines(handle, warn)
        return
    database = _database(keywords)
    context_left = 0  # lines still owed to the last keyword line
    first = True
    nul_lines = 0
    position = 0  # of the block in the file
    for block, length, ends in _scanned_blocks(handle, database):
        starts = {block.rfind(b"\n", 0, end) + 1 for end in ends}
        if first:
            starts.add(0)
            first = False
        queue = sorted(starts)
        queued = 0
        offset = 0
        while offset < length:
            if not context_left:
                while queued < len(queue) and queue[queued] < offset:
                    queued += 1
                if queued == len(queue):
                    break
                offset = queue[queued]
            end = block.find(b"\n", offset, length)
            end = length if end < 0 else end + 1
            raw = bytes(block[offset:end])
            if b"\x00" in raw:
                nul_lines += 1
                raw = raw.replace(b"\x00", b"")
            text = decode_line(raw, f"the line at byte {position + offset}", warn)
            yield None, text
            if offset in starts:
                context_left = MAX_CONTEXT_LINES
            elif has_timestamp(text):
                context_left = 0
            else:
                context_left -= 1
            offset = end
        position += length
    warn_read(warn, nul_lines, empty=first)


def _collect_ends(_id, _start, end, _flags, ends: list[int]) -> None:
    ends.append(end)
