"""Root stays root on a benchmark host, attacked as a hostile colleague would: as the server's own
OS user while a run goes (the power-cut layer, the installers, the dataset cache), and as another
local account (the work directory, the lock, what root keeps of a run). Each test performs its
attack on a real run and fails where the attack wins."""

import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from django.conf import settings

from runner.dataset import DatasetCache
from workers.transports import write_runner

from .test_end_to_end import endless_spec, run_runner

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="acting as another OS user needs root"),
    pytest.mark.mariadb,
]


def as_user(user: str, args: list[str], **options) -> subprocess.Popen:
    entry = pwd.getpwnam(user)
    command = ["setpriv", f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}", "--init-groups", "--", *args]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **options)


def finished(process: subprocess.Popen, timeout: float = 120) -> dict:
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, err
    return json.loads(out)


def runner_until(folder: Path, spec: dict, said: str) -> subprocess.Popen:
    """The runner started as a transport starts it, returned once it has printed `said`."""
    (folder / "spec.json").write_text(json.dumps(spec))
    runner = subprocess.Popen(
        [sys.executable, str(write_runner(folder)), "--watch-stdin", "--spec", str(folder / "spec.json"),
         "--out", str(folder / "bundle")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    for line in runner.stdout:
        if said in line:
            return runner
    raise AssertionError(f"the runner ended (exit {runner.wait()}) before it said {said!r}")


def to_its_end(runner: subprocess.Popen, folder: Path) -> dict:
    for _ in runner.stdout:
        pass
    runner.wait(timeout=300)
    return json.loads((folder / "bundle" / "result.json").read_text())


# 1. The power-cut layer ------------------------------------------------------------------------

# As the server's OS user, through the layer's mount (the datadir) while the run goes: a copy of
# a shell made root's and set-uid, and /etc/shadow reached through a hard link to a link.
LAYER_ATTACK = r"""
import json, os, shutil, sys
data = sys.argv[1]
said = {}
shell = os.path.join(data, "planted-shell")
shutil.copyfile("/bin/bash", shell)
os.sync()
for what, act in (("chown", lambda: os.chown(shell, 0, 0)), ("chmod", lambda: os.chmod(shell, 0o4755))):
    try:
        act()
        said[what] = "done"
    except OSError as exc:
        said[what] = exc.strerror
info = os.stat(shell)
said["uid"], said["mode"] = info.st_uid, info.st_mode
os.symlink("/etc/shadow", os.path.join(data, "shadow-link"))
try:
    os.link(os.path.join(data, "shadow-link"), os.path.join(data, "shadow-hard"), follow_symlinks=False)
    said["link"] = "done"
except OSError as exc:
    said["link"] = exc.strerror
try:
    with open(os.path.join(data, "shadow-hard")) as handle:
        said["shadow"] = handle.read()[:40]
except OSError as exc:
    said["shadow"] = "refused: " + exc.strerror
print(json.dumps(said))
"""


def power_loss_under_attack(tmp_path, run_id: int, build: str) -> tuple[dict, dict]:
    spec = {
        **endless_spec(run_id),
        "parameters": {**endless_spec(run_id)["parameters"], "server_build": build},
        "crash": {"method": "power_loss", "when": "during_workload", "after_seconds": 2},
    }
    runner = runner_until(tmp_path, spec, '"running oltp_write_only:')
    try:
        (run,) = Path(spec["work_dir"]).glob(f"run-{run_id}-*")
        data = run / "server" / "data"
        assert os.path.ismount(data), "the power-cut layer is not mounted"
        attack = finished(as_user("mysql", [sys.executable, "-c", LAYER_ATTACK, str(data)]))
        return attack, to_its_end(runner, tmp_path)
    finally:
        if runner.poll() is None:
            runner.stdin.close()
            runner.wait(timeout=60)


def assert_the_layer_gave_nothing(attack: dict, result: dict) -> None:
    mysql = pwd.getpwnam("mysql").pw_uid
    assert attack["chown"] != "done" and attack["uid"] == mysql, attack
    assert not (attack["uid"] == 0 and attack["mode"] & stat.S_ISUID), attack
    assert attack["chmod"] != "done", attack  # no set-id bit passes through the layer
    assert attack["shadow"].startswith("refused"), attack
    assert result["status"] == "done", result.get("error")
    assert result["durability"]["acknowledged_commits"] > 0


def test_the_power_cut_layer_does_nothing_the_mariadb_servers_user_could_not(tmp_path):
    attack, result = power_loss_under_attack(tmp_path, 81, "system")
    assert_the_layer_gave_nothing(attack, result)


def test_the_power_cut_layer_does_nothing_the_mysql_servers_user_could_not(tmp_path, mysql_build):
    attack, result = power_loss_under_attack(tmp_path, 82, mysql_build[0])
    assert_the_layer_gave_nothing(attack, result)


# 2. The installers -----------------------------------------------------------------------------

# As the server's OS user from before the run starts: the moment its folder in the run is its
# own, a link at `data` (where the installer makes the datadir) to a folder of root's.
INSTALL_ATTACK = r"""
import glob, json, os, sys, time
work, run_id, target = sys.argv[1], sys.argv[2], sys.argv[3]
deadline = time.monotonic() + 120
while time.monotonic() < deadline:
    for home in glob.glob(os.path.join(work, f"run-{run_id}-*", "server")):
        try:
            os.symlink(target, os.path.join(home, "data"))
        except OSError:
            continue
        print(json.dumps({"planted": True}))
        sys.exit(0)
    time.sleep(0.001)
print(json.dumps({"planted": False}))
"""


@pytest.mark.parametrize(
    ("engine", "build_fixture", "os_user", "installer"),
    [
        ("innodb", None, "mysql", "mariadb-install-db"),
        ("innodb", "mysql_build", "mysql", "mysqld --initialize-insecure"),
        ("postgresql", None, "postgres", "initdb"),
    ],
)
def test_an_installer_follows_a_link_the_servers_user_planted_with_that_users_rights_only(
    engine, build_fixture, os_user, installer, request, tmp_path
):
    build = request.getfixturevalue(build_fixture)[0] if build_fixture else "system"
    run_id = {"mariadb-install-db": 83, "mysqld --initialize-insecure": 84, "initdb": 85}[installer]
    target = Path(tempfile.mkdtemp(prefix="root-owned-", dir="/var/tmp"))
    target.chmod(0o755)
    try:
        work = str(settings.RUNNER_WORK_DIR)
        attacker = as_user(os_user, [sys.executable, "-c", INSTALL_ATTACK, work, str(run_id), str(target)])
        spec = {
            **endless_spec(run_id),
            "engine": engine,
            "parameters": {**endless_spec(run_id)["parameters"], "server_build": build},
            "reuse_dataset": False,  # the installer runs
        }
        exit_code, last = run_runner(tmp_path, spec)
        attack = finished(attacker)
        assert attack["planted"], "the attack found no window: it proves nothing"
        # the installer ran as the server's user: it could not write into root's folder
        info = os.stat(target)
        assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (0, 0o755)
        assert list(target.iterdir()) == []
        assert exit_code == 1 and installer in last["error"], last
    finally:
        shutil.rmtree(target, ignore_errors=True)


# 4. The dataset cache --------------------------------------------------------------------------

CACHE_ATTACK = r"""
import json, os, sys
said = {}
for root, folders, files in os.walk(sys.argv[1]):
    for name in files:
        try:
            with open(os.path.join(root, name), "r+b") as handle:
                handle.write(b"x")
            said[name] = "written"
        except OSError as exc:
            said[name] = exc.strerror
said["listed"] = os.access(sys.argv[1], os.R_OK)
print(json.dumps(said))
"""


def test_the_dataset_cache_is_roots_and_checked_before_each_run(tmp_path):
    work = settings.RUNNER_WORK_DIR / "cache-attack"
    spec = {
        **endless_spec(86),
        "workload": {**endless_spec(86)["workload"], "events": 200},
        "work_dir": str(work),
    }
    try:
        (tmp_path / "first").mkdir()
        assert run_runner(tmp_path / "first", spec)[0] == 0
        cache = DatasetCache(work)
        (entry,) = [path for path in cache.root.iterdir() if (path / "READY").exists()]
        for path in [cache.root, *entry.rglob("*")]:
            info = os.lstat(path)
            assert info.st_uid == 0 and not info.st_mode & 0o077, path

        # the server's user reaches none of it
        attack = finished(as_user("mysql", [sys.executable, "-c", CACHE_ATTACK, str(entry)]))
        assert attack == {"listed": False}

        # root's own copy changed (a disk's fault, a hand): the next run loads afresh and says so
        victim = next(path for path in (entry / "data").rglob("*") if path.is_file() and path.stat().st_size)
        with victim.open("r+b") as handle:
            first = handle.read(1)
            handle.seek(0)
            handle.write(bytes([first[0] ^ 0xFF]))
        (tmp_path / "second").mkdir()
        assert run_runner(tmp_path / "second", spec)[0] == 0
        second = json.loads((tmp_path / "second" / "bundle" / "result.json").read_text())
        assert second["dataset"]["reused"] is False
        assert "is not as it was kept" in second["dataset"]["cache_refused"]
        assert victim.relative_to(entry / "data").as_posix() in second["dataset"]["cache_refused"]

        # and the run after it uses the entry kept anew
        (tmp_path / "third").mkdir()
        assert run_runner(tmp_path / "third", spec)[0] == 0
        third = json.loads((tmp_path / "third" / "bundle" / "result.json").read_text())
        assert third["dataset"]["reused"] is True and third["status"] == "done"
    finally:
        shutil.rmtree(work, ignore_errors=True)


# 5. The lock, and what root keeps of a run -----------------------------------------------------

RECORDS_ATTACK = r"""
import json, os, sys, fcntl
run, lock = sys.argv[1], sys.argv[2]
read, refused = [], []
for name in os.listdir(run):
    path = os.path.join(run, name)
    if not os.path.isfile(path):
        continue
    try:
        with open(path, "rb") as handle:
            handle.read(1)
        read.append(name)
    except OSError:
        refused.append(name)
try:
    with open(lock) as handle:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    said = "locked"
except OSError as exc:
    said = exc.strerror
print(json.dumps({"read": read, "refused": refused, "lock": said}))
"""


def test_another_local_user_neither_holds_the_hosts_lock_nor_reads_what_root_keeps_of_a_run(tmp_path):
    spec = endless_spec(87)
    runner = runner_until(tmp_path, spec, '"running oltp_write_only:')
    try:
        (run,) = Path(spec["work_dir"]).glob("run-87-*")
        lock = Path(spec["work_dir"]) / ".runner.lock"
        attack = finished(as_user("nobody", [sys.executable, "-c", RECORDS_ATTACK, str(run), str(lock)]))
    finally:
        runner.stdin.close()
        runner.wait(timeout=60)
    assert attack["lock"] == "Permission denied"
    assert "error.log.stamped" in attack["refused"], attack
    assert attack["read"] == [], attack


# 3. SSH hosts ----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_an_ssh_hosts_work_directory_another_user_made_first_runs_nothing_and_marks_the_host(staff_api, sshd):
    """A local account made the host's work directory before root did (in /var/tmp, where anyone
    may): the probe and the run write and run nothing there; the host is `unsafe` with the reason
    and the fix, until root's own folder replaces it."""
    from datetime import timedelta

    from experiments import services
    from experiments.models import Host
    from runner.contract import RunSpec
    from workers.ssh import SSHTransport
    from workers.transports import TransportError

    from .factories import RunFactory
    from .test_ssh import confirm_host_key, probe, register

    planted = Path(tempfile.mkdtemp(prefix="recovery-lab-planted-", dir="/var/tmp"))
    planted.rmdir()
    made = as_user("nobody", ["mkdir", "-m", "0777", str(planted)])
    assert made.wait(timeout=30) == 0, made.stderr.read()
    try:
        host = register(staff_api, sshd, "planted", work_dir=str(planted))
        probed = confirm_host_key(staff_api, host["id"], sshd.fingerprint)
        assert probed["status"] == "unsafe", probed
        assert f"refusing the work directory {planted}: it belongs to nobody" in probed["error"]
        assert "Remove it" in probed["error"] and "choose another" in probed["error"]
        assert list(planted.iterdir()) == []  # not a byte written there

        stored = Host.objects.get(id=host["id"])
        spec = RunSpec.from_dict({**endless_spec(88), "work_dir": str(planted)})
        with pytest.raises(TransportError, match="refusing the work directory") as refused:
            SSHTransport(stored).execute(spec, lambda message, percent: None)
        assert refused.value.unsafe and not refused.value.permanent  # its runs wait for the fix
        assert list(planted.iterdir()) == []
        # no run is sent to it meanwhile: its runs wait, queued
        waiting = RunFactory(host=stored, host_label=stored.name)
        assert services.claim_next_run(stored.id, "celery@test") is None
        assert stored.id not in services.hosts_to_wake(set(), timedelta(0))

        # root's own folder in its place: the host is usable again, its run with it
        shutil.rmtree(planted)
        assert probe(staff_api, host["id"])["status"] == "idle"
        claimed, _attempt = services.claim_next_run(stored.id, "celery@test")
        assert claimed.id == waiting.id
        info = os.stat(planted)
        assert info.st_uid == 0 and not info.st_mode & 0o022
    finally:
        shutil.rmtree(planted, ignore_errors=True)


@pytest.mark.django_db
def test_a_host_works_in_roots_own_folder_unless_told_otherwise():
    from experiments import services
    from experiments.models import Transport

    host = services.register_host("default-work-dir", Transport.SSH, ssh_host="127.0.0.1", ssh_user="root")
    assert host.work_dir == "/var/lib/recovery-lab/work"


def test_myrocks_wal_sizes_are_read_without_following_a_link_the_servers_user_made(tmp_path):
    """The sampler reads the sizes of MyRocks' WAL files every second, as root: a link in the
    datadir (to root's files, or a #rocksdb folder that is a link) shows nothing of them."""
    from runner.families.mariadb.engines import wal_sizes

    wal = tmp_path / "data" / "#rocksdb"
    wal.mkdir(parents=True)
    (wal / "000012.log").write_bytes(b"x" * 10)
    (wal / "000013.log").symlink_to("/etc/shadow")
    assert wal_sizes(tmp_path / "data") == {"12": 10}
    elsewhere = tmp_path / "planted"
    elsewhere.mkdir()
    (elsewhere / "#rocksdb").symlink_to(wal)
    assert wal_sizes(elsewhere) == {}
