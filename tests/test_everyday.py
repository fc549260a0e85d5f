"""Everyday use (issue 34): the hosts page shows the work folder its runs use, and the demo's
host has its facts from the start."""

import io
import re

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from experiments.models import Host

from .factories import HostFactory, UserFactory


@pytest.mark.django_db
def test_the_hosts_page_shows_the_work_folder_the_host_reported(client, local_host):
    client.force_login(UserFactory(username="boss", is_staff=True))
    assert '<small class="work-dir"' in client.get("/hosts/").content.decode()
    local_host.facts = {"disk": {"path": "/srv/fast-nvme/recovery-lab", "free_bytes": 1 << 40}}
    local_host.save()
    page = client.get("/hosts/").content.decode()
    assert "/srv/fast-nvme/recovery-lab</small>" in page and f">{local_host.work_dir}</small>" not in page
    assert '<span class="work-dir-free">1.0\xa0TB free in its work folder</span>' in page


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
    assert len(key) == 64  # knox: 64 hex characters, stored only as a digest
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


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_series_owner_edits_pauses_fires_and_deletes_it_from_its_page(
    page, live_server, local_host, broker, settings
):
    from experiments.models import Experiment, Series
    from experiments.services import series as series_service

    from .test_browser import log_in, screenshot
    from .test_series import DEFINITION

    settings.EMAIL_BACKEND = "django.core.mail.backends.console.EmailBackend"  # mail not configured
    log_in(page, live_server)  # alice
    from django.contrib.auth import get_user_model

    alice = get_user_model().objects.get(username="alice")
    series = series_service.create_series(
        {"name": "nightly InnoDB", "definition": DEFINITION, "schedule": "@nightly"}, user=alice
    )
    page.goto(f"{live_server.url}/series/{series.pk}/")
    explained = page.locator("#series-explained").inner_text()
    assert (
        "A change point is a firing from which" in explained
        and "to nobody yet: no address is set" in explained
    )
    # said of the console backend, whether EMAIL_URL is unset or consolemail:// (it had said "no
    # EMAIL_URL" with consolemail:// set)
    assert "EMAIL_URL is unset or consolemail://" in page.locator("#mail-not-configured").inner_text()

    page.click("#series-edit")
    page.fill("input[name=schedule]", "@weekly")
    page.fill("textarea[name=alert_emails]", "dba@example.com")
    definition = page.input_value("textarea[name=definition]")
    assert "engines:" in definition  # the command line's YAML
    page.fill("textarea[name=definition]", definition.replace("repetitions: 2", "repetitions: 3"))
    screenshot(page, "series-edit.png")
    page.click("text=Save")
    page.wait_for_url(f"**/series/{series.pk}/")
    assert page.locator("p.controls code").inner_text() == "@weekly"
    assert page.locator("#alert-destinations").inner_text() == "dba@example.com"
    series.refresh_from_db()
    assert series.definition["repetitions"] == 3

    page.click("#series-pause")
    controls = page.locator("p.controls").inner_text()
    # a paused series shows no next firing (it had shown one it would never make)
    assert "paused: it does not fire until resumed" in controls and "next firing" not in controls
    assert not Series.objects.get(pk=series.pk).enabled
    page.click("#series-pause")  # now "Resume"
    assert Series.objects.get(pk=series.pk).enabled

    page.click("#series-fire")
    page.wait_for_url("**/experiments/*/")
    fired = Experiment.objects.get(series=series)
    assert fired.name.endswith("(fired by hand)") and fired.runs.count() == 3
    page.goto(f"{live_server.url}/series/{series.pk}/")
    assert str(fired.pk) in page.locator("#firings").inner_text()
    screenshot(page, "series-controls.png")

    page.click("#series-delete")
    assert "The 1 experiment it fired is kept" in page.locator("#delete-consequences").inner_text()
    page.click("#confirm-delete")
    page.wait_for_url("**/series/")
    assert not Series.objects.filter(pk=series.pk).exists()
    assert Experiment.objects.filter(pk=fired.pk, series=None).exists()


def test_an_installation_s_queue_and_site_url_follow_its_database_and_address():
    """Left empty in .env: the queue is named after the database (two dashboards sharing one Redis
    stay apart), the alerts' links after the address make start serves."""
    import os
    import subprocess
    import sys

    from webapp.installation import queue_name

    assert (
        queue_name({"HOST": "db7.lab", "PORT": 5433, "NAME": "recovery_lab"})
        == "recovery-lab.db7_lab.5433.recovery_lab"
    )
    assert queue_name({"HOST": "", "PORT": "", "NAME": "lab"}) != queue_name(
        {"HOST": "", "PORT": "", "NAME": "lab2"}
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "webapp.settings", "CELERY_TASK_DEFAULT_QUEUE": "",
           "CELERY_ALERTS_QUEUE": "", "DATABASE_URL": "postgres://u@db7:5433/lab", "SITE_URL": "",
           "WEB_ADDR": "10.0.0.5:8080"}  # fmt: skip
    code = (
        "import django; django.setup(); from django.conf import settings as s; "
        "print(s.CELERY_TASK_DEFAULT_QUEUE, s.CELERY_ALERTS_QUEUE, s.SITE_URL)"
    )
    said = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert said.stdout.split() == [
        "recovery-lab.db7.5433.lab",
        "recovery-lab.db7.5433.lab-alerts",
        "http://10.0.0.5:8080",
    ], said.stderr


@pytest.mark.django_db
def test_the_series_page_says_when_alerts_link_elsewhere_than_where_it_was_opened(client, settings):
    from experiments.services import series as series_service

    from .test_series import DEFINITION

    HostFactory(name="local")
    owner = UserFactory(username="owner")
    series = series_service.create_series(
        {"name": "n", "definition": DEFINITION, "schedule": "@nightly"}, user=owner
    )
    client.force_login(owner)
    settings.SITE_URL = "http://127.0.0.1:8000"
    page = client.get(f"/series/{series.pk}/").content.decode()
    assert 'id="site-url-differs"' in page and "this page was opened at http://testserver" in page
    settings.SITE_URL = "http://testserver"
    assert 'id="site-url-differs"' not in client.get(f"/series/{series.pk}/").content.decode()


@pytest.mark.django_db
def test_the_time_left_stands_on_runs_done_and_is_not_said_without_one(client, user):
    """A run cancelled at once had made the typical run take 0 s: "about 0 s left" beside nine runs
    not started. The time left is the runs done's median times the work left, or not said."""
    import datetime

    from django.utils import timezone

    from .factories import ExperimentFactory, RunFactory

    experiment = ExperimentFactory(created_by=user)
    host = HostFactory()
    now = timezone.now()
    RunFactory(experiment=experiment, host=host, status="cancelled", started_at=now, finished_at=now)
    for _ in range(9):
        RunFactory(experiment=experiment, host=host, status="queued")
    client.force_login(user)
    page = client.get(f"/experiments/{experiment.id}/").content.decode()
    assert 'id="eta"' not in page and "0 s</span> left" not in page
    # one run done in 40 s: nine more on one host, about 6 min
    RunFactory(
        experiment=experiment,
        host=host,
        status="done",
        started_at=now - datetime.timedelta(seconds=40),
        finished_at=now,
    )
    page = client.get(f"/experiments/{experiment.id}/").content.decode()
    assert 'about <span id="eta">6 min</span> left' in page, page[
        page.find("left") - 200 : page.find("left") + 20
    ]
    # a run running over twice as long as the typical one (a restart that may have stalled: a
    # page had said "about 22 s left" beside one hung for minutes): no time left is said
    RunFactory(
        experiment=experiment, host=host, status="running", started_at=now - datetime.timedelta(seconds=95)
    )
    page = client.get(f"/experiments/{experiment.id}/").content.decode()
    assert 'id="eta"' not in page
    taken = re.search(
        r"a run has taken (\d+) s, over twice the typical run's 40 s: no time left is said", page
    )
    assert taken and int(taken.group(1)) >= 95, page


@pytest.mark.django_db
def test_a_raw_file_downloads_as_the_bytes_kept_and_is_never_rendered(client, user):
    from experiments.models import RunFile

    from .factories import RunFactory

    run = RunFactory()
    content = (
        b"2026-11-28 03:00:00 0 [Note] InnoDB: Starting crash recovery\n<script>alert(1)</script>\n\xff\xfe"
    )
    RunFile.objects.create(run=run, name="error.log", content=content, size_bytes=len(content))
    client.force_login(user)
    page = client.get(f"/runs/{run.id}/files/error.log").content.decode()
    assert f'href="/runs/{run.id}/files/error.log/download"' in page
    response = client.get(f"/runs/{run.id}/files/error.log/download")
    assert response.status_code == 200 and response.content == content
    assert response["Content-Type"] == "application/octet-stream"
    assert response["Content-Disposition"] == f'attachment; filename="run-{run.id}-error.log"'
    assert response["X-Content-Type-Options"] == "nosniff"
    assert client.get(f"/runs/{run.id}/files/missing.log/download").status_code == 404
