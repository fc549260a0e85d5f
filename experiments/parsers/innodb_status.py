"""The LOG section of SHOW ENGINE INNODB STATUS, any version, `\\G` or tabular."""

import re
from collections.abc import Iterable

from experiments.parsers.lines import status_lines
from experiments.parsers.model import LogSection, ParsedFile

_FIELDS = (
    ("lsn", re.compile(r"^Log sequence number\s+([0-9]+)(?:\s+([0-9]+))?")),
    ("flushed_lsn", re.compile(r"^Log flushed up to\s+([0-9]+)(?:\s+([0-9]+))?")),
    ("pages_flushed_lsn", re.compile(r"^Pages flushed up to\s+([0-9]+)(?:\s+([0-9]+))?")),
    ("checkpoint_lsn", re.compile(r"^Last checkpoint at\s+([0-9]+)(?:\s+([0-9]+))?")),
    ("checkpoint_age", re.compile(r"^Checkpoint age\s+([0-9]+)")),
    ("log_capacity", re.compile(r"^Log capacity\s+([0-9]+)")),
)


def _lsn(match: re.Match) -> int:
    high, low = match.group(1), match.lastindex and match.lastindex > 1 and match.group(2)
    if low:
        # Before 5.5, an LSN was printed as two 32-bit words: "Log sequence number 0 1234".
        return (int(high) << 32) + int(low)
    return int(high)


def parse_innodb_status(parsed: ParsedFile, lines: Iterable[str]) -> ParsedFile:
    parsed.kind = "innodb_status"
    section = LogSection()
    in_log = False
    for text in status_lines(lines):
        if text == "LOG":
            in_log = True
            continue
        if in_log and re.match(r"^-{3,}$|^=+$", text):
            continue
        if in_log and re.match(r"^[A-Z][A-Z /]+$", text) and text != "LOG":
            in_log = False
        if not in_log:
            continue
        for name, pattern in _FIELDS:
            match = pattern.match(text)
            if match and getattr(section, name) is None:
                setattr(section, name, _lsn(match))
    if section.lsn is None:
        parsed.warn("no LOG section with a log sequence number was found")
    if section.checkpoint_age is None and section.lsn is not None and section.checkpoint_lsn:
        section.checkpoint_age = section.lsn - section.checkpoint_lsn
    parsed.log = section
    return parsed
