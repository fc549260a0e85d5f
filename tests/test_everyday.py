"""Everyday use (issue 34): the hosts page shows the work folder its runs use, and the demo's
host has its facts from the start."""

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from experiments.models import Host

from .factories import UserFactory


@pytest.mark.django_db
def test_the_hosts_page_shows_the_work_folder_the_host_reported(client, local_host):
    client.force_login(UserFactory(username="boss", is_staff=True))
    assert '<small class="work-dir"' in client.get("/hosts/").content.decode()
    local_host.facts = {"disk": {"path": "/srv/fast-nvme/recovery-lab", "free_bytes": 1 << 40}}
    local_host.save()
    page = client.get("/hosts/").content.decode()
    assert "/srv/fast-nvme/recovery-lab</small>" in page and f">{local_host.work_dir}</small>" not in page


@pytest.mark.django_db(transaction=True)
def test_the_demo_probes_the_machine_it_registers(broker, settings):
    """Its runs are queued (no worker here: the demo stops waiting at once), and the host they
    run on already lists its servers, engines and work folder."""
    with pytest.raises(CommandError, match="runs not finished after 0 s"):
        call_command("demo", "--timeout", "0", stdout=io.StringIO())
    host = Host.objects.get(name="local")
    assert {"innodb", "rocksdb", "postgresql"} <= set(host.facts["engines"])
    assert host.facts["disk"]["path"] == str(settings.RUNNER_WORK_DIR)
    assert host.last_seen is not None


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_user_makes_an_api_token_sees_it_once_uses_it_and_revokes_it(page, live_server):
    from .test_browser import log_in, screenshot

    log_in(page, live_server)  # alice
    page.click("#account-link")
    assert page.locator("#token-state").inner_text() == "You have no token."
    page.click("#token-new")
    key = page.locator("#token-key").inner_text().strip()
    assert len(key) == 40
    screenshot(page, "api-token-shown-once.png")
    api = page.context.browser.new_context().request  # no session: the token alone logs in
    listed = api.get(f"{live_server.url}/api/experiments/", headers={"Authorization": f"Token {key}"})
    assert listed.status == 200  # the command line's login works
    page.reload()
    assert page.locator("#token-key").count() == 0 and key not in page.content()  # shown once
    assert "You have a token, made" in page.locator("#token-state").inner_text()
    page.click("#token-revoke")
    assert "Token revoked" in page.locator("main").inner_text()
    assert page.locator("#token-state").inner_text() == "You have no token."
    refused = api.get(f"{live_server.url}/api/experiments/", headers={"Authorization": f"Token {key}"})
    assert refused.status == 401
