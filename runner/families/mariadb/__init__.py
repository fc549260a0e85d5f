"""MariaDB's family: mariadbd, running InnoDB and MyRocks. engines.py: the two engines; server.py:
the private mariadbd."""

# predict reads a live server of this family through a mysql:// address (experiments/live.py).
LIVE = "mysql"

# A build from a Debian release's packages (manage.py installbuild HOST mariadb-11.8 --debian
# trixie): the server, its installer and SQL files, MyRocks, and that release's C and C++
# runtimes and loader; where the manifest finds the server's files in them.
DEBIAN = {
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
