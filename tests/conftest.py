import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import psycopg
import pytest
import redis
from celery import current_app
from django.conf import settings
from django.db import connections
from playwright.sync_api import sync_playwright
from rest_framework.test import APIClient

from .factories import HostFactory, UserFactory

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"


# Every test session of this user on this machine takes these locks around each test that starts
# a server: a test that measures rates or times (marked `quiet`) alone, the others beside each other.
SERVERS_LOCK = Path(f"/tmp/recovery-lab-tests-{os.getuid()}.servers.lock")
# Held by a process through its run of consecutive quiet tests: a server test of the other process
# waits at it, so quiet tests follow each other instead of alternating with other server tests.
QUIET_PHASE_LOCK = Path(f"/tmp/recovery-lab-tests-{os.getuid()}.quiet-phase.lock")
HEAVY = ("mariadb", "browser", "busy")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """The order (after pytest-django's): the `quiet` tests, then the other tests that take the
    servers' lock (a server, Chromium, a live server fuzzed, big uploads), then the light ones.
    `--dist worksteal` gives each pytest-xdist process a half of the list and lets an idle one take
    from the other's end: one process runs the quiet tests back to back (its quiet phase) while
    the other does light tests, and once that phase ends both take the rest of the heavy ones,
    side by side. Within each part, those that use the session's Celery worker together, so a
    process starts it as few times as it can."""

    def part(item) -> int:
        if item.get_closest_marker("quiet"):
            return 0
        return 1 if any(item.get_closest_marker(name) for name in HEAVY) else 2

    items.sort(key=lambda item: (part(item), "celery_worker_process" not in item.fixturenames))


_quiet_phase: dict = {}


def _end_quiet_phase() -> None:
    handle = _quiet_phase.pop("handle", None)
    if handle is not None:
        handle.close()  # closing the file releases its flock


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    """A process's quiet phase also ends when its next test is not quiet or it has none yet (a
    pytest-xdist process waiting for work): held until the process exits, it kept the other
    process's heavy tests waiting for nothing."""
    if nextitem is None or nextitem.get_closest_marker("quiet") is None:
        _end_quiet_phase()


@pytest.fixture(autouse=True)
def _servers_share_the_machine(request):
    """`make test` runs two pytest-xdist processes, so two tests that start a real mariadbd may run
    at once: they share the servers' lock. A test marked `quiet` (it asserts a rate, a time or a
    ratio of times: the gate, an insert rate held, the commits a 1-second sync loses) takes it
    alone, so what it measures is measured with no other server loading this 2-core machine's
    disk, as in a serial run. Tests that load the CPU without a server (Chromium, a web server fed
    slow clients: marked `browser` or `busy`) share it too, so they never run beside a quiet test
    either. A process keeps the quiet-phase lock from its first quiet test to its first test that
    is not quiet; a shared test passes through that lock first, so it waits for the whole phase.
    Blocking flocks, released when the test (and its teardown) ends or its process dies; nobody
    waits for the servers' lock while holding it."""
    quiet = request.node.get_closest_marker("quiet") is not None
    if not quiet:
        _end_quiet_phase()
    if not any(request.node.get_closest_marker(name) for name in HEAVY):
        yield
        return
    asked = time.time()
    if quiet and "handle" not in _quiet_phase:
        phase = QUIET_PHASE_LOCK.open("a")
        fcntl.flock(phase, fcntl.LOCK_EX)
        _quiet_phase["handle"] = phase
    elif not quiet:
        with QUIET_PHASE_LOCK.open("a") as phase:  # no quiet phase under way, or wait for its end
            fcntl.flock(phase, fcntl.LOCK_SH)
    mode = fcntl.LOCK_EX if quiet else fcntl.LOCK_SH
    with SERVERS_LOCK.open("a") as handle:
        fcntl.flock(handle, mode)
        held = time.time()
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
            _timeline(request, mode, asked, held)


def _timeline(request, mode: int, asked: float, held: float) -> None:
    """One line per test that took the servers' lock, in test-artifacts/timeline-WORKER.tsv: when
    it asked, waited and ended, so a slow suite's critical path can be read afterwards."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    folder = ROOT / "test-artifacts"
    folder.mkdir(exist_ok=True)
    kind = "quiet" if mode == fcntl.LOCK_EX else "shared"
    line = [f"{asked:.1f}", f"{held - asked:.1f}", f"{time.time() - held:.1f}", kind, request.node.nodeid]
    with (folder / f"timeline-{worker}.tsv").open("a") as out:
        out.write("\t".join(line) + "\n")


def pytest_configure(config):
    if "PYTEST_XDIST_WORKER" not in os.environ:  # the controller: this run's timeline starts empty
        for old in (ROOT / "test-artifacts").glob("timeline-*.tsv"):
            old.unlink()


@pytest.fixture
def user(db):
    return UserFactory(username="dba")


@pytest.fixture
def api(user):
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def local_host(db):
    return HostFactory(name="local")


@pytest.fixture
def broker():
    """The real Redis the tests' Celery app talks to; this session's queue is emptied before and
    after (other sessions' queues in the same database are left alone)."""
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    client.delete(settings.CELERY_TASK_DEFAULT_QUEUE, settings.CELERY_ALERTS_QUEUE)
    yield client
    client.delete(settings.CELERY_TASK_DEFAULT_QUEUE, settings.CELERY_ALERTS_QUEUE)


def queued_messages(broker, queue: str | None = None) -> int:
    return broker.llen(queue or settings.CELERY_TASK_DEFAULT_QUEUE)


def runner_processes() -> list[str]:
    """Command lines of mariadbd, postgres and sysbench processes working under the tests' runner
    directory (named in their command line, or there as their working folder: PostgreSQL's
    children retitle themselves "postgres: checkpointer" and so on, in their cluster's datadir)."""
    found = []
    roots = (str(settings.RUNNER_WORK_DIR), str(settings.RUNNER_DISK_WORK_DIR))
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            folder = os.readlink(proc / "cwd")
        except OSError:
            continue
        line = " ".join(a.decode(errors="replace") for a in argv if a)
        ours = any(root in line or folder.startswith(f"{root}/") for root in roots)
        if ours and any(name in line for name in ("mariadbd", "sysbench", "postgres")):
            found.append(line)
    return found


def start_celery_worker(
    database: str | None = None, broker: str | None = None, processes: int = 2
) -> subprocess.Popen:
    """A real Celery worker in its own process (and process group), on the test database and
    broker (or the ones at those URLs); its log goes to test-artifacts/worker.log. The session's
    shared worker is stopped first: a test that starts workers of its own (to kill them) is the
    only one taking its queue's tasks."""
    stop_session_worker()
    return _spawn_celery_worker(database, broker, processes)


def _spawn_celery_worker(
    database: str | None = None, broker: str | None = None, processes: int = 2
) -> subprocess.Popen:
    db = settings.DATABASES["default"]
    env = dict(os.environ)
    env["DATABASE_URL"] = database or f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
    if broker:
        env["CELERY_BROKER_URL"] = broker
    env["DJANGO_SETTINGS_MODULE"] = "tests.settings"
    (ROOT / "test-artifacts").mkdir(exist_ok=True)
    with (ROOT / "test-artifacts" / "worker.log").open("ab") as log:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "webapp",
                "worker",
                "-c",
                str(processes),
                "-l",
                "info",
                "--without-heartbeat",
                "--without-mingle",
                "--without-gossip",
                # the default queue and the alerts' (make start gives alerts a worker of their own)
                "-Q",
                f"{settings.CELERY_TASK_DEFAULT_QUEUE},{settings.CELERY_ALERTS_QUEUE}",
            ],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def stop_celery_worker(process: subprocess.Popen) -> None:
    """A warm shutdown of the whole worker, forced after a minute."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


@contextlib.contextmanager
def celery_broker(url: str):
    """This process's Celery app sends to the broker at `url` (and back to the tests' after)."""
    app = current_app._get_current_object()
    saved = app.conf.broker_write_url

    def reset_pools():
        app._pool = None
        app.amqp._producer_pool = None

    app.conf.broker_write_url = url
    reset_pools()
    try:
        yield
    finally:
        app.conf.broker_write_url = saved
        reset_pools()


# The session's shared worker: started by the first test that asks for one, kept for the next.
_SESSION_WORKER: dict[str, subprocess.Popen] = {}


def stop_session_worker() -> None:
    process = _SESSION_WORKER.pop("process", None)
    if process is not None:
        stop_celery_worker(process)


@pytest.fixture(scope="session")
def session_celery_worker(django_db_setup):
    """Stopped when the session ends, before its test database is dropped."""
    yield _SESSION_WORKER
    stop_session_worker()


@pytest.fixture(autouse=True)
def _no_shared_worker_unless_asked(request):
    """A test that did not ask for the session's worker gets none taking its queue's messages."""
    if "celery_worker_process" not in request.fixturenames:
        stop_session_worker()


@pytest.fixture
def celery_worker_process(session_celery_worker, transactional_db, broker):
    """A real Celery worker in its own process, on the test database and broker: one for the
    session (its start-up and warm shutdown are paid once, not per test), or a new one if the
    last has gone. The test's rows are flushed after it as for any transactional test, and no
    process of its runs is left for the next one (a worker whose runs do not end is stopped)."""
    process = session_celery_worker.get("process")
    if process is None or process.poll() is not None:
        process = session_celery_worker["process"] = _spawn_celery_worker()
    yield process
    try:
        wait_for(lambda: not runner_processes(), 60, "the test's runs to end")
    except AssertionError:
        stop_session_worker()  # its runners go with it; the next test gets a fresh worker


def wait_for(condition, timeout_s: float, what: str, interval_s: float = 0.5):
    """Poll a condition on real state (rows, processes) until true or the deadline passes."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(interval_s)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture
def page():
    """A page in Debian's Chromium (Playwright drives it; nothing is downloaded)."""
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1300, "height": 1000})
        yield context.new_page()
        browser.close()
        # ORM calls made while Playwright's loop runs get connections of that context (Django's
        # connections are asgiref-local); close them here, or the test database cannot be dropped.
        connections.close_all()


@pytest.fixture(scope="session", autouse=True)
def session_work_dir():
    """This session's runner directories (tests/settings.py names them) go when the session ends."""
    yield settings.RUNNER_WORK_DIR
    shutil.rmtree(settings.RUNNER_WORK_DIR, ignore_errors=True)
    shutil.rmtree(settings.RUNNER_DISK_WORK_DIR, ignore_errors=True)


@pytest.fixture
def sshd(tmp_path, db):
    """A real sshd on loopback that lets the dashboard's key in as root."""
    from experiments.services.ssh_keys import dashboard_public_key

    from .sshd import start_sshd

    server = start_sshd(tmp_path / "sshd", dashboard_public_key())
    yield server
    server.stop()


@pytest.fixture
def staff_api(db):
    client = APIClient()
    client.force_authenticate(UserFactory(username="ops", is_staff=True))
    return client


MANAGE = [
    str(Path(__file__).resolve().parent.parent / ".venv" / "bin" / "python"),
    str(Path(__file__).resolve().parent.parent / "manage.py"),
]


def database_url(name: str) -> str:
    base = settings.DATABASES["default"]
    return f"postgres://{base['USER']}@{base['HOST']}:{base['PORT']}/{name}"


def manage_env(database: str) -> dict:
    """The environment for a `manage.py` process of ours working on that database (the test
    session's settings otherwise)."""
    return {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "DATABASE_URL": database_url(database)}


@pytest.fixture
def fresh_database(transactional_db):
    """A second, empty PostgreSQL database (not migrated) beside the test database; dropped after."""
    from django.db import connection

    name = f"{connection.settings_dict['NAME']}_fresh"
    with psycopg.connect(
        database_url("postgres").replace("postgres://", "postgresql://"), autocommit=True
    ) as db:
        db.execute(f'DROP DATABASE IF EXISTS "{name}"')
        db.execute(f'CREATE DATABASE "{name}"')
    yield name
    with psycopg.connect(
        database_url("postgres").replace("postgres://", "postgresql://"), autocommit=True
    ) as db:
        db.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def webhook():
    """A real HTTP server on loopback that keeps what it is sent."""
    received = []

    class Hook(BaseHTTPRequestHandler):
        def do_POST(self):
            received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Hook)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/hook", received
    server.shutdown()
    server.server_close()


DEBIAN_BUILD = "mariadb-11.8"


@pytest.fixture
def debian_build(local_host):
    """MariaDB 11.8 from Debian 13's packages on the tests' local host, installed by the command
    an admin runs (`make setup` fetched and unpacked the packages once; this copies them to the
    host's builds folder and probes it). Yields the build's name and what the command said."""
    import io

    from django.core.management import call_command

    said = io.StringIO()
    call_command("installbuild", "local", DEBIAN_BUILD, "--debian", "trixie", stdout=said)
    yield DEBIAN_BUILD, said.getvalue()
    shutil.rmtree(settings.RUNNER_WORK_DIR / "builds", ignore_errors=True)


@pytest.fixture
def mysql_build(local_host):
    """Oracle MySQL 9.7 from Debian unstable's packages on the tests' local host, as `make setup`
    installs it on the machine's own (fetched and unpacked once; copied here and probed)."""
    import io

    from django.core.management import call_command

    said = io.StringIO()
    call_command("installbuild", "local", "mysql-9.7", "--debian", "sid", stdout=said)
    yield "mysql-9.7", said.getvalue()
    shutil.rmtree(settings.RUNNER_WORK_DIR / "builds", ignore_errors=True)


@pytest.fixture
def postgresql_17_build(local_host):
    """PostgreSQL 17 from Debian 13's packages on the tests' local host, as `make setup` installs
    it on the machine's own (the packages fetched and unpacked once; copied here and probed)."""
    import io

    from django.core.management import call_command

    said = io.StringIO()
    call_command("installbuild", "local", "postgresql-17", "--debian", "trixie", stdout=said)
    yield "postgresql-17", said.getvalue()
    shutil.rmtree(settings.RUNNER_WORK_DIR / "builds", ignore_errors=True)
