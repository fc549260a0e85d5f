"""What `make start` leaves on the machine is the operator's: another local user can neither talk
to gunicorn's socket (bypassing nginx, two half-sent requests would hold both sync workers) nor
read a log (the alerts' mails, recipients included, land in `alerts.log` with `consolemail://`),
while nginx's workers still reach the socket. `make start` runs for real, as root, in a run folder
of this test's own, on the test database: once, for every check (a start and stop take 12 s)."""

import os
import pwd
import shutil
import socket
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest
from django.db import connection

from webapp.proxy import WORKERS_USER

from .conftest import ROOT, manage_env, wait_for
from .test_faults import free_port
from .test_web_server import _answers

pytestmark = [pytest.mark.busy, pytest.mark.django_db(transaction=True)]

SERVICES = ("proxy", "web", "worker", "alerts", "beat")
STARTED: dict = {}  # what the last `started` printed, and where it serves


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _make(target: str, run_dir: Path, web_addr: str) -> subprocess.CompletedProcess:
    env = {**manage_env(connection.settings_dict["NAME"]), "ALLOWED_HOSTS": "127.0.0.1"}
    return subprocess.run(
        ["make", "-s", target, f"RUN_DIR={run_dir}", f"WEB_ADDR={web_addr}"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def started():
    """`make start` in a run folder of its own; its login page answering through nginx. The folder
    and a log are first left open to all, as an older start left `.run`: a restart closes them."""
    run_dir = Path(tempfile.mkdtemp(prefix="recovery-lab-start-"))
    run_dir.chmod(0o755)
    (run_dir / "setup.done").touch()  # newer than what setup installs from: no setup run
    older_log = run_dir / "alerts.log"
    older_log.write_text("To: ops@example.com\n")
    older_log.chmod(0o644)
    web_addr = f"127.0.0.1:{free_port()}"
    try:
        done = _make("start", run_dir, web_addr)
        assert done.returncode == 0, done.stdout + done.stderr
        wait_for(lambda: _answers(f"http://{web_addr}/login/"), 120, "make start's nginx to serve /login/")
        STARTED.update(said=done.stdout, web_addr=web_addr)
        yield run_dir
    finally:
        pid_files = [run_dir / f"{name}.pid" for name in SERVICES]
        pids = [int(pid_file.read_text()) for pid_file in pid_files if pid_file.exists()]
        _make("stop", run_dir, web_addr)
        wait_for(
            lambda: not any(_alive(pid) for pid in pids), 120, "make stop to end what make start started"
        )
        shutil.rmtree(run_dir, ignore_errors=True)


def _as_user(user: str, *command: str) -> subprocess.CompletedProcess:
    """A command as another local account, with none of root's groups."""
    group = str(pwd.getpwnam(user).pw_gid)
    switch = ["setpriv", "--reuid", user, "--regid", group, "--clear-groups"]
    return subprocess.run([*switch, *command], capture_output=True, text=True, timeout=60)


def _sockets(run_dir: Path) -> list[Path]:
    return [path for path in run_dir.rglob("*") if stat.S_ISSOCK(path.lstat().st_mode)]


CONNECT = "import socket, sys; socket.socket(socket.AF_UNIX).connect(sys.argv[1]); print('connected')"


def _cannot_connect_to_the_web_socket(started: Path) -> None:
    (web_socket,) = _sockets(started)
    refused = _as_user("nobody", "/usr/bin/python3", "-c", CONNECT, str(web_socket))
    assert refused.returncode != 0 and "PermissionError" in refused.stderr, refused.stdout + refused.stderr
    # root (the operator) still can: the socket is there and served
    with socket.socket(socket.AF_UNIX) as operator:
        operator.connect(str(web_socket))


def _cannot_read_a_log(started: Path) -> None:
    logs = sorted(started.glob("*.log"))
    assert {"web.log", "nginx.log", "worker.log", "alerts.log", "beat.log"} <= {log.name for log in logs}
    for log in logs:
        assert stat.S_IMODE(log.stat().st_mode) & 0o077 == 0, f"{log.name} is {oct(log.stat().st_mode)}"
        for user in ("nobody", WORKERS_USER):  # nginx's workers may reach the socket, not the logs
            read = _as_user(user, "/usr/bin/cat", str(log))
            assert read.returncode != 0 and "Permission denied" in read.stderr, (log.name, user, read.stdout)


def _first_admin_said_once() -> None:
    """Issue 68: after `make setup` and `make start` a team met a login page and no user. The
    first start on a database without users makes `admin` and prints its password, once."""
    import re

    import requests
    from django.contrib.auth import get_user_model

    said = re.search(r"First login: admin / (\S+)", STARTED["said"])
    assert said, STARTED["said"]
    assert list(get_user_model().objects.values_list("username", flat=True)) == ["admin"]
    session, login = requests.Session(), f"http://{STARTED['web_addr']}/login/"
    session.get(login, timeout=30)
    answer = session.post(
        login,
        {"username": "admin", "password": said.group(1), "csrfmiddlewaretoken": session.cookies["csrftoken"]},
        headers={"Referer": login},
        timeout=30,
    )
    assert answer.ok and "Log out" in answer.text, answer.text[:500]
    again = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "python"), "manage.py", "firstadmin"],
        cwd=ROOT,
        env=manage_env(connection.settings_dict["NAME"]),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert again.returncode == 0 and again.stdout == "", again.stdout  # shown once: none made again


def test_make_start_leaves_its_socket_and_logs_to_the_operator_and_makes_the_first_admin(started):
    """Another local user can neither connect to gunicorn's socket nor read a log (nginx's
    workers reach the socket, not the logs); the first start made the first admin and said its
    password once."""
    _cannot_connect_to_the_web_socket(started)
    _cannot_read_a_log(started)
    _first_admin_said_once()
