"""Byte sizes as users write them (`256M`, `1G`) and as servers take them."""

import math
import re

_SIZE = re.compile(r"^([1-9][0-9]{0,6})\s?([KMGT])(?:I?B)?$")
# What parse_size takes as typed: any case, spaces around ("256M", " 1 gib ").
SIZE_TEXT = r"^\s*[1-9][0-9]{0,6}\s?[KMGTkmgt](?:[iI]?[bB])?\s*$"
_MULTIPLIER = {"K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}
MIB, GIB = 1024**2, 1024**3
# Pages, charts and reports count bytes in binary units, as the servers' settings do (256M is
# 256 MiB). Names of the API that say "mb" (`redo_apply_mb_per_s`, `write_mb_per_s`) keep their
# decimal values (10^6 bytes) for the scripts that read them: a value in MB times this is in MiB.
MB_PER_MIB = 1e6 / MIB


class SizeError(ValueError):
    pass


def counted(count: int, noun: str, plural: str = "") -> str:
    """'1 run', '2 runs', '1,200 runs': a count and its noun, agreeing."""
    return f"{count:,} {noun if count == 1 else plural or noun + 's'}"


def parse_size(text: str) -> int:
    """`"256M"` -> 268435456. A unit is required: a bare number is ambiguous (bytes? MB?)."""
    if not isinstance(text, str):
        raise SizeError(f"{text!r} is not a size: write it as a string with a unit, like '256M'")
    match = _SIZE.match(text.strip().upper())
    if not match:
        raise SizeError(f"{text!r} is not a size: use a whole number and a unit K, M, G or T, like '256M'")
    number, unit = match.groups()
    return int(number) * _MULTIPLIER[unit]


def format_size(size_bytes: int | None) -> str:
    """268435456 -> `256M`; the largest unit that divides exactly, else bytes."""
    if size_bytes is None:
        return ""
    for unit in ("T", "G", "M", "K"):
        if size_bytes and size_bytes % _MULTIPLIER[unit] == 0:
            return f"{size_bytes // _MULTIPLIER[unit]}{unit}"
    return str(size_bytes)


_ROW_ID = re.compile(r"^[0-9]{1,19}$")  # ASCII digits ("²" is a digit to str.isdigit)
MAX_ROW_ID = 2**63 - 1  # bigint, as the API's schema says an id is


def as_row_id(text: object) -> int | None:
    """A row id as typed in a query ("42"), or None when the text is not one."""
    if isinstance(text, str) and _ROW_ID.match(text.strip()):
        text = int(text.strip())
    if isinstance(text, int) and not isinstance(text, bool) and 0 <= text <= MAX_ROW_ID:
        return text
    return None


def below_resolution(seconds: float | None, resolution_s: float | None) -> bool:
    """A duration shorter than its timing could tell (its first and last lines stamped alike)."""
    return seconds is not None and bool(resolution_s) and seconds < resolution_s


def seconds_text(value: float) -> str:
    """A finding's duration: three significant digits, whole seconds from 100 s ('0.0181 s', '391 s')."""
    return f"{value:.3g} s" if value < 100 else f"{value:,.0f} s"


def duration_text(seconds: float | None, resolution_s: float | None = None) -> str:
    """'1.234 s'; '< 5 ms' below the resolution its lines were timed at (which is not zero);
    'not measured' where nothing timed it."""
    if seconds is None:
        return "not measured"
    if below_resolution(seconds, resolution_s):
        if resolution_s >= 1:
            return f"< {resolution_s:g} s"
        if resolution_s >= 0.001:
            return f"< {resolution_s * 1000:g} ms"
        return f"< {resolution_s * 1e6:g} µs"
    return f"{seconds:.3f} s"


_BINARY_UNITS = (("TiB", 4), ("GiB", 3), ("MiB", 2), ("KiB", 1))


def binary_bytes(size: float) -> str:
    """A volume as the servers' own settings count it (binary): '609 MiB', '1.25 GiB', '512 KiB'."""
    for unit, power in _BINARY_UNITS:
        if abs(size) >= 1024**power:
            value = size / 1024**power
            return f"{value:,.0f} {unit}" if value >= 100 else f"{value:.3g} {unit}"
    return f"{size:,.0f} bytes"


def binary_ticks(values: list, log: bool = False, most: int = 8) -> tuple[list[float], list[str]]:
    """Tick positions (bytes) and their labels in binary units for a chart axis over these values:
    '256 MiB', '1 GiB'. Plotly's own byte ticks are SI ('268M'), which no server setting reads as."""
    finite = [float(v) for v in values if v is not None and v == v and v >= 0]
    if not finite or max(finite) <= 0:
        return [], []
    high = max(finite)
    if log:
        low = min(v for v in finite if v > 0)
        first, last = math.floor(math.log2(low)), math.ceil(math.log2(high))
        every = max(1, math.ceil((last - first + 1) / most))
        ticks = [2.0**k for k in range(first, last + 1, every)]
    else:  # steps of 1, 2, 2.5 or 5 of one unit, all labelled in it
        raw = high / (most - 2)
        power = next((p for _, p in _BINARY_UNITS if raw >= 1024**p), 0)
        while True:
            scaled = raw / 1024**power
            magnitude = 10 ** math.floor(math.log10(scaled)) if scaled > 0 else 1
            step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= scaled)
            count = math.floor(high / 1024**power / step) + 2
            # counting past 1000 of a unit ("2500 KiB", "1000 MiB"): label in the next one up
            if step * (count - 1) < 1000 or power == _BINARY_UNITS[0][1]:
                break
            power += 1
        unit = next((u for u, p in _BINARY_UNITS if p == power), "B")
        ticks = [step * i * 1024**power for i in range(count)]
        return ticks, ["0"] + [f"{step * i:g} {unit}" for i in range(1, count)]
    return ticks, [binary_bytes(t) for t in ticks]  # powers of two: whole numbers of a unit


def resolution_note(result: dict) -> str:
    """How many of the runs compared were shorter than their log resolves (cells.resolved): they
    count at the resolution, so a reader knows a ratio stands on an upper bound of theirs."""
    raised = result.get("at_resolution")
    if not raised:
        return ""
    runs, limit = raised["runs"], duration_text(0.0, raised["seconds"]).removeprefix("< ")
    return f" ({runs} run{'s' if runs > 1 else ''} shorter than the log resolves, counted as {limit})"
