"""Byte sizes as users write them (`256M`, `1G`) and as servers take them."""

import re

_SIZE = re.compile(r"^([1-9][0-9]{0,6})\s?([KMGT])(?:I?B)?$")
# What parse_size takes as typed: any case, spaces around ("256M", " 1 gib ").
SIZE_TEXT = r"^\s*[1-9][0-9]{0,6}\s?[KMGTkmgt](?:[iI]?[bB])?\s*$"
_MULTIPLIER = {"K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}
MIB, GIB = 1024**2, 1024**3


class SizeError(ValueError):
    pass


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


def binary_bytes(size: float) -> str:
    """A volume as the servers' own settings count it (binary): '609 MiB', '1.25 GiB', '512 KiB'."""
    for unit, power in (("TiB", 4), ("GiB", 3), ("MiB", 2), ("KiB", 1)):
        if abs(size) >= 1024**power:
            value = size / 1024**power
            return f"{value:,.0f} {unit}" if value >= 100 else f"{value:.3g} {unit}"
    return f"{size:,.0f} bytes"
