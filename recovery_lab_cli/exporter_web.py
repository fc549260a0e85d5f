"""How the exporter serves /metrics: plain HTTP on loopback by default, or with TLS and basic
auth from a web configuration file in Prometheus' own convention (the exporter-toolkit's
--web.config.file), so Prometheus' `scrape_configs` `basic_auth` and `tls_config` reach it as they
reach any exporter:

    tls_server_config:
      cert_file: /etc/recovery-lab/exporter.crt
      key_file: /etc/recovery-lab/exporter.key
    basic_auth_users:
      prometheus: $2y$10$...        # a bcrypt hash (htpasswd -nBC 10 "" | tr -d ':\\n')

Each connection is served in a thread of its own, its TLS handshake there too, within
CONNECTION_TIMEOUT_SECONDS, and at most MAX_CONNECTIONS at once: a client that connects and says
nothing holds one slot for one timeout, not the scrapes.

No Django."""

import base64
import hashlib
import hmac
import ssl
import threading
from dataclasses import dataclass, field
from pathlib import Path
from wsgiref.simple_server import WSGIRequestHandler, make_server

import bcrypt
from prometheus_client import make_wsgi_app
from prometheus_client.exposition import ThreadingWSGIServer

from recovery_lab_cli.yaml_input import YamlRefused, load_plain_yaml

KNOWN = {"tls_server_config": {"cert_file", "key_file"}, "basic_auth_users": None}
# Prometheus' scrape_timeout is 10 s by default: a scrape queued behind idle clients still answers.
CONNECTION_TIMEOUT_SECONDS = 5.0
# One or two Prometheus servers scrape an exporter: 16 is room for them and for a few strays.
MAX_CONNECTIONS = 16


class WebConfigError(ValueError):
    """A web configuration that cannot be used, said in a sentence."""


@dataclass
class WebConfig:
    cert_file: str = ""
    key_file: str = ""
    users: dict[str, bytes] = field(default_factory=dict)  # name: bcrypt hash


def load_web_config(path: str) -> WebConfig:
    try:
        data = load_plain_yaml(Path(path).read_text(encoding="utf-8"), limit_bytes=64 * 1024)
    except OSError as exc:
        raise WebConfigError(f"cannot read the web configuration {path}: {exc.strerror}") from None
    except (YamlRefused, UnicodeDecodeError) as exc:
        raise WebConfigError(f"the web configuration {path} is not taken: {exc}") from None
    if not isinstance(data, dict) or set(data) - set(KNOWN):
        raise WebConfigError(f"the web configuration {path} takes {' and '.join(KNOWN)} only")
    config = WebConfig()
    tls = data.get("tls_server_config") or {}
    if not isinstance(tls, dict) or set(tls) - KNOWN["tls_server_config"]:
        raise WebConfigError("tls_server_config takes cert_file and key_file")
    if bool(tls.get("cert_file")) != bool(tls.get("key_file")):
        raise WebConfigError("tls_server_config needs both cert_file and key_file")
    config.cert_file, config.key_file = str(tls.get("cert_file") or ""), str(tls.get("key_file") or "")
    users = data.get("basic_auth_users") or {}
    if not isinstance(users, dict):
        raise WebConfigError("basic_auth_users maps user names to bcrypt hashes")
    for name, hashed in users.items():
        if not isinstance(hashed, str) or not hashed.startswith(("$2a$", "$2b$", "$2y$")):
            raise WebConfigError(
                f"basic_auth_users: {str(name)[:40]}'s password must be a bcrypt hash ($2y$...)"
            )
        config.users[str(name)] = hashed.encode()
    return config


class BasicAuth:
    """WSGI middleware: 401 unless the request carries one of the users' passwords. A password
    once checked is remembered by its salted digest, so bcrypt's cost is paid once, not per scrape."""

    def __init__(self, app, users: dict[str, bytes]):
        self.app, self.users = app, users
        self.salt = hashlib.sha256(repr(sorted(users.items())).encode()).digest()
        self.known: set[bytes] = set()
        self.lock = threading.Lock()

    def _allowed(self, header: str) -> bool:
        scheme, _, encoded = header.partition(" ")
        if scheme.lower() != "basic":
            return False
        try:
            name, _, password = base64.b64decode(encoded, validate=True).decode().partition(":")
        except (ValueError, UnicodeDecodeError):
            return False
        hashed = self.users.get(name)
        if hashed is None:
            return False
        digest = hmac.new(self.salt, f"{name}\0{password}".encode(), hashlib.sha256).digest()
        with self.lock:
            if digest in self.known:
                return True
        if bcrypt.checkpw(password.encode(), hashed.replace(b"$2y$", b"$2b$", 1)):
            with self.lock:
                self.known.add(digest)
            return True
        return False

    def __call__(self, environ, start_response):
        if self._allowed(environ.get("HTTP_AUTHORIZATION", "")):
            return self.app(environ, start_response)
        start_response(
            "401 Unauthorized",
            [("WWW-Authenticate", 'Basic realm="recovery-lab"'), ("Content-Type", "text/plain")],
        )
        return [b"Unauthorized\n"]


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the standard library's name
        """Scrapes are not logged."""


class _BoundedServer(ThreadingWSGIServer):
    """A thread per connection, at most `slots` at once, each read within `timeout_s`; with `tls`,
    the handshake runs in the connection's thread (wrapping the listening socket had run it in
    the accept loop, with no timeout: one silent client stopped every scrape)."""

    tls: ssl.SSLContext | None = None
    timeout_s = CONNECTION_TIMEOUT_SECONDS
    slots: threading.BoundedSemaphore  # set by serve_metrics

    def process_request(self, request, client_address):
        # Beyond the bound a connection waits one timeout, by which time the oldest has
        # shaken hands or been closed; then it is closed unserved.
        if not self.slots.acquire(timeout=self.timeout_s):
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.slots.release()
            self.shutdown_request(request)
            raise

    def process_request_thread(self, request, client_address):
        try:
            request.settimeout(self.timeout_s)  # the handshake's deadline, then each read's
            if self.tls is not None:
                request = self.tls.wrap_socket(request, server_side=True)
            self.finish_request(request, client_address)
        except OSError:  # a client that left, stalled or spoke no TLS: nothing to report
            pass
        except Exception:
            self.handle_error(request, client_address)
        finally:
            self.shutdown_request(request)
            self.slots.release()


def _tls_context(config: WebConfig) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(config.cert_file, config.key_file)
    except (OSError, ssl.SSLError) as exc:
        raise WebConfigError(f"the exporter's certificate or key cannot be used: {exc}") from None
    return context


def serve_metrics(
    registry,
    host: str,
    port: int,
    config: WebConfig,
    timeout_s: float = CONNECTION_TIMEOUT_SECONDS,
    max_connections: int = MAX_CONNECTIONS,
):
    """The metrics served in a thread of their own; returns the server (shutdown() ends it)."""
    app = make_wsgi_app(registry)
    if config.users:
        app = BasicAuth(app, config.users)
    tls = _tls_context(config) if config.cert_file else None
    httpd = make_server(host, port, app, _BoundedServer, handler_class=_QuietHandler)
    httpd.tls, httpd.timeout_s = tls, timeout_s
    httpd.slots = threading.BoundedSemaphore(max_connections)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    return httpd
