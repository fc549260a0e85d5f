"""Oracle MySQL's family: mysqld (8.0.30 and later: the redo log sized by
innodb_redo_log_capacity, its LSNs in status variables), running InnoDB. engines.py: its InnoDB;
server.py: the private mysqld, made with `mysqld --initialize-insecure` and its accounts then
authenticated by the connecting OS user (auth_socket), as MariaDB's are."""

# predict reads a live server of this family through a mysql:// address (experiments/live.py).
LIVE = "mysql"

# A build from a Debian release's packages (manage.py installbuild HOST mysql-9.7 --debian sid):
# the server and client packages with their library closure (that release's C library and
# loader among them), and where the manifest finds the server's files.
DEBIAN = {
    "packages": ("mysql-server-core", "mysql-client-core"),
    "libraries": True,
    "manifest": {
        "server": "usr/sbin/mysqld",
        "plugin_dir": "usr/lib/mysql/plugin",
        "lc_messages_dir": "usr/share/mysql",
        "character_sets_dir": "usr/share/mysql/charsets",
    },
}
