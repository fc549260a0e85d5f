"""One crash, recovered many ways (issue 55): the state a kill left, kept as an image and restarted
in copies, so every restart from it replays the same redo, to the byte, and what differs between
them is their restart settings alone (buffer pool, page cache, storage class). Standard library only.

A run whose spec says `image: {"keep": NAME}` keeps, right after its kill and before its own
restart: the datadir as the kill left it (copied through descriptors, never following a link, with
a manifest, as the dataset cache keeps a dataset: dataset.keep_copy), the server's error log up to
the kill, the runner's own files of the load, the workload and the kill (the engine's status before
the workload and at the crash, which give the redo and its LSN range; sysbench's report; the
samples), and what its result said of them (ABOUT.json). A run whose spec says
`image: {"restore": NAME}` loads nothing and kills nothing: the image, checked against its manifest,
is copied into the run's own folder and handed to the server's user whole (server.take_datadir);
its error log goes in first, so the log reads as a crashed server's; its files and result are the
run's, moved to the run's clock; then the restart goes on as after a kill. `"remove": true` removes
the image once the run has restored it.

The dashboard names an image for its run and no other (`run-<id>-<experiment's uid>`): run ids are
each dashboard's own, and dashboards that share a host share its images folder.

Images are root's (WORK_DIR/images/, 700), like the dataset cache: the server's OS user, who owned
the datadir they were copied from, can change no later restart's starting state. Before keeping
one, the runner checks the disk holds it twice over (the image and a restore's copy) with a margin.
An image left behind (its runs cancelled) is removed by the next run IMAGE_HOURS after it was last
kept or restored.
"""

import json
import os
import shutil
import stat
import time
from pathlib import Path

from .dataset import CacheChanged, NotCached, keep_copy, restore_copy
from .errors import RunFailed
from .files import copy_regular, read_regular
from .processes import folder_bytes
from .sampler import SAMPLES_FILE

IMAGES = "images"
MANIFEST = "MANIFEST.json"
ABOUT = "ABOUT.json"
IMAGE_HOURS = 24
# the room a kept image asks for: the image and one restore's copy of it, and a margin
ROOM_FACTOR = 2.2
# the run's own files a restore carries (besides the engine's snapshots, *_before_run and *_at_crash)
CARRIED_FILES = ("sysbench_report.txt", "sysbench_prepare.txt", SAMPLES_FILE)
# what a restore's result takes from the run that kept the image
CARRIED_RESULT = ("dataset", "counters", "crash_plan", "samples_taken", "warning", "noise")
# the moments before the kill, moved to the restoring run's clock (its kill is the image's)
WORKLOAD_TIMES = ("server_spawned", "server_ready", "workload_started", "workload_ended")


def images_root(base: Path) -> Path:
    """WORK_DIR/images/, the runner's own (made 700 here; refused where it is not root's folder)."""
    root = base / IMAGES
    root.mkdir(mode=0o700, exist_ok=True)
    info = os.lstat(root)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
        raise RunFailed(f"refusing the crash images folder {root}: it is not a folder of the runner's own")
    os.chmod(root, 0o700)
    return root


def remove_stale(base: Path) -> list[str]:
    """Images not kept or restored for IMAGE_HOURS (their runs were cancelled or failed): removed;
    their names."""
    root = base / IMAGES
    if not root.is_dir():
        return []
    removed = []
    for entry in root.iterdir():
        if time.time() - entry.stat().st_mtime > IMAGE_HOURS * 3600:
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry.name)
    return removed


def _carried(key: str) -> bool:
    """A key of the keeping run's result that a restore's result takes."""
    return key in CARRIED_RESULT or key.endswith("_at_crash")


def keep(base: Path, name: str, server, work: Path, result: dict, checksums: dict | None) -> dict:
    """The state the kill left kept as image `name`; what was kept, for the result. RunFailed where
    the disk cannot hold it (before anything is written) or the datadir holds what is not a file."""
    root = images_root(base)
    needed, free = int(folder_bytes(server.datadir) * ROOM_FACTOR), shutil.disk_usage(root).free
    if needed > free:
        raise RunFailed(
            f"no room to keep the crash image: it needs {needed / 2**20:,.0f} MiB "
            f"(the datadir, a restore's copy and a margin), the disk has {free / 2**20:,.0f} MiB free"
        )
    partial = root / f"{name}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    shutil.rmtree(root / name, ignore_errors=True)
    partial.mkdir(mode=0o700)
    try:
        manifest = keep_copy(server.datadir, partial / "data")
    except (NotCached, OSError) as exc:
        shutil.rmtree(partial, ignore_errors=True)
        raise RunFailed(f"the crash image was not kept: {exc}") from None
    copy_regular(server.error_log, partial / "error.log")  # the server's: read as files.py reads
    (partial / "work").mkdir(mode=0o700)
    for path in [*work.glob("*_before_run.txt"), *work.glob("*_at_crash.txt")]:
        shutil.copy2(path, partial / "work" / path.name)
    for file in CARRIED_FILES:
        if (work / file).is_file():
            shutil.copy2(work / file, partial / "work" / file)
    about = {key: value for key, value in result.items() if _carried(key)}
    times = result["times"]
    about["times"] = {key: times[key] - times["killed"] for key in WORKLOAD_TIMES if key in times}
    about["killed"] = times["killed"]  # the keeping run's clock: a restore's samples move by the difference
    about.update(checksums=checksums, buffer_pool_size=server.spec.parameters.get("buffer_pool_size"))
    (partial / MANIFEST).write_text(json.dumps(manifest))
    (partial / ABOUT).write_text(json.dumps(about))
    partial.rename(root / name)
    return {"kept": name, "bytes": folder_bytes(root / name)}


def restore(base: Path, name: str, server, work: Path, result: dict, clock) -> dict | None:
    """Image `name` made this run's crashed state: its datadir the server's, its error log and
    files the run's, its result's facts in `result`, its moments on this run's clock with the kill
    now. Returns the checksums taken before the kill (None: crashed mid-workload). RunFailed where
    it is missing or not as it was kept."""
    entry = images_root(base) / name
    try:
        manifest = json.loads((entry / MANIFEST).read_text())
        about = json.loads((entry / ABOUT).read_text())
        staged = work / "image-copy"  # the run's folder: root's until handed over whole
        restore_copy(entry / "data", manifest, staged)
    except FileNotFoundError:
        raise RunFailed(
            f"crash image {name} is not on this host (the run that kept it failed, or it was removed)"
        ) from None
    except (CacheChanged, OSError, ValueError) as exc:
        shutil.rmtree(entry, ignore_errors=True)
        raise RunFailed(f"crash image {name} is not as it was kept ({exc}): removed") from None
    os.utime(entry)  # in use: remove_stale counts a day from its last restore, not from its making
    log = work / "error.log.image"  # the crashed server's log, the restart's first lines after it
    log.write_bytes(read_regular(entry / "error.log"))
    server.take_log(log)
    server.take_datadir(staged)
    for path in (entry / "work").iterdir():
        shutil.copy2(path, work / path.name)
    killed = clock.now()
    shift = round(killed - about["killed"], 6)
    _move(work / SAMPLES_FILE, shift)
    result.update({key: value for key, value in about.items() if _carried(key)})
    result["times"].update({key: killed + offset for key, offset in about["times"].items()})
    result["times"]["killed"] = killed
    result["image"] = {"restored": name, "buffer_pool_size": about.get("buffer_pool_size"), "shift_s": shift}
    return about.get("checksums")


def _move(samples: Path, shift: float) -> None:
    """The samples' moments moved onto the restoring run's clock (by the two kills' difference)."""
    if not samples.is_file():
        return
    rows = [json.loads(line) for line in samples.read_text().splitlines() if line.strip()]
    with samples.open("w") as out:
        for row in rows:
            if isinstance(row, dict) and isinstance(row.get("t"), int | float):
                row["t"] = round(row["t"] + shift, 6)
            out.write(json.dumps(row) + "\n")


def remove(base: Path, name: str) -> None:
    shutil.rmtree(base / IMAGES / name, ignore_errors=True)
