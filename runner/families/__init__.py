"""Server families, one folder each: a family is a server (MariaDB's mariadbd, Oracle's MySQL
mysqld, PostgreSQL's postgres) with the storage engines it runs. Its folder holds

- `__init__.py`: what the family is (its docstring), how a build of it is made from another
  Debian release's packages (`DEBIAN`: the packages and the manifest; manage.py installbuild),
  and the scheme `predict` reads a live server of it through (`LIVE`);
- `engines.py`: `ENGINES`, one `engine.Engine` subclass each (server options, method defaults,
  counters, the redo a crash leaves, how the probe finds it);
- `server.py`: `SERVER`, its `server.Server` subclass (its builds and their versions, datadir,
  command line, client, crash).

This module is the runner's one registry, found from the folders. An engine's name may be in
two families (InnoDB runs on MariaDB and on MySQL): a run's family is the one whose server its
build holds (`family_for`). Adding a family adds a folder and nothing here
(docs/architecture.md). Standard library only (shipped in the runner's zip)."""

import pkgutil
from importlib import import_module

from ..builds import BuildUnusable, programs
from ..engine import Engine
from ..errors import RunFailed

FAMILIES = tuple(sorted(found.name for found in pkgutil.iter_modules(__path__) if found.ispkg))


def _engines() -> dict[str, dict[str, Engine]]:
    engines: dict[str, dict[str, Engine]] = {}
    for family in FAMILIES:
        engines[family] = {}
        for kind in import_module(f"{__name__}.{family}.engines").ENGINES:
            if kind.server != family:
                raise ImportError(f"engine {kind.name!r} in families/{family} names {kind.server!r}")
            engines[family][kind.name] = kind
    return engines


# Each family's engines by name, and every engine name with the first family's engine of that
# name (what the contract checks a spec against: the options of every family's are allowed).
FAMILY_ENGINES: dict[str, dict[str, Engine]] = _engines()
ENGINES: dict[str, Engine] = {}
for _family in FAMILIES:
    for _name, _engine in FAMILY_ENGINES[_family].items():
        ENGINES.setdefault(_name, _engine)


def engine(name: str) -> Engine:
    return ENGINES[name]


def families_running(name: str) -> tuple[str, ...]:
    """The families with an engine of that name."""
    return tuple(family for family in FAMILIES if name in FAMILY_ENGINES[family])


def options_of(name: str) -> dict:
    """The server options a definition may give an engine of that name, in any family."""
    return {
        option: allowed
        for family in families_running(name)
        for option, allowed in FAMILY_ENGINES[family][name].options.items()
    }


def server_class(family: str) -> type:
    """The `server.Server` subclass of a family (imported when it is needed: the servers import
    modules that import this registry)."""
    return import_module(f"{__name__}.{family}.server").SERVER


def live_scheme(family: str) -> str | None:
    """The address scheme `recovery-lab predict` reads a live server of the family through (its
    `LIVE`: "mysql", "postgresql"); None for a family predict cannot read."""
    return getattr(import_module(f"{__name__}.{family}"), "LIVE", None)


def debian_recipe(family: str) -> dict | None:
    """How a build of the family is made from a Debian release's packages (its `DEBIAN`)."""
    return getattr(import_module(f"{__name__}.{family}"), "DEBIAN", None)


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
    """The family that runs engine `name` on a build with these programs: the only family with
    that engine, or the one whose server the build holds (its version says which)."""
    candidates = families_running(name)
    if len(candidates) == 1:
        return candidates[0]
    for family in candidates:
        try:
            if server_class(family).build_version(found) is not None:
                return family
        except BuildUnusable as exc:
            raise RunFailed(f"server build {build!r} cannot be started: {exc}") from None
    raise RunFailed(f"server build {build!r} holds no server that runs {name} ({', '.join(candidates)})")
