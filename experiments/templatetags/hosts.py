"""Filters for the hosts page."""

import re

from django import template

register = template.Library()
_RELEASE = re.compile(r"Ver (\S+)")
_POSTGRES = re.compile(r"\(PostgreSQL\) (\S+)")


@register.filter
def server_release(version: str | None, family: str = "") -> str:
    """'Ver 11.8.9-MariaDB-0+deb13u1 from Debian for debian-linux-gnu ...' -> '11.8.9-MariaDB-0+deb13u1';
    'postgres (PostgreSQL) 17.12 (Debian 17.12-0+deb13u1)' -> 'PostgreSQL 17.12'; a version of
    the mysql family's, which names no server, -> 'MySQL 9.7.4-2'."""
    if found := _POSTGRES.search(version or ""):
        return f"PostgreSQL {found.group(1)}"
    found = _RELEASE.search(version or "")
    release = found.group(1) if found else (version or "")
    return f"MySQL {release}" if family == "mysql" and "MySQL" not in release else release
