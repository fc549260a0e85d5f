"""Reading a .tar.gz that someone else made (an experiment's export, a host's run bundle) within
bounds, before and while it is read. No Django.

A gzip bomb is a few megabytes that unpack to terabytes: the bound is on what the gzip stream
yields, counted as it is decompressed, so nothing past the bound is ever unpacked (tar's own
headers, pax records included, are counted too). Members are counted as they pass; the stream
is read once, forward. A cut or corrupt stream, anywhere in it, is an `UnpackRefused` with the
reason, never an exception from deep in tarfile, gzip or zlib.
"""

import gzip
import io
import shutil
import tarfile
import tempfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import BinaryIO

# What a damaged gzip or tar stream raises, depending on where it breaks.
READ_ERRORS = (tarfile.TarError, OSError, EOFError, zlib.error)
SPOOL_MEMORY_BYTES = 64 * 1024 * 1024
COPY_BYTES = 1024 * 1024


class UnpackRefused(ValueError):
    """The archive is not read: too large unpacked, too many members, or not a readable .tar.gz."""


@dataclass(frozen=True)
class Limits:
    unpacked_bytes: int
    members: int


class _Bounded(io.RawIOBase):
    """The decompressed stream, read forward only, refusing to yield more than `limit` bytes."""

    def __init__(self, stream: gzip.GzipFile, limit: int):
        super().__init__()
        self._stream, self._limit = stream, limit

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        room = self._limit + 1 - self._stream.tell()
        data = self._stream.read(room if size is None or size < 0 else min(size, room))
        if self._stream.tell() > self._limit:
            raise UnpackRefused(
                f"the archive unpacks to more than {self._limit:,} bytes: refused before reading it"
            )
        return data

    def readinto(self, buffer) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


class BoundedTar:
    """A .tar.gz read in one forward pass within `limits`, when it is opened: `members` names its
    regular files (each name once), `read` gives one's content. Use as a context manager; every
    failure to read is an UnpackRefused.

    A member read out of order had rewound the gzip stream and decompressed it again from the
    start (half a megabyte took 110 s): the contents are kept as the stream passes, in an unnamed
    temporary file (in memory up to SPOOL_MEMORY_BYTES), never under a name the archive gives.
    `passed(tar, name)`, called as each file has been kept, may refuse the archive at once."""

    def __init__(
        self,
        fileobj: BinaryIO,
        limits: Limits,
        passed: Callable[["BoundedTar", str], None] | None = None,
    ):
        self._limits = limits
        self._count = self._total = 0
        self._spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_MEMORY_BYTES)
        self._kept: dict[str, tuple[int, int]] = {}  # name: (offset in the spool, size)
        try:
            unpacked = _Bounded(gzip.GzipFile(fileobj=fileobj, mode="rb"), limits.unpacked_bytes)
            with tarfile.open(fileobj=unpacked, mode="r|") as tar:
                while (member := self._next(tar)) is not None:
                    if member.isfile():
                        self._keep(tar, member)
                        if passed is not None:
                            passed(self, member.name)
        except UnpackRefused:
            self.close()
            raise
        except READ_ERRORS as exc:
            self.close()
            raise UnpackRefused(f"not a .tar.gz archive, or a damaged one ({_reason(exc)})") from exc
        except BaseException:
            self.close()
            raise

    @property
    def members(self) -> dict[str, int]:
        """Each regular file's size by its name, in the archive's order."""
        return {name: size for name, (_, size) in self._kept.items()}

    def _next(self, tar: tarfile.TarFile) -> tarfile.TarInfo | None:
        tar.members = []  # tarfile keeps every header it read: two million would be a gigabyte
        member = tar.next()
        if member is None:
            return None
        self._count += 1
        if self._count > self._limits.members:
            raise UnpackRefused(f"the archive holds more than {self._limits.members:,} files: refused")
        self._total += member.size
        if self._total > self._limits.unpacked_bytes:
            raise UnpackRefused(
                f"the archive's files add up to more than {self._limits.unpacked_bytes:,} bytes: refused"
            )
        return member

    def _keep(self, tar: tarfile.TarFile, member: tarfile.TarInfo) -> None:
        if member.name in self._kept:  # tar would take the last: two readers could see two files
            raise UnpackRefused(f"the archive holds {member.name[:200]!r} twice")
        offset = self._spool.seek(0, io.SEEK_END)
        shutil.copyfileobj(tar.extractfile(member), self._spool, COPY_BYTES)
        copied = self._spool.tell() - offset
        if copied != member.size:
            raise UnpackRefused(
                f"{member.name[:200]} in the archive is cut short ({copied:,} of {member.size:,} bytes)"
            )
        self._kept[member.name] = (offset, member.size)

    def read(self, name: str, limit: int) -> bytes:
        """A member's content; UnpackRefused if it is missing or over `limit` bytes."""
        if name not in self._kept:
            raise UnpackRefused(f"the archive has no file {name[:200]}")
        offset, size = self._kept[name]
        if size > limit:
            raise UnpackRefused(f"{name} in the archive is {size:,} bytes; at most {limit:,} are read")
        self._spool.seek(offset)
        return self._spool.read(size)

    def close(self) -> None:
        self._spool.close()

    def __enter__(self) -> "BoundedTar":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _reason(exc: BaseException) -> str:
    if isinstance(exc, EOFError):
        return "the stream ends before the archive does: cut short in transfer?"
    return f"{exc.__class__.__name__}: {exc}".rstrip(": ")
