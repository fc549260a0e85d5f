"""The login lockout as the product is served: real nginx in front of real gunicorn, as `make start`
runs them (a unix socket) and as compose does (TCP between two containers). The address that
counts is the one nginx saw; a client's own X-Forwarded-For changes nothing. Django's test client
cannot show this: it sets REMOTE_ADDR itself."""

import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import pytest
import requests
import yaml
from axes.models import AccessAttempt
from django.conf import settings
from django.db import connection
from requests.adapters import HTTPAdapter

from .conftest import ROOT, manage_env, wait_for
from .factories import UserFactory
from .test_faults import free_port
from .test_web_server import _answers, _gunicorn, _stop

pytestmark = [pytest.mark.busy, pytest.mark.django_db(transaction=True)]

PASSWORD = "correct horse battery"
# Another client on this machine: loopback is all of 127.0.0.0/8, so a socket bound to this
# address reaches nginx from an address of its own.
OTHER_CLIENT = "127.0.0.2"


class _FromAddress(HTTPAdapter):
    """Connections from one local address (the client nginx sees)."""

    def __init__(self, address: str):
        self.address = address
        super().__init__()

    def init_poolmanager(self, *args, **kwargs):
        super().init_poolmanager(*args, source_address=(self.address, 0), **kwargs)


def _client(address: str = "127.0.0.1") -> requests.Session:
    session = requests.Session()
    session.mount("http://", _FromAddress(address))
    return session


def log_in(base: str, password: str, client: requests.Session | None = None, **headers) -> int:
    """The login form as a browser posts it (its CSRF token first); the answer's status."""
    client = client or _client()
    form = client.get(f"{base}/login/", headers=headers, timeout=10)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text).group(1)
    body = {"username": "alice", "password": password, "csrfmiddlewaretoken": token}
    answer = client.post(f"{base}/login/", data=body, headers=headers, allow_redirects=False, timeout=10)
    return answer.status_code


@pytest.fixture
def run_dir():
    """A folder outside pytest's own (those are its user's alone: nginx's workers could not enter)."""
    folder = Path(tempfile.mkdtemp(prefix="recovery-lab-lockout-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _web_env() -> dict:
    return {**manage_env(connection.settings_dict["NAME"]), "ALLOWED_HOSTS": "127.0.0.1"}


def _nginx(run_dir, upstream: str) -> tuple[subprocess.Popen, str]:
    """nginx configured by webapp/proxy.py, on a free port; its process and base URL."""
    port = free_port()
    proxy = [sys.executable, "-m", "webapp.proxy", "--listen", f"127.0.0.1:{port}"]
    proxy += ["--upstream", upstream, "--run-dir", str(run_dir)]
    with (run_dir / "nginx.conf").open("w") as conf:
        subprocess.run(proxy, cwd=ROOT, env=_web_env(), check=True, stdout=conf)
    nginx = subprocess.Popen(
        ["/usr/sbin/nginx", "-e", "stderr", "-c", str(run_dir / "nginx.conf")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    return nginx, f"http://127.0.0.1:{port}"


@pytest.fixture(params=["make start", "compose"])
def proxied(request, run_dir):
    """nginx in front of gunicorn with BEHIND_PROXY=true: on a unix socket in a folder of its own
    (`make start`), or on TCP (compose's web service, whose peer is always the proxy)."""
    env = {**_web_env(), "BEHIND_PROXY": "true"}
    if request.param == "make start":
        upstream = f"unix:{run_dir / 'web' / 'web.sock'}"
        bind = upstream
    else:
        bind = upstream = f"127.0.0.1:{free_port()}"
    nginx, base = _nginx(run_dir, upstream)  # first: it makes the socket's folder
    web = _gunicorn(bind, 2, env)
    try:
        wait_for(lambda: _answers(f"{base}/login/"), 60, "gunicorn behind nginx to answer")
        yield base
    finally:
        _stop(nginx)
        _stop(web)


@pytest.fixture
def alice():
    return UserFactory(username="alice", password=PASSWORD)


def _guess_until_locked(base: str, client: requests.Session | None = None, **headers) -> None:
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert log_in(base, "guess", client, **headers) == 200  # the form again, with its error
    assert log_in(base, "guess", client, **headers) == 429


def test_wrong_passwords_through_nginx_lock_the_user_out_even_with_the_right_one(proxied, alice):
    _guess_until_locked(proxied)
    assert log_in(proxied, PASSWORD) == 429


def test_a_forwarded_for_header_sent_through_nginx_does_not_escape_the_lockout(proxied, alice):
    for n in range(settings.AXES_FAILURE_LIMIT):
        log_in(proxied, "guess", **{"X-Forwarded-For": f"203.0.113.{n}"})
    assert log_in(proxied, PASSWORD, **{"X-Forwarded-For": "198.51.100.7"}) == 429
    assert log_in(proxied, PASSWORD, **{"X-Forwarded-For": "198.51.100.7, 127.0.0.1"}) == 429
    # counted against the address nginx saw, never the header's
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"127.0.0.1"}


def test_a_client_from_another_address_is_not_locked_out_by_the_first(proxied, alice):
    _guess_until_locked(proxied)
    assert log_in(proxied, PASSWORD, _client(OTHER_CLIENT)) == 302


def test_without_a_proxy_the_peer_address_counts_and_its_header_does_not(alice):
    env = _web_env()
    env.pop("BEHIND_PROXY", None)
    bind = f"127.0.0.1:{free_port()}"
    web = _gunicorn(bind, 1, env)
    base = f"http://{bind}"
    try:
        wait_for(lambda: _answers(f"{base}/login/"), 60, "gunicorn to answer")
        for n in range(settings.AXES_FAILURE_LIMIT):
            log_in(base, "guess", **{"X-Forwarded-For": f"203.0.113.{n}"})
        assert log_in(base, PASSWORD, **{"X-Forwarded-For": "198.51.100.7"}) == 429
        assert log_in(base, PASSWORD, _client(OTHER_CLIENT), **{"X-Forwarded-For": "127.0.0.1"}) == 302
    finally:
        _stop(web)


def test_compose_serves_the_web_behind_the_proxy_it_trusts_with_ipware_installed():
    """What the `compose` case above stands for: the web service trusts one proxy, publishes no
    port, and the proxy is webapp/proxy.py's nginx in front of it; the image installs
    django-ipware (`uv sync --frozen --no-dev` from uv.lock), without which axes reads the
    proxy's own address for every client."""
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    web, proxy = services["web"], services["proxy"]
    assert "BEHIND_PROXY=true gunicorn" in web["command"] and "-b 0.0.0.0:8001" in web["command"]
    assert "ports" not in web
    assert "python -m webapp.proxy" in proxy["command"] and "--upstream web:8001" in proxy["command"]
    installed = subprocess.run(
        [shutil.which("uv") or "uv", "export", "--frozen", "--no-dev", "--no-hashes", "--no-emit-project"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert re.search(r"^django-ipware==", installed, re.MULTILINE), installed
    lock = tomllib.loads((ROOT / "uv.lock").read_text())
    assert any(package["name"] == "django-ipware" for package in lock["package"])
