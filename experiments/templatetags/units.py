"""Filters that show bytes as the servers' settings count them (binary units)."""

from django import template

from recovery_lab_cli.units import MIB

register = template.Library()


@register.filter
def mib(size_bytes) -> str:
    """268435456 -> '256.0'; under one MiB three significant figures, so a small replay is not
    shown as 0.0 (MyRocks at 200 rows/s replays a few KiB): 44800 -> '0.0427'; none -> '0'."""
    if size_bytes is None:
        return "-"
    value = size_bytes / MIB
    if value == 0:
        return "0"
    return f"{value:.3g}" if value < 1 else f"{value:,.1f}"


@register.filter
def mib_read(size_bytes) -> str:
    """Bytes read, in MiB to two decimals: 2726297 -> '2.60 MiB'; a few bytes -> '<0.01 MiB'
    (not 3.81e-06); none -> '-'."""
    if not isinstance(size_bytes, int | float) or isinstance(size_bytes, bool):
        return "-"
    value = size_bytes / MIB
    if 0 < value < 0.01:
        return "<0.01 MiB"
    return f"{value:,.2f} MiB" if value else "0 MiB"


@register.filter
def share(value) -> str:
    """0.8162 -> '82%'; under 1% one decimal, so a thread that ran is not shown as idle; none (or
    a value a row lacks, which a template gives as '') -> '-'."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "-"
    percent = value * 100
    if 0 < percent < 0.1:
        return "<0.1%"
    return f"{percent:.1f}%" if 0 < percent < 1 else f"{percent:.0f}%"
