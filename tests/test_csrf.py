"""CSRF, as a browser meets it: every page form and a session-authenticated API write, with Django's
checks enforced (the test client skips them unless asked). Without the token: 403 and nothing
written; with the token the form carries: the write happens."""

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from experiments import services
from experiments.models import ApiToken, ChangePoint, Experiment, Host, Run, RunStatus, Series
from experiments.pages.series_controls import SeriesForm

from .factories import (
    ExperimentFactory,
    HostFactory,
    RunFactory,
    UserFactory,
    experiment_form,
    full_definition,
)
from .test_archive import exported
from .test_imports import parameters, upload

pytestmark = pytest.mark.django_db
REAL_LOG = Path(__file__).parent / "data" / "mariadb-10.11" / "innodb_after_workload" / "error.log"
ADMIN_FORMS = {"hosts/<pk>/probe/", "hosts/<pk>/measure/", "hosts/<pk>/trust-key/"}


@dataclass
class World:
    experiment: Experiment
    run: Run  # queued
    done: Run  # finished, with its raw log
    host: Host
    change_point: ChangePoint  # of a series of the author's


@dataclass
class Form:
    route: str  # as the URL configuration and tests/test_role_matrix.py name it
    path: Callable[[World], str]
    body: Callable[[World], dict]
    written: Callable[[World], bool]


def new_experiment(_: World) -> dict:
    return experiment_form("csrf checked")


def an_export(_: World) -> dict:
    moved = ExperimentFactory(name="moved here", definition=full_definition("moved here"), status="done")
    archive = exported(moved)
    Experiment.objects.filter(name="moved here").delete()
    return {"file": upload(archive, "moved.tar.gz")}


FORMS = [
    Form(
        "experiments/new/",
        lambda w: "/experiments/new/",
        new_experiment,
        lambda w: Experiment.objects.filter(name="csrf checked").exists(),
    ),
    Form(
        "experiments/import/",
        lambda w: "/experiments/import/",
        an_export,
        lambda w: Experiment.objects.filter(name="moved here").exists(),
    ),
    Form(
        "imports/new/",
        lambda w: "/imports/new/",
        lambda w: {
            **parameters(host_label="csrf.example", timezone="UTC"),
            "error_log": upload(REAL_LOG.read_bytes()),
        },
        lambda w: Run.objects.filter(host_label="csrf.example").exists(),
    ),
    Form(
        "experiments/<pk>/cancel/",
        lambda w: f"/experiments/{w.experiment.id}/cancel/",
        lambda w: {},
        lambda w: Run.objects.get(id=w.run.id).status == RunStatus.CANCELLED,
    ),
    Form(
        "experiments/<pk>/annotate/",
        lambda w: f"/experiments/{w.experiment.id}/annotate/",
        lambda w: {"notes": "annotated"},
        lambda w: Experiment.objects.get(id=w.experiment.id).notes == "annotated",
    ),
    Form(
        "runs/<pk>/annotate/",
        lambda w: f"/runs/{w.done.id}/annotate/",
        lambda w: {"notes": "annotated"},
        lambda w: Run.objects.get(id=w.done.id).notes == "annotated",
    ),
    Form(
        "runs/<pk>/exclude/",
        lambda w: f"/runs/{w.done.id}/exclude/",
        lambda w: {"reason": "noisy neighbour"},
        lambda w: Run.objects.get(id=w.done.id).excluded,
    ),
    Form(
        "runs/<pk>/include/",
        lambda w: f"/runs/{w.done.id}/include/",
        lambda w: {},
        lambda w: not Run.objects.get(id=w.done.id).excluded,
    ),
    Form(
        "runs/<pk>/cancel/",
        lambda w: f"/runs/{w.run.id}/cancel/",
        lambda w: {},
        lambda w: Run.objects.get(id=w.run.id).status == RunStatus.CANCELLED,
    ),
    Form(
        "runs/<pk>/reparse/",
        lambda w: f"/runs/{w.done.id}/reparse/",
        lambda w: {},
        lambda w: Run.objects.get(id=w.done.id).recovery_seconds is not None,
    ),
    Form(
        "hosts/<pk>/probe/",  # queued for the worker
        lambda w: f"/hosts/{w.host.id}/probe/",
        lambda w: {},
        lambda w: Host.objects.get(id=w.host.id).probe_state == "queued",
    ),
    Form(
        "hosts/<pk>/measure/",  # queued for the worker: fio, then the probe
        lambda w: f"/hosts/{w.host.id}/measure/",
        lambda w: {},
        lambda w: Host.objects.get(id=w.host.id).probe_measure_disk,
    ),
    Form(
        "hosts/<pk>/trust-key/",
        lambda w: f"/hosts/{w.host.id}/trust-key/",
        lambda w: {"fingerprint": "SHA256:" + "C" * 43},
        lambda w: Host.objects.get(id=w.host.id).host_key_fingerprint == "SHA256:" + "C" * 43,
    ),
    Form(
        "hosts/<pk>/aa-check/",
        lambda w: f"/hosts/{w.host.id}/aa-check/",
        lambda w: {"experiment": w.experiment.id},
        lambda w: Experiment.objects.filter(aa_check=True, definition__hosts=[w.host.name]).exists(),
    ),
    Form(
        "experiments/<pk>/repeat/",
        lambda w: f"/experiments/{w.experiment.id}/repeat/",
        lambda w: {"name": "csrf series", "schedule": "@nightly"},
        lambda w: Series.objects.filter(name="csrf series").exists(),
    ),
    Form(
        "change-points/<pk>/triage/",
        lambda w: f"/change-points/{w.change_point.id}/triage/",
        lambda w: {"triage": "acknowledged"},
        lambda w: ChangePoint.objects.get(id=w.change_point.id).triage == "acknowledged",
    ),
    Form(
        "series/<pk>/edit/",
        lambda w: f"/series/{w.change_point.series_id}/edit/",
        lambda w: {**SeriesForm.initial_from(w.change_point.series), "schedule": "@weekly"},
        lambda w: Series.objects.filter(schedule="@weekly").exists(),
    ),
    Form(
        "series/<pk>/pause/",
        lambda w: f"/series/{w.change_point.series_id}/pause/",
        lambda w: {},
        lambda w: Series.objects.filter(enabled=False).exists(),
    ),
    Form(
        "series/<pk>/fire/",
        lambda w: f"/series/{w.change_point.series_id}/fire/",
        lambda w: {},
        lambda w: Experiment.objects.filter(name__endswith="(fired by hand)").exists(),
    ),
    Form(
        "series/<pk>/delete/",
        lambda w: f"/series/{w.change_point.series_id}/delete/",
        lambda w: {},
        lambda w: not Series.objects.exists(),
    ),
    Form(
        "account/token/",
        lambda w: "/account/token/",
        lambda w: {"action": "new"},
        lambda w: ApiToken.objects.filter(user__username="author").exists(),
    ),
    Form(
        "logout/",
        lambda w: "/logout/",
        lambda w: {},
        lambda w: True,  # checked below: the session is gone
    ),
]


@pytest.fixture
def world(db) -> World:
    author = UserFactory(username="author", password="correct horse battery", is_staff=True)
    host = HostFactory(name="local")
    # a definition that validates: the repeat form makes a series of it
    definition = {"name": "e", "hosts": ["local"], "engines": ["innodb"], "workload": {"events": 100}}
    experiment = ExperimentFactory(created_by=author, status="running", definition=definition)
    run = RunFactory(experiment=experiment, host=host, status="queued")
    done = RunFactory(experiment=experiment, host=host, status="done", matrix_index=1)
    done.files.create(name="error.log", content=REAL_LOG.read_bytes(), size_bytes=REAL_LOG.stat().st_size)
    series = Series.objects.create(
        name="nightly", definition=experiment.definition, schedule="@nightly", next_firing_at=timezone.now(),
        created_by=author,
    )  # fmt: skip
    point = ChangePoint.objects.create(
        series=series, metric="recovery_seconds", experiment=experiment, firing_index=7,
        before_median=1.0, after_median=2.0, ratio=2.0, worse=True,
    )  # fmt: skip
    return World(experiment=experiment, run=run, done=done, host=host, change_point=point)


def strict_client() -> Client:
    client = Client(enforce_csrf_checks=True)
    page = client.get("/login/")
    token = page.cookies["csrftoken"].value
    answer = client.post(
        "/login/",
        {"username": "author", "password": "correct horse battery", "csrfmiddlewaretoken": token},
    )
    assert answer.status_code == 302, answer.content[:500]
    return client


@pytest.mark.parametrize("form", FORMS, ids=lambda f: f.route)
def test_a_page_form_without_its_token_is_refused_and_with_it_writes(world, form):
    if form.route == "hosts/<pk>/trust-key/":
        services.record_offered_host_key(world.host.id, "ssh-ed25519 AAAA", "SHA256:" + "C" * 43)
    if form.route == "runs/<pk>/include/":
        Run.objects.filter(id=world.done.id).update(excluded=True, excluded_reason="noisy")
    client = strict_client()

    refused = client.post(form.path(world), form.body(world))
    assert refused.status_code == 403 and b"CSRF" in refused.content
    if form.route != "logout/":
        assert not form.written(world)

    body = {**form.body(world), "csrfmiddlewaretoken": client.cookies["csrftoken"].value}
    answer = client.post(form.path(world), body)
    assert answer.status_code in (200, 302), answer.content[:500]
    assert form.written(world)
    if form.route == "logout/":
        assert client.get("/experiments/").status_code == 302  # logged out


def test_every_page_form_is_checked_here():
    from .test_role_matrix import MATRIX

    page_posts = {route for method, route, *_ in MATRIX if method == "post" and not route.startswith("api/")}
    assert page_posts == {form.route for form in FORMS}


def test_a_session_authenticated_api_write_needs_the_token(world):
    """The API takes the page's session too (DRF's SessionAuthentication enforces CSRF for it);
    a token-authenticated client needs none."""
    client = APIClient(enforce_csrf_checks=True)
    client.cookies.load(strict_client().cookies)
    body = {"name": "by the API", "hosts": ["local"], "engines": ["innodb"], "workload": {"events": 100}}
    refused = client.post("/api/experiments/", body, format="json")
    assert refused.status_code == 403 and "CSRF" in refused.json()["detail"]
    assert not Experiment.objects.filter(name="by the API").exists()
    token = client.cookies["csrftoken"].value
    created = client.post("/api/experiments/", body, format="json", HTTP_X_CSRFTOKEN=token)
    assert created.status_code == 201, created.content
    assert Experiment.objects.filter(name="by the API").exists()
