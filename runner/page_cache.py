"""What of the server's files the operating system's page cache holds when the server restarts
after the crash, and, for a cold restart, those files evicted first: a machine that lost its
memory reads everything from its disk. A warm restart (a crashed process on a machine that keeps
running) reads whatever the cache still holds.

The server's folder is its OS user's: it is walked with directory descriptors, no link is
followed, and only regular files count. Each file is opened without following a link, synced
(a dirty page cannot be evicted), advised away (POSIX_FADV_DONTNEED), and its resident pages
counted with mincore(2) on a read-only mapping that is never touched. Standard library only."""

import contextlib
import ctypes
import ctypes.util
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


def resident_bytes(fd: int, size: int) -> int:
    """How much of an open file the page cache holds (whole pages)."""
    if size == 0:
        return 0
    address = _LIBC.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
    if address in (None, _MAP_FAILED):
        raise OSError(ctypes.get_errno(), "mmap failed")
    try:
        pages = (size + PAGE - 1) // PAGE
        vector = ctypes.create_string_buffer(pages)
        if _LIBC.mincore(address, size, vector) != 0:
            raise OSError(ctypes.get_errno(), "mincore failed")
        return sum(byte & 1 for byte in vector.raw) * PAGE
    finally:
        _LIBC.munmap(address, size)


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
