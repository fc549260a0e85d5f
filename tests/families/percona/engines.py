"""Percona Server's InnoDB: MySQL's, with a refusal of its own (it takes two workloads)."""

from runner.families.mysql.engines import InnoDB as MySQLInnoDB


class InnoDB(MySQLInnoDB):
    server = "percona"
    workloads = ("oltp_write_only", "oltp_insert")


ENGINES = (InnoDB(),)
