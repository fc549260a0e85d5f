"""PostgreSQL's family: postgres, whose one engine is its own heap and WAL. engines.py: the engine;
server.py: the private cluster."""

# predict reads a live server of this family through a postgresql:// address (experiments/live.py).
LIVE = "postgresql"

# A build from a Debian release's packages (manage.py installbuild HOST postgresql-17 --debian
# trixie): its server and client packages and the libraries they need, read from the release's
# own package lists, every level down ({major}: the major version, from the build's name).
DEBIAN = {
    "packages": ("postgresql-{major}", "postgresql-client-{major}", "libpq5"),
    "libraries": True,
    "manifest": {"postgres_bin": "usr/lib/postgresql/{major}/bin"},
}
