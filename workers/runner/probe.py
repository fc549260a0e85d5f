"""What a benchmark host is: OS, CPU, memory, the work directory's disk, the servers and tools
installed. Standard library only (shipped in the runner's zip); `python3 runner.pyz --probe
WORK_DIR` prints it as JSON. Each fact that cannot be read is left out, never guessed."""

import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path

from .contract import BUILD_NAME, BUILDS_DIR, SYSTEM_BUILD

PLUGIN_DIRS = ("/usr/lib/mysql/plugin", "/usr/lib64/mysql/plugin", "/usr/lib/mariadb/plugin")


def _first_line(args: list[str]) -> str | None:
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (done.stdout or done.stderr).strip()
    return text.splitlines()[0][:200] if text else None


def _which(name: str) -> str | None:
    return shutil.which(name) or (f"/usr/sbin/{name}" if Path(f"/usr/sbin/{name}").exists() else None)


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _memory_bytes() -> int | None:
    try:
        match = re.search(r"^MemTotal:\s+(\d+) kB", Path("/proc/meminfo").read_text(), re.MULTILINE)
    except OSError:
        return None
    return int(match.group(1)) * 1024 if match else None


def _disk(work_dir: Path) -> dict:
    """Free space where the runs will write, and whether that disk spins."""
    folder = work_dir
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    usage = shutil.disk_usage(folder)
    disk = {"path": str(work_dir), "free_bytes": usage.free, "total_bytes": usage.total}
    try:
        device = os.stat(folder).st_dev
        block = Path(f"/sys/dev/block/{os.major(device)}:{os.minor(device)}").resolve()
        # a partition's queue is its parent disk's
        for candidate in (block, block.parent):
            rotational = candidate / "queue" / "rotational"
            if rotational.exists():
                disk["rotational"] = rotational.read_text().strip() == "1"
                disk["device"] = candidate.name
                break
    except (OSError, ValueError):
        pass
    return disk


def power_loss_ready() -> dict:
    """Whether this host can run the power_loss crash: /dev/fuse usable, fusermount3 and
    libfuse3 installed, and the FUSE binding importable (shipped in the runner's zip)."""
    import ctypes.util

    missing = []
    if not os.access("/dev/fuse", os.R_OK | os.W_OK):
        missing.append("/dev/fuse (not there, or not usable)")
    if not shutil.which("fusermount3"):
        missing.append("fusermount3 (apt-get install fuse3)")
    if not ctypes.util.find_library("fuse3"):
        missing.append("libfuse3 (apt-get install fuse3)")
    try:
        import mfusepy  # noqa: F401
    except (ImportError, OSError) as exc:
        missing.append(f"the mfusepy module ({exc})")
    return {"ready": not missing, "missing": missing}


def _program(base: Path, folders: tuple, names: tuple) -> str | None:
    for folder in folders:
        for name in names:
            path = base / folder / name
            if path.is_file() and os.access(path, os.X_OK):
                return str(path)
    return None


def build_programs(base: Path) -> dict | None:
    """A server build's programs under `base` (a binary tarball unpacked, or an install prefix):
    None when it holds no server. A program it lacks (the client, the installer) is the system's."""
    server = _program(base, ("bin", "sbin", "libexec"), ("mariadbd", "mysqld"))
    if server is None:
        return None
    return {
        "server": server,
        "installer": _program(base, ("scripts", "bin"), ("mariadb-install-db", "mysql_install_db")),
        "client": _program(base, ("bin",), ("mariadb", "mysql")),
        "admin": _program(base, ("bin",), ("mariadb-admin", "mysqladmin")),
        "plugin_dir": str(base / "lib" / "plugin") if (base / "lib" / "plugin").is_dir() else None,
        # its error messages and character sets, where it brings its own
        "basedir": str(base) if (base / "share").is_dir() else None,
    }


def _server_version(path: str) -> str | None:
    """'Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64': the --version line less the path."""
    line = _first_line([path, "--version"])
    return line[line.index("Ver ") :] if line and "Ver " in line else line


def server_builds(work_dir: str) -> list[dict]:
    """The server builds a definition may name: "system" (the installed server) and each
    WORK_DIR/builds/NAME/ that holds a server, with the version it reports."""
    builds = []
    system = _which("mariadbd") or _which("mysqld")
    if system:
        builds.append({"name": SYSTEM_BUILD, "path": system, "version": _server_version(system)})
    folder = Path(work_dir) / BUILDS_DIR
    for base in sorted(folder.iterdir()) if folder.is_dir() else []:
        programs = build_programs(base) if BUILD_NAME.match(base.name) and base.name != SYSTEM_BUILD else None
        if programs:
            builds.append(
                {
                    "name": base.name,
                    "path": programs["server"],
                    "version": _server_version(programs["server"]),
                }
            )
    return builds


def host_facts(work_dir: str) -> dict:
    servers = {}
    for name in ("mariadbd", "mysqld"):
        path = _which(name)
        if path:
            servers[name] = {"path": path, "version": _first_line([path, "--version"])}
    engines = ["innodb"]
    if any(Path(folder, "ha_rocksdb.so").exists() for folder in PLUGIN_DIRS):
        engines.append("rocksdb")
    sysbench = _which("sysbench")
    return {
        "os": _first_line(["sh", "-c", '. /etc/os-release && echo "$PRETTY_NAME"']) or platform.platform(),
        "kernel": platform.release(),
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "memory_bytes": _memory_bytes(),
        "disk": _disk(Path(work_dir)),
        "servers": servers,
        "server_builds": server_builds(work_dir),
        "engines": engines,
        "sysbench": _first_line([sysbench, "--version"]) if sysbench else None,
        "python": platform.python_version(),
        "python_path": sys.executable,
        "power_loss": power_loss_ready(),
    }
