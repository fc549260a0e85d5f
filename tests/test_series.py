"""Recurring series: schedules, firings (once, never twice), change points in a history, triage,
alerts through the outbox (a real HTTP server for the webhook, Django's mail outbox), the API and
the CLI. The history here is of stored runs with known values; tests/test_series_history.py makes
one of real runs."""

import json
import random
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest
from django.conf import settings
from django.core import mail
from django.db import IntegrityError, connection
from django.utils import timezone

from experiments.analysis.series import Firing, change_points, differences
from experiments.definition import DefinitionError
from experiments.models import (
    ChangePoint,
    DeliveryStatus,
    Experiment,
    Notification,
    Run,
    RunStatus,
    Series,
    Triage,
)
from experiments.schedule import ScheduleError, next_after
from experiments.services import series as series_service
from experiments.services.runs import refresh_experiment_status

from .conftest import queued_messages
from .factories import ExperimentFactory, RunFactory, UserFactory
from .test_client import run_cli

DEFINITION = {
    "name": "nightly",
    "hosts": ["local"],
    "engines": ["innodb"],
    "workload": {"name": "oltp_write_only", "tables": 1, "table_size": 1000, "events": 500},
    "repetitions": 2,
}
FACTS = {"os": "Debian GNU/Linux 12", "kernel": "6.1", "disk": {"free_bytes": 1}}


@pytest.mark.parametrize(
    "expression, after, expected",
    [
        ("@nightly", datetime(2026, 11, 24, 18, 30, tzinfo=UTC), datetime(2026, 11, 25, 2, 0, tzinfo=UTC)),
        ("@weekly", datetime(2026, 11, 24, 18, 30, tzinfo=UTC), datetime(2026, 11, 30, 2, 0, tzinfo=UTC)),
        (
            "*/15 * * * *",
            datetime(2026, 11, 24, 18, 30, tzinfo=UTC),
            datetime(2026, 11, 24, 18, 45, tzinfo=UTC),
        ),
        # on the moment itself: the next one, not the same
        ("0 2 * * *", datetime(2026, 11, 25, 2, 0, tzinfo=UTC), datetime(2026, 11, 26, 2, 0, tzinfo=UTC)),
    ],
)
def test_the_next_firing_of_a_schedule(expression, after, expected):
    assert next_after(expression, after) == expected


@pytest.mark.parametrize("expression", ["", "nightly", "61 * * * *", "* * * *", "0 2 * * * *", 5, None])
def test_a_schedule_that_is_no_cron_expression_is_refused_with_why(expression):
    with pytest.raises(ScheduleError, match="five fields|cron expression|bad minute"):
        next_after(expression, datetime(2026, 11, 24, tzinfo=UTC))


def test_a_series_is_checked_field_by_field_and_nothing_is_stored_when_one_is_bad(local_host, user):
    with pytest.raises(DefinitionError) as refused:
        series_service.create_series(
            {
                "name": "",
                "definition": {**DEFINITION, "engines": ["oracle"]},
                "schedule": "every night",
                "alert_emails": ["dba@example.com", "not an address"],
                "alert_webhooks": ["ftp://example.com/hook"],
                "alert_threshold": 0,
            },
            user=user,
        )
    errors = refused.value.errors
    assert set(errors) >= {
        "name",
        "definition.engines",
        "schedule",
        "alert_emails",
        "alert_webhooks",
        "alert_threshold",
    }
    assert "not an address" in errors["alert_emails"][0] and "ftp://" in errors["alert_webhooks"][0]
    assert Series.objects.count() == 0


def test_firings_missed_while_beat_was_down_run_once_and_never_twice(
    local_host, user, django_capture_on_commit_callbacks
):
    series = series_service.create_series(
        {"name": "n", "definition": DEFINITION, "schedule": "@nightly"}, user=user
    )
    # beat was down for three nights
    missed = timezone.now() - timedelta(days=3)
    Series.objects.filter(pk=series.pk).update(next_firing_at=missed)
    first = series_service.fire_due_series()
    again = series_service.fire_due_series()
    series.refresh_from_db()
    assert len(first) == 1 and again == []
    experiment = Experiment.objects.get(pk=first[0])
    assert experiment.series == series and experiment.fired_for == missed
    assert experiment.runs.count() == 2 and experiment.created_by == user
    assert series.next_firing_at > timezone.now() and series.next_firing_at == next_after(
        "@nightly", series.next_firing_at - timedelta(days=1)
    )
    # the database itself refuses a second experiment for one scheduled moment
    with pytest.raises(IntegrityError):
        ExperimentFactory(series=series, fired_for=missed)


def test_a_firing_whose_host_is_gone_is_said_on_the_series_and_the_next_one_is_tried(local_host, user):
    series = series_service.create_series(
        {"name": "n", "definition": DEFINITION, "schedule": "@hourly"}, user=user
    )
    local_host.active = False
    local_host.save()
    Series.objects.filter(pk=series.pk).update(next_firing_at=timezone.now() - timedelta(minutes=5))
    assert series_service.fire_due_series() == []
    series.refresh_from_db()
    assert "refused" in series.last_error and "local" in series.last_error
    assert series.next_firing_at > timezone.now() and not Experiment.objects.exists()


def test_a_firing_never_probes_a_host_inside_its_series_lock_and_goes_by_the_builds_known(local_host, user):
    """The series' row is locked while it fires: a build the host's last probe does not list is
    refused with what is known, even for an admin's series, and the host is not reached."""
    user.is_staff = True  # an admin's own request would probe the host again
    user.save()
    local_host.facts = {"server_builds": [{"name": "system", "path": "/usr/sbin/mariadbd", "version": "x"}]}
    local_host.save()
    definition = {**DEFINITION, "parameters": {"server_build": ["mariadb-11.8"]}}
    series = series_service.create_series(
        {"name": "n", "definition": definition, "schedule": "@hourly"}, user=user
    )
    Series.objects.filter(pk=series.pk).update(next_firing_at=timezone.now() - timedelta(minutes=5))
    assert series_service.fire_due_series() == []
    series.refresh_from_db()
    assert "has no server build mariadb-11.8 (its last probe listed: system)" in series.last_error
    local_host.refresh_from_db()
    assert local_host.last_seen is None  # not probed


def nightly(name: str, **fields) -> Series:
    """A series of DEFINITION fired nightly from now, with the fields a test gives it."""
    return Series.objects.create(
        name=name, definition=DEFINITION, schedule="@nightly", next_firing_at=timezone.now(), **fields
    )


def history_of(
    series: Series, medians: list[float], spread: float = 0.05, runs: int = 3, seed: int = 7
) -> list[Experiment]:
    """A stored history: one finished experiment per firing, `runs` runs each around its median."""
    rng = random.Random(seed)
    start = datetime(2026, 1, 1, 2, 0, tzinfo=UTC)
    firings = []
    for index, value in enumerate(medians):
        experiment = ExperimentFactory(
            series=series, fired_for=start + timedelta(days=index), status="done", definition=DEFINITION
        )
        for repetition in range(runs):
            RunFactory(
                experiment=experiment,
                repetition=repetition + 1,
                status=RunStatus.DONE,
                recovery_seconds=value * (1 + rng.uniform(-spread, spread)),
                workload_tps=1000 * (1 + rng.uniform(-spread, spread)),
                server_version="10.11.19-MariaDB",
                host_facts=FACTS,
            )
        firings.append(experiment)
    return firings


def test_a_step_is_found_at_its_firing_measured_and_alerted_once(
    user, webhook, django_capture_on_commit_callbacks, broker
):
    url, received = webhook
    series = nightly(
        "step",
        created_by=user,
        alert_emails=["dba@example.com"],
        alert_webhooks=[url],
    )
    experiments = history_of(series, [10.0] * 6 + [30.0] * 6)
    with django_capture_on_commit_callbacks(execute=True):
        new = series_service.refresh_change_points(series.pk)
    assert [(p.metric, p.firing_index) for p in new] == [("recovery_seconds", 7)]
    point = new[0]
    assert point.experiment_id == experiments[6].pk and point.worse
    assert (
        point.ratio_low < 3 < point.ratio_high
        and abs(point.before_median - 10) < 1
        and abs(point.after_median - 30) < 2
    )
    # two alerts queued (one per address), each sent by its task
    # on the alerts' own queue: a slow target never holds a slot a host's driver needs
    assert Notification.objects.filter(change_point=point).count() == 2
    assert queued_messages(broker, settings.CELERY_ALERTS_QUEUE) == 2 and queued_messages(broker) == 0
    for notification in Notification.objects.all():
        assert series_service.send_notification(notification.pk) == DeliveryStatus.SENT
    [message] = mail.outbox
    assert (
        message.to == ["dba@example.com"]
        and "from firing 7" in message.subject
        and "x (95% CI" in message.subject
    )
    assert f"/series/{series.pk}/#change-point-{point.pk}" in mail.outbox[0].body
    assert (
        len(received) == 1
        and received[0]["metric"] == "recovery_seconds"
        and received[0]["firing_index"] == 7
    )
    assert received[0]["ratio_ci"][0] < 3 < received[0]["ratio_ci"][1]
    # searched again (a task that ran twice, or the next firing): no new point, nothing sent again
    with django_capture_on_commit_callbacks(execute=True):
        assert series_service.refresh_change_points(series.pk) == []
    for notification in Notification.objects.all():
        assert series_service.send_notification(notification.pk) == DeliveryStatus.SENT
    assert len(mail.outbox) == 1 and len(received) == 1 and ChangePoint.objects.count() == 1


def test_a_history_without_a_step_has_no_change_point(user):
    series = nightly("flat")
    history_of(series, [10.0] * 14, spread=0.15)
    assert series_service.refresh_change_points(series.pk) == []


def test_a_search_of_an_older_history_that_ends_last_does_not_undo_the_newer_one(user):
    # Two firings end close together; the search the first one sent reads the history before the
    # second's runs are in it and ends after the second's search stored its answer.
    series = nightly("out of order")
    history_of(series, [10.0] * 6 + [30.0] * 6)
    [point] = series_service.refresh_change_points(series.pk)
    newer = timezone.now() + timedelta(seconds=30)  # the second search read the history then
    Series.objects.filter(pk=series.pk).update(analysed_at=newer)
    # the older search sees a history without the step (here: the same runs, flattened)
    Run.objects.filter(experiment__series=series).update(recovery_seconds=10.0, downtime_seconds=10.5)
    assert series_service.refresh_change_points(series.pk) == []
    assert list(ChangePoint.objects.values_list("pk", flat=True)) == [point.pk]  # kept as it was
    series.refresh_from_db()
    assert series.analysed_at == newer


def test_a_better_metric_is_found_but_not_alerted(user, webhook):
    url, received = webhook
    series = nightly(
        "faster",
        alert_webhooks=[url],
    )
    history_of(series, [30.0] * 6 + [10.0] * 6)
    [point] = series_service.refresh_change_points(series.pk)
    assert not point.worse and point.ratio < 0.5 and not Notification.objects.exists()


def test_an_unreachable_webhook_is_tried_again_then_failed_with_the_reason(user):
    series = nightly(
        "hook",
        alert_webhooks=["http://127.0.0.1:9/nothing-listens"],
    )
    history_of(series, [10.0] * 6 + [30.0] * 6)
    series_service.refresh_change_points(series.pk)
    notification = Notification.objects.get()
    statuses = [series_service.send_notification(notification.pk) for _ in range(series_service.MAX_ATTEMPTS)]
    notification.refresh_from_db()
    assert statuses[:-1] == ["pending"] * (series_service.MAX_ATTEMPTS - 1) and statuses[-1] == "failed"
    # viewers read that it failed and where; the exception is for the owner and admins
    assert notification.error == "could not deliver to 127.0.0.1"
    assert "Connection" in notification.error_detail
    assert notification.attempts == series_service.MAX_ATTEMPTS


def test_what_differed_names_the_build_the_settings_and_the_host():
    before = Firing(1, None, "done", DEFINITION, ["system"], ["10.11.19"], ["local"], FACTS, {})
    after = Firing(
        2,
        None,
        "done",
        {**DEFINITION, "workload": {**DEFINITION["workload"], "events": 1500}},
        ["candidate"],
        ["11.4.2"],
        ["local"],
        {**FACTS, "kernel": "6.12", "disk": {"free_bytes": 5}},
        {},
    )
    assert differences(before, after) == [
        "server build: system -> candidate",
        "server version: 10.11.19 -> 11.4.2",
        "setting workload.events: 500 -> 1500",
        "host fact kernel: 6.1 -> 6.12",
    ]


def test_fewer_than_four_firings_are_not_searched():
    firings = [Firing(i, None, "done", {}, values={"recovery_seconds": [v]}) for i, v in enumerate([1, 1, 9])]
    assert change_points(firings, "recovery_seconds") == []


def test_a_firing_that_ends_asks_for_its_series_to_be_searched(
    user, broker, django_capture_on_commit_callbacks
):
    series = nightly("s")
    experiment = ExperimentFactory(series=series, fired_for=timezone.now())
    RunFactory(experiment=experiment, status=RunStatus.DONE)
    with django_capture_on_commit_callbacks(execute=True):
        refresh_experiment_status(experiment.pk)
        refresh_experiment_status(experiment.pk)  # unchanged: nothing more is sent
    message = json.loads(broker.lindex(series_service.settings.CELERY_TASK_DEFAULT_QUEUE, 0))
    assert queued_messages(broker) == 1 and message["headers"]["task"] == "workers.tasks.analyse_series_task"


def test_triage_needs_a_reason_for_expected_and_the_owner_or_an_admin(api, user):
    series = nightly("t", created_by=user)
    history_of(series, [10.0] * 6 + [30.0] * 6)
    [point] = series_service.refresh_change_points(series.pk)
    refused = api.patch(f"/api/change-points/{point.pk}/", {"triage": "expected"}, format="json")
    assert refused.status_code == 400 and "note" in refused.json()
    done = api.patch(
        f"/api/change-points/{point.pk}/",
        {"triage": "expected", "note": "events tripled on purpose"},
        format="json",
    )
    assert (
        done.status_code == 200 and done.json()["triage"] == "expected" and done.json()["triaged_by"] == "dba"
    )
    other = UserFactory(username="someone-else")
    api.force_authenticate(other)
    assert (
        api.patch(f"/api/change-points/{point.pk}/", {"triage": "acknowledged"}, format="json").status_code
        == 403
    )
    point.refresh_from_db()
    assert point.triage == Triage.EXPECTED and point.note == "events tripled on purpose"


def test_a_change_point_goes_from_acknowledged_to_fixed_and_a_false_alarm_needs_its_reason(api, user):
    series = nightly("t", created_by=user)
    history_of(series, [10.0] * 6 + [30.0] * 6)
    [point] = series_service.refresh_change_points(series.pk)
    url = f"/api/change-points/{point.pk}/"
    assert api.patch(url, {"triage": "acknowledged"}, format="json").json()["triage"] == "acknowledged"
    assert api.patch(url, {"triage": "fixed"}, format="json").json()["triage"] == "fixed"
    refused = api.patch(url, {"triage": "false_alarm"}, format="json")
    assert refused.status_code == 400 and "noise" in refused.json()["note"][0]
    assert api.patch(url, {"triage": "regression"}, format="json").status_code == 400  # the old state
    point.refresh_from_db()
    assert point.triage == Triage.FIXED


def test_the_api_lists_series_and_answers_points_and_change_points(api, user, local_host):
    made = api.post(
        "/api/series/", {"name": "api", "definition": DEFINITION, "schedule": "@weekly"}, format="json"
    )
    assert made.status_code == 201 and made.json()["definition"]["workload"]["events"] == 500
    bad = api.post(
        "/api/series/", {"name": "bad", "definition": DEFINITION, "schedule": "weekly"}, format="json"
    )
    assert bad.status_code == 400 and "schedule" in bad.json()
    series = Series.objects.get(name="api")
    history_of(series, [10.0] * 6 + [30.0] * 6)
    series_service.refresh_change_points(series.pk)
    listed = api.get("/api/series/").json()
    assert [s["name"] for s in listed["results"]] == ["api"] and listed["results"][0]["firings"] == 12
    detail = api.get(f"/api/series/{series.pk}/").json()
    assert len(detail["points"]) == 12 and detail["points"][6]["index"] == 7
    assert detail["points"][0]["medians"]["recovery_seconds"] == pytest.approx(10, rel=0.06)
    assert [(c["metric"], c["firing_index"]) for c in detail["change_points"]] == [("recovery_seconds", 7)]
    changed = api.patch(
        f"/api/series/{series.pk}/", {"schedule": "0 3 * * *", "alert_threshold": 0.25}, format="json"
    )
    assert changed.status_code == 200 and changed.json()["next_firing_at"].endswith("03:00:00Z")


@pytest.mark.django_db(transaction=True)
def test_the_client_prints_a_series_change_points(live_server, user):
    from experiments.services.tokens import new_token

    series = nightly("cli")
    history_of(series, [10.0] * 6 + [30.0] * 6)
    series_service.refresh_change_points(series.pk)
    done = run_cli(live_server.url, new_token(user), "series", str(series.pk))
    assert done.returncode == 0, done.stderr
    assert "recovery_seconds" in done.stdout and "worse" in done.stdout and "new" in done.stdout
    assert "2026-01-07 02:00" in done.stdout  # the 7th firing's scheduled moment


@pytest.mark.django_db(transaction=True)
def test_alerts_of_one_series_go_out_side_by_side(webhook):
    """A worker sending one alert holds the series' rows it read; another alert of the same
    series is sent meanwhile, not skipped as taken."""
    url, received = webhook
    series = nightly(
        "two",
        alert_webhooks=[url],
    )
    history_of(series, [10.0] * 6 + [30.0] * 6)
    series_service.refresh_change_points(series.pk)
    notification = Notification.objects.get()
    db = connection.settings_dict
    with psycopg.connect(dbname=db["NAME"], user=db["USER"], host=db["HOST"], port=db["PORT"]) as other:
        other.execute("SELECT 1 FROM experiments_series WHERE id = %s FOR UPDATE", (series.pk,))
        other.execute("SELECT 1 FROM experiments_changepoint WHERE series_id = %s FOR UPDATE", (series.pk,))
        assert series_service.send_notification(notification.pk) == DeliveryStatus.SENT
    assert len(received) == 1


def test_a_change_found_on_disturbed_runs_says_so_among_its_differences():
    values = [1.0] * 6 + [3.0] * 6
    firings = [
        Firing(i, None, "done", {}, values={"recovery_seconds": [v, v, v]}, runs=3, disturbed=int(i == 7))
        for i, v in enumerate(values)
    ]
    (point,) = change_points(firings, "recovery_seconds")
    assert point.index == 6
    assert point.differences[-1].startswith("1 of 36 runs on either side were measured on a disturbed host")
    quiet = [Firing(f.experiment_id, None, "done", {}, values=f.values, runs=3) for f in firings]
    assert not any("disturbed" in line for line in change_points(quiet, "recovery_seconds")[0].differences)


def test_a_change_is_alerted_only_once_three_firings_after_it_agree(
    user, client, django_capture_on_commit_callbacks
):
    """A step in the last two firings is found but not confirmed: the page says how many more
    firings it needs and nothing is sent; the next firing confirms it and one alert goes."""
    series = nightly(
        "late step",
        created_by=user,
        alert_emails=["dba@example.com"],
    )
    history_of(series, [10.0] * 8 + [30.0] * 2)
    with django_capture_on_commit_callbacks(execute=True):
        (point,) = series_service.refresh_change_points(series.pk)
    assert (point.firing_index, point.firings_before, point.firings_after) == (9, 8, 2)
    assert not point.confirmed and point.needs_more_firings == 1
    assert not Notification.objects.exists()
    client.force_login(user)
    assert "needs 1 more firing to be confirmed" in client.get(f"/series/{series.pk}/").content.decode()
    # the next night agrees: confirmed, one alert; searched again, nothing more
    later = ExperimentFactory(series=series, fired_for=timezone.now(), status="done", definition=DEFINITION)
    for repetition in range(3):
        RunFactory(experiment=later, repetition=repetition + 1, status=RunStatus.DONE, recovery_seconds=30.0,
                   workload_tps=1000, server_version="10.11.19-MariaDB", host_facts=FACTS)  # fmt: skip
    for _ in range(2):
        with django_capture_on_commit_callbacks(execute=True):
            assert series_service.refresh_change_points(series.pk) == []
    point.refresh_from_db()
    assert point.confirmed and point.firings_after == 3
    assert Notification.objects.filter(change_point=point).count() == 1


def test_generated_nightly_histories_give_the_change_points_written_in_them():
    """24 firings of 3 runs, 8% noise (make bench prints the same over 100 of each): a temporary
    x1.3 regression is found at both edges, one step gets one change point, a flat history and a
    single bad night none."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
    from bench_series import SHAPES, found_as_written

    temporary, step, night, flat = SHAPES
    assert sum(found_as_written(temporary, seed) for seed in range(10)) >= 9
    assert sum(found_as_written(step, seed) for seed in range(20)) >= 19
    assert sum(found_as_written(flat, seed) for seed in range(20)) >= 19
    assert sum(found_as_written(night, seed) for seed in range(20)) >= 19


def test_a_step_followed_by_a_smaller_shift_is_confirmed_by_the_nights_after_it(
    user, django_capture_on_commit_callbacks
):
    """x3 at the seventh firing, then x1.1 one night later: two change points, and the first has
    one firing on its side up to the second. The nights after it all stand on its after side, so
    it is confirmed and alerted (a real series' tripled redo had waited forever for more firings)."""
    series = nightly(
        "step, then a shift",
        created_by=user,
        alert_emails=["dba@example.com"],
    )
    history_of(series, [10.0] * 6 + [30.0] + [33.0] * 5, spread=0.01)
    with django_capture_on_commit_callbacks(execute=True):
        points = series_service.refresh_change_points(series.pk)
    step, shift = sorted((p for p in points if p.metric == "recovery_seconds"), key=lambda p: p.firing_index)
    assert (step.firing_index, step.firings_after, step.firings_agreeing) == (7, 1, 6), points
    assert step.confirmed and step.needs_more_firings == 0
    assert Notification.objects.filter(change_point=step).count() == 1
    assert shift.firing_index == 8 and 1.05 < shift.ratio < 1.15  # under the 10% threshold: not sent
    assert not Notification.objects.filter(change_point=shift).exists()


def test_the_nights_that_agree_with_a_change_stop_at_the_first_that_does_not():
    """Nearer the after median than the before one counts; the first night back ends the count,
    so a change that went back is not confirmed by the nights after its return."""
    from experiments.analysis.series import _agreeing

    assert _agreeing([30, 33, 33, 33], before=10, after=30) == 4  # past a smaller shift
    assert _agreeing([30, 30, 10, 30, 30], before=10, after=30) == 2  # two bad nights, then back
    assert _agreeing([19, 30], before=10, after=30) == 0  # the midpoint's near side is the before
    assert _agreeing([5, 6, 9], before=10, after=5) == 2  # a metric that went down


def test_stored_change_points_stay_as_confirmed_as_they_were_after_the_migration(user):
    """0037 counts a stored point's agreeing firings as its firings after, until the next search."""
    import importlib

    from django.apps import apps

    migration = importlib.import_module("experiments.migrations.0037_change_point_firings_agreeing")
    series = nightly("stored", created_by=user)
    (experiment,) = history_of(series, [10.0])
    point = ChangePoint.objects.create(
        series=series, metric="recovery_seconds", experiment=experiment, firing_index=7, before_median=10,
        after_median=30, ratio=3.0, worse=True, firings_before=6, firings_after=4,
    )  # fmt: skip
    assert not point.confirmed  # the field's default, before the migration's step
    migration.agreeing_as_before(apps, None)
    point.refresh_from_db()
    assert point.firings_agreeing == 4 and point.confirmed
