"""The host's floor: what the disk under the work directory can do, measured with fio. Standard
library only.

`python3 runner.pyz --measure-disk WORK_DIR` runs four fio jobs one after the other on a file of
its own in WORK_DIR (O_DIRECT, so the page cache does not answer): sequential reads of 1 MiB at
depth 8, random 16 KiB reads at depth 1 and at depth 32, and 16 KiB writes each followed by an
fsync. It keeps the result in WORK_DIR/disk-floor.json (root's, as the work directory is), prints
it, and the probe reports it as the disk's `floor` while the work directory is on the same
device. A recovery's reads are set against it (experiments/ingest/resources.py). Without fio
it says so and measures nothing.
"""

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from .files import own_folder
from .processes import first_line
from .throttle import JOIN

FLOOR_FILE = "disk-floor.json"
MEMORY_FILE_SYSTEMS = ("tmpfs", "ramfs")
FILE_BYTES = 1 << 30
SECONDS_PER_JOB = 2.0
# a storage class's floor (class_floor): a cap is steady within a second, and a run waits for it
CLASS_FILE_BYTES, CLASS_SECONDS_PER_JOB = 256 << 20, 1.0
JOBS = (
    ("seq_read", ["--rw=read", "--bs=1M", "--iodepth=8"]),
    ("rand_read_qd1", ["--rw=randread", "--bs=16k", "--iodepth=1"]),
    ("rand_read_qd32", ["--rw=randread", "--bs=16k", "--iodepth=32"]),
    ("fsync", ["--rw=write", "--bs=16k", "--iodepth=1", "--fsync=1"]),
)


class NotMeasured(Exception):
    """The disk could not be measured: the reason, for the hosts page."""


def file_system(folder: Path) -> str | None:
    """The type of the file system a folder is on (ext4, xfs, tmpfs, ...), from the longest mount
    point above it in /proc/self/mounts."""
    try:
        mounts = [line.split()[1:3] for line in Path("/proc/self/mounts").read_text().splitlines()]
    except OSError:
        return None
    resolved = str(folder.resolve())
    above = [
        (point, kind)
        for point, kind in mounts
        if resolved == point or resolved.startswith(point.rstrip("/") + "/")
    ]
    return max(above, key=lambda mount: len(mount[0]))[1] if above else None


def device_of(folder: Path) -> str:
    """The block device a folder is on, as major:minor."""
    device = os.stat(folder).st_dev
    return f"{os.major(device)}:{os.minor(device)}"


def measure(
    work_dir: Path,
    file_bytes: int = FILE_BYTES,
    seconds: float = SECONDS_PER_JOB,
    cgroup: Path | None = None,
    kept_as: str = FLOOR_FILE,
) -> dict:
    """Run the jobs in a folder of their own under the work directory, keep and return the floor.
    `cgroup`: a storage class's group (throttle.py) the jobs run in, its file laid out outside
    it (the cap is for the jobs), kept as `kept_as`."""
    fio = shutil.which("fio")
    if fio is None:
        raise NotMeasured("fio is not installed on this host (apt-get install fio)")
    own_folder(work_dir, "work directory", "the host's work_dir")
    if file_system(work_dir) in MEMORY_FILE_SYSTEMS:
        raise NotMeasured(
            f"the work folder {work_dir} is in memory ({file_system(work_dir)}): there is no disk to measure"
        )
    engine = "libaio" if _has_libaio(fio) else "psync"
    with tempfile.TemporaryDirectory(prefix="floor-", dir=work_dir) as folder:
        args = [fio, "--output-format=json", "--name=global", f"--filename={folder}/fio.data"]
        args += [f"--size={file_bytes}", "--direct=1", "--time_based", f"--runtime={seconds}s"]
        args += [f"--ioengine={engine}"]
        if cgroup is not None:
            layout = [*args, "--name=layout", "--rw=read", "--create_only=1"]
            subprocess.run(layout, capture_output=True, timeout=600, stdin=subprocess.DEVNULL, check=False)
            args = [*JOIN, str(cgroup), *args]
        for name, options in JOBS:
            args += [f"--name={name}", "--stonewall", *options]
        started = time.monotonic()
        done = subprocess.run(args, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
        took = time.monotonic() - started
    if done.returncode != 0:
        raise NotMeasured(f"fio failed (exit {done.returncode}): {(done.stderr or done.stdout)[-300:]}")
    try:
        jobs = {job["jobname"]: job for job in json.loads(done.stdout[done.stdout.index("{") :])["jobs"]}
        floor = {
            "seq_read_mb_s": round(jobs["seq_read"]["read"]["bw_bytes"] / 1e6, 1),
            "rand_read_qd1_iops": round(jobs["rand_read_qd1"]["read"]["iops"]),
            "rand_read_qd32_iops": round(jobs["rand_read_qd32"]["read"]["iops"]),
            "fsync_per_s": round(jobs["fsync"]["write"]["iops"]),
        }
    except (ValueError, KeyError, TypeError) as exc:
        raise NotMeasured(f"fio's report could not be read ({exc})") from exc
    floor.update(
        device=device_of(work_dir),
        path=str(work_dir),
        fio=first_line([fio, "--version"]),
        ioengine=engine,
        file_bytes=file_bytes,
        seconds_per_job=seconds,
        took_s=round(took, 1),
        measured_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    )
    (work_dir / kept_as).write_text(json.dumps(floor))
    return floor


def kept(work_dir: Path) -> dict | None:
    """The last floor measured under the work directory, while it is still on that device."""
    try:
        floor = json.loads((work_dir / FLOOR_FILE).read_text())
        return floor if isinstance(floor, dict) and floor.get("device") == device_of(work_dir) else None
    except (OSError, ValueError):
        return None


def _has_libaio(fio: str) -> bool:
    done = subprocess.run([fio, "--enghelp"], capture_output=True, text=True, timeout=20)
    return "libaio" in done.stdout


def class_floor(work_dir: Path, name: str, throttle) -> dict:
    """A storage class's floor on this disk: the jobs run in its group (throttle.py), 1 s each on
    a file of 256 MiB; kept per class while its limits and device stay as they are."""
    kept_as = f"disk-floor-{name}.json"
    applied = throttle.applied()
    with contextlib.suppress(OSError, ValueError):
        found = json.loads((work_dir / kept_as).read_text())
        if isinstance(found, dict) and found.get("limits") == applied:
            return found
    floor = measure(work_dir, CLASS_FILE_BYTES, CLASS_SECONDS_PER_JOB, throttle.procs, kept_as)
    floor.update(storage=name, limits=applied)
    (work_dir / kept_as).write_text(json.dumps(floor))
    return floor
