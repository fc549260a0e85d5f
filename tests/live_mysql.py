"""A live Oracle MySQL (a build installed by installbuild, 9.7 here) of the test's or bench's own,
standing for a production server as LiveMariaDB does: on its own socket (no TCP port), with a
monitoring account that has a password and no privilege, loaded by a real sysbench (through an
account of its own: sysbench's libmariadb cannot log two threads in at once as root over
MySQL's caching_sha2). Everything it starts is stopped by its pid."""

import subprocess
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from runner.builds import build_programs, server_command

from .live_mariadb import MONITOR_PASSWORD, LiveMariaDB

SYSBENCH_PASSWORD = "bench"


@dataclass
class LiveMySQL(LiveMariaDB):
    build: Path = Path("/var/lib/recovery-lab/work/builds/mysql-9.7")

    def _common(self) -> list[str]:
        programs = build_programs(self.build)
        if programs is None:
            raise RuntimeError(f"no MySQL build in {self.build}: run make setup (it installs one)")
        return [
            *server_command(programs),
            "--no-defaults",
            "--user=root",
            f"--datadir={self.datadir}",
            f"--plugin-dir={programs['plugin_dir']}",
            f"--lc-messages-dir={programs['lc_messages_dir']}",
            f"--secure-file-priv={self.root / 'files'}",
        ]

    def start(self) -> None:
        (self.root / "files").mkdir(exist_ok=True)  # its own: the default folder is missing
        subprocess.run(
            [*self._common(), "--initialize-insecure"], check=True, capture_output=True, timeout=120
        )
        self.launch()
        self.sql("CREATE USER monitor@localhost IDENTIFIED BY %s", MONITOR_PASSWORD)
        self.sql("CREATE USER bench@localhost IDENTIFIED BY %s", SYSBENCH_PASSWORD)
        self.sql("GRANT ALL ON sbtest.* TO bench@localhost")
        self.sql("CREATE DATABASE sbtest")

    def server_command(self) -> list[str]:
        return [
            *self._common(),
            f"--socket={self.socket}",
            "--skip-networking",
            "--mysqlx=OFF",
            f"--log-error={self.root / 'error.log'}",
            f"--pid-file={self.root / 'mysqld.pid'}",
            f"--innodb-redo-log-capacity={self.log_file_size}",
            "--innodb-buffer-pool-size=128M",
            # as the lab's runs: the checkpoint held back, so the checkpoint age follows the writes
            "--innodb-adaptive-flushing=OFF",
            "--innodb-io-capacity=100",
            "--innodb-max-dirty-pages-pct=90",
            "--innodb-max-dirty-pages-pct-lwm=0",
            "--innodb-flush-log-at-trx-commit=2",
            "--disable-log-bin",
            *self.extra_options,
        ]

    def checkpoint_age(self) -> int:
        status = dict(self.sql("SHOW GLOBAL STATUS LIKE 'Innodb_redo_log_%_lsn'"))
        return int(status["Innodb_redo_log_current_lsn"]) - int(status["Innodb_redo_log_checkpoint_lsn"])

    def sysbench(self, *args: str) -> list[str]:
        return ["sysbench", "oltp_insert", "--db-driver=mysql", f"--mysql-socket={self.socket}",
                "--mysql-user=bench", f"--mysql-password={SYSBENCH_PASSWORD}", "--tables=2",
                "--table-size=5000", *args]  # fmt: skip

    def url(self, password: str = MONITOR_PASSWORD) -> str:
        return f"mysql://monitor:{quote(password, safe='')}@{quote(str(self.socket), safe='')}"
