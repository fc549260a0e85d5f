"""The loaded dataset: prepared once per definition and server build, kept, and copied into each run's
datadir.

The cache is root's alone (`WORK_DIR/datasets/`, mode 700, its files root's): the server's OS
user, who owned the datadir it was copied from, can change no later run's starting data. Each
entry has a manifest written when it was kept: every file's and folder's kind, mode, size, inode
and change time (ctime), which any change to a file moves and no user can set back. An entry is
checked against it before a run copies it; one that changed is removed and the dataset loaded
again. The copy is made in the run's own folder (root's) and handed to the server's user whole
(server.take_datadir)."""

import errno
import hashlib
import json
import os
import shutil
import stat
import subprocess
import time
from pathlib import Path

from .contract import SCRIPTED_WORKLOADS, RunFailed, RunSpec
from .events import progress
from .server import Server
from .workload import Sysbench

DATASETS_KEPT = 4
# 3: root's entries with a manifest (before: copies owned by the server's user, unchecked)
LAYOUT = 3
MANIFEST = "MANIFEST.json"


class NotCached(Exception):
    """A datadir the cache will not keep (something in it that is not a file or a folder)."""


class CacheChanged(Exception):
    """A cached dataset that is not what its manifest says."""


def _data_ranges(fd: int, size: int):
    """The (start, end) ranges of the open file that hold data: a hole, or space allocated and
    never written (a redo log made at its full size), is none (SEEK_DATA and SEEK_HOLE)."""
    offset = 0
    while offset < size:
        try:
            start = os.lseek(fd, offset, os.SEEK_DATA)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # nothing but holes from here on
                return
            if exc.errno != errno.EINVAL:  # EINVAL: a file system that cannot say
                raise
            start, end = offset, size
        else:
            end = os.lseek(fd, start, os.SEEK_HOLE)
        yield start, min(end, size)
        offset = end


def _copy_range(source_fd: int, out: int, start: int, end: int) -> None:
    """Bytes start to end of one open file into another at the same offsets, in the kernel
    where it can."""
    copied = start
    try:
        while copied < end:
            done = os.copy_file_range(source_fd, out, end - copied, copied, copied)
            if done == 0:
                return
            copied += done
    except OSError as exc:
        if exc.errno not in (errno.EXDEV, errno.ENOSYS, errno.EOPNOTSUPP, errno.EINVAL):
            raise
        while copied < end and (chunk := os.pread(source_fd, min(4 * 2**20, end - copied), copied)):
            copied += os.pwrite(out, chunk, copied)


def _copy_file(source_fd: int, target: Path) -> None:
    """The open file copied to `target` (made new, root's, 600), its holes kept: a 12 GiB redo
    log that holds 8 GiB of redo writes 8 GiB, not 12 (the rest reads as zeros either way)."""
    out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        size = os.fstat(source_fd).st_size
        for start, end in _data_ranges(source_fd, size):
            _copy_range(source_fd, out, start, end)
        os.ftruncate(out, size)
        os.fsync(out)  # on the disk before a restart reads it: no write-back of the lab's copy beside it
    finally:
        os.close(out)


def _entry(info: os.stat_result, kind: str, mode: int) -> list:
    """What the manifest says of one cached file or folder."""
    return [kind, mode, info.st_size if kind == "file" else 0, info.st_ino, info.st_ctime_ns]


def keep_copy(datadir: Path, target: Path) -> dict:
    """The server's datadir (its user's; the server stopped) copied into `target` (root's, new):
    walked through descriptors without following a link, every name checked as it is opened.
    Returns the manifest {relative path: [kind, mode, size, inode, ctime_ns]} of the copy;
    NotCached names the first thing that is neither a regular file nor a folder."""
    modes: dict[str, tuple[str, int]] = {}
    if not stat.S_ISDIR(os.lstat(datadir).st_mode):
        raise NotCached(f"{datadir.name} is not a folder")
    target.mkdir(mode=0o700)
    for folder, folders, files, dir_fd in os.fwalk(datadir):
        relative = Path(folder).relative_to(datadir)
        for name in (*folders, *files):
            info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            path = relative / name
            mode = stat.S_IMODE(info.st_mode) & 0o777  # no set-id bit is kept
            if stat.S_ISDIR(info.st_mode):
                (target / path).mkdir(mode=0o700)
                modes[str(path)] = ("folder", mode)
            elif stat.S_ISREG(info.st_mode):
                flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
                try:
                    fd = os.open(name, flags, dir_fd=dir_fd)
                except OSError as exc:
                    why = exc.strerror
                    raise NotCached(f"{path} could not be opened without following a link: {why}") from None
                try:
                    if not stat.S_ISREG(os.fstat(fd).st_mode):
                        raise NotCached(f"{path} changed while it was copied")
                    _copy_file(fd, target / path)
                finally:
                    os.close(fd)
                modes[str(path)] = ("file", mode)
            else:
                kind = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "not a file or a folder"
                raise NotCached(f"{path} is {kind}")
    # folders root's and closed to others: their modes are the manifest's, applied to each run's copy
    for folder, _folders, _files in os.walk(target):
        os.chmod(folder, 0o700)
    return {path: _entry(os.lstat(target / path), kind, mode) for path, (kind, mode) in modes.items()}


def check_entry(entry: Path, manifest: dict) -> None:
    """CacheChanged where the cached `entry` is not what its manifest says: a file or folder
    added, missing, of another kind, size, inode or change time."""
    found = {
        str(Path(folder, name).relative_to(entry))
        for folder, folders, files in os.walk(entry)
        for name in (*folders, *files)
    }
    if found != set(manifest):
        extra, missing = sorted(found - set(manifest)), sorted(set(manifest) - found)
        raise CacheChanged(f"added {extra[:3]}" if extra else f"missing {missing[:3]}")
    for path, (kind, mode, *about) in manifest.items():
        info = os.lstat(entry / path)
        is_kind = stat.S_ISDIR(info.st_mode) if kind == "folder" else stat.S_ISREG(info.st_mode)
        if not is_kind or _entry(info, kind, mode) != [kind, mode, *about]:
            raise CacheChanged(f"{path} changed")


def restore_copy(entry: Path, manifest: dict, target: Path) -> None:
    """The cached `entry`, checked, copied into `target` (new, in the run's folder, root's) with
    the modes the manifest says. Both sides are root's: cp copies it (reflinks where the file
    system has them)."""
    check_entry(entry, manifest)
    done = subprocess.run(
        ["cp", "-a", "--reflink=auto", "--", str(entry), str(target)], capture_output=True, text=True
    )
    if done.returncode != 0:
        raise RunFailed(f"copying the cached dataset to {target} failed: {done.stderr.strip()[:300]}")
    for path, (kind, mode, *_about) in manifest.items():
        os.chmod(target / path, mode)
        if kind == "file":  # written out now: seed 000's keeper recovered beside 14 GiB of its copy
            fd = os.open(target / path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
    os.chmod(target, 0o700)


class DatasetCache:
    """Loaded datasets, one per engine, server build, table count and size: loaded once, shut
    down slowly, and copied for each run, so a run's redo is its workload's and not the load's,
    and the load is paid once. The most recently used DATASETS_KEPT are kept. Only one runner
    works in a work directory at a time (hold_work_dir), so no two write one entry."""

    def __init__(self, base: Path):
        self.root = base / "datasets"
        self.root.mkdir(mode=0o700, exist_ok=True)
        info = os.lstat(self.root)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
            raise RunFailed(f"refusing the dataset cache {self.root}: it is not a folder of the runner's own")
        os.chmod(self.root, 0o700)

    @staticmethod
    def key(spec: RunSpec, server_build: str) -> str:
        workload = spec.workload
        # LAYOUT: datasets made before the cache was root's, with a manifest, are not reused
        identity = [LAYOUT, spec.engine, server_build, workload["tables"], workload["table_size"]]
        if workload["name"] in SCRIPTED_WORKLOADS:  # tables of its own schema, not sysbench's OLTP one
            identity.append(workload["name"])
        return hashlib.sha256(json.dumps(identity).encode()).hexdigest()[:16]

    def ready(self, key: str) -> bool:
        return (self.root / key / "READY").exists() and (self.root / key / MANIFEST).exists()

    def restore(self, key: str, target: Path) -> None:
        """The entry copied to `target` (root's) as its manifest says; CacheChanged, and the entry
        removed, where it is not."""
        entry = self.root / key
        try:
            manifest = json.loads((entry / MANIFEST).read_text())
            restore_copy(entry / "data", manifest, target)
        except (CacheChanged, OSError, ValueError) as exc:
            shutil.rmtree(entry, ignore_errors=True)
            shutil.rmtree(target, ignore_errors=True)
            raise CacheChanged(f"the cached dataset {key} is not as it was kept ({exc}): removed") from None
        os.utime(entry / "READY")  # recently used

    def keep(self, key: str, datadir: Path, about: dict) -> str | None:
        """The datadir kept as the entry `key`; why not, if it was not."""
        partial = self.root / f"{key}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(mode=0o700)
        try:
            manifest = keep_copy(datadir, partial / "data")
        except (NotCached, OSError) as exc:
            shutil.rmtree(partial, ignore_errors=True)
            return f"the loaded dataset was not cached: {exc}"
        (partial / MANIFEST).write_text(json.dumps(manifest))
        (partial / "READY").write_text(json.dumps(about))
        shutil.rmtree(self.root / key, ignore_errors=True)
        partial.rename(self.root / key)
        self.prune()
        return None

    def prune(self) -> None:
        """The most recently used entries kept; older ones, and any of an older layout, removed."""
        for old in self.root.iterdir():
            if not (old / MANIFEST).exists() and not old.name.endswith(".partial"):
                shutil.rmtree(old, ignore_errors=True)
        entries = sorted(
            (p for p in self.root.iterdir() if (p / "READY").exists()),
            key=lambda p: (p / "READY").stat().st_mtime,
            reverse=True,
        )
        for stale in entries[DATASETS_KEPT:]:
            shutil.rmtree(stale, ignore_errors=True)


def prepare_dataset(spec: RunSpec, server: Server, sysbench: Sysbench, base: Path, timeout: float) -> dict:
    """The run's datadir, loaded and cleanly shut down: from the cache, or loaded now (and kept
    for the next runs). Returns what was done, for the result."""
    started = time.monotonic()
    cache = DatasetCache(base)
    key = cache.key(spec, server.build)
    reuse = spec.reuse_dataset
    done: dict = {"key": key}
    if reuse and cache.ready(key):
        progress("copying the cached dataset", 5)
        staged = server.work / "dataset-copy"  # the run's folder: root's until handed over whole
        try:
            cache.restore(key, staged)
        except CacheChanged as exc:
            done["cache_refused"] = str(exc)
        else:
            server.take_datadir(staged)
            return {**done, "reused": True, "seconds": round(time.monotonic() - started, 3)}
    progress("creating a private server instance", 1)
    server.install()
    server.start(loading=True)
    server.wait_until_ready(timeout)
    server.create_workload_schema()
    progress(f"loading {spec.workload['tables']} x {spec.workload['table_size']} rows", 5)
    sysbench.prepare()
    progress("slow shutdown: the loaded dataset written out whole", 18)
    server.slow_shutdown(timeout)
    if reuse:
        about = {"engine": spec.engine, **{k: spec.workload[k] for k in ("tables", "table_size")}}
        if not_kept := cache.keep(key, server.datadir, about):
            done["not_cached"] = not_kept
    return {**done, "reused": False, "seconds": round(time.monotonic() - started, 3)}
