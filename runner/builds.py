"""Server builds of a host: the installed server ("system") and each folder WORK_DIR/builds/NAME/.
Standard library only (shipped in the runner's zip).

A build is either an install prefix or an unpacked binary tarball (bin/ or sbin/mariadbd, its
own share/ and lib/plugin/ where it has them), or a folder with a manifest, MANIFEST, saying how
to start it. The manifest is how a server built for a newer C library than the host's runs here:
through the dynamic loader of its own release, with that release's libraries first on the path
(`manage.py installbuild` writes it for Debian packages, e.g. MariaDB 11.8 from Debian 13 on
Debian 12). Every path in it is relative to the build's folder and stays inside it.
"""

import contextlib
import json
import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

from .errors import RunFailed
from .files import open_to_others, untrusted_in

# A server build: "system" (the host's installed server) or a folder WORK_DIR/builds/NAME/.
BUILD_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$")
BUILDS_DIR = "builds"
# The build a run names no build for (and the name the probe gives the installed server).
SYSTEM_BUILD = "system"
MANIFEST = "recovery-lab-build.json"
MANIFEST_FORMAT = 1
# What a manifest names: a server (MariaDB's) or PostgreSQL's programs' folder, the rest where the
# build has it.
MANIFEST_PATHS = (
    "server",
    "postgres_bin",
    "installer",
    "loader",
    "plugin_dir",
    "lc_messages_dir",
    "character_sets_dir",
)
# The programs mariadb-install-db runs besides the server, each started through the loader.
INSTALLER_HELPERS = ("my_print_defaults", "resolveip")


class BuildUnusable(Exception):
    """A build folder that cannot be started as it is, with the reason (shown on the hosts page)."""


def programs(server: str | None, **found) -> dict:
    """A build's programs and folders: its server, and what else it brings (None: the system's,
    or the server's own default)."""
    return {
        "server": server,
        "installer": None,
        "client": None,
        "admin": None,
        "plugin_dir": None,
        "basedir": None,
        "lc_messages_dir": None,
        "character_sets_dir": None,
        "launcher": [],  # what starts the server (a loader and its library path), if anything
        "postgres_bin": None,  # the folder of its PostgreSQL programs, if it has them
        "source": "",
        **found,
    }


def _program(base: Path, folders: tuple, names: tuple) -> str | None:
    for folder in folders:
        for name in names:
            path = base / folder / name
            if path.is_file() and os.access(path, os.X_OK):
                return str(path)
    return None


def _inside(base: Path, relative: object, what: str) -> Path:
    if (
        not isinstance(relative, str)
        or not relative
        or relative.startswith("/")
        or ".." in relative.split("/")
    ):
        raise BuildUnusable(f"{MANIFEST}: {what} must be a path inside the build's folder, not {relative!r}")
    path = base / relative
    if not path.exists():
        raise BuildUnusable(f"{MANIFEST}: {what} {relative} is not in {base}")
    return path


def _from_manifest(base: Path) -> dict:
    try:
        manifest = json.loads((base / MANIFEST).read_text())
    except (OSError, ValueError) as exc:
        raise BuildUnusable(f"{MANIFEST} cannot be read: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        raise BuildUnusable(f"{MANIFEST}: format {MANIFEST_FORMAT} expected")
    if "server" not in manifest and "postgres_bin" not in manifest:
        raise BuildUnusable(f"{MANIFEST} names no server")
    paths = {key: str(_inside(base, manifest[key], key)) for key in MANIFEST_PATHS if key in manifest}
    libraries = manifest.get("library_path", [])
    if not isinstance(libraries, list):
        raise BuildUnusable(f"{MANIFEST}: library_path must be a list of folders")
    library_path = ":".join(str(_inside(base, folder, "library_path")) for folder in libraries)
    launcher = (
        [paths["loader"], *(["--library-path", library_path] if library_path else [])]
        if "loader" in paths
        else []
    )
    # no client: the host's own speaks to any of these servers over the socket
    return programs(
        paths.get("server"),
        postgres_bin=paths.get("postgres_bin"),
        installer=paths.get("installer"),
        plugin_dir=paths.get("plugin_dir"),
        lc_messages_dir=paths.get("lc_messages_dir"),
        character_sets_dir=paths.get("character_sets_dir"),
        launcher=launcher,
        source=str(manifest.get("source", ""))[:300],
    )


def build_programs(base: Path) -> dict | None:
    """A server build's programs under `base`: None when it holds no server. A program it
    lacks (the client, the installer) is the system's. Raises BuildUnusable for a manifest that
    does not hold, and for a folder another user could have changed (root runs its programs)."""
    unsafe = untrusted_in(base)
    if unsafe:
        raise BuildUnusable(
            f"not used: {unsafe}, so another user could change what root runs. Remove the build "
            "and install it again (manage.py installbuild)"
        )
    if (base / MANIFEST).exists():
        return _from_manifest(base)
    server = _program(base, ("bin", "sbin", "libexec"), ("mariadbd", "mysqld"))
    if server is None:
        return None
    return programs(
        server,
        installer=_program(base, ("scripts", "bin"), ("mariadb-install-db", "mysql_install_db")),
        client=_program(base, ("bin",), ("mariadb", "mysql")),
        admin=_program(base, ("bin",), ("mariadb-admin", "mysqladmin")),
        plugin_dir=str(base / "lib" / "plugin") if (base / "lib" / "plugin").is_dir() else None,
        # its error messages and character sets, where it brings its own
        basedir=str(base) if (base / "share").is_dir() else None,
    )


def folder_programs(work_dir: Path, build: str) -> dict:
    """The programs of the build a run names in WORK_DIR/builds/NAME/; RunFailed where the host
    has no such build or it cannot start (the probe lists what it has)."""
    folder = work_dir / BUILDS_DIR / build
    try:
        found = build_programs(folder) if folder.is_dir() else None
    except BuildUnusable as exc:
        raise RunFailed(f"server build {build!r} cannot be started: {exc}") from None
    if found is None:
        raise RunFailed(
            f"this host has no server build {build!r}: no server under {folder} (unpack the build "
            "there, then probe the host again)"
        )
    return found


def installed(*names: str) -> str | None:
    """The first of `names` installed: its path on the PATH, or in /usr/sbin (which root's PATH
    may lack); None where none is."""
    for name in names:
        if path := shutil.which(name) or (
            f"/usr/sbin/{name}" if Path(f"/usr/sbin/{name}").exists() else None
        ):
            return path
    return None


# Inside each_command_once(): what each command printed, by its arguments (or how it failed)
_PRINTED: dict | None = None


@contextlib.contextmanager
def each_command_once():
    """Inside it, a command run for what it prints runs once. A host's facts ask each family about
    the same servers: 17 runs of 8 commands, 0.3 s at the start of every run."""
    global _PRINTED
    outer = _PRINTED
    _PRINTED = {} if outer is None else outer
    try:
        yield
    finally:
        _PRINTED = outer


def printed(args: list[str]) -> subprocess.CompletedProcess:
    """`args` run for what they print (no input, 20 s at most); once inside each_command_once()."""
    key = tuple(args)
    if _PRINTED is not None and key in _PRINTED:
        done = _PRINTED[key]
        if isinstance(done, Exception):
            raise done
        return done
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        if _PRINTED is not None:
            _PRINTED[key] = exc
        raise
    if _PRINTED is not None:
        _PRINTED[key] = done
    return done


def version_line(command: list[str], marker: str) -> str:
    """The first line of `command --version`, which must hold `marker` ('Ver ' for mariadbd,
    '(PostgreSQL)' for postgres). A build that cannot start says why instead (BuildUnusable)."""
    try:
        done = printed([*command, "--version"])
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BuildUnusable(f"{command[-1]} --version did not run: {exc}") from None
    line = (done.stdout.strip().splitlines() or [""])[0]
    if done.returncode != 0 or marker not in line:
        said = (done.stderr or done.stdout).strip().splitlines() or ["no output"]
        raise BuildUnusable(f"{command[-1]} --version failed (exit {done.returncode}): {said[0][:300]}")
    return line[:300]


def server_command(programs: dict) -> list[str]:
    """The start of every command line that runs the build's server."""
    return [*programs["launcher"], programs["server"]]


def build_options(programs: dict) -> list[str]:
    """Where a build of its own finds its files (none for the system's server)."""
    named = {
        "basedir": programs.get("basedir"),
        "plugin-dir": programs.get("plugin_dir"),
        "lc-messages-dir": programs.get("lc_messages_dir"),
        "character-sets-dir": programs.get("character_sets_dir"),
    }
    return [f"--{option}={value}" for option, value in named.items() if value]


def launching_script(path: Path, launcher: list[str], program: str) -> None:
    """A script at `path` that starts `program` through `launcher` (the same process: exec)."""
    quoted = " ".join("'" + part.replace("'", "'\\''") + "'" for part in [*launcher, program])
    path.write_text(f'#!/bin/sh\nexec {quoted} "$@"\n')
    path.chmod(stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)


def installer_command(programs: dict, shim: Path) -> list[str]:
    """How to run a build's mariadb-install-db. A build started through a loader gets an install
    prefix of its own under `shim` (the run's folder): scripts that start the server and the
    installer's helpers through the loader, and links to the build's SQL files and plugins; the
    installer (a shell script) then runs with that prefix as its basedir."""
    installer = programs["installer"]
    if not programs["launcher"]:
        return [installer, *([f"--basedir={programs['basedir']}"] if programs["basedir"] else [])]
    prefix = Path(programs["server"]).parent.parent  # .../usr of usr/sbin/mariadbd
    for folder in ("bin", "sbin", "share", "lib/mysql"):
        (shim / folder).mkdir(parents=True, exist_ok=True)
    launching_script(shim / "sbin" / "mariadbd", programs["launcher"], programs["server"])
    for helper in INSTALLER_HELPERS:
        launching_script(shim / "bin" / helper, programs["launcher"], str(prefix / "bin" / helper))
    (shim / "share" / "mariadb").symlink_to(prefix / "share" / "mariadb")
    # the plugins one by one: the installer run as root makes PAM's helper in the plugin folder
    # set-uid root, which must not happen to a build's files (installbuild strips such bits)
    plugins = shim / "lib" / "mysql" / "plugin"
    plugins.mkdir()
    for plugin in Path(programs["plugin_dir"]).glob("*.so") if programs["plugin_dir"] else []:
        (plugins / plugin.name).symlink_to(plugin)
    open_to_others(shim)  # the installer runs as the server's user
    return ["sh", installer, f"--basedir={shim}"]
