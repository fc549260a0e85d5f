"""A production server's password and connection, handled as a DBA would expect: every read ends
within its timeout however the network stalls, the exporter keeps one connection and one read in
flight, TLS is what the URL asks for (checked against servers of the test's own with TLS on and
off), nothing of the password reaches a message or the process list, and /metrics can require
basic auth over TLS."""

import base64
import contextlib
import shutil
import socket
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.request
from argparse import Namespace
from pathlib import Path
from urllib.parse import quote

import bcrypt
import pytest
from prometheus_client import CollectorRegistry, generate_latest

from recovery_lab_cli.exporter_web import load_web_config, serve_metrics
from recovery_lab_cli.live import LiveReader, read_server
from recovery_lab_cli.prediction import Prediction
from recovery_lab_cli.production import (
    EXIT_NO_ANSWER,
    EXIT_OVER_RTO,
    EXIT_WITHIN,
    LiveCollector,
    predict_text,
)
from recovery_lab_cli.server_url import LiveError, parse_server_url

from .live_mariadb import LiveMariaDB
from .postgres import SYSTEM_USER, create_cluster, remove_cluster
from .sshd import free_port
from .test_gate import CLIENT
from .tls import make_certificates


class StallingRelay:
    """A TCP relay in front of a PostgreSQL server that, once armed (or once the server has said
    ReadyForQuery, with `after_login`), forwards nothing more from the server: a load balancer or
    a firewall that holds a connection open and drops what it carries."""

    def __init__(self, upstream_port: int, after_login: bool = False):
        self.upstream_port, self.after_login = upstream_port, after_login
        self.stalled = threading.Event()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.open_upstreams = 0
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            with self.lock:
                self.open_upstreams += 1
            threading.Thread(target=self._pipe, args=(client, upstream, False), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client, True), daemon=True).start()

    def _pipe(self, source: socket.socket, target: socket.socket, from_server: bool) -> None:
        pending = b""
        try:
            while chunk := source.recv(65536):
                if from_server and self.stalled.is_set():
                    continue  # held, never delivered
                if from_server and self.after_login:
                    pending += chunk
                    while len(pending) >= 5:  # type byte, then a length that counts itself
                        size = 1 + int.from_bytes(pending[1:5], "big")
                        if len(pending) < size:
                            break
                        message, pending = pending[:size], pending[size:]
                        target.sendall(message)
                        if message[:1] == b"Z":  # ReadyForQuery: logged in
                            self.stalled.set()
                            break
                    continue
                target.sendall(chunk)
        except OSError:
            pass
        finally:
            for end in (source, target):
                with contextlib.suppress(OSError):
                    end.shutdown(socket.SHUT_RDWR)
                end.close()
            if from_server:
                with self.lock:
                    self.open_upstreams -= 1

    def close(self) -> None:
        self.listener.close()


@pytest.fixture
def cluster():
    made = create_cluster()
    yield made
    remove_cluster(made)


def _collector(url: str, timeout_s: float) -> LiveCollector:
    args = Namespace(
        engine="postgresql" if url.startswith("postgresql") else "innodb",
        lab_host="local",
        read_timeout=timeout_s,
        rocksdb_wal_dir="",
        include_imported=False,
        rto=None,
        fit_refresh=600,
    )
    return LiveCollector(None, parse_server_url(url), args)  # no dashboard: the fit is not asked for


def _scrape(collector: LiveCollector) -> str:
    registry = CollectorRegistry()
    registry.register(collector)
    return generate_latest(registry).decode()


def test_a_read_through_a_relay_that_stalls_after_login_ends_at_its_timeout(cluster):
    relay = StallingRelay(cluster.port, after_login=True)
    try:
        started = time.monotonic()
        url = parse_server_url(f"postgresql://{SYSTEM_USER}@127.0.0.1:{relay.port}/postgres?sslmode=disable")
        with pytest.raises(LiveError, match=rf"127.0.0.1:{relay.port}: no answer within 2 s"):
            read_server(url, "postgresql", 2)
        assert time.monotonic() - started < 4
        assert relay.stalled.is_set()  # it did log in: the stall was after authentication
    finally:
        relay.close()


def test_the_exporter_keeps_one_read_in_flight_and_leaves_nothing_behind_a_stalled_relay(cluster):
    relay = StallingRelay(cluster.port)
    collector = _collector(f"postgresql://{SYSTEM_USER}@127.0.0.1:{relay.port}/postgres?sslmode=disable", 1)
    try:
        first = _scrape(collector)
        assert "recovery_lab_up{" in first and 'recovery_lab_up{engine="postgresql"' in first
        assert "recovery_lab_redo_to_replay_bytes{" in first
        threads = threading.active_count()

        relay.stalled.set()
        in_flight = threading.Thread(target=_scrape, args=(collector,))
        in_flight.start()
        while not collector.reading.locked():
            time.sleep(0.001)
        during = _scrape(collector)  # answered at once, with the last values and their age
        assert collector.reading.locked(), "the second scrape waited for the first one's read"
        assert "recovery_lab_redo_to_replay_bytes{" in during and "recovery_lab_read_age_seconds{" in during
        in_flight.join(timeout=5)
        assert not in_flight.is_alive()
        assert "recovery_lab_up{" in _scrape(collector) and collector.up is False

        for _ in range(2):  # each a new login through the relay, each stalled and ended
            _scrape(collector)
        assert threading.active_count() <= threads + 1, [t.name for t in threading.enumerate()]
        assert relay.open_upstreams <= 1
    finally:
        collector.reader.close()
        relay.close()


def test_the_exporter_logs_in_once_for_many_scrapes(cluster):
    collector = _collector(f"postgresql://{SYSTEM_USER}@127.0.0.1:{cluster.port}/postgres?sslmode=disable", 5)
    try:
        for _ in range(40):
            assert 'recovery_lab_up{engine="postgresql",lab_host="local"' in _scrape(collector)
            assert collector.up
        with cluster.connect("postgres") as admin:
            sessions = admin.execute(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
            ).fetchone()[0]
        assert sessions == 1
    finally:
        collector.reader.close()


def _tls_cluster(tmp_path: Path):
    files = make_certificates(tmp_path / "tls")

    def prepare(root: Path) -> None:
        for name in ("cert", "key"):
            target = root / f"server.{name}"
            shutil.copy(files[name], target)
            shutil.chown(target, SYSTEM_USER)
            target.chmod(0o600)

    options = "-c ssl=on -c ssl_cert_file=../server.cert -c ssl_key_file=../server.key"
    return create_cluster(options, prepare), files


def test_postgresql_tls_is_what_the_address_asks_for(cluster, tmp_path):
    secure, files = _tls_cluster(tmp_path)
    try:
        base = f"postgresql://{SYSTEM_USER}@127.0.0.1"
        # TLS off at the server: sslmode=require refuses to read it in cleartext
        with pytest.raises(LiveError, match="server does not support SSL, but SSL was required"):
            read_server(parse_server_url(f"{base}:{cluster.port}/postgres?sslmode=require"), "postgresql", 5)
        # TLS on, the certificate checked against the CA and the host name
        good = f"{base}:{secure.port}/postgres?sslmode=verify-full&sslrootcert={files['ca']}"
        assert read_server(parse_server_url(good), "postgresql", 5).version.startswith("PostgreSQL")
        with secure.connect("postgres") as admin:  # and the session is encrypted
            assert admin.execute("SELECT bool_or(ssl) FROM pg_stat_ssl").fetchone()[0] is not None
        other = make_certificates(tmp_path / "other", "other")
        wrong = f"{base}:{secure.port}/postgres?sslmode=verify-full&sslrootcert={other['ca']}"
        with pytest.raises(LiveError, match="certificate verify failed"):
            read_server(parse_server_url(wrong), "postgresql", 5)
    finally:
        remove_cluster(secure)


@pytest.mark.mariadb
def test_mariadb_tls_is_what_the_address_asks_for(tmp_path):
    files = make_certificates(tmp_path / "tls")
    plain = LiveMariaDB()
    secure = LiveMariaDB(
        extra_options=(f"--ssl-cert={files['cert']}", f"--ssl-key={files['key']}", f"--ssl-ca={files['ca']}")
    )
    try:
        plain.start()
        secure.start()
        with pytest.raises(LiveError, match="cannot connect to 127.0.0.1"):
            read_server(parse_server_url(plain.url() + "?ssl-mode=REQUIRED"), "innodb", 5)
        assert read_server(parse_server_url(plain.url() + "?ssl-mode=DISABLED"), "innodb", 5).version
        verified = f"{secure.url()}?ssl-mode=VERIFY_IDENTITY&ssl-ca={quote(str(files['ca']))}"
        reader = LiveReader(parse_server_url(verified), "innodb", 5)
        try:
            assert reader.read().version
            with reader.connection.cursor() as cursor:  # the session the reads go over is encrypted
                cursor.execute("SHOW SESSION STATUS LIKE 'Ssl_cipher'")
                assert cursor.fetchone()[1]
        finally:
            reader.close()
        other = make_certificates(tmp_path / "other", "other")
        wrong = f"{secure.url()}?ssl-mode=VERIFY_CA&ssl-ca={quote(str(other['ca']))}"
        with pytest.raises(LiveError, match="certificate verify failed"):
            read_server(parse_server_url(wrong), "innodb", 5)
    finally:
        plain.stop()
        secure.stop()


def test_a_url_parameter_it_does_not_know_is_refused():
    with pytest.raises(
        LiveError, match=r"does not know: 'ssl' \(a mysql:// address takes ssl-mode, ssl-ca\)"
    ):
        parse_server_url("mysql://u:p@h:3306?ssl=true")
    with pytest.raises(
        LiveError, match=r"sslmode takes disable, allow, prefer, require, verify-ca, verify-full"
    ):
        parse_server_url("postgresql://u:p@h/db?sslmode=required")
    assert parse_server_url("mariadb://u:p@h?ssl_mode=verify_identity&ssl_ca=/ca.pem").tls == {
        "ssl-mode": "VERIFY_IDENTITY",
        "ssl-ca": "/ca.pem",
    }


@pytest.mark.parametrize("password", ["Pr0d/pass", "Pr0d#pass", "Pr0d?pass", "Pr0d@pass:x"])
def test_no_part_of_a_password_reaches_a_message(password):
    for address in (f"mysql://monitor:{password}@db1:3306", f"postgresql://monitor:{password}@db1/app"):
        try:
            parse_server_url(address)
        except LiveError as refused:
            assert "Pr0d" not in str(refused) and "pass" not in str(refused).replace("password", "")
            assert "percent-encoded" in str(refused)


def test_secrets_are_refused_on_the_command_line_and_help_shows_none():
    for args, said in (
        (["--token", "abc", "wait", "1"], "--token is not taken: every user of this machine can read"),
        (
            ["predict", "--lab-host", "x", "--server", "mysql://u:p@h"],
            "Give it in RECOVERY_LAB_SERVER or --server-file",
        ),
    ):
        done = subprocess.run([str(CLIENT), *args], capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and said in done.stderr
    for args in ([], ["predict"], ["exporter"]):
        shown = subprocess.run(
            [str(CLIENT), *args, "--help"], capture_output=True, text=True, timeout=60
        ).stdout
        assert "PASSWORD" not in shown and "--token " not in shown and "--server " not in shown


def test_predict_reads_the_server_s_address_and_token_from_files(tmp_path, live_server, db):
    """The files keep the secrets out of ps; a wrong token is the dashboard's refusal, after the
    server (the tests' own PostgreSQL, with a password in its address) was read from the file."""
    address = "postgresql://postgres:Pr0d%2Fpass@127.0.0.1:5432/postgres?sslmode=disable"
    (tmp_path / "server").write_text(address + "\n")
    (tmp_path / "server").chmod(0o600)
    (tmp_path / "token").write_text("not-a-token\n")  # readable by others: said
    done = subprocess.run(
        [str(CLIENT), "--token-file", str(tmp_path / "token"), "predict", "--lab-host", "local",
         "--server-file", str(tmp_path / "server")],
        capture_output=True, text=True, timeout=120,
        env={"RECOVERY_LAB_URL": live_server.url, "PATH": "/usr/bin:/bin", "RECOVERY_LAB_RETRIES": "0"},
    )  # fmt: skip
    assert done.returncode == EXIT_NO_ANSWER
    assert "token" in done.stderr.lower() and "Pr0d" not in done.stderr + done.stdout
    assert f"--token-file {tmp_path / 'token'} is readable by other users" in done.stderr
    assert "--server-file" not in done.stderr


def test_the_exporter_s_metrics_can_require_basic_auth_over_tls(tmp_path):
    files = make_certificates(tmp_path / "tls")
    hashed = bcrypt.hashpw(b"scrape-me", bcrypt.gensalt(rounds=4)).decode().replace("$2b$", "$2y$", 1)
    (tmp_path / "web.yml").write_text(
        f"tls_server_config:\n  cert_file: {files['cert']}\n  key_file: {files['key']}\n"
        f"basic_auth_users:\n  prometheus: '{hashed}'\n"
    )
    config = load_web_config(str(tmp_path / "web.yml"))
    port = free_port()
    server = serve_metrics(CollectorRegistry(), "127.0.0.1", port, config)
    context = ssl.create_default_context(cafile=str(files["ca"]))
    try:
        url = f"https://127.0.0.1:{port}/metrics"
        with pytest.raises(urllib.error.HTTPError, match="401"):
            urllib.request.urlopen(url, context=context, timeout=5)
        wrong = urllib.request.Request(
            url, headers={"Authorization": "Basic " + base64.b64encode(b"prometheus:no").decode()}
        )
        with pytest.raises(urllib.error.HTTPError, match="401"):
            urllib.request.urlopen(wrong, context=context, timeout=5)
        right = urllib.request.Request(
            url, headers={"Authorization": "Basic " + base64.b64encode(b"prometheus:scrape-me").decode()}
        )
        with urllib.request.urlopen(right, context=context, timeout=5) as answer:
            assert answer.status == 200
        with pytest.raises(OSError):  # cleartext is not served
            urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5)
    finally:
        server.shutdown()
        server.server_close()


def test_a_crash_now_over_the_rto_exits_2_and_the_worst_case_unknown_is_said_so():
    from recovery_lab_cli.live import ServerState

    state = ServerState("db1:3306", "innodb", "10.11.19-MariaDB", 33 << 20, None, "none", 1 << 30)
    answer = {
        "host": "local", "based_on_runs": 8, "versions": ["10.11.19-MariaDB"], "experiment_ids": [3],
        "made_by": ["alice"], "imported_runs": 0, "fit": {"measured_redo": [1 << 20, 40 << 20]}, "r2": 0.9,
        "newest_run_finished_at": "", "warnings": [],
        "predictions": [
            Prediction(33 << 20, typical_seconds=1.41, low_seconds=1.2, high_seconds=1.6).as_dict(),
            Prediction(None, refused="no bound on the redo: none").as_dict(),
        ],
    }  # fmt: skip
    text, code = predict_text(state, answer, rto=0.001, probe=None)
    assert code == EXIT_OVER_RTO
    assert (
        "RTO         0.001 s, a crash now: EXCEEDED (even the 95% interval's low end, 1.2 s, is over it)"
        in text
    )
    assert (
        "RTO         0.001 s, the worst case: EXCEEDED (no shorter than a crash now; its own downtime "
        "cannot be predicted: no bound on the redo: none)" in text
    )
    assert "experiments 3 by alice; measured by the lab's runners" in text
    # decided on the worst case: no shorter than a crash now, so exceeded too
    assert predict_text(state, answer, rto=0.001, probe=None, case_decided="worst")[1] == EXIT_OVER_RTO
    text, code = predict_text(state, answer, rto=10, probe=None)
    assert code == EXIT_WITHIN  # a crash now within it (the interval ends at 1.6 s)
    assert "RTO         10 s, the worst case: cannot be held to it (no bound on the redo: none)" in text
    _, code = predict_text(state, answer, rto=10, probe=None, case_decided="worst")
    assert code == EXIT_NO_ANSWER  # the worst case unknown: no answer
