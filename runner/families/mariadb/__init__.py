"""MariaDB's family: mariadbd, running InnoDB and MyRocks. engines.py: the two engines; server.py:
the private mariadbd."""

from ...family import Family

# A build from a Debian release's packages (manage.py installbuild HOST mariadb-11.8 --debian
# trixie): the server, its installer and SQL files, MyRocks, and that release's C and C++
# runtimes and loader; where the manifest finds the server's files in them.
_DEBIAN = {
    "packages": (
        "mariadb-server-core",
        "mariadb-server",
        "mariadb-client-core",
        "mariadb-plugin-rocksdb",
        "libc6",
        "libstdc++6",
        "libgcc-s1",
        "libaio1t64",
        "libssl3t64",
    ),
    "libraries": False,
    "manifest": {
        "server": "usr/sbin/mariadbd",
        "installer": "usr/bin/mariadb-install-db",
        "plugin_dir": "usr/lib/mysql/plugin",
        "lc_messages_dir": "usr/share/mariadb",
        "character_sets_dir": "usr/share/mariadb/charsets",
    },
}

FAMILY = Family(
    name="mariadb",
    label="MariaDB",
    build_line=r"Ver (?P<number>(?P<series>\d+\.\d+)\.\d+)-MariaDB",
    version=r"^(?P<number>(?P<series>\d+\.\d+)\.\d+)-MariaDB",
    build_examples=(
        "Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64",
        "Ver 11.8.9-MariaDB-0+deb13u1 from Debian for debian-linux-gnu on x86_64",
    ),
    version_examples=("10.11.19-MariaDB-0+deb12u1", "11.8.9-MariaDB-log"),
    live="mysql",  # predict reads a live server of it through a mysql:// address (recovery_lab_cli/live.py)
    debian=_DEBIAN,
)
