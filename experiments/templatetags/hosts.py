"""Filters for the hosts page."""

import re

from django import template

register = template.Library()
_RELEASE = re.compile(r"Ver (\S+)")


@register.filter
def server_release(version: str | None) -> str:
    """'Ver 11.8.9-MariaDB-0+deb13u1 from Debian for debian-linux-gnu ...' -> '11.8.9-MariaDB-0+deb13u1'."""
    found = _RELEASE.search(version or "")
    return found.group(1) if found else (version or "")
