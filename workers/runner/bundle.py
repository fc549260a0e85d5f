"""The bundle: the raw files a run leaves for the dashboard, copied out of the work directory."""

import shutil
from pathlib import Path

from .sampler import SAMPLES_FILE


def collect(work: Path, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name in (
        "error.log",
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
    ):
        if (work / name).exists():
            shutil.copyfile(work / name, out / name)
