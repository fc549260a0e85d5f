"""Filters that show bytes as the servers' settings count them (binary units)."""

from django import template

from experiments.units import MIB

register = template.Library()


@register.filter
def mib(size_bytes) -> str:
    """268435456 -> '256.0'; a tenth of a MiB shows (MyRocks at 200 rows/s replays less than one)."""
    if size_bytes is None:
        return "-"
    return f"{size_bytes / MIB:,.1f}"
