"""Oracle MySQL's family: mysqld (8.0.30 and later: the redo log sized by
innodb_redo_log_capacity, its LSNs in status variables), running InnoDB. engines.py: its InnoDB;
server.py: the private mysqld, made with `mysqld --initialize-insecure` and its accounts then
authenticated by the connecting OS user (auth_socket), as MariaDB's are."""

from ...family import Family

# A build from a Debian release's packages (manage.py installbuild HOST mysql-9.7 --debian sid):
# the server and client packages with their library closure (that release's C library and
# loader among them), and where the manifest finds the server's files.
_DEBIAN = {
    "packages": ("mysql-server-core", "mysql-client-core"),
    "libraries": True,
    "manifest": {
        "server": "usr/sbin/mysqld",
        "plugin_dir": "usr/lib/mysql/plugin",
        "lc_messages_dir": "usr/share/mysql",
        "character_sets_dir": "usr/share/mysql/charsets",
    },
}

FAMILY = Family(
    name="mysql",
    label="MySQL",
    # Oracle's own builds and the distributions' (a Percona Server names itself, and is not one)
    build_line=(
        r"Ver (?P<number>(?P<series>\d+\.\d+)\.\d+)(-[0-9][0-9a-z.+~]*)? for \S+ on \S+ "
        r"\((\((Debian|Ubuntu)\)|MySQL (Community|Enterprise) Server|Source distribution)"
    ),
    # a version with no server's name in it: 9.7.4-2 (Debian's), 8.0.36, 8.0.36-log
    version=r"^(?P<number>(?P<series>\d+\.\d+)\.\d+)(-[0-9][0-9a-z.+~]*)?(-log|-debug)?$",
    build_examples=(
        "Ver 9.7.4-2 for Linux on x86_64 ((Debian))",
        "Ver 8.0.36 for Linux on x86_64 (MySQL Community Server - GPL)",
    ),
    version_examples=("9.7.4-2", "8.0.36", "8.0.36-log", "8.0.36-0ubuntu0.22.04.1"),
    live="mysql",  # predict reads a live server of it through a mysql:// address (recovery_lab_cli/live.py)
    debian=_DEBIAN,
)
