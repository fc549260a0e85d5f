"""The runner's private server is the run's alone: while a real workload goes, another OS user of
the host (nobody) reaches it neither by TCP nor by its socket; it runs as an unprivileged user
where the runner is root; its accounts authenticate by OS user; SQL reads and writes files only
in the run's own folder."""

import os
import pwd
import subprocess
from pathlib import Path

import pytest
from django.conf import settings

from .conftest import runner_processes, wait_for
from .test_end_to_end import endless_spec, runner_in_its_workload

pytestmark = [pytest.mark.mariadb, pytest.mark.django_db(transaction=True)]


def _our_server() -> tuple[int, dict[str, str]]:
    """The pid of the mariadbd working under the session's runner directory, and its options."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = [a.decode() for a in (proc / "cmdline").read_bytes().split(b"\0") if a]
        except OSError:
            continue
        if argv and argv[0].endswith("mariadbd") and any(str(settings.RUNNER_WORK_DIR) in a for a in argv):
            options = dict(
                a[2:].split("=", 1) if "=" in a else (a[2:], "") for a in argv[1:] if a.startswith("--")
            )
            return int(proc.name), options
    raise AssertionError("no private mariadbd of this session is running")


def _listening_tcp_inodes() -> set[str]:
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A":  # LISTEN
                inodes.add(fields[9])
    return inodes


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        target = os.readlink(fd)
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    return inodes


def _client(
    socket_path: str, user: str, sql: str, as_os_user: str | None = None
) -> subprocess.CompletedProcess:
    command = ["mariadb", "--no-defaults", "--protocol=socket", f"--socket={socket_path}", f"--user={user}"]
    command += ["--connect-timeout=5", "-N", "-B", "-e", sql]
    if as_os_user:
        command = [
            "setpriv",
            f"--reuid={as_os_user}",
            "--regid=nogroup",
            "--clear-groups",
            "--",
            *command,
        ]
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


@pytest.mark.skipif(os.geteuid() != 0, reason="acting as another OS user (nobody) needs root")
def test_nobody_else_on_the_host_reaches_the_runs_server_while_its_workload_goes(tmp_path):
    runner = runner_in_its_workload(tmp_path, endless_spec(31))
    try:
        pid, options = _our_server()
        socket_path = options["socket"]
        # no TCP at all: asked not to listen, and no listening TCP socket of its own
        assert "skip-networking" in options and "port" not in options
        assert not (_socket_inodes(pid) & _listening_tcp_inodes())
        # an unprivileged server: its process is not root's but the mysql (or nobody) user's
        uid = int(
            next(
                line
                for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                if line.startswith("Uid:")
            ).split()[1]
        )
        assert pwd.getpwuid(uid).pw_name in ("mysql", "nobody")
        # the runner itself gets in (the check below could fail)...
        assert _client(socket_path, "root", "SELECT 1").stdout.strip() == "1"
        # ...nobody does not, as root or as itself: the socket's folder is closed to it
        for account in ("root", "nobody"):
            refused = _client(socket_path, account, "SELECT 1", as_os_user="nobody")
            assert refused.returncode != 0, refused.stdout
            assert "Can't connect" in refused.stderr or "Permission denied" in refused.stderr, refused.stderr
        mode = Path(socket_path).parent.stat().st_mode & 0o777
        assert mode == 0o700
        # and were the socket reached, root's account takes root's OS user, not an empty password
        account = _client(socket_path, "root", "SHOW CREATE USER root@localhost").stdout
        assert "unix_socket" in account and "USING ''" not in account, account
        # files in and out of SQL only within the run's own folder
        run_folder = Path(socket_path).parent
        allowed = _client(socket_path, "root", "SELECT @@secure_file_priv").stdout.strip()
        assert Path(allowed) == run_folder / "files"
        written = _client(socket_path, "root", "SELECT 1 INTO OUTFILE '/tmp/recovery-lab-must-not-exist'")
        assert written.returncode != 0 and "secure-file-priv" in written.stderr
        assert not Path("/tmp/recovery-lab-must-not-exist").exists()
    finally:
        runner.stdin.close()
        runner.wait(timeout=60)
    wait_for(lambda: runner_processes() == [], 10, "the runner's processes to be gone")
