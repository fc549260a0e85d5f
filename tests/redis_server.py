"""A redis-server of the test's own on a free loopback port, keeping nothing on disk (as the
stack's Redis is run: the queue is not the record, PostgreSQL is), so a test can kill it and start
it again for real without touching the machine's Redis that other tests and sessions use."""

import os
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import redis

from .sshd import free_port

REDIS_SERVER = "/usr/bin/redis-server"


@dataclass
class PrivateRedis:
    port: int = field(default_factory=free_port)
    directory: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="recovery-lab-redis-")))
    process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                REDIS_SERVER,
                "--port", str(self.port),
                "--bind", "127.0.0.1",
                "--save", "",
                "--appendonly", "no",
                "--dir", str(self.directory),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip

    def answering(self) -> bool:
        try:
            return redis.Redis.from_url(self.url, socket_connect_timeout=1).ping()
        except redis.ConnectionError:
            return False

    def kill(self) -> None:
        """SIGKILL, as a crash or an OOM kill does; what it held is gone."""
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def remove(self) -> None:
        self.kill()
        shutil.rmtree(self.directory, ignore_errors=True)

    def messages(self, queue: str) -> int:
        return redis.Redis.from_url(self.url).llen(queue)
