"""Server builds from another Debian release's packages: a second real server version beside the
host's own (MariaDB 11.8 from Debian 13 on a Debian 12 host, MySQL 9.7 from Debian unstable).
Which packages, and where the server's files are in them, is each server family's own
(`FAMILY.debian` in runner/families/NAME/__init__.py).

The packages are fetched with `apt-get download` from a sources list of their own (never the
system's: nothing is installed over the host's packages), unpacked with `dpkg -x` into a folder
with that release's C library and loader, and described by a manifest (runner/builds.py)
that says how to start the server: through that loader, with the release's libraries first. The
folder then goes to a host's WORK_DIR/builds/NAME/ through the host's transport, and the host
is probed again so its builds list it. `manage.py installbuild` is the one command.
"""

import hashlib
import json
import os
import re
import stat
import subprocess
import tempfile
from pathlib import Path

from django.conf import settings

from runner.contract import MANIFEST, MANIFEST_FORMAT
from runner.families import FAMILIES, debian_recipe
from runner.files import UnsafeFolder, own_folder, untrusted_in

# Every file of a build as it was unpacked (its SHA-256, or where a link points), written beside
# the manifest at unpack time and checked before the build is copied to a host: a cached build
# that changed since, or that no unpack of ours made, is refused by name.
HASHES = "recovery-lab-build.sha256.json"

RELEASE = re.compile(r"^[a-z][a-z0-9-]{1,30}$")
# Debian's architecture: its multiarch folder and its loader's path inside the packages.
ARCHITECTURES = {
    "amd64": ("x86_64-linux-gnu", "usr/lib64/ld-linux-x86-64.so.2"),
    "arm64": ("aarch64-linux-gnu", "usr/lib/ld-linux-aarch64.so.1"),
}


class BuildError(Exception):
    """A build that could not be fetched, unpacked or installed, with what went wrong."""


def _run(args: list[str], what: str, timeout: float = 600, cwd: Path | None = None) -> str:
    try:
        done = subprocess.run(
            args, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, cwd=cwd
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BuildError(f"{what}: {exc}") from None
    if done.returncode != 0:
        errors = [line for line in done.stderr.splitlines() if line.startswith(("E:", "dpkg"))]
        raise BuildError(f"{what} failed (exit {done.returncode}): {' '.join(errors) or done.stderr[-500:]}")
    return done.stdout


def _apt_options(root: Path, release: str, mirror: str) -> list[str]:
    """apt's every folder under `root`, and a sources list naming only `release`."""
    for folder in ("etc/apt/sources.list.d", "etc/apt/preferences.d", "var/lib/apt/lists/partial",
                   "var/cache/apt/archives/partial", "var/lib/dpkg"):  # fmt: skip
        (root / folder).mkdir(parents=True, exist_ok=True)
    (root / "var/lib/dpkg/status").touch()
    keyring = "/usr/share/keyrings/debian-archive-keyring.gpg"
    (root / "etc/apt/sources.list").write_text(f"deb [signed-by={keyring}] {mirror} {release} main\n")
    return [
        f"-oDir={root}",
        f"-oDir::Etc={root}/etc/apt",
        f"-oDir::State={root}/var/lib/apt",
        f"-oDir::State::status={root}/var/lib/dpkg/status",
        f"-oDir::Cache={root}/var/cache/apt",
        "-oDebug::NoLocking=1",
    ]


def fetch_packages(
    release: str, packages: tuple[str, ...], into: Path, libraries: bool = False
) -> list[Path]:
    """The .deb files of `packages` in Debian `release`, downloaded into `into` (kept: a second
    install of the same release reads them again instead of downloading); `libraries`: with the
    library packages they depend on, at every level."""
    if not RELEASE.match(release):
        raise BuildError(f"{release!r} is not a Debian release name (trixie, forky, ...)")
    into.mkdir(parents=True, exist_ok=True)
    for old in into.glob("*.deb"):  # another day's versions
        old.unlink()
    options = _apt_options(into / "apt", release, settings.DEBIAN_MIRROR)
    _run(["apt-get", *options, "-qq", "update"], f"reading Debian {release}'s package lists")
    if libraries:
        packages = library_closure(options, packages)
    # apt-get download writes in its working directory
    _run(["apt-get", *options, "-qq", "download", *packages], f"downloading {' '.join(packages)}", 1800, into)
    return sorted(into.glob("*.deb"))


DEPENDS = re.compile(r"^  \|?Depends: ([a-z0-9][a-z0-9.+-]+)$", re.MULTILINE)


def library_closure(options: list[str], packages: tuple[str, ...]) -> tuple[str, ...]:
    """`packages` and every library package they depend on, directly or not (lib*, zlib1g; not
    LLVM, which only PostgreSQL's JIT loads, on demand)."""
    found, asking = list(packages), list(packages)
    while asking:
        answer = _run(
            ["apt-cache", *options, "depends", "--no-recommends", "--no-suggests", "--no-enhances",
             "--no-conflicts", "--no-breaks", "--no-replaces", *asking],
            f"reading what {' '.join(asking[:3])} depend on",
        )  # fmt: skip
        asking = [
            name
            for name in dict.fromkeys(DEPENDS.findall(answer))
            if (name.startswith("lib") or name == "zlib1g") and "llvm" not in name and name not in found
        ]
        found += asking
    return tuple(found)


def _strip_set_id_bits(folder: Path) -> None:
    """dpkg -x keeps a package's set-uid bits (PAM's helper is set-uid root): none in a build."""
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink():
            mode = path.stat().st_mode
            if mode & (stat.S_ISUID | stat.S_ISGID):
                path.chmod(mode & ~(stat.S_ISUID | stat.S_ISGID))


def unpack_debian_build(debs: list[Path], folder: Path, release: str, paths: dict) -> dict:
    """The packages unpacked into `folder` and the manifest written, its server's files where
    `paths` (the family's recipe) says; returns the manifest."""
    architecture = _run(["dpkg", "--print-architecture"], "reading this machine's architecture").strip()
    if architecture not in ARCHITECTURES:
        raise BuildError(
            f"builds from Debian packages are made for {', '.join(ARCHITECTURES)}, not {architecture}"
        )
    triplet, loader = ARCHITECTURES[architecture]
    versions = []
    for deb in debs:
        _run(["dpkg-deb", "-x", str(deb), str(folder)], f"unpacking {deb.name}")
        package, version = _run(["dpkg-deb", "-f", str(deb), "Package", "Version"], deb.name).splitlines()[:2]
        versions.append(f"{package.split(': ', 1)[1]} {version.split(': ', 1)[1]}")
    _strip_set_id_bits(folder)
    libraries = [path for path in (f"usr/lib/{triplet}", f"lib/{triplet}") if (folder / path).is_dir()]
    manifest = {
        "format": MANIFEST_FORMAT,
        **paths,
        "loader": loader,
        "library_path": libraries,
        "source": f"Debian {release}: " + ", ".join(versions),
    }
    return _write_manifest(folder, release, manifest)


def _write_manifest(folder: Path, release: str, manifest: dict) -> dict:
    paths = ("server", "installer", "postgres_bin", "loader")
    missing = [key for key in paths if key in manifest and not (folder / manifest[key]).exists()]
    if missing:
        raise BuildError(f"the packages of Debian {release} hold no {', '.join(missing)} where expected")
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    (folder / HASHES).write_text(json.dumps(file_hashes(folder), indent=0, sort_keys=True) + "\n")
    return manifest


def file_hashes(folder: Path) -> dict[str, str]:
    """Each file of `folder` (the hashes' own file left out): its SHA-256, or "link:TARGET"."""
    found = {}
    for root, _, files in os.walk(folder):
        for name in files:
            path = Path(root) / name
            relative = str(path.relative_to(folder))
            if relative == HASHES:
                continue
            if path.is_symlink():
                found[relative] = f"link:{os.readlink(path)}"
                continue
            digest = hashlib.sha256()
            with path.open("rb") as handle:
                while chunk := handle.read(2**20):
                    digest.update(chunk)
            found[relative] = digest.hexdigest()
    return found


def verify_build(folder: Path) -> None:
    """A cached build as it was unpacked, or BuildError naming it and what differs: root
    copies it to hosts and runs its loader and server."""
    unsafe = untrusted_in(folder)
    if unsafe:
        raise BuildError(
            f"refusing the cached build {folder}: {unsafe}, not root, so another user could have "
            "changed it. Remove it; installbuild then unpacks the packages again."
        )
    try:
        expected = json.loads((folder / HASHES).read_text())
    except (OSError, ValueError):
        raise BuildError(
            f"refusing the cached build {folder}: it has no {HASHES} (no unpack of this version of "
            "Recovery Lab made it). Remove it; installbuild then unpacks the packages again."
        ) from None
    found = file_hashes(folder)
    changed = sorted(name for name in expected.keys() & found.keys() if expected[name] != found[name])
    added, missing = sorted(found.keys() - expected.keys()), sorted(expected.keys() - found.keys())
    for what, names in (("changed", changed), ("added", added), ("missing", missing)):
        if names:
            more = f" and {len(names) - 1} more" if len(names) > 1 else ""
            raise BuildError(
                f"refusing the cached build {folder}: {names[0]}{more} {what} since it was unpacked. "
                "Remove it; installbuild then unpacks the packages again."
            )


def make_debian_build(release: str, family: str, major: str | None = None) -> Path:
    """A build folder made from Debian `release`'s packages of a server family (its `FAMILY.debian`
    recipe), under BUILDS_CACHE_DIR (one per release, family and major version: made once,
    installed on as many hosts as asked). `major`: the version a family's package names carry
    (PostgreSQL's "17")."""
    recipe = debian_recipe(family) if family in FAMILIES else None
    if recipe is None:
        known = ", ".join(f for f in FAMILIES if debian_recipe(f))
        raise BuildError(f"no build of {family!r} is made from Debian packages: one of {known}")
    versioned = any("{major}" in name for name in recipe["packages"])
    if versioned and not (major or "").isdigit():
        raise BuildError(f"{family} builds need a major version like 17, not {major!r}")
    try:
        cache = own_folder(Path(settings.BUILDS_CACHE_DIR), "builds' cache", "BUILDS_CACHE_DIR")
    except UnsafeFolder as exc:
        raise BuildError(str(exc)) from None
    name = f"debian-{release}-{family}" + (f"-{major}" if versioned else "")
    folder = cache / name
    if folder.exists() or folder.is_symlink():
        verify_build(folder)
        return folder
    packages = tuple(package.format(major=major) for package in recipe["packages"])
    debs = fetch_packages(release, packages, cache / f"{name}-packages", libraries=recipe["libraries"])
    paths = {key: value.format(major=major) for key, value in recipe["manifest"].items()}
    with tempfile.TemporaryDirectory(prefix=f".{name}-", dir=cache) as partial:
        unpack_debian_build(debs, Path(partial) / "build", release, paths)
        os.rename(Path(partial) / "build", folder)  # whole or not at all
    folder.chmod(0o755)
    return folder
