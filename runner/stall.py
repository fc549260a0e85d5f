"""Whether a restart after the crash still makes progress, and the evidence where it stopped.

A recovery short of buffer pool can stop for good: MySQL 9.7 on a 256M pool with 320 MiB of redo
ran InnoDB's initialization for 8 minutes writing 247,000 "Difficult to find free blocks in the
buffer pool" lines; the same datadir recovered in 12.4 s with a 1G pool. Waiting for the start
timeout (600 s, three attempts) held the host for 45 minutes and said nothing of why.

Progress is what a recovery does and a stuck one does not: its processes read or write (the redo,
the pages; what they write to the error log does not count), a thread of theirs waits on the disk
(state D: the kernel counts a read when it is asked, so a restart whose reads queue behind a
storage class's cap counts nothing for seconds while the disk works for it), or its log gains a
line that is not one of the engine's signs of a stall. CPU time is not progress: a thread
looking for a free block spins. Where nothing moved for `after_s`, the restart has stalled: once,
with the evidence, and no retry (the same datadir stalls again). Standard library only.

The same signs bound every start's wait: the start timeout counts from the last one, never from
the spawn, so a recovery still moving is never cut off (seed 000's 8 GiB on hdd-raid10 was killed
at 600 s, 97% through its redo). Where a start has no stall watch of its own (the loaded
dataset's first start, the clean restart), `Progress` keeps the same count without ending it.
"""

import contextlib
import math
import time
from pathlib import Path

from .errors import RunFailed
from .resources import IO_FIELDS, listing, process_tree

# Bytes the server's processes read or wrote (less its error log's growth) that count as moving:
# a recovery reads its redo and pages by the megabyte; a stuck one writes only its warnings.
PROGRESS_BYTES = 1 << 20
# How often the server's I/O counts each byte of its error log: its write() calls (wchar) and
# the pages they dirty (write_bytes, counted when dirtied, before the kernel writes them back).
LOG_COUNTED = 2
# The server's own words quoted as evidence (its last sign of a stall), at most.
QUOTED_CHARS = 400
# How often Progress reads the server's process tree (the start's timeout is minutes).
READ_EVERY_S = 0.25


class RecoveryStalled(RunFailed):
    """The restart stopped progressing: a result of the run (permanent: the same datadir stalls
    again), with `evidence` for the dashboard."""

    def __init__(self, message: str, evidence: dict):
        super().__init__(message, permanent=True)
        self.evidence = evidence


def tree_io(pid: int) -> tuple[int, bool]:
    """Bytes the process `pid` and its descendants read and wrote (disk and system calls, as
    resources.py counts them), and whether one of their threads waits on the disk (state D). A
    process's /proc/PID/io holds its ended threads and reaped children, so the sum of the live
    tree does not go back when a child ends."""
    total, on_disk = 0, False
    for current in process_tree(pid):
        with contextlib.suppress(OSError, ValueError):
            lines = Path(f"/proc/{current}/io").read_text().splitlines()
            fields = dict(line.split(": ") for line in lines)
            total += sum(int(fields.get(name, 0)) for name in IO_FIELDS)
        for task in listing(f"/proc/{current}/task"):
            with contextlib.suppress(OSError, IndexError):
                state = Path(f"/proc/{current}/task/{task}/stat").read_text().rsplit(")", 1)[1].split()[0]
                on_disk |= state == "D"
    return total, on_disk


class StallWatch:
    """Polled while the restart is awaited: `check()` raises RecoveryStalled once nothing moved
    for `after_s`. `io()` is the server's bytes read and written so far (runner.resources),
    `stamper` the error log's reader, `signs` the engine's words for a stall."""

    def __init__(self, io, stamper, signs: tuple[str, ...], after_s: float, on_disk=lambda: False):
        self.io, self.stamper, self.signs, self.after_s = io, stamper, signs, after_s
        self.on_disk = on_disk  # whether a thread of the server's waits on the disk now
        self.started = self.moved_at = time.monotonic()
        self.moved_io, self.lines_read, self.signs_seen = self._io_less_log(), stamper.line_count(), 0
        self.last_sign = self.last_line = ""

    def _io_less_log(self) -> int:
        # the log counts twice: its write() calls, and the page-cache pages they dirty
        return self.io() - LOG_COUNTED * self.stamper.bytes_read

    def check(self) -> None:
        """Raise RecoveryStalled where nothing moved for after_s; else note what moved."""
        now = time.monotonic()
        lines = self.stamper.texts(self.lines_read)
        self.lines_read += len(lines)
        said = False
        for text in lines:
            if any(sign in text for sign in self.signs):
                self.signs_seen += 1
                self.last_sign = text
            else:
                said, self.last_line = True, text
        io = self._io_less_log()
        if said or io - self.moved_io >= PROGRESS_BYTES or self.on_disk():
            self.moved_at, self.moved_io = now, io
        elif now - self.moved_at >= self.after_s:
            raise RecoveryStalled(self.sentence(now), self.evidence(now))

    def evidence(self, now: float) -> dict:
        return {
            "still_s": round(now - self.moved_at, 1),
            "restart_s": round(now - self.started, 1),
            "stall_lines": self.signs_seen,
            "stall_line": self.last_sign[-QUOTED_CHARS:],
            "last_line": self.last_line[-QUOTED_CHARS:],
        }

    def sentence(self, now: float) -> str:
        """'recovery stalled: nothing moved for 90 s, from 14 s into the restart (...)'"""
        said = (
            f"; it wrote {self.signs_seen:,} lines like: {self.last_sign[-QUOTED_CHARS:]}"
            if self.signs_seen
            else ""
        )
        last = f"; its last other line: {self.last_line[-QUOTED_CHARS:]}" if self.last_line else ""
        return (
            f"recovery stalled: nothing moved for {now - self.moved_at:.0f} s, from "
            f"{self.moved_at - self.started:.0f} s into the restart (no reads or writes but to its own "
            f"log, no wait on the disk, no new line in it){said}{last}"
        )


class Progress(StallWatch):
    """A start's signs of progress, counted as StallWatch counts them, that never end it: the
    start timeout alone does, counted from `moved_at`."""

    def __init__(self, pid: int, stamper, signs: tuple[str, ...] = ()):
        self.pid, self.reading, self.read_at = pid, (0, False), -math.inf
        super().__init__(self._read_io, stamper, signs, math.inf, on_disk=lambda: self.reading[1])

    def _read_io(self) -> int:
        """The tree's bytes (its state kept for on_disk), read at most every READ_EVERY_S: the
        start's wait polls every 5 ms, and its reading would take a share of the CPU from the
        server it waits for."""
        now = time.monotonic()
        if now - self.read_at >= READ_EVERY_S:
            self.reading, self.read_at = tree_io(self.pid), now
        return self.reading[0]
