"""What the runner starts and holds, and how it lets go: every process it spawned (stopped by pid,
nothing else), the work directory's lock, the power-cut layers it mounted, and the watchdog that
stops them all when its stdin closes. Standard library only."""

import contextlib
import ctypes
import fcntl
import os
import pwd
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

from .builds import installed, printed
from .errors import RunFailed
from .throttle import JOIN

POLL_S = 0.005
# Every process this runner started, so the stdin watchdog can stop them all (by pid, nothing else).
STARTED: list[subprocess.Popen] = []
HELD: list = []  # the work directory's lock file, open for the whole run


# util-linux's setpriv asks the kernel to SIGKILL a process when the one that started it dies,
# then execs it (same pid): a runner killed with SIGKILL, which no handler sees, takes its server
# and sysbench with it. Where setpriv is missing they are still stopped on every other way out.
SETPRIV = shutil.which("setpriv")


def spawn(
    args: list[str], as_user: str | None = None, cgroup: Path | None = None, **options
) -> subprocess.Popen:
    """Start a process the runner holds; `as_user`: as that OS user from its first instruction
    (a process that drops root itself, as mariadbd --user does, loses its parent-death signal
    with the change: the kernel clears it; setpriv sets it after the change). `cgroup`: the
    cgroup.procs file of a group it runs in from its first instruction (throttle.py)."""
    if SETPRIV:
        # the user's own primary group by number: its name may differ (nobody's is nogroup)
        user = []
        if as_user:
            user = [f"--reuid={as_user}", f"--regid={pwd.getpwnam(as_user).pw_gid}", "--init-groups"]
        args = [SETPRIV, *user, "--pdeathsig", "KILL", "--", *args]
    if cgroup is not None:
        args = [*JOIN, str(cgroup), *args]
    process = subprocess.Popen(args, **options)
    STARTED.append(process)
    return process


def stop_started() -> None:
    for process in STARTED:
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGKILL)
    for mount in MOUNTS:
        unmount(mount, lazy=True)


MOUNTS: list[Path] = []  # power-cut layers this runner mounted and has not unmounted yet


MNT_DETACH, UMOUNT_NOFOLLOW = 2, 8


def unmount(directory: Path, lazy: bool = False) -> bool:
    """A power-cut layer unmounted. As root, umount2 on the path without following a link at
    its name (the server's user owns the folder it is in); otherwise fusermount3, as the user
    who mounted it."""
    if os.geteuid() == 0:
        libc = ctypes.CDLL(None, use_errno=True)
        flags = UMOUNT_NOFOLLOW | (MNT_DETACH if lazy else 0)
        return libc.umount2(str(directory).encode(), flags) == 0
    done = subprocess.run(
        ["fusermount3", "-u", *(["-z"] if lazy else []), str(directory)], capture_output=True, timeout=60
    )
    return done.returncode == 0


def unmount_stale(base: Path) -> None:
    """Power-cut layers left mounted under the work directory by a runner that was killed before
    it could unmount them (this runner holds the work directory now, so none is in use)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mounts").read_text().splitlines():
            fields = line.split()
            if len(fields) > 2 and fields[2].startswith("fuse") and fields[1].startswith(f"{base}/"):
                unmount(Path(fields[1].replace("\\040", " ")), lazy=True)


# In a run folder kept for inspection (--keep): the next runner leaves it.
KEPT_MARKER = "KEPT"


def folder_bytes(folder: Path) -> int:
    """The bytes of the files under a folder, no link followed."""
    return sum(
        os.lstat(os.path.join(root, name)).st_size for root, _, names in os.walk(folder) for name in names
    )


def remove_stale_runs(base: Path) -> list[str]:
    """Run folders left by a runner that was killed mid-run (kill -9, a reboot): this runner holds
    the work directory now, so no runner works in any of them. Each said with its size; one
    kept with --keep stays."""
    removed = []
    for folder in sorted(base.glob("run-*")):
        if folder.is_symlink() or not folder.is_dir() or (folder / KEPT_MARKER).exists():
            continue
        size = folder_bytes(folder)
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(f"{folder.name} ({size / 2**20:.1f} MiB)")
    return removed


def watch_stdin() -> None:
    """Stop everything this runner started, and itself, the moment its stdin closes: the SSH
    session dropped or the worker that started it died. Without this a lost runner would go on
    loading and crashing its server until it next wrote a line."""

    def watch() -> None:
        # os.read on the descriptor: a buffered reader's lock would stall interpreter shutdown
        while os.read(sys.stdin.fileno(), 4096):
            pass
        stop_started()
        os._exit(3)

    def stopped(signum, _frame) -> None:
        # SIGTERM/SIGHUP/SIGINT reach the runner with its worker (a stopped service signals the
        # whole process group): the servers it started, in sessions of their own, must go too.
        stop_started()
        os._exit(128 + signum)

    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(signum, stopped)
    threading.Thread(target=watch, daemon=True, name="stdin-watchdog").start()


# A file system with less free space than this (or 1% of its size) is called full in a failure.
FULL_BELOW_BYTES = 64 * 1024 * 1024


def disk_full(path: Path) -> str:
    """Why a step failed, when the cause was no space left: the server and its tools say it in
    lines a failure's tail may not show."""
    try:
        usage = shutil.disk_usage(path)
    except OSError:
        return ""
    if usage.free >= FULL_BELOW_BYTES and usage.free >= usage.total / 100:
        return ""
    return (
        f"the file system of the work directory {path} is full ({usage.free / 2**20:.0f} MiB free of "
        f"{usage.total / 2**20:.0f} MiB): free space there, or give the host another work_dir"
    )


def hold_work_dir(base: Path) -> None:
    """One runner at a time per work directory, whichever dashboard sent it: a crash cycle must
    not share a machine. The lock goes with this process (kill -9 included)."""
    # not following a link: the folder is root's (own_folder), and a link at the lock's name
    # would still not be written through. Root's alone (0600): a user who could open it could
    # hold it, and refuse every run and disk measure on the host
    fd = os.open(base / ".runner.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    os.fchmod(fd, 0o600)  # one made 0644 before
    handle = os.fdopen(fd, "r+")  # held until this process exits
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "?"
        raise RunFailed(
            f"the host is busy elsewhere: another runner (pid {holder}) is working in {base}",
            permanent=False,
        ) from None
    handle.seek(0)
    handle.truncate()
    handle.write(str(os.getpid()))
    handle.flush()
    HELD.append(handle)


def stat_fields(pid: str | int) -> list[str] | None:
    """/proc/PID/stat's fields after the command name (which may hold spaces): state, ppid, ...;
    None once the process is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def find_binary(*names: str) -> str:
    """The first of `names` installed (builds.installed), or RunFailed naming them."""
    if path := installed(*names):
        return path
    raise RunFailed(f"none of {', '.join(names)} is installed on this host")


def first_line(args: list[str]) -> str | None:
    """The first line a command prints (its output, else its errors), cut short; None where it
    printed nothing or could not run (the probe's versions, fio's, perf's exec path)."""
    try:
        done = printed(args)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (done.stdout or done.stderr).strip()
    return text.splitlines()[0][:200] if text else None
