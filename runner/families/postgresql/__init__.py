"""PostgreSQL's family: postgres, whose one engine is its own heap and WAL. engines.py: the engine;
server.py: the private cluster."""

from ...family import Family

# A build from a Debian release's packages (manage.py installbuild HOST postgresql-17 --debian
# trixie): its server and client packages and the libraries they need, read from the release's
# own package lists, every level down ({major}: the major version, from the build's name).
_DEBIAN = {
    "packages": ("postgresql-{major}", "postgresql-client-{major}", "libpq5"),
    "libraries": True,
    "manifest": {"postgres_bin": "usr/lib/postgresql/{major}/bin"},
}

FAMILY = Family(
    name="postgresql",
    label="PostgreSQL",
    build_line=r"\(PostgreSQL\) (?P<number>(?P<series>\d+)\.\d+)",
    version=r"^PostgreSQL (?P<number>(?P<series>\d+)\.\d+)",
    build_examples=("postgres (PostgreSQL) 17.12 (Debian 17.12-0+deb13u1)",),
    version_examples=("PostgreSQL 15.20 (Debian 15.20-0+deb12u1) on x86_64-pc-linux-gnu",),
    live="postgresql",  # predict reads a live server at a postgresql:// address (recovery_lab_cli/live.py)
    debian=_DEBIAN,
)
