"""What of the server's files the operating system's page cache holds when the server restarts
after the crash, and, for a cold restart, those files evicted first: a machine that lost its
memory reads everything from its disk. A warm restart (a crashed process on a machine that keeps
running) reads whatever the cache still holds.

The server's folder is its OS user's: it is walked with directory descriptors, no link is
followed, and only regular files count. Each file is opened without following a link, synced
(a dirty page cannot be evicted), advised away (POSIX_FADV_DONTNEED), and its resident pages
counted with mincore(2) on a read-only mapping that is never touched.

The count follows the file's data, not its size: the server's user can make a file of 256 GiB
that holds nothing (`truncate`), which counted by its size had cost root 14.7 s and 144 MB at
every restart. Only the stretches that hold data (SEEK_DATA, SEEK_HOLE) are mapped, at most
WINDOW_BYTES at a time. Standard library only."""

import contextlib
import ctypes
import ctypes.util
import errno
import mmap
import os
import stat
from pathlib import Path

MODES = ("warm", "cold")
_LIBC = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
_LIBC.mmap.restype = ctypes.c_void_p
_LIBC.mmap.argtypes = (
    ctypes.c_void_p,
    ctypes.c_size_t,
    ctypes.c_int,
    ctypes.c_int,
    ctypes.c_int,
    ctypes.c_long,
)
_LIBC.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
_LIBC.mincore.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p)
_MAP_FAILED = ctypes.c_void_p(-1).value
PAGE = mmap.PAGESIZE


# What one mapping spans at most: its residency vector is then 16 KiB, whatever the file's size.
WINDOW_BYTES = 64 * 2**20
# mincore(2) sets bit 0 of a page's byte when the page is resident; the other bits are reserved.
_RESIDENT_BIT = bytes(byte & 1 for byte in range(256))
# The windows mapped since the runner started: what the count cost, in mappings (tests read it).
windows_mapped = 0


def data_stretches(fd: int, size: int):
    """(start, end) of each stretch of the file's first `size` bytes that holds data, its holes
    skipped; the whole file where its filesystem cannot tell."""
    offset = 0
    while offset < size:
        try:
            start = os.lseek(fd, offset, os.SEEK_DATA)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # no data after `offset`
                return
            if exc.errno == errno.EINVAL:  # the filesystem cannot say: all of it is data
                yield offset, size
                return
            raise
        end = min(os.lseek(fd, start, os.SEEK_HOLE), size)
        if end <= start:  # cut short since it was measured
            return
        yield start, end
        offset = end


def resident_bytes(fd: int, size: int) -> int:
    """How much of an open file's data the page cache holds (whole pages), one window at a time."""
    held = counted_to = 0
    for start, end in data_stretches(fd, size):
        start = max(start - start % PAGE, counted_to)  # a mapping starts at a page; none counted twice
        end = -(-end // PAGE) * PAGE
        for window in range(start, end, WINDOW_BYTES):
            held += _resident_in_window(fd, window, min(WINDOW_BYTES, end - window))
        counted_to = max(counted_to, end)
    return held


def _resident_in_window(fd: int, offset: int, length: int) -> int:
    """The resident bytes of `length` bytes of the file from `offset` (a page's start)."""
    global windows_mapped
    address = _LIBC.mmap(None, length, mmap.PROT_READ, mmap.MAP_SHARED, fd, offset)
    if address in (None, _MAP_FAILED):
        raise OSError(ctypes.get_errno(), "mmap failed")
    windows_mapped += 1
    try:
        pages = (length + PAGE - 1) // PAGE
        vector = ctypes.create_string_buffer(pages)
        if _LIBC.mincore(address, length, vector) != 0:
            raise OSError(ctypes.get_errno(), "mincore failed")
        return (pages - vector.raw.translate(_RESIDENT_BIT).count(0)) * PAGE
    finally:
        _LIBC.munmap(address, length)


def _each_file(folder: Path, act) -> None:
    """`act(fd, size)` for each regular file under `folder`, none reached through a link; a file
    it cannot act on is left as it is (a cold restart then says what stayed cached)."""
    for _, _, files, dir_fd in os.fwalk(folder, follow_symlinks=False):
        for name in files:
            try:
                fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
            except OSError:
                continue  # a link, or gone since the listing
            try:
                info = os.fstat(fd)
                if stat.S_ISREG(info.st_mode):
                    act(fd, info.st_size)
            except OSError:
                continue
            finally:
                os.close(fd)


def before_restart(folder: Path, mode: str) -> dict:
    """The restart's cache, as the run records it, in one pass over the server's files: cold
    evicts each file first (a file it cannot evict stays cached, and is counted so); both say
    how much of them the cache holds."""
    found = {"mode": mode, "files": 0, "bytes": 0, "resident_bytes": 0}

    def visit(fd: int, size: int) -> None:
        if mode == "cold":
            with contextlib.suppress(OSError):
                os.fsync(fd)  # a dirty page cannot be evicted
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        held = min(size, resident_bytes(fd, size))  # first: a file it cannot count is not counted
        found["files"] += 1
        found["bytes"] += size
        found["resident_bytes"] += held

    _each_file(folder, visit)
    return found
