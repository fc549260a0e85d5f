"""Reading log lines: streaming, decoding, noise prefixes, timestamps of every format."""

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone, tzinfo

# The host runner writes `error.log.stamped`: each line of the server's error log prefixed with
# the moment (Unix seconds, from the host's monotonic clock) it appeared. It is sharper than the
# server's own whole-second stamps, so it takes precedence.
RUNNER_STAMP = re.compile(r"^\[runner ([0-9]{9,11}\.[0-9]{1,9})\] ")

_NOISE_PREFIXES = (
    # Indentation, and the "> " / " * " of a quote or comment a log was pasted into.
    re.compile(r"^\s*(?:[>*](?:\s+|$))?(?=\S)"),
    # docker compose: "db-1  | ", "friendica-db-1  | "; the service is the line's source
    re.compile(r"^(?P<source>[\w.-]+)\s+\|(?:\s|$)"),
    # kubectl logs --prefix: "[pod/mysql-0/mysql] "
    re.compile(r"^\[(?P<source>pod/[^\]\s]+)\] "),
    # Rancher / kubernetes UI: "Sat, Jan 28 2023 3:55:27 am | "
    re.compile(r"^\w{3}, \w{3} \d{1,2} \d{4} \d{1,2}:\d{2}:\d{2} [ap]m \| "),
    # kubectl --timestamps and `docker logs -t` (with the stray framing byte docker's stream
    # format leaves when copied raw): "~2016-10-13T18:57:46.586597078Z 2016-10-13 18:57:46 ..."
    re.compile(r"^[^\d\s]?\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d+Z (?=\d{4}-\d{2}-\d{2}[ T])"),
    # log shippers: "2017-02-02T20:27:06.007900Z app[mariadb.<uuid>]: "
    re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z \w+\[[^\]]*\]: "),
    # syslog: "Jan 28 03:55:27 host mysqld[123]: " or "Mar 15 12:41:54 host mysqld: "
    re.compile(r"^\w{3} [ \d]\d \d{2}:\d{2}:\d{2} \S+ (?:mysqld|mariadbd|mysqld_safe)(?:\[\d+\])?: "),
    # mariabackup's own lines: "[00] 2025-11-01 17:07:21 ..."
    re.compile(r"^\[\d{2}\] (?=\d{4}-)"),
)

# Terminal colours (docker compose logs colours each service's name): "\x1b[36mdb-1  |\x1b[0m ".
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")

_ZONE = r"(Z|[+-]\d{2}:\d{2})?"
_ISO = re.compile(r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?" + _ZONE)
# MariaDB and MySQL 5.6 ("2023-06-04  8:24:16", server-local), docker entrypoints add a zone.
_SPACED = re.compile(r"^(\d{4})-(\d{2})-(\d{2}) +([ \d]?\d):(\d{2}):(\d{2})(?:\.(\d{1,9}))?" + _ZONE)
# MySQL 5.5 and older, mysqld_safe, MariaDB crash banners: "130417 20:45:27", "160919  2:47:12".
_MYSQL55 = re.compile(r"^(\d{2})(\d{2})(\d{2}) +([ \d]?\d):(\d{2}):(\d{2})\b")
# ctime(), as TokuFT writes it: "Thu Jan 28 00:27:28 2016".
_CTIME = re.compile(
    r"^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) "
    r"+(\d{1,2}) (\d{2}):(\d{2}):(\d{2}) (\d{4})\b"
)
_MONTHS = {m: n for n, m in enumerate("Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split(), 1)}
# A time of day without a date, where someone trimmed the prefix: "17:44:18.811222 [Note] ..."
_TIME_ONLY = re.compile(r"^(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))? (?=\[)")
# Where a line was glued to the next (no newline), a second timestamp starts mid-line.
GLUED = re.compile(r"(?<=\S)(?=\d{4}-\d{2}-\d{2}[ T][ \d]\d:\d{2}:\d{2})")

MAX_LINE_BYTES = 64 * 1024
# Lines without a timestamp wait (in memory) for the next stamped line to lend them its moment.
MAX_PENDING_LINES = 2000
UNDATED_DAY = datetime(1970, 1, 1)


@dataclass
class Line:
    number: int | None  # None where the keyword scan skipped lines uncounted
    text: str
    moment: datetime | None
    runner_stamped: bool = False
    # Which container wrote it, where output of several was interleaved (docker compose, kubectl
    # --prefix); None for a plain log.
    source: str | None = None


def decode_line(raw: bytes, where: str, warn) -> str:
    if len(raw) > MAX_LINE_BYTES:
        warn(f"{where} is {len(raw)} bytes long; only its first {MAX_LINE_BYTES} are read")
        raw = raw[:MAX_LINE_BYTES]
    return raw.decode("utf-8", errors="replace").rstrip("\r\n")


def read_lines(handle, warn) -> Iterator[tuple[int, str]]:
    """Decoded lines of a binary file handle, one at a time; memory stays flat."""
    bad_lines = 0
    number = 0
    for number, raw in enumerate(handle, start=1):
        if b"\x00" in raw:
            bad_lines += 1
            raw = raw.replace(b"\x00", b"")
        yield number, decode_line(raw, f"line {number}", warn)
    warn_read(warn, bad_lines, empty=number == 0)


def warn_read(warn, nul_lines: int, empty: bool) -> None:
    if nul_lines:
        warn(f"{nul_lines} line(s) hold NUL bytes (binary data or a torn write); they were cleaned")
    if empty:
        warn("the file is empty")


def status_lines(lines: Iterable[str]) -> Iterator[str]:
    """Lines of a SHOW ENGINE ... STATUS output, `\\G` or tabular.

    Tabular output (mysql -e without \\G) puts the whole status in one cell with literal "\\n"
    escapes and "|" borders; split them back into lines.
    """
    for raw in lines:
        for text in raw.replace("\\n", "\n").split("\n"):
            yield text.strip().strip("|").strip()


def split_source(text: str) -> tuple[str | None, str]:
    """The container a line came from (where a prefix names one) and the server's own line,
    without what shippers, terminals and pasting put in front of it."""
    source = None
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    for prefix in _NOISE_PREFIXES:
        match = prefix.match(text)
        if match:
            source = match.groupdict().get("source") or source
            text = text[match.end() :]
    return source, text


def strip_noise(text: str) -> str:
    return split_source(text)[1]


def _zone(zone: str | None, local_tz: tzinfo) -> tzinfo:
    if zone == "Z":
        return UTC
    if zone:
        sign = 1 if zone[0] == "+" else -1
        return timezone(sign * timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6])))
    return local_tz


def _micros(fraction: str | None) -> int:
    return int((fraction or "0").ljust(6, "0")[:6])


def parse_timestamp(text: str, local_tz: tzinfo = UTC) -> tuple[datetime | None, str]:
    """The timestamp a server put at the start of a line, and the rest of the line.

    Server-local times (MySQL 5.5/5.6, MariaDB, TokuFT's ctime) carry no zone in the log: they are
    read in `local_tz`, UTC unless the caller knows better. A time of day without a date is read
    on 1970-01-01 (naive); `LineClock` puts it on the right day.
    """
    try:
        for pattern in (_ISO, _SPACED):
            if match := pattern.match(text):
                y, mo, d, h, mi, s, frac, zone = match.groups()
                moment = datetime(int(y), int(mo), int(d), int(h), int(mi), int(s), _micros(frac))
                return moment.replace(tzinfo=_zone(zone, local_tz)), text[match.end() :]
        if match := _MYSQL55.match(text):
            y, mo, d, h, mi, s = (int(g) for g in match.groups())
            return datetime(2000 + y, mo, d, h, mi, s, tzinfo=local_tz), text[match.end() :]
        if match := _CTIME.match(text):
            month, d, h, mi, s, y = match.groups()
            moment = datetime(int(y), _MONTHS[month], int(d), int(h), int(mi), int(s), tzinfo=local_tz)
            return moment, text[match.end() :]
        if match := _TIME_ONLY.match(text):
            h, mi, s, frac = match.groups()
            moment = UNDATED_DAY.replace(hour=int(h), minute=int(mi), second=int(s))
            moment = moment.replace(microsecond=_micros(frac))
            return moment, text[match.end() :]
    except ValueError:  # 2023-02-30 and the like: not a timestamp after all
        pass
    return None, text


def has_timestamp(raw: str) -> bool:
    return bool(RUNNER_STAMP.match(raw)) or parse_timestamp(strip_noise(raw))[0] is not None


class LineClock:
    """Gives every line a moment: its own timestamp, else the next stamped line's.

    A line without a timestamp (MySQL 5.5 InnoDB lines, progress digits, a Version line) was
    written by the time the next stamped line was, so it takes that line's moment. Times of day
    without a date (trimmed logs) go on the last date seen, rolling over at midnight.
    """

    def __init__(self, local_tz: tzinfo, warn):
        self.local_tz = local_tz
        self.warn = warn
        self.last: datetime | None = None
        self.warned_undated = False

    def place(self, moment: datetime) -> datetime:
        if moment.tzinfo is not None:
            return moment
        day = self.last.date() if self.last else UNDATED_DAY.date()
        if self.last is None and not self.warned_undated:
            self.warned_undated = True
            self.warn("lines carry a time of day but no date; they are dated 1970-01-01 (durations hold)")
        placed = datetime.combine(day, moment.time(), tzinfo=self.last.tzinfo if self.last else self.local_tz)
        if self.last and placed < self.last - timedelta(hours=12):
            placed += timedelta(days=1)
        return placed

    def lines(self, numbered: Iterable[tuple[int | None, str]]) -> Iterator[Line]:
        # Lines waiting for a moment, by source: in `docker compose logs` a database's unstamped
        # line takes its own service's next moment, not the web server's printed in between.
        pending: dict[str | None, list[Line]] = {}
        last_of: dict[str | None, datetime] = {}
        waiting = 0
        for number, raw in numbered:
            runner_moment = None
            stamp = RUNNER_STAMP.match(raw)
            if stamp:
                runner_moment = datetime.fromtimestamp(float(stamp.group(1)), tz=UTC)
                raw = raw[stamp.end() :]
            source, text = split_source(raw)
            for piece in GLUED.split(text):
                server_moment, _ = parse_timestamp(piece, self.local_tz)
                moment = runner_moment or (server_moment and self.place(server_moment))
                if moment is None:
                    pending.setdefault(source, []).append(Line(number, piece, None, source=source))
                    waiting += 1
                    if waiting >= MAX_PENDING_LINES:
                        for waiting_source, lines in pending.items():
                            yield from self._release(lines, last_of.get(waiting_source, self.last))
                        waiting = 0
                    continue
                self.last = last_of[source] = moment
                waiting -= len(pending.get(source, ()))
                yield from self._release(pending.get(source, []), moment)
                yield Line(number, piece, moment, runner_moment is not None, source)
        for waiting_source, lines in pending.items():
            yield from self._release(lines, last_of.get(waiting_source, self.last))

    @staticmethod
    def _release(pending: list[Line], moment: datetime | None) -> Iterator[Line]:
        for line in pending:
            line.moment = moment
            yield line
        pending.clear()


def stamped_lines(
    numbered: Iterable[tuple[int | None, str]], local_tz: tzinfo = UTC, warn=None
) -> Iterator[Line]:
    """Lines with their best timestamp: the runner's where present, else the server's."""
    return LineClock(local_tz, warn or (lambda _: None)).lines(numbered)
