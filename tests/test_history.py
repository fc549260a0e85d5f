"""The team's history: the experiment list searched, filtered, sorted and paged from its address;
notes and tags on experiments and runs, in pages and API, by who may change them."""

import datetime
import html

import pytest
from django.utils import timezone

from experiments.models import Experiment, Run, RunStatus

from .factories import ExperimentFactory, RunFactory, UserFactory
from .test_analysis import done_run

pytestmark = pytest.mark.django_db


def ids(page) -> list[int]:
    return [e.id for e in page.context["experiments"]]


@pytest.fixture
def history():
    """Four experiments by two authors on two hosts, engines, versions, tags, statuses and days."""
    alice, bob = UserFactory(username="alice"), UserFactory(username="bob")
    made = {}
    for name, author, engine, host, version, tags, status, days_ago, runs in (
        ("InnoDB baseline", alice, "innodb", "local", "10.11.18-MariaDB", ["baseline"], "done", 30, 3),
        (
            "InnoDB after upgrade",
            alice,
            "innodb",
            "local",
            "10.11.19-MariaDB",
            ["upgrade", "nvme"],
            "done",
            2,
            1,
        ),
        ("MyRocks sweep", bob, "rocksdb", "db2", "10.11.19-MariaDB", ["nvme"], "partial", 1, 2),
        ("Imported 8.0 logs", bob, "innodb", "prod-eu", "8.0.36", [], "done", 0, 4),
    ):
        experiment = ExperimentFactory(name=name, created_by=author, tags=tags, status=status)
        Experiment.objects.filter(pk=experiment.pk).update(
            created_at=timezone.now() - datetime.timedelta(days=days_ago)
        )
        for _ in range(runs):
            done_run(experiment, engine=engine, host_label=host, server_version=version)
        made[name] = experiment.id
    return made


@pytest.mark.parametrize(
    "query, expected",
    [
        ({"engine": "rocksdb"}, ["MyRocks sweep"]),
        ({"host": "prod-eu"}, ["Imported 8.0 logs"]),
        ({"server_version": "10.11.19-MariaDB"}, ["MyRocks sweep", "InnoDB after upgrade"]),
        ({"tag": "nvme"}, ["MyRocks sweep", "InnoDB after upgrade"]),
        ({"tag": "nvme,upgrade"}, ["InnoDB after upgrade"]),
        ({"author": "alice"}, ["InnoDB after upgrade", "InnoDB baseline"]),
        ({"status": "partial"}, ["MyRocks sweep"]),
        (
            {"since": (timezone.now() - datetime.timedelta(days=3)).date().isoformat(), "author": "alice"},
            ["InnoDB after upgrade"],
        ),
        ({"until": (timezone.now() - datetime.timedelta(days=10)).date().isoformat()}, ["InnoDB baseline"]),
        ({"q": "upgrade"}, ["InnoDB after upgrade"]),
        ({"q": "baseline"}, ["InnoDB baseline"]),  # the name, and the tag
        (
            {"engine": "innodb", "host": "local", "author": "alice"},
            ["InnoDB after upgrade", "InnoDB baseline"],
        ),
    ],
)
def test_the_list_filters_in_the_page_and_the_api_alike(client, api, history, query, expected):
    client.force_login(UserFactory(username="reader", role="viewer"))
    page = client.get("/experiments/", query)
    assert page.status_code == 200
    assert ids(page) == [history[name] for name in expected]  # newest first
    body = api.get("/api/experiments/", query).json()
    assert [e["id"] for e in body["results"]] == [history[name] for name in expected]


def test_the_filter_button_with_every_select_at_any_lists_everything(client, api, history):
    """The form as the page sends it, nothing chosen: Status "any" (its default) had answered
    "status: Select a valid choice" and listed nothing."""
    client.force_login(UserFactory(username="reader", role="viewer"))
    everything = ids(client.get("/experiments/"))
    assert len(everything) == len(history)
    form = {
        name: ""
        for name in ("q", "engine", "host", "server_version", "tag", "author", "status", "since", "until")
    }
    page = client.get("/experiments/", form)
    assert page.status_code == 200 and "Select a valid choice" not in page.content.decode()
    assert ids(page) == everything
    assert [e["id"] for e in api.get("/api/experiments/", form).json()["results"]] == everything


def test_an_id_finds_its_experiment_and_notes_are_searched(client, history):
    client.force_login(UserFactory(username="reader", role="viewer"))
    Experiment.objects.filter(pk=history["MyRocks sweep"]).update(notes="Does the WAL size matter?")
    assert ids(client.get("/experiments/", {"q": str(history["InnoDB baseline"])})) == [
        history["InnoDB baseline"]
    ]
    assert ids(client.get("/experiments/", {"q": "wal size"})) == [history["MyRocks sweep"]]


def test_the_list_sorts_by_its_columns_and_keeps_the_filters_in_its_links(client, history):
    client.force_login(UserFactory(username="reader", role="viewer"))
    by_runs = client.get("/experiments/", {"sort": "-runs"})
    assert ids(by_runs) == [
        history[n] for n in ("Imported 8.0 logs", "InnoDB baseline", "MyRocks sweep", "InnoDB after upgrade")
    ]
    by_name = client.get("/experiments/", {"sort": "name", "engine": "innodb"})
    assert ids(by_name) == [
        history[n] for n in ("Imported 8.0 logs", "InnoDB after upgrade", "InnoDB baseline")
    ]
    text = by_name.content.decode()
    assert 'href="?sort=-name&amp;engine=innodb"' in text  # the same header again: descending, filter kept
    assert 'name="sort" value="name"' in text  # filtering again keeps the sort


def test_the_list_pages_and_each_page_is_a_permalink(client, history, settings):
    client.force_login(UserFactory(username="reader", role="viewer"))
    for n in range(30):
        ExperimentFactory(name=f"sweep {n:02}", tags=["many"])
    first = client.get("/experiments/", {"tag": "many", "sort": "name"})
    assert len(ids(first)) == 25 and first.context["page"].paginator.count == 30
    assert 'href="?tag=many&amp;sort=name&amp;page=2"' in first.content.decode()
    second = client.get("/experiments/", {"tag": "many", "sort": "name", "page": "2"})
    names = [e.name for e in second.context["experiments"]]
    assert names == [f"sweep {n:02}" for n in range(25, 30)]
    assert "26-30 of 30 experiments" in second.content.decode()


def test_a_bad_filter_is_a_400_that_says_which(client, api, history):
    client.force_login(UserFactory(username="reader", role="viewer"))
    page = client.get("/experiments/", {"since": "last tuesday", "status": "exploded"})
    assert page.status_code == 400
    text = page.content.decode()
    assert "since: Enter a valid date." in text and "status: Select a valid choice." in text
    assert api.get("/api/experiments/", {"sort": "color"}).status_code == 400


# Notes and tags ------------------------------------------------------------------------------


def test_a_definition_carries_its_question_and_tags_and_refuses_a_bad_tag(api, local_host):
    definition = {
        "name": "tagged",
        "hosts": ["local"],
        "engines": ["innodb"],
        "parameters": {"buffer_pool_size": ["64M"], "redo_log_size": ["64M"], "insert_rate": [0]},
        "description": "Does 10.11.19 recover as fast as 10.11.18?",
        "tags": ["upgrade", " 10.11.19 ", "upgrade"],
    }
    created = api.post("/api/experiments/", definition, format="json")
    assert created.status_code == 201, created.json()
    assert created.json()["notes"] == "Does 10.11.19 recover as fast as 10.11.18?"
    assert created.json()["tags"] == ["upgrade", "10.11.19"]
    refused = api.post("/api/experiments/", {**definition, "tags": ["ok", "<script>"]}, format="json")
    assert refused.status_code == 400 and "'<script>' is not a tag" in refused.json()["tags"][0]
    assert Experiment.objects.count() == 1


def test_the_author_annotates_an_experiment_and_a_run_in_the_pages(client, user):
    experiment = ExperimentFactory(created_by=user)
    run = done_run(experiment)
    client.force_login(user)
    page = client.get(f"/experiments/{experiment.id}/")
    assert f'action="/experiments/{experiment.id}/annotate/"' in page.content.decode()
    client.post(f"/experiments/{experiment.id}/annotate/", {"notes": "Why is 1G slow?", "tags": "nvme, 1G"})
    client.post(f"/runs/{run.id}/annotate/", {"notes": "backup ran at the same time", "tags": "noisy"})
    experiment.refresh_from_db()
    run.refresh_from_db()
    assert (experiment.notes, experiment.tags) == ("Why is 1G slow?", ["nvme", "1G"])
    assert (run.notes, run.tags) == ("backup ran at the same time", ["noisy"])
    assert "backup ran at the same time" in client.get(f"/runs/{run.id}/").content.decode()
    assert Run.objects.filter(tags__contains=["noisy"]).count() == 1


def test_a_refused_tag_saves_nothing_and_says_why(client, user):
    experiment = ExperimentFactory(created_by=user, notes="kept", tags=["kept"])
    client.force_login(user)
    answer = client.post(
        f"/experiments/{experiment.id}/annotate/", {"notes": "changed", "tags": "fine, bad;tag"}, follow=True
    )
    assert "tags: 'bad;tag' is not a tag" in html.unescape(answer.content.decode())
    experiment.refresh_from_db()
    assert (experiment.notes, experiment.tags) == ("kept", ["kept"])


def test_only_the_author_or_an_admin_annotates(client, api, user):
    experiment = ExperimentFactory(created_by=UserFactory(username="owner"))
    run = done_run(experiment)
    for someone in (UserFactory(username="viewer", role="viewer"), user):  # a viewer; another experimenter
        client.force_login(someone)
        assert client.post(f"/experiments/{experiment.id}/annotate/", {"notes": "x"}).status_code == 403
        assert client.post(f"/runs/{run.id}/annotate/", {"notes": "x"}).status_code == 403
        assert "annotate" not in client.get(f"/experiments/{experiment.id}/").content.decode()
    assert api.patch(f"/api/experiments/{experiment.id}/", {"notes": "x"}, format="json").status_code == 403
    experiment.refresh_from_db()
    assert experiment.notes == ""
    client.force_login(UserFactory(username="root", is_staff=True))
    assert client.post(f"/runs/{run.id}/annotate/", {"notes": "by an admin"}).status_code == 302


def test_the_api_patches_notes_and_tags_and_nothing_else(api, user):
    experiment = ExperimentFactory(created_by=user)
    run = done_run(experiment, recovery_seconds=1.25)
    answer = api.patch(f"/api/runs/{run.id}/", {"tags": ["rerun"], "recovery_seconds": 0.1}, format="json")
    assert answer.status_code == 200 and answer.json()["tags"] == ["rerun"]
    run.refresh_from_db()
    assert run.recovery_seconds == 1.25  # a measured value never changes through the API
    answer = api.patch(
        f"/api/experiments/{experiment.id}/", {"notes": "asked", "name": "renamed"}, format="json"
    )
    assert answer.json()["notes"] == "asked" and answer.json()["name"] == experiment.name
    assert api.put(f"/api/experiments/{experiment.id}/", {"notes": "x"}, format="json").status_code == 405
    assert api.get("/api/runs/", {"tag": "rerun"}).json()["count"] == 1
    bad = api.patch(f"/api/runs/{run.id}/", {"tags": ["a,b"]}, format="json")
    assert bad.status_code == 400 and "tags" in bad.json()


def test_the_api_list_counts_each_experiment_s_runs_and_leaves_them_to_the_detail(api, history):
    sweep = Experiment.objects.get(pk=history["MyRocks sweep"])
    RunFactory(experiment=sweep, engine="innodb", status=RunStatus.FAILED)
    RunFactory(experiment=sweep, engine="innodb", status=RunStatus.QUEUED)
    listed = {e["id"]: e for e in api.get("/api/experiments/").json()["results"]}[sweep.pk]
    assert "runs" not in listed
    counts = [listed[f"runs_{state}"] for state in ("done", "failed", "queued", "running", "cancelled")]
    assert listed["run_count"] == 4 and counts == [2, 1, 1, 0, 0]
    assert sorted(listed["engines"]) == ["innodb", "rocksdb"]
    assert len(api.get(f"/api/experiments/{sweep.pk}/").json()["runs"]) == 4
