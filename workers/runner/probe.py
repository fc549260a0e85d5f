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

from .builds import BuildUnusable, build_programs, server_command
from .builds import programs as build_of
from .contract import BUILD_NAME, BUILDS_DIR, SYSTEM_BUILD
from .engines import ENGINES
from .files import UnsafeFolder, own_folder
from .postgres import system_bin as postgres_system_bin

POSTGRES_MARKER = "(PostgreSQL)"  # in `postgres --version`


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


def _server_version(command: list[str], marker: str = "Ver ") -> str:
    """The first line of `command --version` from `marker` on: 'Ver 10.11.19-MariaDB-0+deb12u1 for
    debian-linux-gnu on x86_64' (the path left out), or with marker '(PostgreSQL)' the whole
    'postgres (PostgreSQL) 17.12 (Debian 17.12-0+deb13u1)'. A build that cannot start says why
    instead (BuildUnusable)."""
    try:
        done = subprocess.run(
            [*command, "--version"], capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BuildUnusable(f"{command[-1]} --version did not run: {exc}") from None
    line = (done.stdout.strip().splitlines() or [""])[0]
    if done.returncode != 0 or marker not in line:
        said = (done.stderr or done.stdout).strip().splitlines() or ["no output"]
        raise BuildUnusable(f"{command[-1]} --version failed (exit {done.returncode}): {said[0][:300]}")
    return (line if marker == POSTGRES_MARKER else line[line.index(marker) :])[:200]


def _build_engines(programs: dict) -> list[str]:
    """The engines a build can run (each engine's `available`: InnoDB with MariaDB's server,
    MyRocks where its plugin is there, PostgreSQL with its programs)."""
    return [name for name, engine in ENGINES.items() if engine.available(programs)]


def _system_programs() -> dict:
    """The system build: the installed MariaDB and PostgreSQL."""
    return build_of(_which("mariadbd") or _which("mysqld"), postgres_bin=postgres_system_bin())


def server_builds(work_dir: str) -> list[dict]:
    """The server builds a definition may name: "system" (the installed server) and each
    WORK_DIR/builds/NAME/ that holds a server, with the version it reports and the engines it
    has. A build that cannot start is listed with the reason (`error`), so the hosts page says it."""
    builds = []
    programs = _system_programs()
    system, postgres = programs["server"], programs["postgres_bin"]
    if system or postgres:
        build = {"name": SYSTEM_BUILD, "path": system or postgres, "engines": _build_engines(programs)}
        try:
            if system:
                build["version"] = _server_version([system])
        except BuildUnusable as exc:
            build = {"name": SYSTEM_BUILD, "path": system, "error": str(exc)}
        if postgres:
            build["postgresql_version"] = _first_line([f"{postgres}/postgres", "--version"])
        builds.append(build)
    folder = Path(work_dir) / BUILDS_DIR
    try:  # the work directory and its builds/ are root's alone, or none of its builds is used
        own_folder(Path(work_dir), "work directory", "the host's work_dir")
        if folder.is_dir():
            own_folder(folder, "builds folder", "the host's work_dir")
    except UnsafeFolder as exc:
        return [*builds, {"name": BUILDS_DIR, "path": str(folder), "error": str(exc)}]
    for base in sorted(folder.iterdir()) if folder.is_dir() else []:
        if not BUILD_NAME.match(base.name) or base.name == SYSTEM_BUILD:
            continue
        try:
            programs = build_programs(base)
            if programs is None:
                continue
            if programs["server"]:
                path, version = programs["server"], _server_version(server_command(programs))
            else:
                path = programs["postgres_bin"]
                version = _server_version([*programs["launcher"], f"{path}/postgres"], POSTGRES_MARKER)
            build = {"name": base.name, "path": path, "version": version, "engines": _build_engines(programs)}
            if programs["source"]:
                build["source"] = programs["source"]
        except BuildUnusable as exc:
            build = {"name": base.name, "path": str(base), "error": str(exc)}
        builds.append(build)
    return builds


def host_facts(work_dir: str) -> dict:
    servers = {}
    for name in ("mariadbd", "mysqld"):
        path = _which(name)
        if path:
            servers[name] = {"path": path, "version": _first_line([path, "--version"])}
    postgres = postgres_system_bin()
    if postgres:
        servers["postgres"] = {
            "path": f"{postgres}/postgres",
            "version": _first_line([f"{postgres}/postgres", "--version"]),
        }
    engines = _build_engines(_system_programs())
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
