"""A storage class at the restart: the kernel's block I/O controller (cgroup v1
`blkio.throttle.*`) caps the server's reads and writes, bytes and requests per second, on the
disk that holds the work directory. Standard library only.

The runner makes a cgroup of its own (root's, under /sys/fs/cgroup/blkio, named by its pid and
the run's id), writes the class's limits, and starts the restarted server in it: a root shell
writes its own pid into the group and execs the server's start (setpriv, then the server), so
the server's first read is already capped, and every process it forks is in the group too.
fio, run in the group, measures what the cap gives (floor.measure): the class's floor is
measured, not assumed. The group is removed when the server is gone.

A throttle caps rates; it does not seek. A class of spinning disks is modelled by its requests
per second. cgroup v1 caps buffered writes only where the writing process submits them (the
kernel's flusher writes most of them, uncapped): reads, direct writes and fsyncs are capped.
A host whose kernel offers no cgroup v1 blkio says so (`io_control`): cgroup v2's io.max is not
driven by this runner yet.
"""

import contextlib
import os
from pathlib import Path

from .errors import RunFailed

BLKIO = Path("/sys/fs/cgroup/blkio")
PREFIX = "recovery-lab-"
# a class's limit -> the file of the group that takes it ("MAJ:MIN VALUE")
LIMIT_FILES = {
    "read_bps": "blkio.throttle.read_bps_device",
    "write_bps": "blkio.throttle.write_bps_device",
    "read_iops": "blkio.throttle.read_iops_device",
    "write_iops": "blkio.throttle.write_iops_device",
}
HOW = "cgroup v1 blkio throttle"
# what served() counts: the group's requests and bytes, read and written
SERVED = ("read_requests", "write_requests", "read_bytes", "write_bytes")
COUNTED_IN = {"blkio.throttle.io_serviced": "requests", "blkio.throttle.io_service_bytes": "bytes"}
# How a process joins the group before it runs anything: a shell as root, given the group's file
# as its $0 and the command to exec as its arguments (nothing of a user's reaches it).
JOIN = ("/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"')


def io_control() -> dict:
    """{"ready": true, "how"} where this runner can cap a server's I/O here, else
    {"ready": false, "missing": [why]}: for the hosts page, and a class asked of it is refused."""
    missing = []
    if not (BLKIO / LIMIT_FILES["read_bps"]).exists():
        missing.append(
            "cgroup v1 blkio throttling (this kernel does not mount it; io.max of cgroup v2 is not supported)"
        )
    elif not os.access(BLKIO, os.W_OK):
        missing.append(f"write access to {BLKIO} (the runner runs as root to make its groups)")
    return {"ready": not missing, "how": HOW} if not missing else {"ready": False, "missing": missing}


def whole_disk(device: str) -> str:
    """The disk a device (MAJ:MIN) is a partition of, or the device itself: the throttle takes
    whole disks."""
    block = Path("/sys/dev/block") / device
    if (block / "partition").exists():
        with contextlib.suppress(OSError):
            return (block.resolve().parent / "dev").read_text().strip()
    return device


class Throttle:
    """The group of one run's restart: made with the class's limits, removed after the server."""

    def __init__(self, device: str, limits: dict, run_id: int):
        self.device = whole_disk(device)
        self.limits = {name: int(limits.get(name) or 0) for name in LIMIT_FILES}
        self.group = BLKIO / f"{PREFIX}{os.getpid()}-{run_id}"

    @property
    def procs(self) -> Path:
        """The file a process writes its pid to, to join the group."""
        return self.group / "cgroup.procs"

    def make(self) -> "Throttle":
        """The group, made with the class's limits; RunFailed where the host cannot."""
        ready = io_control()
        if not ready["ready"]:
            raise RunFailed(f"this host cannot apply a storage class: missing {', '.join(ready['missing'])}")
        self.group.mkdir(mode=0o755)
        try:
            for name, value in self.limits.items():
                if value:
                    (self.group / LIMIT_FILES[name]).write_text(f"{self.device} {value}\n")
        except OSError as exc:
            self.remove()
            raise RunFailed(
                f"the storage class's limits were refused on device {self.device}: {exc}"
            ) from None
        return self

    def applied(self) -> dict:
        """The limits as the kernel holds them (0: none), the device and how."""
        held = {}
        for name, file in LIMIT_FILES.items():
            with contextlib.suppress(OSError, ValueError):
                lines = (self.group / file).read_text().split("\n")
                held[name] = next(
                    (int(line.split()[1]) for line in lines if line.startswith(f"{self.device} ")), 0
                )
        return {"device": self.device, "how": HOW, **held}

    def served(self) -> dict:
        """What the group's processes have asked of the disk so far: reads and writes, requests
        (`io_serviced`) and bytes (`io_service_bytes`); the kernel counts a request when it is
        submitted, before the cap holds it. Zeros where the group is gone."""
        counted = dict.fromkeys(SERVED, 0)
        for file, unit in COUNTED_IN.items():
            with contextlib.suppress(OSError):
                for line in (self.group / file).read_text().splitlines():
                    device, _, rest = line.partition(" ")
                    kind, _, value = rest.partition(" ")
                    key = f"{kind.lower()}_{unit}"
                    if device == self.device and key in counted and value.isdigit():
                        counted[key] = int(value)
        return counted

    def release(self) -> None:
        """Every process of the group moved back to the root group: what it does next is not
        measured, so it is not held to the class (a clean shutdown writes out the pages recovery
        left dirty: 124,000 of seed 000's at 160 requests a second). A process started later with
        the group's file (Throttle.procs) joins it again."""
        with contextlib.suppress(OSError):
            for pid in self.procs.read_text().split():
                with contextlib.suppress(OSError):  # gone meanwhile
                    (BLKIO / "cgroup.procs").write_text(pid)

    def join(self, pid: int) -> None:
        """A running process (with its threads) moved into the group."""
        self.procs.write_text(str(pid))

    def remove(self) -> None:
        with contextlib.suppress(OSError):  # busy: a process still in it; remove_stale takes it later
            self.group.rmdir()


def remove_stale() -> None:
    """Remove the groups of runners that are gone (an empty group only: the kernel refuses others)."""
    for group in BLKIO.glob(f"{PREFIX}*") if BLKIO.is_dir() else []:
        pid = group.name[len(PREFIX) :].split("-")[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            with contextlib.suppress(OSError):
                group.rmdir()
