"""The restart's page-cache count (runner/page_cache.py) costs what a file really holds, not what it
says it holds (issue 64, item 6a). The server's OS user can make a file of 256 GiB that holds
nothing (`truncate`); counting it by its size had cost the root runner 14.7 s and 144 MB at every
restart. The count walks the file's data only (SEEK_DATA, SEEK_HOLE), a bounded window at a time."""

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="acting as another OS user needs root")

MiB, GiB = 2**20, 2**30
# Where the server's user writes data into its 256 GiB file: a small piece, and a piece larger
# than two of the count's windows (64 MiB), so a window's edge falls inside what is counted.
PIECES = ((1 * GiB, 3 * MiB), (200 * GiB, 130 * MiB))
# What is evicted again after the writes (offset, length): the count must not say the whole piece.
EVICTED = ((1 * GiB, 1 * MiB), (200 * GiB + 63 * MiB, 2 * MiB))

# As the server's OS user: the sparse file, its two pieces written and synced.
PLANT = r"""
import os, sys
path, size, pieces = sys.argv[1], int(sys.argv[2]), eval(sys.argv[3])
fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
os.ftruncate(fd, size)
for offset, length in pieces:
    for start in range(offset, offset + length, 1 << 20):
        os.pwrite(fd, b"d" * (1 << 20), start)
os.fsync(fd)
"""

# As the runner counts, in a process of its own so its peak memory is the count's: VmHWM, its
# peak resident set (ru_maxrss would start at pytest's own, which Linux carries across exec).
COUNT = r"""
import json, sys
from pathlib import Path
from runner import page_cache
def peak_kib():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
before = peak_kib()
found = page_cache.before_restart(Path(sys.argv[1]), "warm")
after = peak_kib()
print(json.dumps({"found": found, "grew_kib": after - before, "windows": page_cache.windows_mapped}))
"""


def _as_user(user: str, args: list[str]) -> None:
    entry = pwd.getpwnam(user)
    command = ["setpriv", f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}", "--clear-groups", "--", *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def _fincore_bytes(path: Path) -> int:
    done = subprocess.run(
        ["fincore", "--bytes", "--raw", "--noheadings", "--output", "RES", str(path)],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    return int(done.stdout.split()[0])


@pytest.fixture
def run_folder():
    """A run's folder as the runner makes it: root's, entered by the server's user, on the disk
    (a host's work directory is; tmpfs holds every page in memory whatever is asked)."""
    folder = Path(tempfile.mkdtemp(prefix="sparse-", dir="/var/tmp"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder)


@pytest.mark.skipif(shutil.which("fincore") is None, reason="fincore (util-linux) checks the count")
def test_a_sparse_file_the_server_s_user_planted_costs_the_count_its_data_not_its_size(run_folder):
    home = run_folder / "server"
    home.mkdir(mode=0o700)
    shutil.chown(home, user="nobody")
    planted = home / "ibdata-sparse"
    _as_user("nobody", [sys.executable, "-c", PLANT, str(planted), str(256 * GiB), repr(PIECES)])
    fd = os.open(planted, os.O_RDONLY)
    try:
        for offset, length in EVICTED:  # synced already: these pages leave the cache
            os.posix_fadvise(fd, offset, length, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    # the kernel's own count, before the runner's: what was written and not evicted, less what
    # the machine's other work may have pushed out since (nothing reads the file back in)
    cached = sum(length for _, length in PIECES) - sum(length for _, length in EVICTED)
    held_before = _fincore_bytes(planted)
    assert cached / 2 < held_before <= cached

    done = subprocess.run(
        [sys.executable, "-c", COUNT, str(home)],
        capture_output=True, text=True, timeout=600, cwd=Path(__file__).resolve().parent.parent,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    counted = json.loads(done.stdout)
    assert counted["grew_kib"] < 50 * 1024, f"the count grew the runner by {counted['grew_kib']} KiB"
    found = counted.pop("found")
    assert (found["mode"], found["files"], found["bytes"]) == ("warm", 1, 256 * GiB)
    # counting read nothing into the cache, and said what the kernel says it holds
    assert _fincore_bytes(planted) <= found["resident_bytes"] <= held_before, (found, held_before)
    # one window for the small piece, three for the 130 MiB one: none over the holes
    assert counted["windows"] == 1 + 3, counted
