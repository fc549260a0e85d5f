"""The web server as `make start` runs it: nginx in front of gunicorn's synchronous workers. Slow
clients cost nginx a connection and never a worker; large bodies are taken only where uploads go.
Real nginx, real gunicorn, real sockets."""

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import requests
from django.db import connection

from experiments.services.tokens import new_token

from .conftest import ROOT, manage_env, wait_for
from .factories import UserFactory
from .test_faults import free_port

pytestmark = [pytest.mark.busy, pytest.mark.django_db(transaction=True)]


def _answers(url: str) -> bool:
    try:
        return requests.get(url, timeout=5).status_code == 200
    except requests.RequestException:  # not listening yet, or too busy starting to answer in time
        return False


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=60)


def _gunicorn(bind: str, workers: int, env: dict) -> subprocess.Popen:
    """gunicorn as make start runs it, in a process group of its own (_stop ends it)."""
    gunicorn = [str(ROOT / ".venv" / "bin" / "gunicorn"), "-c", "webapp/gunicorn.conf.py"]
    return subprocess.Popen(
        [*gunicorn, "-b", bind, "-w", str(workers)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


@pytest.fixture
def run_dir():
    """A folder outside pytest's own (those are its user's alone); webapp.proxy opens it to
    nginx's workers as `make start`'s."""
    folder = Path(tempfile.mkdtemp(prefix="recovery-lab-proxy-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def served(run_dir):
    """gunicorn (two sync workers, as make start) on a unix socket in a folder of its own, nginx
    on a free port."""
    socket_path = run_dir / "web" / "web.sock"
    env = {
        **manage_env(connection.settings_dict["NAME"]),
        "ALLOWED_HOSTS": "127.0.0.1",
        "BEHIND_PROXY": "true",
    }
    port = free_port()
    proxy = [sys.executable, "-m", "webapp.proxy", "--listen", f"127.0.0.1:{port}"]
    proxy += ["--upstream", f"unix:{socket_path}", "--run-dir", str(run_dir)]
    with (run_dir / "nginx.conf").open("w") as conf:  # first: it makes the socket's folder
        subprocess.run(proxy, cwd=ROOT, env=env, check=True, stdout=conf)
    web = _gunicorn(f"unix:{socket_path}", 2, env)
    proxy = subprocess.Popen(
        ["/usr/sbin/nginx", "-e", "stderr", "-c", str(run_dir / "nginx.conf")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _answers(f"{base}/login/"), 60, "gunicorn behind nginx to answer")
        yield base
    finally:
        _stop(proxy)
        _stop(web)


SLOW_REQUESTS = (
    # headers begun and never finished: a sync worker waits in its header parser
    b"POST /login/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n",
    # headers whole (a CSRF cookie of the right shape, so Django reads the form), a body never sent
    b"POST /login/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n"
    b"Cookie: csrftoken=" + b"a" * 32 + b"\r\nContent-Length: 100000\r\n\r\nusername=a",
)


def _slow_client(port: int, request: bytes) -> socket.socket:
    client = socket.create_connection(("127.0.0.1", port))
    client.sendall(request)
    return client


def test_four_slow_clients_leave_the_login_page_answering(served):
    port = int(served.rsplit(":", 1)[1])
    with contextlib.ExitStack() as stack:
        for n in range(4):  # twice the workers there are; without nginx, GET /login/ waits forever
            stack.enter_context(_slow_client(port, SLOW_REQUESTS[n % 2]))
        for _ in range(3):
            page = requests.get(f"{served}/login/", timeout=10)  # waits at most that, then fails
            assert page.status_code == 200 and 'name="username"' in page.text


def test_a_large_body_is_taken_where_uploads_go_and_refused_elsewhere(served):
    body = b"x" * (3 * 2**20)
    elsewhere = requests.post(f"{served}/login/", data=body, timeout=30)
    assert elsewhere.status_code == 413
    # an import of a 3 MiB file reaches Django whole, which reads it and says what it is not
    token = new_token(UserFactory(username="uploader"))
    upload = requests.post(
        f"{served}/api/imports/",
        files={"error_log": ("error.log", body)},
        headers={"Authorization": f"Token {token}"},
        timeout=60,
    )
    assert upload.status_code == 400, upload.text
    assert upload.headers["content-type"] == "application/json" and upload.json()


def test_static_files_go_out_compressed_as_make_start_serves_them(tmp_path):
    """With the production settings, collectstatic's compressed copies are what a browser gets:
    plotly.js is 1.1 MB as it is, a third of that as gzip, less as brotli."""
    env = {
        **manage_env(connection.settings_dict["NAME"]),
        "DJANGO_SETTINGS_MODULE": "webapp.settings",
        "STATIC_ROOT": str(tmp_path / "static"),
        "ALLOWED_HOSTS": "127.0.0.1",
    }
    # the site's own files only: compressing the others' (the admin's, plotly's strict build) is 30 s
    ignored = ("admin", "rest_framework", "drf_spectacular_sidecar", "plotly-strict", "plotly-cartesian")
    manage = [sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"]
    manage += [f"--ignore={name}" for name in ignored]
    subprocess.run(manage, cwd=ROOT, env=env, check=True)
    port = free_port()
    web = _gunicorn(f"127.0.0.1:{port}", 1, env)
    url = f"http://127.0.0.1:{port}/static/plotly-basic/plotly-basic.min.js"
    try:
        wait_for(lambda: _answers(url), 60, "gunicorn to serve static files")
        plain = (ROOT / "static" / "plotly-basic" / "plotly-basic.min.js").read_bytes()
        for encoding in ("gzip", "br"):
            answer = requests.get(url, headers={"Accept-Encoding": encoding}, timeout=30)
            assert answer.headers.get("Content-Encoding") == encoding
            assert int(answer.headers["Content-Length"]) < len(plain) / 2
            assert answer.content == plain  # requests decodes both
    finally:
        _stop(web)
