"""The power-cut layer alone (runner/powercut.py), mounted for real with FUSE over a
directory of the test's own: after the cut, what was synced is there and what was not is gone."""

import errno
import fcntl
import os
import select
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from runner.powercut import CUT_FILE

from .conftest import ROOT

pytestmark = pytest.mark.skipif(not Path("/dev/fuse").exists(), reason="no /dev/fuse here")


class Layer:
    def __init__(self, directory: Path):
        self.directory = directory
        self.process = subprocess.Popen(
            [sys.executable, "-m", "runner.powercut", str(directory)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        ready, _, _ = select.select([self.process.stdout], [], [], 30)
        assert ready and self.process.stdout.readline().strip() == "mounted", self.process.stderr.read()
        assert os.path.ismount(directory)

    def cut(self) -> None:
        fd = os.open(self.directory / CUT_FILE, os.O_WRONLY)
        try:
            os.write(fd, b"cut")
        finally:
            os.close(fd)

    def unmount(self) -> None:
        subprocess.run(["fusermount3", "-u", str(self.directory)], check=True)
        assert self.process.wait(timeout=30) == 0
        assert not os.path.ismount(self.directory)


@pytest.fixture
def directory():
    path = Path(tempfile.mkdtemp(prefix="recovery-lab-powercut-"))
    yield path
    if os.path.ismount(path):
        subprocess.run(["fusermount3", "-u", "-z", str(path)], check=False)
    shutil.rmtree(path, ignore_errors=True)


def write(path: Path, data: bytes, offset: int = 0, sync: bool = False, flags: int = 0) -> None:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | flags, 0o644)
    try:
        os.pwrite(fd, data, offset)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def test_what_was_synced_survives_the_cut_and_what_was_not_is_gone(directory):
    (directory / "before.bin").write_bytes(b"A" * 8192)  # on disk before the layer
    (directory / "sub").mkdir()
    layer = Layer(directory)
    try:
        write(directory / "before.bin", b"XXXX", 100)  # overwritten, never synced
        write(directory / "before.bin", b"grown", 8192)  # grown, never synced
        write(directory / "new.bin", b"hello")  # created, never synced
        write(directory / "sub" / "synced.bin", b"kept", sync=True)
        write(directory / "twice.bin", b"one", sync=True)
        write(directory / "twice.bin", b"two")  # the synced content overwritten, not synced
        write(directory / "dsync.bin", b"durable at once", flags=os.O_DSYNC)
        write(directory / "moved.bin", b"renamed", sync=True)
        os.rename(directory / "moved.bin", directory / "renamed.bin")
        assert (directory / "before.bin").read_bytes()[100:104] == b"XXXX"  # read back before the cut
        assert (directory / "twice.bin").read_bytes() == b"two"

        layer.cut()
        with pytest.raises(OSError) as refused:  # the dead server's late write is not applied
            write(directory / "new.bin", b"late")
        assert refused.value.errno == errno.EIO
    finally:
        layer.unmount()

    assert (directory / "before.bin").read_bytes() == b"A" * 8192
    assert (directory / "new.bin").read_bytes() == b""  # the name was journalled, the data not
    assert (directory / "sub" / "synced.bin").read_bytes() == b"kept"
    assert (directory / "twice.bin").read_bytes() == b"one"
    assert (directory / "dsync.bin").read_bytes() == b"durable at once"
    assert (directory / "renamed.bin").read_bytes() == b"renamed"
    assert not (directory / "moved.bin").exists()


def test_without_a_cut_every_write_stays_and_files_lock_as_the_server_locks_them(directory):
    layer = Layer(directory)
    try:
        write(directory / "plain.bin", b"x" * 100_000)
        with (directory / "plain.bin").open("r+b") as held:  # mariadbd locks ibdata1 so
            fcntl.lockf(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.lockf(held, fcntl.LOCK_UN)
    finally:
        layer.unmount()
    assert (directory / "plain.bin").read_bytes() == b"x" * 100_000


def test_a_layer_left_by_a_killed_runner_is_unmounted_by_the_next_one(directory):
    """Its process killed, the mount is dead (every access fails); the next runner, holding the
    work directory, unmounts what is left under it before it starts."""
    from runner.processes import unmount_stale

    base = directory
    (base / "run-1" / "data").mkdir(parents=True)
    layer = Layer(base / "run-1" / "data")
    layer.process.kill()
    layer.process.wait()
    with pytest.raises(OSError) as dead:
        os.listdir(base / "run-1" / "data")
    assert dead.value.errno == errno.ENOTCONN
    unmount_stale(base)
    assert not os.path.ismount(base / "run-1" / "data") and os.listdir(base / "run-1" / "data") == []
