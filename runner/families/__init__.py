"""Server families, one folder each: a family is a server (MariaDB's mariadbd, Oracle's MySQL
mysqld, PostgreSQL's postgres) with the storage engines it runs. Its folder holds

- `__init__.py`: `FAMILY`, what the family says of itself once (`runner.family.Family`: its name
  and label, how it knows its builds' version lines and names its releases, its live scheme,
  how a build of it is made from a Debian release's packages);
- `engines.py`: `ENGINES`, one `engine.Engine` subclass each (server options, method defaults,
  counters, the redo a crash leaves, how the probe finds it);
- `server.py`: `SERVER`, its `server.Server` subclass (its builds and their version lines,
  datadir, command line, client, crash).

This module is the runner's one registry, found from the folders and checked as it loads: each
declaration's name is its folder's, each engine names its folder, and every example line a family
gives is claimed by it and by no other (two families that would both claim a build are refused).
An engine's name may be in two families (InnoDB runs on MariaDB and on MySQL): a run's family is
the one that claims its build's version line (`family_for`). Adding a family adds a folder and
nothing here (docs/architecture.md). Standard library only (shipped in the runner's zip)."""

import pkgutil
from importlib import import_module
from pathlib import Path

from ..builds import BuildUnusable, programs
from ..engine import SAMPLE_COUNTERS, SAMPLE_LEVELS, Engine
from ..errors import RunFailed
from ..family import Family

# The names every engine's samples share (engine.py).
SHARED_SAMPLES = frozenset((*SAMPLE_LEVELS, *SAMPLE_COUNTERS))


class Registry:
    """The families found in folders: `sources`, each a package's name and its folder (the runner's
    own; a test adds one of its own). Refuses to load a family that is not as it says."""

    def __init__(self, sources: list[tuple[str, Path]]):
        self.modules: dict[str, str] = {}  # family -> its package's module name
        for package, folder in sources:
            for found in sorted(pkgutil.iter_modules([str(folder)]), key=lambda m: m.name):
                if found.ispkg:
                    if found.name in self.modules:
                        raise ImportError(f"two families are named {found.name!r}")
                    self.modules[found.name] = f"{package}.{found.name}"
        self.names = tuple(sorted(self.modules))
        self.declared: dict[str, Family] = {name: self._declaration(name) for name in self.names}
        self.engines: dict[str, dict[str, Engine]] = {name: self._engines(name) for name in self.names}
        self._check_claims()

    def _declaration(self, name: str) -> Family:
        family = getattr(import_module(self.modules[name]), "FAMILY", None)
        if not isinstance(family, Family) or family.name != name:
            raise ImportError(f"families/{name} declares no FAMILY = Family(name={name!r}, ...)")
        return family

    def _engines(self, name: str) -> dict[str, Engine]:
        engines = {}
        for kind in import_module(f"{self.modules[name]}.engines").ENGINES:
            if kind.server != name:
                raise ImportError(f"engine {kind.name!r} in families/{name} names {kind.server!r}")
            engines[kind.name] = kind
        return engines

    def _check_claims(self) -> None:
        for name, family in self.declared.items():
            for kind, examples, claims in (
                ("build", family.build_examples, "claims_build"),
                ("version", family.version_examples, "claims_version"),
            ):
                for example in examples:
                    owners = [other for other in self.names if getattr(self.declared[other], claims)(example)]
                    if owners != [name]:
                        raise ImportError(
                            f"family {name}'s {kind} example {example!r} is claimed by "
                            f"{', '.join(owners) or 'no family'}: a {kind} must be one family's alone"
                        )

    def module(self, family: str, part: str = ""):
        return import_module(self.modules[family] + (f".{part}" if part else ""))

    def families_running(self, name: str) -> tuple[str, ...]:
        """The families with an engine of that name."""
        return tuple(family for family in self.names if name in self.engines[family])

    def server_class(self, family: str) -> type:
        """The `server.Server` subclass of a family (imported when it is needed: the servers
        import modules that import this registry)."""
        return self.module(family, "server").SERVER

    def build_version(self, family: str, found: dict) -> str | None:
        """The version line of the family's server in a build with these programs, where the
        family claims it (None: the build's server is another's). BuildUnusable: it cannot start."""
        line = self.server_class(family).version_line(found)
        return line if self.declared[family].claims_build(line) else None

    def declared_for(self, text: str | None, family: str = "", build: bool = False) -> Family | None:
        """The declaration that names `text`, a running server's version (or, `build`, a --version
        line): the family a run or a probe said ran it, where it said one; else the family whose
        declaration claims it (the checks keep it one)."""
        if family in self.declared:
            return self.declared[family]
        claims = "claims_build" if build else "claims_version"
        return next(
            (declared for declared in self.declared.values() if getattr(declared, claims)(text)), None
        )

    def shared_sample(self, row: dict) -> dict:
        """A sample's values under the names every engine shares. The runner writes them so; one
        before it wrote each engine's own names (the samples.jsonl of runs already stored), which
        are read through every engine's table. A shared name the row has is kept as it is."""
        found = {name: value for name, value in row.items() if name in SHARED_SAMPLES}
        if len(found) == len(row):  # nothing of an engine's own to read
            return found
        for family in self.names:
            for kind in self.engines[family].values():
                for name, value in kind.sample_of(row).items():
                    found.setdefault(name, value)
        return found

    def family_for(self, name: str, build: str, found: dict) -> str:
        """The family that runs engine `name` on a build with these programs: the only family
        with that engine, or the one that claims the build's version line."""
        candidates = self.families_running(name)
        if len(candidates) == 1:
            return candidates[0]
        for family in candidates:
            try:
                if self.build_version(family, found) is not None:
                    return family
            except BuildUnusable as exc:
                raise RunFailed(f"server build {build!r} cannot be started: {exc}") from None
        raise RunFailed(f"server build {build!r} holds no server that runs {name} ({', '.join(candidates)})")


REGISTRY = Registry([(__name__, Path(__file__).parent)])
FAMILIES = REGISTRY.names
DECLARED: dict[str, Family] = REGISTRY.declared
# Each family's engines by name, and every engine name with the first family's engine of that
# name (what the contract checks a spec against: the options of every family's are allowed).
FAMILY_ENGINES: dict[str, dict[str, Engine]] = REGISTRY.engines
ENGINES: dict[str, Engine] = {}
for _family in FAMILIES:
    for _name, _engine in FAMILY_ENGINES[_family].items():
        ENGINES.setdefault(_name, _engine)


def engine(name: str) -> Engine:
    return ENGINES[name]


def families_running(name: str) -> tuple[str, ...]:
    return REGISTRY.families_running(name)


def options_of(name: str) -> dict:
    """The server options a definition may give an engine of that name, in any family."""
    return {
        option: allowed
        for family in families_running(name)
        for option, allowed in FAMILY_ENGINES[family][name].options.items()
    }


def server_class(family: str) -> type:
    return REGISTRY.server_class(family)


def live_scheme(family: str) -> str | None:
    """The address scheme `recovery-lab predict` reads a live server of the family through
    ("mysql", "postgresql"); None for a family predict cannot read."""
    return DECLARED[family].live


def debian_recipe(family: str) -> dict | None:
    """How a build of the family is made from a Debian release's packages."""
    return DECLARED[family].debian


def build_version(family: str, found: dict) -> str | None:
    return REGISTRY.build_version(family, found)


def declared_for(text: str | None, family: str = "", build: bool = False) -> Family | None:
    return REGISTRY.declared_for(text, family, build)


def system_programs() -> dict:
    """The system build's programs: every family's installed server (the first family to name
    a program keeps it: MariaDB's mariadbd before a mysqld that is its link)."""
    found = programs(None)
    for family in FAMILIES:
        for key, value in server_class(family).system_programs().items():
            if value and not found.get(key):
                found[key] = value
    return found


def family_for(name: str, build: str, found: dict) -> str:
    return REGISTRY.family_for(name, build, found)
