"""Files and folders where the runner is root and other users are not. Standard library only.

The runner runs as root on a benchmark host; its server runs as an unprivileged OS user (mysql,
postgres, nobody) who owns the server's folder. Whoever holds that user (one `COPY ... TO
PROGRAM` away where PostgreSQL trusts local logins) may put anything there: a symbolic link to
/root/secret where the runner expects the error log, a script where it expects a launcher. So:

- root never runs, sources or follows what a less-privileged user can write: launchers and
  scripts live in the run's own folder, root's, that nobody else may write (`runner_folder`);
- what root reads out of the server's folder, or writes there (PostgreSQL's log, its stderr),
  is a regular file of one name only, opened without following a link, read up to a size
  (`read_regular`, `copy_regular`, `append_regular`); what it refused is said (`REFUSED`,
  carried into the run's result);
- the work directory and the builds' cache are root's and writable by nobody else, or refused
  by name before anything in them is used (`own_folder`), as sshd's StrictModes refuses a
  home folder another user could write.
"""

import contextlib
import errno
import os
import pwd
import stat
from pathlib import Path

# What a run's bundle takes of one file at most: the largest error log of a long run is a few MiB.
FILE_LIMIT_BYTES = 64 * 2**20
# Files of the server's folder the runner would not read, with why: the run says them.
REFUSED: list[str] = []


class UnsafeFolder(Exception):
    """A folder root would trust that another user owns or may write, with what to do."""


class Refused(Exception):
    """A file of the server's folder that is not a plain file of its own (a link, a device, a fifo)."""


def _open_regular(path: Path, depth: int = 0, appending: bool = False) -> int:
    """A descriptor of `path` read-only (`appending`: write-only, appended to, made when missing),
    walked one folder at a time without following a link another user made (a link root made, as
    /var/run, is followed), the file itself never a link; Refused unless it is a regular file of
    one name. O_NONBLOCK: a fifo planted there would otherwise hold the open for ever. Race-free:
    each step is opened with O_NOFOLLOW from the folder before it."""
    parts = Path(os.path.abspath(path)).parts
    fd = os.open("/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    current = Path("/")
    access = os.O_WRONLY | os.O_APPEND | os.O_CREAT if appending else os.O_RDONLY
    undone = "not written to" if appending else "not read"
    try:
        for index, name in enumerate(parts[1:], start=1):
            last = index == len(parts) - 1
            try:
                info = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                if not (last and appending):
                    raise
                info = None  # made by the open below, which follows no link planted meanwhile
            if info is not None and stat.S_ISLNK(info.st_mode):
                if last:
                    target = _link_target(current / name)
                    raise Refused(f"{path.name} is a symbolic link ({target}): not followed")
                if not _trusted_owner(info) or depth > 8:
                    raise Refused(
                        f"{path.name} is under a symbolic link another user made ({current / name} "
                        f"{_link_target(current / name)}): not followed"
                    )
                target = Path(os.path.realpath(current / name)).joinpath(*parts[index + 1 :])
                return _open_regular(target, depth + 1, appending)
            step = access | os.O_NONBLOCK if last else os.O_RDONLY | os.O_DIRECTORY
            flags = os.O_NOFOLLOW | os.O_CLOEXEC | step
            try:
                opened = os.open(name, flags, 0o600, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):  # made a link since it was looked at
                    raise Refused(f"{path.name}: {current / name} changed into a link while read") from None
                if exc.errno == errno.ENXIO and last:  # a fifo no one reads, opened to be written
                    raise Refused(f"{path.name} is not a regular file: {undone}") from None
                raise
            os.close(fd)
            fd, current = opened, current / name
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Refused(f"{path.name} is not a regular file: {undone}")
        if info.st_nlink > 1:  # a hard link to another file, where the kernel lets one be made
            raise Refused(f"{path.name} has other names (hard links): {undone}")
    except BaseException:
        os.close(fd)
        raise
    return fd


def _link_target(path: Path) -> str:
    with contextlib.suppress(OSError):
        return f"to {os.readlink(path)}"
    return "a link"


def refuse(reason: str) -> None:
    """Say, once, that a file was refused."""
    if reason not in REFUSED:
        REFUSED.append(reason)


def read_regular(path: Path, limit: int = FILE_LIMIT_BYTES, start: int = 0) -> bytes:
    """Up to `limit` bytes of a regular file from `start`, without following a link at its
    name. Raises FileNotFoundError when it is not there, Refused when it is not a regular file."""
    fd = _open_regular(path)
    with os.fdopen(fd, "rb") as handle:
        handle.seek(start)
        return handle.read(limit)


def append_regular(path: Path) -> int:
    """A descriptor that appends to `path` (made root's, 0600, when missing), opened as
    read_regular opens: Refused, and said in REFUSED, unless it is a regular file of one name
    that no link another user made leads to. Nothing is written before it is checked."""
    try:
        return _open_regular(path, appending=True)
    except Refused as exc:
        refuse(str(exc))
        raise


def copy_regular(source: Path, target: Path, limit: int = FILE_LIMIT_BYTES) -> bool:
    """`source` copied to `target` (root's) if it is a regular file: its first `limit` bytes, the
    cut said in REFUSED. False, with the reason in REFUSED, when it was refused; False when it
    is not there."""
    try:
        fd = _open_regular(source)
    except FileNotFoundError:
        return False
    except Refused as exc:
        refuse(str(exc))
        return False
    with os.fdopen(fd, "rb") as handle, target.open("wb") as out:
        copied = 0
        while copied < limit:
            chunk = handle.read(min(2**20, limit - copied))
            if not chunk:
                break
            out.write(chunk)
            copied += len(chunk)
        if copied >= limit and handle.read(1):
            mib = limit // 2**20
            refuse(f"{source.name} is larger than {mib} MiB: only its first {mib} MiB kept")
    return True


def _trusted_owner(info: os.stat_result) -> bool:
    return info.st_uid in (0, os.geteuid())


def own_folder(path: Path, what: str, setting: str) -> Path:
    """`path`, made if missing (root's, 0755), or refused with a message that names it, when it
    or a folder above it could be changed by another user: owned by another user, writable by
    its group or others (a folder above may be world-writable only with the sticky bit, as /tmp
    is: then nobody else may rename what is in it), or a symbolic link."""
    # the folders above resolved (a link there is the system's or the admin's), itself not
    path = Path(os.path.realpath(Path(os.path.abspath(path)).parent)) / Path(path).name
    for above in reversed(path.parents):
        try:
            os.mkdir(above, 0o755)  # a folder above that is missing: made root's, entered by all
            os.chmod(above, 0o755)  # whatever the umask
        except FileExistsError:
            pass
        info = os.lstat(above)
        if stat.S_ISLNK(info.st_mode):
            above = Path(os.path.realpath(above))
            info = os.stat(above)
        if not _trusted_owner(info) or (info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX):
            raise UnsafeFolder(
                f"refusing the {what} {path}: the folder {above} above it "
                + _whose(info)
                + f", so another user could replace what root runs from it. Choose another ({setting})."
            )
    try:
        os.mkdir(path, 0o755)
        os.chmod(path, 0o755)  # whatever the umask
    except FileExistsError:
        pass
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise UnsafeFolder(
            f"refusing the {what} {path}: it is not a folder but "
            + ("a symbolic link" if stat.S_ISLNK(info.st_mode) else "a file")
            + f". Remove it, or choose another ({setting})."
        )
    if not _trusted_owner(info) or info.st_mode & 0o022:
        raise UnsafeFolder(
            f"refusing the {what} {path}: it " + _whose(info) + ", and the runner, as root, would run "
            f"and trust what is in it. Remove it (it was not made by Recovery Lab), or choose another "
            f"({setting})."
        )
    return path


def _whose(info: os.stat_result) -> str:
    owner = _user_name(info.st_uid)
    if not _trusted_owner(info):
        return f"belongs to {owner} (uid {info.st_uid}), not root"
    who = {0o022: "its group and others", 0o020: "its group"}.get(info.st_mode & 0o022, "others")
    return f"is writable by {who} (mode {stat.S_IMODE(info.st_mode):o})"


def _user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def untrusted_in(folder: Path) -> str | None:
    """The first thing under `folder` (itself included) that another user owns or may write,
    said; None when root alone may change any of it. Links are not followed (a link's own mode
    means nothing; what it points to inside the folder is checked there)."""
    paths = [folder]
    for root, folders, files in os.walk(folder):
        paths += [Path(root) / name for name in (*folders, *files)]
    for path in paths:
        info = os.lstat(path)
        if not _trusted_owner(info) or (not stat.S_ISLNK(info.st_mode) and info.st_mode & 0o022):
            return f"{path} " + _whose(info)
    return None


SERVER_HOME = "server"


def server_home(work: Path) -> Path:
    """The server's folder inside the run's: what its OS user owns and writes (datadir, socket,
    tmpdir, error log, binary logs)."""
    return work / SERVER_HOME


def runner_folder(path: Path) -> Path:
    """The run's own folder: root's (made by mkdtemp), entered by the server's OS user to reach
    its own folder and the launchers, written by root alone. What root writes in it is root's
    alone (the runner's umask is 077: its stamped log, samples, reports, profile); what the
    server's user must read is opened to it by name (`open_to_others`)."""
    os.chmod(path, 0o755)
    return path


def open_to_others(folder: Path) -> Path:
    """A folder root made for the server's user to read and run from (a launcher's prefix):
    every folder in it entered and listed by others (0755), no file's mode changed (each is
    written with the mode it needs), links left as they are."""
    for root, _folders, _files in os.walk(folder):
        os.chmod(root, 0o755)
    return folder
