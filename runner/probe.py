"""What a benchmark host is: OS, CPU, memory, the work directory's disk, the servers and tools
installed. Standard library only (shipped in the runner's zip); `python3 runner.pyz --probe
WORK_DIR` prints it as JSON. Each fact that cannot be read is left out, never guessed."""

import os
import platform
import re
import shutil
import sys
from pathlib import Path

from .builds import (
    BUILD_NAME,
    BUILDS_DIR,
    SYSTEM_BUILD,
    BuildUnusable,
    build_programs,
    each_command_once,
    installed,
)
from .families import FAMILIES, FAMILY_ENGINES, build_version, server_class, system_programs
from .files import UnsafeFolder, own_folder
from .floor import file_system, kept
from .processes import first_line
from .throttle import io_control


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
    """Free space where the runs will write, and the disk's floor where it was measured (floor.py:
    a figure, where the kernel's rotational flag was a guess: a VM's virtio disk says it spins)."""
    folder = work_dir
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    usage = shutil.disk_usage(folder)
    disk = {"path": str(work_dir), "free_bytes": usage.free, "total_bytes": usage.total}
    kind = file_system(folder)
    if kind:
        disk["file_system"] = kind
    floor = kept(work_dir) if folder == work_dir else None
    if floor:
        disk["floor"] = floor
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


def _servers() -> dict:
    """Each family's server class (families/), which knows how to find and version its builds."""
    return {family: server_class(family) for family in FAMILIES}


def _build_engines(programs: dict, families) -> list[str]:
    """The engines a build can run: those of the families whose server it holds, each where its
    `available` says (InnoDB with the server, MyRocks where its plugin is there)."""
    names = [
        name
        for family in families
        for name, kind in FAMILY_ENGINES[family].items()
        if kind.available(programs)
    ]
    return list(dict.fromkeys(names))


def _described(name: str, programs: dict) -> dict | None:
    """A build as the probe lists it: its path, the version of each family's server it holds
    (the first is `version`, every one in `versions`), its engines; None: it holds no server."""
    held = {family: server for family, server in _servers().items() if server.build_path(programs)}
    if not held:
        return None
    build = {"name": name, "path": next(iter(held.values())).build_path(programs)}
    try:
        versions = {family: build_version(family, programs) for family in held}
    except BuildUnusable as exc:
        return {**build, "error": str(exc)}
    build["versions"] = {family: version for family, version in versions.items() if version}
    if not build["versions"]:
        return {**build, "error": "its server says no version any family of this runner knows"}
    build["version"] = next(iter(build["versions"].values()))
    build["engines"] = _build_engines(programs, build["versions"])
    if programs["source"]:
        build["source"] = programs["source"]
    return build


def server_builds(work_dir: str) -> list[dict]:
    """The server builds a definition may name: "system" (the installed servers) and each
    WORK_DIR/builds/NAME/ that holds a server, with the version it reports and the engines it
    has. A build that cannot start is listed with the reason (`error`), so the hosts page says it."""
    system = _described(SYSTEM_BUILD, system_programs())
    builds = [system] if system else []
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
            build = _described(base.name, programs) if programs else None
        except BuildUnusable as exc:
            build = {"name": base.name, "path": str(base), "error": str(exc)}
        if build:
            builds.append(build)
    return builds


def host_facts(work_dir: str) -> dict:
    with each_command_once():  # the families ask about the same servers
        return _host_facts(work_dir)


def _host_facts(work_dir: str) -> dict:
    servers = {
        name: {"path": path, "version": first_line([path, "--version"])}
        for server in _servers().values()
        for name, path in server.system_servers().items()
    }
    system = _described(SYSTEM_BUILD, system_programs())
    engines = system.get("engines", []) if system else []
    sysbench = installed("sysbench")
    return {
        "os": first_line(["sh", "-c", '. /etc/os-release && echo "$PRETTY_NAME"']) or platform.platform(),
        "kernel": platform.release(),
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "memory_bytes": _memory_bytes(),
        "disk": _disk(Path(work_dir)),
        "servers": servers,
        "server_builds": server_builds(work_dir),
        "engines": engines,
        "sysbench": first_line([sysbench, "--version"]) if sysbench else None,
        "python": platform.python_version(),
        "python_path": sys.executable,
        "power_loss": power_loss_ready(),
        "io_control": io_control(),
    }
