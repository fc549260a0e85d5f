"""What a server family says of itself, once: `FAMILY` in runner/families/NAME/__init__.py.

The registry (families/__init__.py) checks every declaration when it loads: its name is its
folder's, each of its example lines is its own and no other family's. Standard library only
(shipped in the runner's zip)."""

import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Family:
    # its folder's name under families/, and how the product names its server
    name: str
    label: str
    # How it knows a build of its own: the line its server program prints for --version
    # (`server.Server.version_line`), matched anywhere in it, with groups `number` and `series`
    build_line: str
    # How it names a release from the version its running server reports (SELECT version(), a
    # run's server_version; PostgreSQL's as the runner words it), with the same groups
    version: str
    # Lines of its own builds and versions it must claim, and no other family may: the registry
    # refuses to load two families that claim one build
    build_examples: tuple[str, ...]
    version_examples: tuple[str, ...]
    # the address scheme `recovery-lab predict` reads a live server of it through (None: none)
    live: str | None = None
    # How a build of it is made from a Debian release's packages (manage.py installbuild): the
    # packages, whether their library closure comes along, where the manifest finds its files
    debian: dict | None = None
    _patterns: dict = field(default_factory=dict, init=False, compare=False, repr=False)

    def __post_init__(self):
        for key in ("build_line", "version"):
            pattern = re.compile(getattr(self, key))
            if not {"number", "series"} <= set(pattern.groupindex):
                raise ImportError(f"family {self.name}: its {key} pattern lacks a 'number' or 'series' group")
            self._patterns[key] = pattern

    def _match(self, key: str, text: str | None) -> re.Match | None:
        return self._patterns[key].search((text or "").strip())

    def claims_build(self, line: str | None) -> bool:
        """Whether a server program's --version line is one of this family's builds."""
        return self._match("build_line", line) is not None

    def claims_version(self, version: str | None) -> bool:
        return self._match("version", version) is not None

    def named(self, text: str | None, build: bool = False) -> str | None:
        """'MariaDB 11.8.9' for a version (or, `build`, a --version line) of this family's."""
        found = self._match("build_line" if build else "version", text)
        return f"{self.label} {found['number']}" if found else None

    def series(self, text: str | None, build: bool = False) -> tuple[str, str] | None:
        """(label, release series) of a running server's version (or, `build`, a --version
        line of this family's): ('MariaDB', '10.11')."""
        found = self._match("build_line" if build else "version", text)
        return (self.label, found["series"]) if found else None
