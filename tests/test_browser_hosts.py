"""The run page tells why a run took several tries, in Debian's Chromium."""

import threading

import pytest
from django.db import connections
from django.utils import timezone

from experiments.models import Run
from workers.driver import drive_host

from .factories import RunFactory
from .test_browser import log_in, screenshot
from .test_dispatch import ssh_host

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_run_page_lists_every_attempt_with_its_outcome(page, live_server, broker):
    host = ssh_host("bench7")  # nothing listens on its port: every attempt is refused
    run = RunFactory(host=host, host_label=host.name)

    def three_tries():  # in a thread: Playwright's event loop owns this one, asyncssh needs its own
        try:
            for _ in range(3):
                Run.objects.filter(id=run.id).update(not_before=timezone.now())  # skip the pause
                started.append(drive_host(host.id, "celery@bench-worker"))
        finally:
            connections.close_all()

    started: list[bool] = []
    worker = threading.Thread(target=three_tries)
    worker.start()
    worker.join()
    assert started == [True, True, True]
    log_in(page, live_server)
    page.goto(f"{live_server.url}/runs/{run.id}/")
    rows = page.locator("section.attempts tbody tr")
    assert rows.count() == 3
    texts = [rows.nth(i).inner_text() for i in range(3)]
    assert "tried again" in texts[0] and "tried again" in texts[1] and "no tries left" in texts[2]
    assert all("bench7" in t and "celery@bench-worker" in t and "nothing accepts SSH" in t for t in texts)
    assert "gave up after 3 attempts" in page.locator("pre.error").inner_text()
    screenshot(page, "run-attempts.png")


def test_an_admin_confirms_an_ssh_host_s_key_on_the_hosts_page(
    page, live_server, staff_api, sshd, celery_worker_process
):
    """The probe read the key the host offers; the page shows it unconfirmed, with the command
    to compare it on the host; the admin trusts it and the host is probed over it, by the
    worker, while the page shows it probing and then what it found."""
    from .factories import UserFactory
    from .test_ssh import probe, register

    host = register(staff_api, sshd)

    def probed():  # in a thread: Playwright's event loop owns this one, asyncssh needs its own
        try:
            probe(staff_api, host["id"])
        finally:
            connections.close_all()

    prober = threading.Thread(target=probed)
    prober.start()
    prober.join()
    UserFactory(username="root-admin", password="correct horse battery", is_staff=True)
    page.goto(f"{live_server.url}/hosts/")
    page.fill("input[name=username]", "root-admin")
    page.fill("input[name=password]", "correct horse battery")
    page.click("button[type=submit]")
    row = page.locator("tr[data-host=bench1]")
    assert "unverified" in row.locator(".status").inner_text()
    assert f"offers {sshd.fingerprint}: not confirmed, nothing is sent to it" in row.inner_text()
    assert "ssh-keygen -lf" in row.inner_text()
    screenshot(page, "hosts-unconfirmed-key.png")
    row.get_by_role("button", name="Trust this key").click()
    page.wait_for_selector(f"text={sshd.fingerprint} trusted")
    # the worker probes it; the page looks again until the probe has ended
    page.wait_for_selector("tr[data-host=bench1] .probe-outcome", timeout=60_000)
    row = page.locator("tr[data-host=bench1]")
    assert "idle" in row.locator(".status").inner_text()
    assert "its facts read: idle" in row.locator(".probe-outcome").inner_text()
    assert sshd.fingerprint in row.inner_text() and "Trust this key" not in row.inner_text()
    assert "engines: innodb" in row.inner_text()
    screenshot(page, "hosts-key-trusted.png")
