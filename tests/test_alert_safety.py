"""Alerts leave the building, so they are closed against misuse: webhooks only to public addresses
(checked when stored and when sent, redirects never followed), one deadline and a capped answer
for a slow or hostile target, where alerts go hidden from viewers, and a mail subject no series
name can break. Real HTTP servers on loopback play the targets."""

import socket
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.core import mail
from django.utils import timezone
from rest_framework.test import APIClient

from experiments.models import Channel, DeliveryStatus, Notification, Series
from experiments.services import outbound
from experiments.services import series as series_service

from .factories import ChangePointFactory, UserFactory
from .test_series import DEFINITION

REFUSED_TARGETS = [
    "http://127.0.0.1:8000/hook",
    "http://localhost/hook",  # a name that resolves to loopback
    "http://169.254.169.254/latest/meta-data/",  # cloud metadata
    "http://10.0.0.5/hook",
    "http://172.16.3.4/hook",
    "http://192.168.1.1/hook",
    "http://[fd00::1]/hook",  # unique-local IPv6
    "http://[::ffff:127.0.0.1]/hook",  # loopback written as IPv6
    "http://0.0.0.0:1/hook",
    "http://100.64.0.1/hook",  # shared address space (CG-NAT)
]


@pytest.fixture
def no_internal_hosts(settings):
    settings.ALERT_INTERNAL_HOSTS = []


@pytest.mark.parametrize("url", REFUSED_TARGETS)
def test_a_webhook_to_an_internal_address_is_refused_when_the_series_is_made(
    url, local_host, user, api, no_internal_hosts
):
    answer = api.post(
        "/api/series/",
        {"name": "hooked", "definition": DEFINITION, "schedule": "@nightly", "alert_webhooks": [url]},
        format="json",
    )
    assert answer.status_code == 400, answer.content
    assert "public addresses only" in answer.json()["alert_webhooks"][0]
    assert not Series.objects.exists()


def test_a_public_address_and_an_internal_host_the_admin_allowed_are_taken(local_host, user, settings):
    settings.ALERT_INTERNAL_HOSTS = ["10.20.0.0/16", "localhost"]
    series = series_service.create_series(
        {
            "name": "hooked",
            "definition": DEFINITION,
            "schedule": "@nightly",
            # a public address written as one (no resolver needed), and two the admin allowed
            "alert_webhooks": ["https://93.184.215.14/hook", "http://10.20.1.2/chat", "http://localhost/x"],
        },
        user=user,
    )
    assert len(series.alert_webhooks) == 3
    with pytest.raises(outbound.UnsafeTarget, match="10.30.0.1, a private address"):
        outbound.check_target("http://10.30.0.1/chat")


@contextmanager
def http_target(handler_class):
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler_class)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


def pending_alert(target: str, channel: str = Channel.WEBHOOK, series_name: str = "nightly") -> Notification:
    owner = UserFactory(username="owner")
    series = Series.objects.create(
        name=series_name,
        definition=DEFINITION,
        schedule="@nightly",
        next_firing_at=timezone.now(),
        created_by=owner,
        **({"alert_emails": [target]} if channel == Channel.EMAIL else {"alert_webhooks": [target]}),
    )
    point = ChangePointFactory(series=series)
    return Notification.objects.create(change_point=point, channel=channel, target=target)


class Quiet(BaseHTTPRequestHandler):
    """A target's handler that writes no access log."""

    def log_message(self, *args):
        pass


class Recorder(Quiet):
    received: list = []

    def do_POST(self):
        self.received.append(self.path)
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(204)
        self.end_headers()


def test_a_stored_internal_target_is_refused_again_when_sent_and_failed_at_once(db, settings):
    """Stored while an admin allowed loopback (or before the rule): the send checks again."""
    Recorder.received = []
    with http_target(Recorder) as base:
        notification = pending_alert(f"{base}/hook")
        settings.ALERT_INTERNAL_HOSTS = []
        assert series_service.send_notification(notification.pk) == DeliveryStatus.FAILED
    notification.refresh_from_db()
    assert Recorder.received == [] and notification.attempts == 1
    assert notification.error == "refused: 127.0.0.1 is not a public address"
    assert "127.0.0.1, a loopback address" in notification.error_detail


def test_a_redirect_is_not_followed_and_the_body_never_reaches_where_it_points(db):
    Recorder.received = []
    with http_target(Recorder) as elsewhere:

        class Redirecting(Quiet):
            def do_POST(self):
                self.rfile.read(int(self.headers["Content-Length"]))
                self.send_response(307)
                self.send_header("Location", f"{elsewhere}/stolen")
                self.end_headers()

        with http_target(Redirecting) as base:
            notification = pending_alert(f"{base}/hook")
            assert series_service.send_notification(notification.pk) == DeliveryStatus.FAILED
    notification.refresh_from_db()
    assert Recorder.received == []
    assert "redirect (HTTP 307), which is not followed" in notification.error
    assert "/stolen" in notification.error_detail


@pytest.mark.busy
def test_a_target_that_drips_its_headers_is_cut_off_at_one_deadline(db, settings):
    """Each header line comes well within the per-read timeout; the whole request may not."""
    settings.WEBHOOK_TIMEOUT_S = 1.5
    lines_sent = []
    answered = threading.Event()

    class Dripping(Quiet):
        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            self.flush_headers()  # the status line now; header lines follow slowly
            try:
                for n in range(200):  # 200 lines, one each 0.2 s: 40 s if nobody hangs up
                    self.wfile.write(f"X-Drip-{n}: .\r\n".encode())
                    self.wfile.flush()
                    lines_sent.append(n)
                    if answered.wait(0.2):
                        break
            except OSError:
                pass  # the sender hung up at its deadline

    with http_target(Dripping) as base:
        notification = pending_alert(f"{base}/hook")
        status = series_service.send_notification(notification.pk)
        answered.set()
    notification.refresh_from_db()
    assert status == DeliveryStatus.PENDING  # tried again later, like any target that did not answer
    assert notification.error == "127.0.0.1 did not answer within 1.5 s", notification.error_detail
    assert len(lines_sent) < 200


@pytest.mark.busy
def test_a_huge_answer_is_not_read(db):
    """300 MB offered; the sender reads a few kB and hangs up (the server's writes then fail)."""
    written, hung_up = [0], threading.Event()

    class Huge(Quiet):
        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            self.send_header("Content-Length", str(300 * 2**20))
            self.end_headers()
            chunk = b"x" * 2**16
            try:
                while written[0] < 300 * 2**20:
                    self.wfile.write(chunk)
                    written[0] += len(chunk)
            except OSError:
                hung_up.set()

    with http_target(Huge) as base:
        notification = pending_alert(f"{base}/hook")
        assert series_service.send_notification(notification.pk) == DeliveryStatus.SENT
        assert hung_up.wait(30)
    # what the kernel buffers on both sides, not the answer
    assert written[0] < 32 * 2**20


def test_a_series_name_with_a_newline_still_sends_its_mail_with_a_one_line_subject(db):
    name = "nightly\nBcc: all@example.com"
    notification = pending_alert("dba@example.com", Channel.EMAIL, series_name=name)
    assert series_service.send_notification(notification.pk) == DeliveryStatus.SENT
    (message,) = mail.outbox
    assert "\n" not in message.subject and message.bcc == [] and message.to == ["dba@example.com"]
    assert "nightly Bcc: all@example.com" in message.subject


def test_a_mail_server_that_refuses_marks_the_attempt_with_its_reason(db, settings):
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", port
    notification = pending_alert("dba@example.com", Channel.EMAIL)
    assert series_service.send_notification(notification.pk) == DeliveryStatus.PENDING
    notification.refresh_from_db()
    assert notification.attempts == 1 and notification.error == "the mail server did not take it"
    assert "ConnectionRefusedError" in notification.error_detail


def test_where_alerts_go_is_shown_to_the_owner_and_admins_only(db, client):
    secret = "https://hooks.example.com/services/T000/B000/very-secret-token"
    notification = pending_alert(secret)
    notification.error, notification.error_detail = "hooks.example.com answered HTTP 500", "HTTP 500"
    notification.save()
    series = notification.change_point.series
    series.alert_emails = ["dba@example.com"]
    series.save()
    readers = {
        "viewer": (UserFactory(username="viewer", role="viewer"), False),
        "someone else": (UserFactory(username="other"), False),
        "owner": (series.created_by, True),
        "admin": (UserFactory(username="boss", is_staff=True), True),
    }
    for who, (reader, sees) in readers.items():
        api = APIClient()
        api.force_authenticate(reader)
        listed = api.get("/api/series/").json()["results"][0]
        detail = api.get(f"/api/series/{series.pk}/").json()
        client.force_login(reader)
        page = client.get(series.get_absolute_url()).content.decode()
        for shown in (listed, detail):
            assert shown["alert_destinations"] == ["mail to example.com", "webhook to hooks.example.com"], who
            assert (shown["alert_webhooks"] == [secret]) is sees, who
            assert (shown["alert_emails"] == ["dba@example.com"]) is sees, who
        assert ("very-secret-token" in page) is sees, who
        assert ("dba@example.com" in page) is sees, who
        assert "webhook to hooks.example.com" in page or sees, who
