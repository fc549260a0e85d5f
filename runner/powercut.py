"""A power-cut file system: a FUSE layer mounted over a directory (the private server's datadir)
that passes every read and write through to the directory underneath, remembers what a disk would
not yet hold, and at the cut puts that back as it was.

What a disk holds: what was written before the layer was mounted, and every write made durable
since, by an fsync or fdatasync of its file or a write through a handle opened O_SYNC/O_DSYNC.
Everything else written since (file contents, a file's growth) is undone at the cut: overwritten
bytes get their last durable content back, and each file is cut back to its last durable size (a
file created and never synced ends empty). Names (creations, renames, unlinks) are taken as
journalled, as ext4 and XFS do with their metadata. A write through an O_SYNC/O_DSYNC handle makes
its whole file durable, like an fdatasync after it.

The layer is mounted on the very directory it serves: it opens the directory first and works
below the mount through that descriptor (the *at system calls), so the server sees the same paths
before the cut and after, when it restarts on the directory itself with the layer gone.

The cut: the runner kills the server, then writes anything to the virtual file CUT_FILE at the
top of the mount; the write returns once every undurable write is undone, and from then on the
layer refuses writes (a request of the dead server still in flight is not applied). The runner
then unmounts it.

It does nothing its caller could not do without it. The runner (crash.py, PowerCutLayer) mounts
it as root with the kernel checking every permission (`default_permissions`), set-id bits and
devices ignored (`nosuid,nodev`), and hands the mount to this process run as the server's own OS
user: `python3 -m <its package>.powercut --fuse-fd N --root-fd M`, the descriptors of /dev/fuse
and of the directory beneath. So every file operation below acts with that user's rights, not
root's. On top of that the layer itself passes no set-id bit and no change of owner to another
user, and follows no link. Run as `python3 -m <its package>.powercut DIR` it mounts DIR itself
(fusermount3), as its caller. It prints "mounted" once the mount is up.
"""

import argparse
import errno
import os
import stat
import sys
import threading
from dataclasses import dataclass, field

import mfusepy as fuse

from .contract import POWER_CUT_FILE as CUT_FILE

SYNC_FLAGS = os.O_SYNC | os.O_DSYNC
SET_ID_BITS = stat.S_ISUID | stat.S_ISGID


@dataclass
class Undo:
    """What a file held at its last durable moment: its size, and the old bytes of every range
    written since (newest last; undone newest first, so the oldest content wins)."""

    durable_size: int
    old: list[tuple[int, bytes]] = field(default_factory=list)


class PowerCut(fuse.Operations):
    use_ns = True  # utimens gets nanoseconds, as os.utime(ns=...) takes them

    def __init__(self, root_fd: int):
        self.root = root_fd
        self.mutex = threading.Lock()
        self.undo: dict[str, Undo] = {}
        self.sync_handles: set[int] = set()
        self.cut_done = False

    # Paths: every call works below the mount, relative to the directory's descriptor --------

    @staticmethod
    def rel(path: str) -> str:
        return path.lstrip("/") or "."

    def _stat(self, path: str):
        return os.stat(self.rel(path), dir_fd=self.root, follow_symlinks=False)

    # The cut ---------------------------------------------------------------------------------

    def cut(self) -> None:
        """Undo every write no disk would hold, newest first; then refuse any further write."""
        with self.mutex:
            for name, undo in self.undo.items():
                try:
                    fd = os.open(name, os.O_WRONLY | os.O_NOFOLLOW, dir_fd=self.root)
                except OSError as exc:
                    if exc.errno not in (errno.ENOENT, errno.ELOOP):
                        raise
                    continue  # unlinked (or a link put in its place) since: its name is gone, as journalled
                try:
                    for offset, data in reversed(undo.old):
                        os.pwrite(fd, data, offset)
                    if os.fstat(fd).st_size > undo.durable_size:
                        os.ftruncate(fd, undo.durable_size)
                finally:
                    os.close(fd)
            self.undo.clear()
            self.cut_done = True

    def _remember(self, name: str, fd: int, offset: int, length: int) -> None:
        """Before a write of `length` bytes at `offset`: keep what it overwrites of the durable
        content. Called with the lock held."""
        undo = self.undo.get(name)
        if undo is None:
            undo = self.undo[name] = Undo(durable_size=os.fstat(fd).st_size)
        end = min(offset + length, undo.durable_size)
        if offset < end:
            undo.old.append((offset, os.pread(fd, end - offset, offset)))

    def _made_durable(self, name: str) -> None:
        self.undo.pop(name, None)

    # Files -----------------------------------------------------------------------------------

    def getattr(self, path, fh=None):
        if path == "/" + CUT_FILE:
            return {"st_mode": stat.S_IFREG | 0o200, "st_nlink": 1, "st_size": 0}
        try:
            st = os.fstat(fh) if fh is not None else self._stat(path)
        except OSError as exc:
            raise fuse.FuseOSError(exc.errno) from exc
        keys = ("st_atime", "st_ctime", "st_mtime", "st_gid", "st_uid", "st_mode", "st_nlink", "st_size")
        found = {key: getattr(st, key) for key in keys}
        found.update(st_blocks=st.st_blocks, st_blksize=st.st_blksize, st_ino=st.st_ino)
        return found

    def readdir(self, path, fh):
        fd = os.open(self.rel(path), os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=self.root)
        try:
            return [".", "..", *os.listdir(fd)]
        finally:
            os.close(fd)

    def open(self, path, flags):
        if path == "/" + CUT_FILE:
            return 0
        # O_DIRECT stays between the server and the kernel: below, the layer reads and writes
        # through its own buffers, which O_DIRECT's alignment rules would refuse.
        fd = os.open(self.rel(path), (flags & ~(os.O_CREAT | os.O_DIRECT)) | os.O_NOFOLLOW, dir_fd=self.root)
        if flags & SYNC_FLAGS:
            self.sync_handles.add(fd)
        return fd

    def create(self, path, mode, flags=0):
        name = self.rel(path)
        with self.mutex:
            self._refuse_after_cut()
            try:
                os.stat(name, dir_fd=self.root, follow_symlinks=False)
                existed = True
            except FileNotFoundError:
                existed = False
            fd = os.open(
                name,
                os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | (flags & SYNC_FLAGS),
                mode & ~SET_ID_BITS,
                dir_fd=self.root,
            )
            if not existed:
                self.undo[name] = Undo(durable_size=0)  # a new file: empty until synced
            if flags & SYNC_FLAGS:
                self.sync_handles.add(fd)
        return fd

    def read(self, path, size, offset, fh):
        return os.pread(fh, size, offset)

    def write(self, path, data, offset, fh):
        if path == "/" + CUT_FILE:
            self.cut()
            return len(data)
        name = self.rel(path)
        with self.mutex:
            self._refuse_after_cut()
            if fh not in self.sync_handles:
                self._remember(name, fh, offset, len(data))
            written = os.pwrite(fh, data, offset)
            if fh in self.sync_handles:
                self._made_durable(name)
        return written

    def truncate(self, path, length, fh=None):
        if path == "/" + CUT_FILE:
            return 0
        name = self.rel(path)
        with self.mutex:
            self._refuse_after_cut()
            fd = fh if fh is not None else os.open(name, os.O_WRONLY | os.O_NOFOLLOW, dir_fd=self.root)
            try:
                size = os.fstat(fd).st_size
                if length < size:
                    self._remember(name, fd, length, size - length)
                else:
                    self._remember(name, fd, size, 0)
                os.ftruncate(fd, length)
            finally:
                if fh is None:
                    os.close(fd)

    def fallocate(self, path, mode, offset, length, fh):
        if mode:  # only plain allocation; the server falls back without it
            raise fuse.FuseOSError(errno.EOPNOTSUPP)
        with self.mutex:
            self._refuse_after_cut()
            self._remember(self.rel(path), fh, offset, 0)  # its durable size, if first touched
            os.posix_fallocate(fh, offset, length)
        return 0

    def fsync(self, path, datasync, fh):
        (os.fdatasync if datasync else os.fsync)(fh)
        with self.mutex:
            if not self.cut_done:
                self._made_durable(self.rel(path))
        return 0

    def flush(self, path, fh):
        return 0

    def release(self, path, fh):
        if path != "/" + CUT_FILE:
            self.sync_handles.discard(fh)
            os.close(fh)
        return 0

    # Names and attributes: passed through (journalled metadata) -------------------------------

    def _refuse_after_cut(self):
        """After the cut the disk is what it is: a write of the dead server still in flight is
        refused, not applied."""
        if self.cut_done:
            raise fuse.FuseOSError(errno.EIO)

    _names_change = _refuse_after_cut

    def mkdir(self, path, mode):
        self._names_change()
        os.mkdir(self.rel(path), mode & ~SET_ID_BITS, dir_fd=self.root)

    def rmdir(self, path):
        self._names_change()
        os.rmdir(self.rel(path), dir_fd=self.root)

    def unlink(self, path):
        self._names_change()
        with self.mutex:
            os.unlink(self.rel(path), dir_fd=self.root)
            self.undo.pop(self.rel(path), None)

    def rename(self, old, new):
        self._names_change()
        with self.mutex:
            os.rename(self.rel(old), self.rel(new), src_dir_fd=self.root, dst_dir_fd=self.root)
            if self.rel(old) in self.undo:
                self.undo[self.rel(new)] = self.undo.pop(self.rel(old))
            else:
                self.undo.pop(self.rel(new), None)

    def link(self, target, source):
        self._names_change()
        # the name itself, never what a link there points to
        os.link(
            self.rel(source),
            self.rel(target),
            src_dir_fd=self.root,
            dst_dir_fd=self.root,
            follow_symlinks=False,
        )

    def symlink(self, target, source):
        self._names_change()
        os.symlink(source, self.rel(target), dir_fd=self.root)

    def readlink(self, path):
        return os.readlink(self.rel(path), dir_fd=self.root)

    def chmod(self, path, mode):
        if mode & SET_ID_BITS:  # a set-id program made through the layer: never
            raise fuse.FuseOSError(errno.EPERM)
        fd = os.open(self.rel(path), os.O_PATH | os.O_NOFOLLOW, dir_fd=self.root)
        try:
            if stat.S_ISLNK(os.fstat(fd).st_mode):
                raise fuse.FuseOSError(errno.EOPNOTSUPP)  # a link's own mode means nothing
            os.chmod(f"/proc/self/fd/{fd}", mode)
        finally:
            os.close(fd)

    def chown(self, path, uid, gid):
        """Only to the caller's own user and group (-1: unchanged), as the kernel allows a user."""
        caller_uid, caller_gid, _pid = fuse.fuse_get_context()
        uid = -1 if uid in (caller_uid, 0xFFFFFFFF) else uid
        gid = -1 if gid in (caller_gid, 0xFFFFFFFF) else gid
        if uid != -1 or gid != -1:
            raise fuse.FuseOSError(errno.EPERM)

    def utimens(self, path, times=None):
        os.utime(self.rel(path), ns=times, dir_fd=self.root, follow_symlinks=False)

    def access(self, path, amode):
        if path != "/" + CUT_FILE and not os.access(self.rel(path), amode, dir_fd=self.root):
            raise fuse.FuseOSError(errno.EACCES)

    def statfs(self, path):
        st = os.statvfs(self.root)
        keys = ("f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail", "f_ffree", "f_files", "f_flag")
        return {key: getattr(st, key) for key in (*keys, "f_frsize", "f_namemax")}

    def init(self, path):
        print("mounted", flush=True)


def serve(directory: str) -> int:
    """Mount the layer on `directory` as its caller (fusermount3) and serve it until it is
    unmounted. The kernel checks every permission."""
    root_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    fuse.FUSE(PowerCut(root_fd), directory, foreground=True, nothreads=False, default_permissions=True)
    return 0


def serve_mounted(fuse_fd: int, root_fd: int) -> int:
    """Serve a mount root made (crash.mount_layer): `fuse_fd` its /dev/fuse, `root_fd` the
    directory beneath, both opened before the mount."""
    fuse.FUSE(PowerCut(root_fd), f"/dev/fd/{fuse_fd}", foreground=True, nothreads=False)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="the power-cut file system")
    parser.add_argument("directory", nargs="?", help="mount over this directory, as the caller")
    parser.add_argument("--fuse-fd", type=int, help="serve the mount of this /dev/fuse descriptor")
    parser.add_argument("--root-fd", type=int, help="with --fuse-fd: the directory beneath the mount")
    args = parser.parse_args(argv)
    if args.fuse_fd is not None and args.root_fd is not None:
        return serve_mounted(args.fuse_fd, args.root_fd)
    if args.directory:
        return serve(args.directory)
    parser.error("a directory, or --fuse-fd and --root-fd")
    return 2


if __name__ == "__main__":
    sys.exit(main())
