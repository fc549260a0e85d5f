"""Root stays root's on a benchmark host. The runner runs as root; its server runs as an
unprivileged OS user (mysql, postgres), and whoever holds that user (one `COPY ... TO PROGRAM`
away where PostgreSQL trusts local logins) must not get root's rights from it: nothing root runs
is theirs to change, nothing they plant is followed into a run's bundle, and a work directory or
a build someone else planted is refused by name."""

import json
import os
import pwd
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

from runner.files import UnsafeFolder, own_folder, untrusted_in
from runner.probe import server_builds
from workers.builds import BuildError, make_debian_build
from workers.transports import write_runner

from .conftest import runner_processes
from .test_end_to_end import endless_spec, runner_in_its_workload

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="acting as another OS user needs root")

# Run as the server's OS user while the run goes: try to write every file of the run's folder
# outside the server's own (the launchers root runs among them) and to add one; then put a
# link to root's secret where the runner reads the error log. Prints what it managed.
ATTACK = r"""
import json, os, sys
run, secret = sys.argv[1], sys.argv[2]
home = os.path.join(run, "server")
written, refused = [], []
for root, folders, files in os.walk(run):
    if root == home or root.startswith(home + os.sep):
        continue
    for name in files:
        path = os.path.join(root, name)
        try:
            with open(path, "a") as handle:
                handle.write("\nid > /tmp/owned-by-root\n")
            written.append(path)
        except OSError:
            refused.append(path)
for folder in (run, os.path.join(run, "postgresql-shim"), os.path.join(run, "install-prefix")):
    try:
        with open(os.path.join(folder, "planted"), "w"):
            written.append(os.path.join(folder, "planted"))
    except OSError:
        refused.append(folder)
os.rename(os.path.join(home, "error.log"), os.path.join(home, "error.log.moved"))
os.symlink(secret, os.path.join(home, "error.log"))
print(json.dumps({"written": written, "refused": refused}))
"""


def _as_user(user: str, args: list[str]) -> subprocess.CompletedProcess:
    entry = pwd.getpwnam(user)
    command = ["setpriv", f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}", "--init-groups", "--", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def _spec(run_id: int, engine: str, build: str) -> dict:
    """A run of `engine` on `build` whose workload goes on until its crash, in the session's work
    directory (where its builds are)."""
    endless = endless_spec(run_id)
    return {
        **endless,
        "engine": engine,
        "parameters": {**endless["parameters"], "server_build": build},
        # the attack goes in the workload's first seconds, before the crash
        "crash": {"method": "sigkill", "when": "during_workload", "after_seconds": 5},
        "start_timeout_s": 60,
        "reuse_dataset": False,  # installed now: MariaDB's launchers are made for the installer
    }


def _run_under_attack(folder: Path, spec: dict, os_user: str) -> tuple[dict, dict, str]:
    """The runner, attacked as `os_user` once its workload runs: what the attack managed, the
    run's result and the secret it must not have read."""
    secret = folder / "root-only-secret"
    token = secrets.token_hex(16)
    secret.write_text(f"root's secret {token}\n")
    secret.chmod(0o600)
    (folder / "spec.json").write_text(json.dumps(spec))
    out = folder / "bundle"
    runner = subprocess.Popen(
        [sys.executable, str(write_runner(folder)), "--watch-stdin", "--spec", str(folder / "spec.json"),
         "--out", str(out)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        for line in runner.stdout:
            if '"running oltp_write_only:' in line:
                break
        else:
            raise AssertionError(f"the runner ended (exit {runner.wait()}) before its workload ran")
        (run,) = Path(spec["work_dir"]).glob(f"run-{spec['run_id']}-*")
        attacked = _as_user(os_user, [sys.executable, "-c", ATTACK, str(run), str(secret)])
        assert attacked.returncode == 0, attacked.stderr
        for _ in runner.stdout:  # to its end
            pass
        runner.wait(timeout=300)
    finally:
        if runner.poll() is None:
            runner.stdin.close()
            runner.wait(timeout=60)
    return json.loads(attacked.stdout), json.loads((out / "result.json").read_text()), token


@pytest.mark.parametrize(
    ("engine", "build_fixture", "os_user"),
    [("innodb", "debian_build", "mysql"), ("postgresql", "postgresql_17_build", "postgres")],
)
def test_the_servers_os_user_can_neither_change_what_root_runs_nor_slip_a_file_into_the_bundle(
    engine, build_fixture, os_user, request, tmp_path
):
    build, _ = request.getfixturevalue(build_fixture)
    marker = Path("/tmp/owned-by-root")
    marker.unlink(missing_ok=True)
    run_id = {"innodb": 61, "postgresql": 63}[engine]
    attack, result, token = _run_under_attack(tmp_path, _spec(run_id, engine, build), os_user)

    # every file of the run's folder outside the server's own is root's alone, launchers included
    assert attack["written"] == []
    launchers = [path for path in attack["refused"] if "/bin/" in path or "/sbin/" in path]
    assert launchers, f"the run made no launchers to try: {attack['refused']}"
    assert not marker.exists()
    # the link at the error log's name was not followed: the secret is nowhere in the bundle
    bundle = tmp_path / "bundle"
    for path in bundle.iterdir():
        assert token not in path.read_text(errors="replace"), path.name
    assert any(reason.startswith("error.log is a symbolic link") for reason in result["refused_files"])


def test_the_next_runner_removes_the_run_folder_a_killed_runner_left(tmp_path):
    """kill -9 of a runner mid-run (its server and sysbench go with it) leaves its run folder; the
    next runner in that work directory removes it and says so, and leaves one kept with --keep."""
    spec = endless_spec(71)
    killed = runner_in_its_workload(tmp_path, spec)
    killed.kill()
    killed.wait(timeout=30)
    base = Path(spec["work_dir"])
    (left,) = base.glob("run-71-*")
    assert (left / "server" / "data").is_dir()
    kept = base / "run-72-kept"
    kept.mkdir()
    (kept / "KEPT").touch()
    try:
        # the next run fails at once (no such build), after taking the work directory
        after = tmp_path / "after"
        after.mkdir()
        nothing = {**endless_spec(73), "parameters": {**spec["parameters"], "server_build": "no-such-build"}}
        (after / "spec.json").write_text(json.dumps(nothing))
        subprocess.run(
            [sys.executable, str(write_runner(after)), "--spec", str(after / "spec.json"),
             "--out", str(after / "b")],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        result = json.loads((after / "b" / "result.json").read_text())
        assert not left.exists() and kept.is_dir()
        assert result["stale_runs_removed"][0].startswith(f"{left.name} (")
        assert "MiB)" in result["stale_runs_removed"][0]
    finally:
        shutil.rmtree(kept, ignore_errors=True)


@pytest.mark.mariadb
def test_the_baselines_server_is_killed_unless_the_run_is_kept_then_it_is_shut_down(tmp_path):
    """Once the clean start is measured the runner kills that server: its files go with the run's.
    With --keep they stay for inspection, so it shuts the server down cleanly first."""
    spec = {**endless_spec(74), "workload": {**endless_spec(74)["workload"], "events": 50}}
    logs = {}
    for keep in (False, True):
        folder = tmp_path / str(keep)
        folder.mkdir()
        (folder / "spec.json").write_text(json.dumps(spec))
        command = [sys.executable, str(write_runner(folder)), "--spec", str(folder / "spec.json")]
        done = subprocess.run(
            [*command, "--out", str(folder / "b"), *(["--keep"] if keep else [])],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert json.loads((folder / "b" / "result.json").read_text())["status"] == "done", done.stdout[-500:]
        logs[keep] = (folder / "b" / "error.log").read_text()
        assert runner_processes() == []
    kept = [run for run in Path(spec["work_dir"]).glob("run-74-*") if (run / "KEPT").exists()]
    try:
        assert len(kept) == 1 and (kept[0] / "server" / "data").is_dir()
        for keep, log in logs.items():  # the clean start, then a stop only where the files stay
            tail = log[log.rindex("ready for connections") :]
            assert ("Shutdown complete" in tail) == keep, (keep, tail[-300:])
    finally:
        for run in kept:
            shutil.rmtree(run, ignore_errors=True)


def test_a_run_says_what_it_refused_and_is_suspect(tmp_path):
    """The refusal reaches the run's analysis as a reason to doubt it."""
    from experiments.ingest.bundle import analyse_run

    log = (Path(__file__).parent / "data/mariadb-10.11/innodb_after_workload/error.log").read_bytes()
    result = {"refused_files": ["error.log is a symbolic link (to /root/secret): not followed"]}
    analysis = analyse_run(result, {"error.log": log}, "innodb")
    assert any("symbolic link" in reason for reason in analysis.suspect_reasons)


def test_a_work_directory_planted_by_another_user_is_refused_by_name(tmp_path):
    planted = tmp_path / "work"
    planted.mkdir()
    shutil.chown(planted, user="nobody")
    with pytest.raises(UnsafeFolder, match=rf"refusing the work directory {planted}: it belongs to nobody"):
        own_folder(planted, "work directory", "RUNNER_WORK_DIR")
    planted.chmod(0o777)
    shutil.chown(planted, user="root")
    with pytest.raises(UnsafeFolder, match=r"writable by its group and others \(mode 777\)"):
        own_folder(planted, "work directory", "RUNNER_WORK_DIR")
    # a run asked to work there fails saying so, having run nothing
    spec = _spec(62, "innodb", "system") | {"work_dir": str(planted)}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    done = subprocess.run(
        [sys.executable, str(write_runner(tmp_path)), "--spec", str(tmp_path / "spec.json"),
         "--out", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    said = json.loads(done.stdout.strip().splitlines()[-1])
    assert done.returncode == 1 and said["event"] == "failed"
    assert f"refusing the work directory {planted}" in said["error"]
    assert list(planted.iterdir()) == []


def test_a_build_planted_in_the_builds_cache_is_refused_by_name(tmp_path, settings):
    """As nobody, a folder planted in the cache before setup claimed to be PostgreSQL 17.99 and
    had root run its loader: now the cache is root's, and a cached build is checked file by
    file against the hashes written when it was unpacked."""
    cache = tmp_path / "cache"
    settings.BUILDS_CACHE_DIR = cache
    cache.mkdir(mode=0o755)
    forged = cache / "debian-trixie-postgresql-17"
    forged.mkdir()
    (forged / "recovery-lab-build.json").write_text('{"format": 1, "postgres_bin": "bin"}')
    shutil.chown(forged, user="nobody")
    with pytest.raises(BuildError, match=rf"refusing the cached build {forged}: {forged} belongs to nobody"):
        make_debian_build("trixie", "postgresql", "17")

    # root's, but no unpack of ours made it: no hashes
    shutil.chown(forged, user="root")
    with pytest.raises(BuildError, match=r"it has no recovery-lab-build.sha256.json"):
        make_debian_build("trixie", "postgresql", "17")

    shutil.rmtree(forged)
    # the cache itself planted: refused before anything in it is read
    shutil.chown(cache, user="nobody")
    with pytest.raises(BuildError, match=rf"refusing the builds' cache {cache}: it belongs to nobody"):
        make_debian_build("trixie", "postgresql", "17")


def test_a_cached_build_changed_after_it_was_unpacked_is_refused(postgresql_17_build, settings):
    """The machine's real PostgreSQL 17 build, as setup unpacked it, verifies; one byte of its
    loader changed, it does not."""
    folder = make_debian_build("trixie", "postgresql", "17")  # verified, then used
    copy = Path(settings.BUILDS_CACHE_DIR) / "copy-check" / folder.name
    shutil.copytree(folder, copy, symlinks=True)
    try:
        settings.BUILDS_CACHE_DIR = copy.parent
        copy.parent.chmod(0o755)
        assert make_debian_build("trixie", "postgresql", "17") == copy
        loader = copy / "usr/lib64/ld-linux-x86-64.so.2"
        target = loader.resolve() if loader.is_symlink() else loader
        with target.open("ab") as handle:
            handle.write(b"\0")
        with pytest.raises(BuildError, match=r"refusing the cached build .*: .* changed since it was"):
            make_debian_build("trixie", "postgresql", "17")
    finally:
        shutil.rmtree(copy.parent)


def test_a_hosts_build_folder_another_user_can_write_is_listed_with_the_reason_and_not_run(debian_build):
    name, _ = debian_build
    folder = settings.RUNNER_WORK_DIR / "builds" / name
    assert untrusted_in(folder) is None
    server = folder / "usr/sbin/mariadbd"
    server.chmod(0o777)
    try:
        listed = {build["name"]: build for build in server_builds(str(settings.RUNNER_WORK_DIR))}
        assert "version" not in listed[name]
        assert f"{server} is writable by its group and others" in listed[name]["error"]
    finally:
        server.chmod(0o755)


def test_a_link_another_user_made_is_not_followed_anywhere_in_a_path_root_reads(tmp_path):
    """MyRocks' LOG is read from the datadir's #rocksdb folder: a link there made by the server's
    user (to a folder of root's) is refused; a link root made (as /var/run) is followed."""
    from runner.files import REFUSED, copy_regular

    secrets_folder = tmp_path / "root-only"
    secrets_folder.mkdir(mode=0o700)
    (secrets_folder / "LOG").write_text("root's secret\n")
    home = tmp_path / "server"
    (home / "data").mkdir(parents=True)
    shutil.chown(home / "data", user="nobody")
    planted = home / "data" / "#rocksdb"
    planted.symlink_to(secrets_folder)
    os.lchown(planted, pwd.getpwnam("nobody").pw_uid, -1)
    REFUSED.clear()
    assert copy_regular(planted / "LOG", tmp_path / "copied") is False
    assert not (tmp_path / "copied").exists()
    assert REFUSED == [
        f"LOG is under a symbolic link another user made ({planted} to {secrets_folder}): not followed"
    ]

    os.lchown(planted, 0, -1)  # root's own link
    assert copy_regular(planted / "LOG", tmp_path / "copied") is True
    assert (tmp_path / "copied").read_text() == "root's secret\n"
    REFUSED.clear()
