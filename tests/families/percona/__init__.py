"""A fourth family, the tests' own: Percona Server for MySQL, which the product does not run. This
folder is all it takes: the registry finds it, knows its builds by their version line and names
its releases (tests/test_families.py)."""

from runner.family import Family

FAMILY = Family(
    name="percona",
    label="Percona Server",
    build_line=r"Ver (?P<number>(?P<series>\d+\.\d+)\.\d+)-\d+ for \S+ on \S+ \(Percona Server",
    # its server's version as its server class words it (server.py): SELECT version() alone,
    # '8.0.36-28', is also how Debian's MySQL names a release
    version=r"^Percona Server (?P<number>(?P<series>\d+\.\d+)\.\d+)-\d+",
    build_examples=(
        "Ver 8.0.36-28 for Linux on x86_64 (Percona Server (GPL), Release 28, Revision 47601f19)",
    ),
    version_examples=("Percona Server 8.0.36-28",),
    live="mysql",
)
