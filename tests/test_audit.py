"""The audit trail: who registered a host, excluded or annotated a run, cancelled or deleted an
experiment, changed a user's role, from the API (token) and the pages (session) alike."""

import pytest
from auditlog.models import LogEntry
from django.contrib.auth.models import Group
from rest_framework.test import APIClient

from experiments.models import Experiment, Host, Run
from experiments.roles import EXPERIMENTER_GROUP

from .factories import ExperimentFactory, UserFactory
from .test_analysis import done_run

pytestmark = pytest.mark.django_db


def entries(instance, action=LogEntry.Action.UPDATE) -> list[LogEntry]:
    """What was done to a row after it was made (the tests make rows too)."""
    return list(LogEntry.objects.get_for_object(instance).filter(action=action).order_by("timestamp", "id"))


def token_client(user) -> APIClient:
    from experiments.services.tokens import new_token

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {new_token(user)}")
    return client


def test_a_host_registered_through_the_api_names_its_admin():
    admin = UserFactory(username="ops", is_staff=True)
    answer = token_client(admin).post("/api/hosts/", {"name": "db7", "transport": "local"}, format="json")
    assert answer.status_code == 201
    (entry,) = entries(Host.objects.get(name="db7"), LogEntry.Action.CREATE)
    assert entry.action == LogEntry.Action.CREATE and entry.actor == admin
    assert entry.changes_dict["name"] == ["None", "db7"]


def test_excluding_and_taking_back_a_run_is_logged_with_who_and_why(user):
    run = done_run(ExperimentFactory(created_by=user))
    api = token_client(user)
    assert (
        api.post(f"/api/runs/{run.id}/exclude/", {"reason": "disk shared with a backup"}).status_code == 200
    )
    assert api.post(f"/api/runs/{run.id}/include/").status_code == 200
    excluded, included = entries(run)
    assert excluded.actor == user and excluded.changes_dict["excluded"] == ["False", "True"]
    assert excluded.changes_dict["excluded_reason"] == ["", "disk shared with a backup"]
    assert included.actor == user and included.changes_dict["excluded"] == ["True", "False"]


def test_notes_from_a_page_and_a_cancellation_are_logged(client, user):
    experiment = ExperimentFactory(created_by=user)
    done_run(experiment, status="queued")
    client.force_login(user)
    client.post(f"/experiments/{experiment.id}/annotate/", {"notes": "why so slow?", "tags": "nvme"})
    client.post(f"/experiments/{experiment.id}/cancel/")
    notes, cancelled = entries(experiment)
    assert notes.actor == user and notes.changes_dict["notes"] == ["", "why so slow?"]
    assert cancelled.actor == user and cancelled.additional_data == {"action": "cancelled 1 runs"}


def test_an_experiment_deleted_in_the_admin_and_a_role_given_are_logged(client):
    admin = UserFactory(username="root", is_staff=True, is_superuser=True)
    experiment = ExperimentFactory(name="old sweep")
    done_run(experiment)
    client.force_login(admin)
    answer = client.post(f"/admin/experiments/experiment/{experiment.id}/delete/", {"post": "yes"})
    assert answer.status_code == 302 and not Experiment.objects.exists()
    deleted = LogEntry.objects.get(object_repr="old sweep", action=LogEntry.Action.DELETE)
    assert deleted.actor == admin
    assert (
        LogEntry.objects.filter(content_type__model="run", action=LogEntry.Action.DELETE, actor=admin).count()
        == 1
    )

    someone = UserFactory(username="newcomer", role="viewer")
    group = Group.objects.get_or_create(name=EXPERIMENTER_GROUP)[0]
    client.post(
        f"/admin/auth/user/{someone.id}/change/",
        {
            "username": "newcomer",
            "groups": [group.id],
            "is_active": "on",
            "date_joined_0": "2026-01-01",
            "date_joined_1": "00:00:00",
            "initial-date_joined_0": "2026-01-01",
            "initial-date_joined_1": "00:00:00",
        },
    )
    change = LogEntry.objects.filter(object_repr="newcomer", actor=admin).last()
    assert change is not None and "groups" in change.changes_dict
    assert Run.objects.count() == 0


def test_the_trail_is_read_only_in_the_admin(client):
    admin = UserFactory(username="root", is_staff=True, is_superuser=True)
    client.force_login(admin)
    assert client.get("/admin/auditlog/logentry/").status_code == 200
    assert client.get("/admin/auditlog/logentry/add/").status_code == 403
