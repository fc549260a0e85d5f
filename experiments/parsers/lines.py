"""Reading log lines: streaming, decoding, noise prefixes, timestamps of every format."""

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone

# The host runner writes `error.log.stamped`: each line of the server's error log prefixed with
# the moment (Unix seconds, from the host's monotonic clock) it appeared. It is sharper than the
# server's own whole-second stamps, so it takes precedence.
RUNNER_STAMP = re.compile(r"^\[runner ([0-9]{9,11}\.[0-9]{1,9})\] ")

_NOISE_PREFIXES = (
    # docker compose: "db-1  | ", "friendica-db-1  | "
    re.compile(r"^[\w.-]+\s+\|\s"),
    # Rancher / kubernetes UI: "Sat, Jan 28 2023 3:55:27 am | "
    re.compile(r"^\w{3}, \w{3} \d{1,2} \d{4} \d{1,2}:\d{2}:\d{2} [ap]m \| "),
    # kubectl --timestamps: "2023-01-28T03:55:27.123456789Z "
    re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d+Z (?=\d{4}-\d{2}-\d{2}[ T])"),
    # syslog: "Jan 28 03:55:27 host mysqld[123]: "
    re.compile(r"^\w{3} [ \d]\d \d{2}:\d{2}:\d{2} \S+ (?:mysqld|mariadbd|mysqld_safe)\[\d+\]: "),
)

_ISO = re.compile(r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})?")
_SPACED = re.compile(r"^(\d{4})-(\d{2})-(\d{2}) ([ \d]\d):(\d{2}):(\d{2})")
_MYSQL55 = re.compile(r"^(\d{2})(\d{2})(\d{2}) ([ \d]\d):(\d{2}):(\d{2})")
# Where a line was glued to the next (no newline), a second timestamp starts mid-line.
GLUED = re.compile(r"(?<=\S)(?=\d{4}-\d{2}-\d{2}[ T][ \d]\d:\d{2}:\d{2})")

MAX_LINE_BYTES = 64 * 1024


@dataclass
class Line:
    number: int
    text: str
    moment: datetime | None
    runner_stamped: bool = False


def read_lines(handle, warn) -> Iterator[tuple[int, str]]:
    """Decoded lines of a binary file handle, one at a time; memory stays flat."""
    bad_lines = 0
    number = 0
    for number, raw in enumerate(handle, start=1):
        if len(raw) > MAX_LINE_BYTES:
            warn(f"line {number} is {len(raw)} bytes long; only its first {MAX_LINE_BYTES} are read")
            raw = raw[:MAX_LINE_BYTES]
        if b"\x00" in raw:
            bad_lines += 1
            raw = raw.replace(b"\x00", b"")
        yield number, raw.decode("utf-8", errors="replace").rstrip("\r\n")
    if bad_lines:
        warn(f"{bad_lines} line(s) hold NUL bytes (binary data or a torn write); they were cleaned")
    if number == 0:
        warn("the file is empty")


def strip_noise(text: str) -> str:
    for prefix in _NOISE_PREFIXES:
        match = prefix.match(text)
        if match:
            return text[match.end() :]
    return text


def parse_timestamp(text: str, local_tz: timezone = UTC) -> tuple[datetime | None, str]:
    """The timestamp a server put at the start of a line, and the rest of the line.

    Server-local times (MySQL 5.5/5.6, MariaDB) have no zone in the log: they are read in
    `local_tz`, UTC unless the caller knows better.
    """
    match = _ISO.match(text)
    if match:
        y, mo, d, h, mi, s, frac, zone = match.groups()
        micro = int((frac or "0").ljust(6, "0")[:6])
        tz = local_tz
        if zone == "Z":
            tz = UTC
        elif zone:
            sign = 1 if zone[0] == "+" else -1
            tz = timezone(sign * timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6])))
        try:
            moment = datetime(int(y), int(mo), int(d), int(h), int(mi), int(s), micro, tzinfo=tz)
        except ValueError:
            return None, text
        return moment, text[match.end() :]
    for pattern, century in ((_SPACED, 0), (_MYSQL55, 2000)):
        match = pattern.match(text)
        if match:
            y, mo, d, h, mi, s = (int(g) for g in match.groups())
            try:
                moment = datetime(century + y, mo, d, h, mi, s, tzinfo=local_tz)
            except ValueError:
                return None, text
            return moment, text[match.end() :]
    return None, text


def stamped_lines(numbered: Iterable[tuple[int, str]]) -> Iterator[Line]:
    """Lines with their best timestamp: the runner's where present, else the server's."""
    for number, raw in numbered:
        runner_moment = None
        stamp = RUNNER_STAMP.match(raw)
        if stamp:
            runner_moment = datetime.fromtimestamp(float(stamp.group(1)), tz=UTC)
            raw = raw[stamp.end() :]
        for piece in GLUED.split(strip_noise(raw)):
            server_moment, _ = parse_timestamp(piece)
            yield Line(number, piece, runner_moment or server_moment, runner_moment is not None)
