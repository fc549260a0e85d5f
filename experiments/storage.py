"""Storage classes: the names a definition's `storage` parameter takes besides `local` (the
host's disk as it is), each with the rates the runner caps a restart to (runner/throttle.py).
Data, in storage_classes.yaml beside this module, or the file STORAGE_CLASSES_FILE names. No Django.
"""

import os
from dataclasses import dataclass
from pathlib import Path

import yaml

from runner.contract import LOCAL_STORAGE, STORAGE_NAME, RunFailed

SHIPPED = Path(__file__).with_name("storage_classes.yaml")
FIGURES = ("read_mb_s", "write_mb_s", "read_iops", "write_iops")
MAX_FIGURE = 1_000_000  # MB/s or requests a second


class StorageClassesInvalid(Exception):
    """The classes' file cannot be used: what is wrong, and where."""


@dataclass(frozen=True)
class StorageClass:
    name: str
    label: str
    read_mb_s: float
    write_mb_s: float
    read_iops: int
    write_iops: int
    source: str

    def limits(self) -> dict:
        """The run spec's `storage`: the runner's limits, bytes and requests a second."""
        return {
            "name": self.name,
            "read_bps": round(self.read_mb_s * 1e6),
            "write_bps": round(self.write_mb_s * 1e6),
            "read_iops": self.read_iops,
            "write_iops": self.write_iops,
        }

    def said(self) -> str:
        """'hdd-raid10 (RAID10 of four 7,200 rpm disks: reads 300 MB/s, 320 requests/s; ...)'"""
        return (
            f"{self.name} ({self.label}: reads {self.read_mb_s:,g} MB/s, {self.read_iops:,} requests/s; "
            f"writes {self.write_mb_s:,g} MB/s, {self.write_iops:,} requests/s)"
        )


def load(path: Path) -> dict[str, StorageClass]:
    """The classes a file holds, each checked; StorageClassesInvalid says the first fault."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise StorageClassesInvalid(f"{path}: {exc}") from None
    if not isinstance(raw, dict):
        raise StorageClassesInvalid(f"{path}: a mapping of class names to their figures")
    found = {}
    for name, entry in raw.items():
        where = f"{path}: class {name!r}"
        if not isinstance(name, str) or not STORAGE_NAME.match(name) or name == LOCAL_STORAGE:
            raise StorageClassesInvalid(
                f"{where}: a name of lowercase letters, digits and -, not {LOCAL_STORAGE}"
            )
        if not isinstance(entry, dict) or set(entry) != {"label", "source", *FIGURES}:
            raise StorageClassesInvalid(f"{where}: label, source and {', '.join(FIGURES)}, nothing else")
        for figure in FIGURES:
            value = entry[figure]
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= MAX_FIGURE:
                raise StorageClassesInvalid(
                    f"{where}: {figure} must be a number above 0, at most {MAX_FIGURE:,}"
                )
        if not all(isinstance(entry[key], str) and entry[key].strip() for key in ("label", "source")):
            raise StorageClassesInvalid(f"{where}: label and source are words")
        found[name] = StorageClass(
            name,
            entry["label"].strip(),
            float(entry["read_mb_s"]),
            float(entry["write_mb_s"]),
            int(entry["read_iops"]),
            int(entry["write_iops"]),
            " ".join(entry["source"].split()),
        )
    return found


CLASSES: dict[str, StorageClass] = load(Path(os.environ.get("STORAGE_CLASSES_FILE") or SHIPPED))
NAMES: tuple[str, ...] = (LOCAL_STORAGE, *CLASSES)


def limits_of(parameters: dict) -> dict:
    """A run's `storage` for the runner: its class's limits, {} for the local disk. A class no
    longer in the classes' file cannot run: RunFailed (permanent) says so."""
    name = parameters.get("storage", LOCAL_STORAGE)
    if name == LOCAL_STORAGE:
        return {}
    if name not in CLASSES:
        raise RunFailed(
            f"storage class {name} is not among this lab's classes ({', '.join(CLASSES) or 'none'})"
        )
    return CLASSES[name].limits()
