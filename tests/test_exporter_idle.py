"""Issue 64, item 4: the exporter's TLS handshake ran in its accept loop with no timeout, so one
client that connected and sent nothing held every /metrics. Each connection now shakes hands in
its own thread, within a timeout, and a bounded number are served at once. A real exporter with
TLS, real idle TCP connections, real HTTPS scrapes."""

import socket
import ssl
import time
import urllib.request

import pytest
from prometheus_client import CollectorRegistry, Gauge

from recovery_lab_cli.exporter_web import WebConfig, serve_metrics

from .sshd import free_port
from .tls import make_certificates

TIMEOUT_S = 2.0  # the tests' handshake timeout; the exporter's own is CONNECTION_TIMEOUT_SECONDS
MOST = 4  # the tests' bound on connections at once


@pytest.fixture(scope="module")
def certificates(tmp_path_factory):
    return make_certificates(tmp_path_factory.mktemp("tls"))


@pytest.fixture
def exporter(certificates):
    registry = CollectorRegistry()
    Gauge("recovery_lab_up", "1 when the server answered", registry=registry).set(1)
    port = free_port()
    config = WebConfig(cert_file=str(certificates["cert"]), key_file=str(certificates["key"]))
    server = serve_metrics(registry, "127.0.0.1", port, config, timeout_s=TIMEOUT_S, max_connections=MOST)
    yield port
    server.shutdown()
    server.server_close()


def scrape(port: int, certificates, timeout_s: float) -> str:
    context = ssl.create_default_context(cafile=str(certificates["ca"]))
    with urllib.request.urlopen(
        f"https://127.0.0.1:{port}/metrics", context=context, timeout=timeout_s
    ) as answer:
        return answer.read().decode()


def idle_connection(port: int) -> socket.socket:
    """A client that connects and says nothing, not even a TLS hello."""
    return socket.create_connection(("127.0.0.1", port), timeout=30)


def test_an_idle_connection_does_not_hold_a_scrape(exporter, certificates):
    idle = idle_connection(exporter)
    try:
        # well within the handshake timeout: the scrape does not wait for the idle one
        assert "recovery_lab_up 1.0" in scrape(exporter, certificates, timeout_s=TIMEOUT_S / 2)
    finally:
        idle.close()


def test_an_idle_connection_is_closed_after_the_handshake_timeout(exporter):
    idle = idle_connection(exporter)
    started = time.monotonic()
    try:
        assert idle.recv(1) == b""  # the exporter closed it (a timeout here raises instead)
    finally:
        idle.close()
    assert TIMEOUT_S * 0.9 <= time.monotonic() - started < TIMEOUT_S * 3


def test_more_idle_connections_than_the_bound_delay_a_scrape_by_one_timeout_at_most(exporter, certificates):
    idle = [idle_connection(exporter) for _ in range(MOST + 1)]
    try:
        started = time.monotonic()
        # each slot frees when its idle client's handshake times out; the scrape waits for one
        assert "recovery_lab_up 1.0" in scrape(exporter, certificates, timeout_s=TIMEOUT_S * 4)
        assert time.monotonic() - started < TIMEOUT_S * 3
    finally:
        for connection in idle:
            connection.close()
