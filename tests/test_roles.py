"""Roles, enforced alike in pages and the API: a viewer reads everything and writes nothing; an
experimenter changes only their own experiments and registers no host; an admin does all."""

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from experiments.models import Experiment, ExperimentStatus, Run, RunStatus
from experiments.roles import ADMIN, EXPERIMENTER, VIEWER, role_of

from .factories import ExperimentFactory, HostFactory, RunFactory, UserFactory
from .samples import sample
from .test_imports import parameters, upload

pytestmark = pytest.mark.django_db

DEFINITION = {
    "name": "roles",
    "hosts": ["local"],
    "engines": ["innodb"],
    "parameters": {"buffer_pool_size": ["64M"], "redo_log_size": ["64M"], "insert_rate": [0]},
    "workload": {"name": "oltp_insert", "events": 100},
}


@pytest.fixture
def world(local_host):
    """An author's running experiment with a finished run, and a host."""
    author = UserFactory(username="author")
    experiment = ExperimentFactory(created_by=author, status=ExperimentStatus.RUNNING)
    run = RunFactory(experiment=experiment, status=RunStatus.DONE, recovery_seconds=1.0)
    RunFactory(experiment=experiment, status=RunStatus.QUEUED)
    return {"author": author, "experiment": experiment, "run": run, "host": HostFactory(name="db9")}


def api_as(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def api_writes(world) -> list[tuple[str, dict]]:
    experiment, run, host = world["experiment"], world["run"], world["host"]
    return [
        ("/api/experiments/", DEFINITION),
        (f"/api/experiments/{experiment.id}/cancel/", {}),
        (f"/api/runs/{run.id}/exclude/", {"reason": "noisy neighbour"}),
        (f"/api/runs/{run.id}/include/", {}),
        ("/api/hosts/", {"name": "db10", "transport": "local"}),
        (f"/api/hosts/{host.id}/probe/", {}),
    ]


def page_writes(world) -> list[tuple[str, str]]:
    experiment, run, host = world["experiment"], world["run"], world["host"]
    return [
        ("get", "/experiments/new/"),
        ("post", "/experiments/new/"),
        ("post", f"/experiments/{experiment.id}/cancel/"),
        ("post", f"/runs/{run.id}/exclude/"),
        ("post", f"/runs/{run.id}/include/"),
        ("post", f"/runs/{run.id}/reparse/"),
        ("post", f"/hosts/{host.id}/probe/"),
        ("get", "/imports/new/"),
        ("post", "/imports/new/"),
    ]


READS = ["/experiments/", "/explore/", "/compare/", "/planner/", "/hosts/"]


def test_a_viewer_reads_everything_and_gets_403_on_every_write(world, client):
    viewer = UserFactory(username="reader", role=VIEWER)
    assert role_of(viewer) == VIEWER
    api = api_as(viewer)
    for path, body in api_writes(world):
        response = api.post(path, body, format="json")
        assert response.status_code == 403, (path, response.status_code)
    imported = api.post(
        "/api/imports/", {**parameters(), "error_log": upload(sample("production_logs.txt", "D"))}
    )
    assert imported.status_code == 403
    experiment_id, run_id = world["experiment"].id, world["run"].id
    for path in (f"/api/experiments/{experiment_id}/", f"/api/runs/{run_id}/"):  # notes and tags
        assert api.patch(path, {"notes": "mine now"}, format="json").status_code == 403, path
    assert api.post("/api/experiments/import/", {}, format="multipart").status_code == 403
    for path in (
        "/api/experiments/",
        "/api/runs/",
        "/api/hosts/",
        f"/api/experiments/{world['experiment'].id}/",
    ):
        assert api.get(path).status_code == 200, path

    client.force_login(viewer)
    later_writes = [  # notes and tags, exported experiments
        ("post", f"/experiments/{experiment_id}/annotate/"),
        ("post", f"/runs/{run_id}/annotate/"),
        ("get", "/experiments/import/"),
        ("post", "/experiments/import/"),
    ]
    for method, path in [*page_writes(world), *later_writes]:
        assert getattr(client, method)(path).status_code == 403, (method, path)
    # the page says why
    assert b"needs the experimenter role" in client.get("/experiments/new/").content
    for path in [*READS, f"/experiments/{world['experiment'].id}/", f"/runs/{world['run'].id}/"]:
        response = client.get(path)
        assert response.status_code == 200, path
        assert b"New experiment</a>" not in response.content  # no link to what they cannot do
    detail = client.get(f"/experiments/{world['experiment'].id}/").content
    assert b"Cancel the remaining runs" not in detail
    assert b'name="reason"' not in client.get(f"/runs/{world['run'].id}/").content
    # and nothing changed
    assert not Run.objects.filter(status=RunStatus.CANCELLED).exists()
    assert not Run.objects.filter(excluded=True).exists()
    assert not Run.objects.exclude(notes="").exists() and not Experiment.objects.exclude(notes="").exists()


def test_an_experimenter_cannot_touch_anothers_experiment_or_register_a_host(world, client):
    other = UserFactory(username="other")
    assert role_of(other) == EXPERIMENTER
    api = api_as(other)
    for path, body in api_writes(world)[1:]:
        assert api.post(path, body, format="json").status_code == 403, path
    into_theirs = api.post(
        "/api/imports/",
        {
            **parameters(),
            "experiment": world["experiment"].id,
            "error_log": upload(sample("production_logs.txt", "D")),
        },
    )
    assert into_theirs.status_code == 403
    client.force_login(other)
    for method, path in page_writes(world)[2:7]:
        assert getattr(client, method)(path).status_code == 403, (method, path)
    assert b"Cancel the remaining runs" not in client.get(f"/experiments/{world['experiment'].id}/").content
    # their own work they can do
    created = api.post("/api/experiments/", DEFINITION, format="json")
    assert created.status_code == 201, created.content
    mine = api.post(f"/api/experiments/{created.json()['id']}/cancel/")
    assert mine.status_code == 200
    assert client.get("/imports/new/").status_code == 200


def test_the_author_and_an_admin_may_change_it(world, client):
    author_api = api_as(world["author"])
    run = world["run"]
    assert author_api.post(f"/api/runs/{run.id}/exclude/", {"reason": "swapping"}).status_code == 200
    admin = UserFactory(username="boss", is_staff=True)
    assert role_of(admin) == ADMIN
    admin_api = api_as(admin)
    assert admin_api.post(f"/api/runs/{run.id}/include/").status_code == 200
    assert admin_api.post(f"/api/experiments/{world['experiment'].id}/cancel/").status_code == 200
    assert Run.objects.filter(experiment=world["experiment"], status=RunStatus.CANCELLED).count() == 1
    response = admin_api.post("/api/hosts/", {"name": "db10", "transport": "local"}, format="json")
    assert response.status_code == 201, response.content


def test_setrole_gives_and_takes_roles():
    user = UserFactory(username="newcomer", role=VIEWER)
    for role in (EXPERIMENTER, ADMIN, VIEWER):
        call_command("setrole", "newcomer", role)
        user.refresh_from_db()
        assert role_of(user) == role


def test_measured_metrics_are_not_editable_in_the_admin(client, world):
    client.force_login(UserFactory(username="root", is_staff=True, is_superuser=True))
    page = client.get(f"/admin/experiments/run/{world['run'].id}/change/")
    assert page.status_code == 200
    assert b'name="recovery_seconds"' not in page.content and b'name="redo_bytes"' not in page.content
    client.post(f"/admin/experiments/run/{world['run'].id}/change/", {"recovery_seconds": "0.001"})
    world["run"].refresh_from_db()
    assert world["run"].recovery_seconds == 1.0
