"""Oracle MySQL's private server (mysqld 8.0.30 and later), as MariaDB's (whose class it extends)
but where MySQL differs: its datadir made by `mysqld --initialize-insecure`, whose root account
then authenticates by the connecting OS user (auth_socket, installed at the bootstrap) as every
account of the runner's does, so the socket alone grants nothing; the X Protocol off; its
recovery's Notes logged (--log-error-verbosity=3); its binary log on unless a run asks it off.
The host's mariadb client speaks to it over the socket.

sysbench is the exception: its client library (libmariadb) fails to connect two threads at
once to an auth_socket account ("Got packets out of order"), so it logs in as an account of its
own, `sysbench`, limited to the schema sbtest, with a password the runner makes for each run.
The password is on sysbench's command line, where another OS user could read it; it grants
nothing without the socket, which only the server's OS user and the runner's can reach (no TCP
port). Standard library only."""

import secrets

from ...builds import build_options, installed, server_command
from ...server import client_account
from ..mariadb.server import MariaDBServer


class MySQLServer(MariaDBServer):
    """A private mysqld."""

    name = "mysqld"

    @classmethod
    def system_programs(cls) -> dict:
        found = installed("mysqld")
        return {"server": found} if found else {}

    @classmethod
    def system_servers(cls) -> dict[str, str]:
        return {}  # MariaDB's family lists an installed mysqld, whichever server it is

    def server_args(self, loading: bool = False) -> list[str]:
        args = [*super().server_args(loading), "--mysqlx=OFF"]
        if not any(arg.startswith("--log_error_verbosity=") for arg in args):
            # the recovery's lines are Notes; a run may ask for production's default (2), where
            # a crash restart shows only as a start with no shutdown since the last ready
            args.append("--log-error-verbosity=3")
        if not any(arg.startswith("--log-bin=") for arg in args):
            args.append("--disable-log-bin")  # on by default since MySQL 8.0
        return args

    def install(self) -> None:
        """`mysqld --initialize-insecure` (as the server's user: run_installer), then root and the runner's
        own account made to authenticate by OS user: an init file run at the end of the
        bootstrap, in the run's folder (root's), readable by the server."""
        account = client_account()
        # installed once (the bootstrap ignores --plugin-load), loaded at every start after
        sql = "INSTALL PLUGIN auth_socket SONAME 'auth_socket.so';\n"
        sql += "ALTER USER 'root'@'localhost' IDENTIFIED WITH auth_socket;\n"
        if account != "root":
            sql += (
                f"CREATE USER '{account}'@'localhost' IDENTIFIED WITH auth_socket;\n"
                f"GRANT ALL ON *.* TO '{account}'@'localhost' WITH GRANT OPTION;\n"
            )
        accounts = self.work / "accounts.sql"
        accounts.write_text(sql)
        accounts.chmod(0o644)
        args = [
            *server_command(self.programs),
            "--no-defaults",
            *build_options(self.programs),
            f"--datadir={self.datadir}",
            f"--tmpdir={self.home / 'tmp'}",
            f"--secure-file-priv={self.home / 'files'}",
            "--log-error-verbosity=2",
            f"--init-file={accounts}",
            "--initialize-insecure",
        ]
        self.run_installer(args, "mysqld --initialize-insecure")  # its log is its stderr

    def sysbench_args(self) -> list[str]:
        """sysbench's own account (above), its password made now, for this run."""
        if not getattr(self, "_sysbench_password", None):
            password = secrets.token_urlsafe(18)  # letters, digits, - and _: nothing to quote
            self.query(
                f"CREATE USER IF NOT EXISTS 'sysbench'@'localhost' IDENTIFIED BY '{password}'; "
                f"ALTER USER 'sysbench'@'localhost' IDENTIFIED BY '{password}'; "
                "GRANT ALL ON sbtest.* TO 'sysbench'@'localhost'"
            )
            self._sysbench_password = password
        return [
            "--db-driver=mysql",
            f"--mysql-socket={self.socket}",
            "--mysql-user=sysbench",
            f"--mysql-password={self._sysbench_password}",
            "--mysql-db=sbtest",
            *self.engine.workload_args(),
        ]


SERVER = MySQLServer
