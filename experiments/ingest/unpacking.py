"""Reading a .tar.gz that someone else made (an experiment's export, a host's run bundle) within
bounds, before and while it is read. No Django.

A gzip bomb is a few megabytes that unpack to terabytes: the bound is on what the gzip stream
yields, counted as it is decompressed, so nothing past the bound is ever unpacked (tar's own
headers, pax records included, are counted too). Members are counted as they are listed. A cut or
corrupt stream, anywhere in it, is an `UnpackRefused` with the reason, never an exception from
deep in tarfile, gzip or zlib.
"""

import gzip
import io
import tarfile
import zlib
from dataclasses import dataclass
from typing import BinaryIO

# What a damaged gzip or tar stream raises, depending on where it breaks.
READ_ERRORS = (tarfile.TarError, OSError, EOFError, zlib.error)


class UnpackRefused(ValueError):
    """The archive is not read: too large unpacked, too many members, or not a readable .tar.gz."""


@dataclass(frozen=True)
class Limits:
    unpacked_bytes: int
    members: int


class _Bounded(io.RawIOBase):
    """The decompressed stream, refusing to yield (or seek to) more than `limit` bytes."""

    def __init__(self, stream: gzip.GzipFile, limit: int):
        super().__init__()
        self._stream, self._limit = stream, limit

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._stream.tell()

    def _refuse(self) -> None:
        raise UnpackRefused(
            f"the archive unpacks to more than {self._limit:,} bytes: refused before reading it"
        )

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        target = offset + (self._stream.tell() if whence == io.SEEK_CUR else 0)
        if whence == io.SEEK_END:
            self._refuse()  # finding the end would unpack everything
        if target > self._limit:
            self._refuse()
        return self._stream.seek(target)

    def read(self, size: int = -1) -> bytes:
        room = self._limit + 1 - self._stream.tell()
        data = self._stream.read(room if size is None or size < 0 else min(size, room))
        if self._stream.tell() > self._limit:
            self._refuse()
        return data

    def readinto(self, buffer) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


class BoundedTar:
    """A .tar.gz opened within `limits`; `members` lists its regular files by name. Use as a
    context manager; every failure to read is an UnpackRefused.

    With `first`, only that member (a manifest, which must come first) is listed when opened;
    `expect(names)` then lists the rest, refusing at once a file the manifest does not name, so
    an archive of millions of empty members stops at its second."""

    def __init__(self, fileobj: BinaryIO, limits: Limits, first: str | None = None):
        self._limits = limits
        self._count = self._total = 0
        self.members: dict[str, tarfile.TarInfo] = {}
        try:
            unpacked = _Bounded(gzip.GzipFile(fileobj=fileobj, mode="rb"), limits.unpacked_bytes)
            self._tar = tarfile.open(fileobj=unpacked, mode="r:")
            if first is None:
                self._list(None)
            else:
                member = self._next()
                if member is None or member.name != first or not member.isfile():
                    raise UnpackRefused(f"the archive does not begin with {first} (as an export does)")
                self.members[first] = member
        except UnpackRefused:
            raise
        except READ_ERRORS as exc:
            raise UnpackRefused(f"not a .tar.gz archive, or a damaged one ({_reason(exc)})") from exc

    def _next(self) -> tarfile.TarInfo | None:
        member = self._tar.next()
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

    def _list(self, allowed: set[str] | None) -> None:
        while (member := self._next()) is not None:
            if not member.isfile():
                continue
            if allowed is not None and member.name not in allowed:
                name = member.name[:200]
                raise UnpackRefused(f"the archive holds {name!r}, which the manifest does not list")
            self.members[member.name] = member

    def expect(self, names: set[str]) -> None:
        """List the members after the first, each of which must be one of `names`."""
        try:
            self._list(names)
        except UnpackRefused:
            raise
        except READ_ERRORS as exc:
            raise UnpackRefused(f"not a .tar.gz archive, or a damaged one ({_reason(exc)})") from exc

    def read(self, name: str, limit: int) -> bytes:
        """A member's content; UnpackRefused if it is missing, over `limit` bytes or cut short."""
        member = self.members.get(name)
        if member is None:
            raise UnpackRefused(f"the archive has no file {name}")
        if member.size > limit:
            raise UnpackRefused(f"{name} in the archive is {member.size:,} bytes; at most {limit:,} are read")
        try:
            data = self._tar.extractfile(member).read()
        except UnpackRefused:
            raise
        except READ_ERRORS as exc:
            raise UnpackRefused(f"{name} in the archive cannot be read: {_reason(exc)}") from exc
        if len(data) != member.size:
            raise UnpackRefused(
                f"{name} in the archive is cut short ({len(data):,} of {member.size:,} bytes)"
            )
        return data

    def __enter__(self) -> "BoundedTar":
        return self

    def __exit__(self, *exc) -> None:
        self._tar.close()


def _reason(exc: BaseException) -> str:
    if isinstance(exc, EOFError):
        return "the stream ends before the archive does: cut short in transfer?"
    return f"{exc.__class__.__name__}: {exc}".rstrip(": ")
