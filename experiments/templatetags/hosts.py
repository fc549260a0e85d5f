"""Filters for the hosts page."""

from django import template

from runner.families import declared_for

register = template.Library()


@register.filter
def server_release(version: str | None, family: str = "") -> str:
    """A build's server as its family names it, from its --version line: 'Ver 11.8.9-MariaDB-0+deb13u1
    from Debian ...' -> 'MariaDB 11.8.9', 'postgres (PostgreSQL) 17.12 (Debian ...)' -> 'PostgreSQL
    17.12', 'Ver 9.7.4-2 for Linux on x86_64 ((Debian))' -> 'MySQL 9.7.4' (the whole line is the
    build's title); a line no family claims, as it is."""
    declared = declared_for(version, family, build=True)
    return (declared and declared.named(version, build=True)) or version or ""
