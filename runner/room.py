"""Whether the work directory's disk holds a run, checked before it starts: a run of 8 GiB of redo
that fills the disk after twenty minutes of workload wastes them, and a full disk can take the
host's other work down with it. Standard library only.

The estimate is coarse and errs high: the loaded tables at ROW_BYTES a row, and the redo log at
the larger of its size and the redo the crash waits for; a copy of that for the run's datadir,
one for the dataset cache where the dataset is loaded now, and a crash image and a restore's copy
where the run keeps one (image.ROOM_FACTOR); a restore needs its image's size once."""

import shutil
from pathlib import Path

from .contract import DEFAULT_REDO_LOG, RunSpec, size_bytes
from .dataset import DatasetCache
from .errors import RunFailed
from .image import ROOM_FACTOR, images_root
from .processes import folder_bytes

# sysbench's OLTP row on disk with its secondary index (a 1,000,000-row table: about 240 MB in
# InnoDB); MyRocks compresses, PostgreSQL's heap is near it: the estimate errs high for both.
ROW_BYTES = 256
MARGIN = 1.1


def datadir_bytes(spec: RunSpec) -> int:
    """About how large the run's datadir grows: its tables and its redo log."""
    workload, crash = spec.workload, spec.crash
    rows = workload.get("tables", 0) * workload.get("table_size", 0)
    redo = size_bytes(spec.parameters.get("redo_log_size", DEFAULT_REDO_LOG))
    if crash.get("when") == "at_redo_bytes":
        redo = max(redo, size_bytes(crash["redo_bytes"]))
    return rows * ROW_BYTES + redo


def needed_bytes(spec: RunSpec, base: Path, build: str) -> tuple[int, str]:
    """The bytes the run will write on the work directory's disk at most, and what they are."""
    image = spec.image
    if image.get("restore"):
        entry = images_root(base) / image["restore"]
        return int(folder_bytes(entry) * MARGIN), f"a copy of crash image {image['restore']}"
    one = datadir_bytes(spec)
    copies, parts = 1.0, ["the datadir"]
    if spec.reuse_dataset and not DatasetCache(base).ready(DatasetCache.key(spec, build)):
        copies, parts = copies + 1, [*parts, "the dataset cache's copy"]
    if image.get("keep"):
        copies, parts = copies + ROOM_FACTOR, [*parts, "the crash image and a restore's copy"]
    return int(one * copies * MARGIN), ", ".join(parts)


def check_room(spec: RunSpec, base: Path, build: str) -> dict:
    """RunFailed (permanent: the same run would fail the same way) before anything is written,
    where the disk is short; what was checked, for the result."""
    needed, what = needed_bytes(spec, base, build)
    free = shutil.disk_usage(base).free
    if needed > free:
        raise RunFailed(
            f"the work directory's disk is too small for this run: it needs about {needed / 2**30:,.1f} GiB "
            f"({what}), the disk has {free / 2**30:,.1f} GiB free. Free space there, make the dataset "
            f"or the redo smaller, or give the host a work_dir on a larger disk"
        )
    return {"needed_bytes": needed, "free_bytes": free, "for": what}
