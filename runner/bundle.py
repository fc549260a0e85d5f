"""The bundle: the raw files a run leaves for the dashboard, copied out of the run's folder (root's)
and the server's error log out of the server's folder, as regular files only (files.py)."""

from pathlib import Path

from .files import copy_regular, server_home
from .profile import FOLDED_FILE
from .resources import RESOURCES_FILE
from .sampler import SAMPLES_FILE


def collect(work: Path, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    # The server writes its own error log (mariadbd's --log-error); the runner's stamped copy
    # beside it is root's.
    copy_regular(server_home(work) / "error.log", out / "error.log")
    for name in (
        "error.log.stamped",
        "sysbench_report.txt",
        "sysbench_prepare.txt",
        "sysbench_warmup.txt",
        "innodb_status_before_run.txt",
        "innodb_status_at_crash.txt",
        "innodb_status_after_recovery.txt",
        "rocksdb_status_at_crash.txt",
        "rocksdb_status_before_run.txt",
        "rocksdb_status_after_recovery.txt",
        "install.log",
        "rocksdb_LOG",
        SAMPLES_FILE,
        RESOURCES_FILE,
        FOLDED_FILE,
    ):
        copy_regular(work / name, out / name)
