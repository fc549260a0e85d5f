"""A PostgreSQL cluster of the test's own (initdb in a fresh directory, its own port and socket
directory), so a test can stop and start it for real without touching the machine's service that
every other test uses. Run as the `postgres` system user, as PostgreSQL requires; stopped with
pg_ctl and removed afterwards."""

import glob
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import psycopg

from .sshd import free_port

SYSTEM_USER = "postgres"


def pg_bin(name: str) -> str:
    """The newest installed server version's program (Debian keeps them out of PATH)."""
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), key=lambda p: int(p.split("/")[4]))
    if not found:
        raise RuntimeError(f"PostgreSQL's {name} is not installed (apt-get install postgresql)")
    return found[-1]


def as_postgres(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["runuser", "-u", SYSTEM_USER, "--", *args], capture_output=True, text=True, check=True
    )


@dataclass
class PrivateCluster:
    root: Path
    port: int
    options: str = ""  # more -c settings, e.g. TLS's

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def log(self) -> Path:
        return self.root / "server.log"

    def url(self, database: str) -> str:
        return f"postgres://{SYSTEM_USER}@127.0.0.1:{self.port}/{database}"

    def connect(self, database: str) -> psycopg.Connection:
        return psycopg.connect(self.url(database).replace("postgres://", "postgresql://"), autocommit=True)

    def start(self) -> None:
        """Start it and wait (pg_ctl -w) until it accepts connections."""
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        options += f" {self.options}"
        pg_ctl = pg_bin("pg_ctl")
        as_postgres([pg_ctl, "-D", str(self.data_dir), "-l", str(self.log), "-o", options, "-w", "start"])

    def stop(self) -> None:
        """A fast shutdown, as `systemctl restart postgresql` does: clients are disconnected."""
        as_postgres([pg_bin("pg_ctl"), "-D", str(self.data_dir), "-m", "fast", "-w", "stop"])

    def running(self) -> bool:
        return (self.data_dir / "postmaster.pid").exists()


def create_cluster(options: str = "", prepare=None) -> PrivateCluster:
    """A cluster started with `options`; `prepare(root)` first puts files it needs in its folder."""
    root = Path(tempfile.mkdtemp(prefix="recovery-lab-pg-", dir="/tmp"))
    shutil.chown(root, SYSTEM_USER)
    if prepare is not None:
        prepare(root)
    cluster = PrivateCluster(root=root, port=free_port(), options=options)
    initdb = pg_bin("initdb")
    as_postgres([initdb, "-D", str(cluster.data_dir), "-A", "trust", "-U", SYSTEM_USER, "--no-sync"])
    cluster.start()
    return cluster


def remove_cluster(cluster: PrivateCluster) -> None:
    if cluster.running():
        cluster.stop()
    shutil.rmtree(cluster.root, ignore_errors=True)
