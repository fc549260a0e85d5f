"""`make bench` runs as root: every file it writes is in a folder root made fresh, or in the parse
bench's cache, which is checked as the runner checks its work directory (issue 64). A local user
who made a bench's old fixed folder in /var/tmp first, with links in it, gets nothing written
through them; two benches never share a folder."""

import os
import pwd
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT

sys.path.insert(0, str(ROOT / "scripts"))

import bench  # noqa: E402
import bench_power_loss  # noqa: E402
import benchlib  # noqa: E402

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the benches run as root")

NOBODY = pwd.getpwnam("nobody")
THE_TESTS_OWN = b"the test's own file: nothing of the bench belongs here\n"


@pytest.fixture
def victim(tmp_path):
    """A file of the test's own, root's, that a planted link points at."""
    path = tmp_path / "victim.txt"
    path.write_bytes(THE_TESTS_OWN)
    return path


def plant(path: Path, names: tuple[str, ...], target: Path) -> None:
    """What another user (nobody) does first: the folder at `path`, hers, with a link at each name
    the bench writes pointing at `target`."""
    if os.path.lexists(path):
        pytest.skip(f"{path} is there already (a bench's or a user's): not touched")
    path.mkdir()
    for name in names:
        (path / name).symlink_to(target)
        os.chown(path / name, NOBODY.pw_uid, NOBODY.pw_gid, follow_symlinks=False)
    os.chown(path, NOBODY.pw_uid, NOBODY.pw_gid)


@pytest.fixture
def old_parse_folder(victim):
    path = Path("/var/tmp/recovery-lab-bench")
    plant(path, ("mostly-warnings-1GiB-v3.log", "triggers.txt", "first-64MiB.log"), victim)
    yield path
    shutil.rmtree(path)


def test_the_parse_bench_writes_through_no_link_at_its_old_or_its_cached_names(
    old_parse_folder, victim, tmp_path
):
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    for name in (bench.LOG_NAME, "triggers.txt", "first-64MiB.log"):
        (cache / name).symlink_to(victim)  # what no other user can do here; still never followed

    log = bench.cached_log(cache, size=1 << 20, copies=2)
    with benchlib.fresh_folder("parse") as folder:
        triggers = bench.write_triggers(folder)
        sample = bench.write_sample(log, folder)
        made = {path.name: os.lstat(path) for path in (triggers, sample)}

    assert victim.read_bytes() == THE_TESTS_OWN
    assert stat.S_ISREG(os.lstat(log).st_mode) and log.stat().st_size >= 1 << 20
    assert all(stat.S_ISREG(info.st_mode) and info.st_uid == 0 for info in made.values())
    assert made["first-64MiB.log"].st_size == log.stat().st_size  # the whole of a log under 64 MiB
    assert sorted(p.name for p in old_parse_folder.iterdir()) == sorted(
        ("mostly-warnings-1GiB-v3.log", "triggers.txt", "first-64MiB.log")
    )
    assert all(p.is_symlink() for p in old_parse_folder.iterdir())  # hers, as she left them


@pytest.mark.parametrize(
    "owner, mode, said",
    [(NOBODY.pw_uid, 0o755, "belongs to nobody"), (0, 0o777, "is writable by its group and others")],
)
def test_the_log_cache_refuses_a_folder_another_user_could_change(tmp_path, owner, mode, said):
    cache = tmp_path / "cache"
    cache.mkdir()
    os.chown(cache, owner, -1)
    cache.chmod(mode)
    with pytest.raises(SystemExit) as refused:
        bench.cached_log(cache, size=1 << 20, copies=2)
    assert str(cache) in str(refused.value) and said in str(refused.value)
    assert "BENCH_DIR" in str(refused.value)
    assert list(cache.iterdir()) == []


@pytest.fixture
def old_power_loss_folder(tmp_path):
    """The attack on the old bench: a link at its fixed name to a folder the test owns, so that
    root makes `layer` there and hands it to mysql."""
    folder = tmp_path / "victim-folder"
    folder.mkdir(mode=0o700)
    path = Path("/var/tmp/recovery-lab-bench-power-loss")
    if os.path.lexists(path):
        pytest.skip(f"{path} is there already (a bench's or a user's): not touched")
    path.symlink_to(folder)
    os.chown(path, NOBODY.pw_uid, NOBODY.pw_gid, follow_symlinks=False)
    yield folder
    path.unlink()


@pytest.mark.skipif(not Path("/dev/fuse").exists(), reason="no /dev/fuse here")
def test_the_power_cut_bench_hands_the_server_only_a_folder_inside_its_own(
    old_power_loss_folder, monkeypatch
):
    monkeypatch.setattr(bench_power_loss, "TOTAL", 1 << 20)  # 1 MiB a pass, not 64: the same code
    with benchlib.fresh_folder("power-loss", runner=True) as work:
        bench_power_loss.layer_alone(work)  # mounted for real, served as the server's user
        layer, folder = os.lstat(work / "layer"), os.lstat(work)

    server_user = pwd.getpwnam(bench_power_loss.server_os_user(("mysql", "nobody")))
    assert layer.st_uid == server_user.pw_uid
    assert folder.st_uid == 0 and stat.S_IMODE(folder.st_mode) == 0o711
    assert list(old_power_loss_folder.iterdir()) == []
    assert os.stat(old_power_loss_folder).st_uid == 0


def test_two_benches_never_share_a_folder_and_each_is_roots_alone():
    with benchlib.fresh_folder("dataset") as one, benchlib.fresh_folder("dataset") as other:
        infos = [os.lstat(one), os.lstat(other)]
        assert one != other
        assert all(
            stat.S_ISDIR(i.st_mode) and i.st_uid == 0 and stat.S_IMODE(i.st_mode) == 0o700 for i in infos
        )
    assert not one.exists() and not other.exists()


def test_a_runners_fresh_folder_is_entered_by_others_but_written_by_root_alone():
    with benchlib.fresh_folder("profile", runner=True) as folder:
        info = os.lstat(folder)
    assert info.st_uid == 0 and stat.S_IMODE(info.st_mode) == 0o711


def test_a_failed_bench_keeps_its_folder_and_says_where(capsys):
    with pytest.raises(SystemExit), benchlib.fresh_folder("dispatch") as folder:
        (folder / "worker.log").write_text("why it failed\n")
        raise SystemExit("gave up waiting for the worker")
    try:
        assert (folder / "worker.log").read_text() == "why it failed\n"
        assert str(folder) in capsys.readouterr().err
    finally:
        shutil.rmtree(folder)


# A folder or file named under /tmp or /var/tmp ("/var/tmp/x", f"/tmp/{x}", Path("/var/tmp") / "x"):
# the base itself given to mkdtemp is fine.
FIXED_SHARED = re.compile(r"""["'](?:/var)?/tmp/|["'](?:/var)?/tmp["']\s*\)?\s*/""")


def test_no_bench_script_names_a_fixed_folder_in_a_shared_temporary_directory():
    named = [
        f"{path.name}:{number}: {line.strip()}"
        for path in sorted((ROOT / "scripts").glob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if FIXED_SHARED.search(line)
    ]
    assert named == []


def test_the_calibration_bench_takes_the_mysql_build_from_runner_work_dir(tmp_path):
    work = tmp_path / "work"
    said = subprocess.run(
        [
            sys.executable,
            "-c",
            "import shutil, bench_calibration as b; live = b.live_server('mysql-9.7');"
            " shutil.rmtree(live.root); print(b.installed_build('mysql-9.7')); print(live.build)",
        ],
        cwd=ROOT / "scripts",
        env={**os.environ, "RUNNER_WORK_DIR": str(work), "DJANGO_SETTINGS_MODULE": "webapp.settings"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert said.returncode == 0, said.stderr
    assert said.stdout.split() == [str(work / "builds" / "mysql-9.7")] * 2
