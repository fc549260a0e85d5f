"""A live MariaDB of the test's own, standing for a production server: the system's mariadbd on a
free loopback port, with a monitoring account that has a password and no privilege, loaded by a
real sysbench. Everything it starts is stopped by its pid."""

import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pymysql

from .sshd import free_port

MONITOR_PASSWORD = "s3cret:/@pass"  # characters a URL has to escape


@dataclass
class LiveMariaDB:
    log_file_size: str = "48M"
    extra_options: tuple[str, ...] = ()
    port: int = field(default_factory=free_port)
    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="recovery-lab-live-")))
    server: subprocess.Popen | None = None
    load: subprocess.Popen | None = None

    @property
    def datadir(self) -> Path:
        return self.root / "data"

    @property
    def socket(self) -> Path:
        return self.root / "mysqld.sock"

    def start(self) -> None:
        datadir = self.root / "data"
        subprocess.run(
            ["mariadb-install-db", "--no-defaults", "--user=root", f"--datadir={datadir}",
             "--auth-root-authentication-method=socket", "--skip-test-db"],
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
        self.launch()
        self.sql("CREATE USER monitor@'127.0.0.1' IDENTIFIED BY %s", MONITOR_PASSWORD)
        self.sql("CREATE DATABASE sbtest")

    def crash_and_restart(self, timeout_s: float = 600) -> float:
        """kill -9 (its load with it), start it again on the same datadir: the seconds from the
        kill to the first query it answered, as the lab's runs measure a downtime."""
        killed = time.monotonic()
        self.server.send_signal(signal.SIGKILL)
        self.server.wait()
        if self.load is not None and self.load.poll() is None:
            self.load.send_signal(signal.SIGKILL)
            self.load.wait()
        self.launch(timeout_s, poll_s=0.005)
        return time.monotonic() - killed

    def server_command(self) -> list[str]:
        datadir = self.root / "data"
        return [
            "mariadbd", "--no-defaults", "--user=root", f"--datadir={datadir}", f"--socket={self.socket}",
            f"--port={self.port}", "--bind-address=127.0.0.1", f"--pid-file={self.root / 'mysqld.pid'}",
            f"--log-error={self.root / 'error.log'}", "--skip-name-resolve",
            f"--innodb-log-file-size={self.log_file_size}", "--innodb-buffer-pool-size=128M",
            # as the lab's runs: the checkpoint held back, so the checkpoint age follows the writes
            "--innodb-max-dirty-pages-pct=99", "--innodb-max-dirty-pages-pct-lwm=0",
            "--innodb-adaptive-flushing-lwm=70", "--innodb-flush-log-at-trx-commit=2", *self.extra_options,
        ]  # fmt: skip

    def launch(self, timeout_s: float = 60, poll_s: float = 0.1) -> None:
        self.server = subprocess.Popen(
            self.server_command(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout_s
        while not self.answers():
            if self.server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError((self.root / "error.log").read_text(errors="replace")[-2000:])
            time.sleep(poll_s)

    def answers(self) -> bool:
        try:
            pymysql.connect(unix_socket=str(self.socket), user="root", connect_timeout=1).close()
            return True
        except pymysql.MySQLError:
            return False

    def sql(self, statement: str, *args):
        connection = pymysql.connect(unix_socket=str(self.socket), user="root", autocommit=True)
        try:
            with connection.cursor() as cursor:
                cursor.execute(statement, args or None)
                return cursor.fetchall()
        finally:
            connection.close()

    def checkpoint_age(self) -> int:
        return int(self.sql("SHOW GLOBAL STATUS LIKE 'Innodb_checkpoint_age'")[0][1])

    def wait_for_checkpoint_age(self, target: int, between_s: tuple[float, float]) -> float:
        """Let the load run until the checkpoint age reaches `target` bytes: at least the first
        of `between_s` seconds, at most the second. Returns the seconds it ran."""
        started = time.monotonic()
        while True:
            ran = time.monotonic() - started
            if ran >= between_s[1] or (ran >= between_s[0] and self.checkpoint_age() >= target):
                return ran
            time.sleep(0.2)

    def sysbench(self, *args: str) -> list[str]:
        return ["sysbench", "oltp_insert", "--db-driver=mysql", f"--mysql-socket={self.socket}",
                "--mysql-user=root", "--tables=2", "--table-size=5000", *args]  # fmt: skip

    def start_load(self, rate: int = 2000, threads: int = 2, prepare: bool = True) -> None:
        if prepare:
            subprocess.run(self.sysbench("prepare"), check=True, capture_output=True, timeout=120)
        self.load = subprocess.Popen(
            self.sysbench(f"--threads={threads}", f"--rate={rate}", "--time=600", "run"),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip

    def url(self, password: str = MONITOR_PASSWORD) -> str:
        from urllib.parse import quote

        return f"mysql://monitor:{quote(password, safe='')}@127.0.0.1:{self.port}"

    def stop(self) -> None:
        for process in (self.load, self.server):
            if process and process.poll() is None:
                process.send_signal(signal.SIGKILL)
                process.wait()
        shutil.rmtree(self.root, ignore_errors=True)
