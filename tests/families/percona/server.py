"""Percona Server's private mysqld: MySQL's, its version worded with the server's name."""

from runner.families.mysql.server import MySQLServer


class PerconaServer(MySQLServer):
    def version(self) -> str:
        return f"Percona Server {super().version()}"


SERVER = PerconaServer
