"""Server families, one folder each: a family is a server (MariaDB's mariadbd, PostgreSQL's
postgres) with the storage engines it runs. Its folder holds

- `__init__.py`: what the family is (its docstring);
- `engines.py`: `ENGINES`, one `engine.Engine` subclass each (server options, method defaults,
  counters, the redo a crash leaves, how the probe finds it);
- `server.py`: `SERVER`, its `server.Server` subclass (datadir, command line, client, crash).

This module is the runner's one registry, found from the folders: `ENGINES` (name: engine) and
`server_class`. Adding a family adds a folder and nothing here (docs/architecture.md). Standard
library only (shipped in the runner's zip)."""

import pkgutil
from importlib import import_module

from ..engine import Engine

FAMILIES = tuple(sorted(found.name for found in pkgutil.iter_modules(__path__) if found.ispkg))


def _engines() -> dict[str, Engine]:
    engines: dict[str, Engine] = {}
    for family in FAMILIES:
        for kind in import_module(f"{__name__}.{family}.engines").ENGINES:
            if kind.name in engines:
                other = engines[kind.name].server
                raise ImportError(f"engine {kind.name!r} is in families {other} and {family}")
            if kind.server != family:
                raise ImportError(f"engine {kind.name!r} in families/{family} names {kind.server!r}")
            engines[kind.name] = kind
    return engines


ENGINES: dict[str, Engine] = _engines()


def engine(name: str) -> Engine:
    return ENGINES[name]


def server_class(family: str) -> type:
    """The `server.Server` subclass of a family (imported when a run needs it: the servers
    import the contract, which imports this registry)."""
    return import_module(f"{__name__}.{family}.server").SERVER
