"""What a series may be: schedules that mean what cron means (and are refused when they never
fire or fire too often), names a firing can carry, owners who may still make experiments, and
every change on the audit trail."""

from datetime import UTC, datetime, timedelta

import pytest
from auditlog.models import LogEntry
from django.utils import timezone

from experiments.engines import RUNNABLE_ENGINES
from experiments.models import Experiment, Series, Triage
from experiments.roles import EXPERIMENTER_GROUP
from experiments.schedule import ScheduleError, next_after, shortest_gap
from experiments.services import series as series_service

from .factories import ChangePointFactory
from .test_series import DEFINITION

TUESDAY = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)


def test_a_day_of_the_month_and_a_day_of_the_week_fire_on_either_as_in_cron():
    # the 1st of the month or a Monday: Monday 30 November, then Tuesday 1 December
    first = next_after("0 0 1 * 1", TUESDAY)
    assert (first, next_after("0 0 1 * 1", first)) == (
        datetime(2026, 11, 30, tzinfo=UTC),
        datetime(2026, 12, 1, tzinfo=UTC),
    )


def test_two_moments_in_one_hour_both_fire():
    first = next_after("0,30 2 * * *", TUESDAY)
    assert next_after("0,30 2 * * *", first) == first + timedelta(minutes=30)


@pytest.mark.parametrize("schedule", ["0 0 30 2 *", "0 0 31 4 *"])
def test_a_day_that_never_comes_is_refused_with_400(schedule, local_host, api):
    answer = api.post(
        "/api/series/", {"name": "never", "definition": DEFINITION, "schedule": schedule}, format="json"
    )
    assert answer.status_code == 400 and "bad day-of-month" in answer.json()["schedule"][0]


@pytest.mark.parametrize("schedule", ["* * * * *", "*/10 * * * *", "0,1 2 * * *"])
def test_a_series_may_not_fire_more_often_than_the_minimum(schedule, local_host, user, settings):
    settings.SERIES_MIN_INTERVAL_S = 3600
    with pytest.raises(series_service.DefinitionError) as refused:
        series_service.create_series(
            {"name": "often", "definition": DEFINITION, "schedule": schedule}, user=user
        )
    assert "a series may fire at most every 1 h" in refused.value.errors["schedule"][0]


def test_hourly_is_the_default_minimum():
    assert shortest_gap("@hourly", TUESDAY) == timedelta(hours=1)
    with pytest.raises(ScheduleError):
        next_after("@minutely", TUESDAY)


def test_a_name_the_experiments_refuse_is_refused_for_the_series_at_once(local_host, user):
    with pytest.raises(series_service.DefinitionError) as refused:
        series_service.create_series(
            {"name": "Bob's nightly redo test", "definition": DEFINITION, "schedule": "@nightly"}, user=user
        )
    assert "letters, digits, spaces" in refused.value.errors["name"][0]
    assert not Series.objects.exists()


def test_the_longest_name_a_series_may_have_still_names_its_firings(local_host, user):
    series = series_service.create_series(
        {"name": "n" * 150, "definition": DEFINITION, "schedule": "@nightly"}, user=user
    )
    Series.objects.filter(pk=series.pk).update(next_firing_at=timezone.now() - timedelta(minutes=1))
    (experiment_id,) = series_service.fire_due_series()
    assert Experiment.objects.get(pk=experiment_id).name.startswith("n" * 150 + " ")


@pytest.mark.parametrize(
    "change, reason", [("demoted", "no longer has the experimenter role"), ("deactivated", "was deactivated")]
)
def test_a_series_whose_owner_may_no_longer_experiment_is_paused_with_why(change, reason, local_host, user):
    series = series_service.create_series(
        {"name": "nightly", "definition": DEFINITION, "schedule": "@nightly"}, user=user
    )
    if change == "demoted":
        user.groups.remove(user.groups.get(name=EXPERIMENTER_GROUP))
    else:
        user.is_active = False
        user.save()
    Series.objects.filter(pk=series.pk).update(next_firing_at=timezone.now() - timedelta(minutes=1))
    assert series_service.fire_due_series() == []
    series.refresh_from_db()
    assert not series.enabled and f"paused: its owner dba {reason}" in series.last_error
    assert not Experiment.objects.exists()
    entry = LogEntry.objects.get_for_object(series).filter(additional_data__action__startswith="paused").get()
    assert reason in entry.additional_data["action"]


def test_series_and_triage_are_on_the_audit_trail_with_who(local_host, user, api):
    made = api.post(
        "/api/series/", {"name": "audited", "definition": DEFINITION, "schedule": "@nightly"}, format="json"
    )
    series = Series.objects.get(pk=made.json()["id"])
    api.patch(f"/api/series/{series.pk}/", {"schedule": "0 3 * * *", "enabled": False}, format="json")
    entries = list(LogEntry.objects.get_for_object(series).order_by("timestamp"))
    assert [e.action for e in entries] == [LogEntry.Action.CREATE, LogEntry.Action.UPDATE]
    assert all(e.actor == user for e in entries)
    assert entries[1].changes_dict["schedule"] == ["@nightly", "0 3 * * *"]
    assert entries[1].changes_dict["enabled"] == ["True", "False"]

    point = ChangePointFactory(series=series)
    api.patch(f"/api/change-points/{point.pk}/", {"triage": Triage.ACKNOWLEDGED}, format="json")
    triaged = LogEntry.objects.get_for_object(point).filter(action=LogEntry.Action.UPDATE).get()
    assert triaged.actor == user and triaged.changes_dict["triage"] == [Triage.NEW, Triage.ACKNOWLEDGED]


def test_the_series_schema_says_what_the_api_checks():
    """The write serializer documents and validates alike: its constraints are in the schema."""
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    written = schema["components"]["schemas"]["SeriesWriteRequest"]
    fields = written["properties"]
    assert set(written["required"]) == {"name", "definition", "schedule"}
    assert fields["name"]["maxLength"] == 150 and fields["name"]["pattern"].startswith("^[A-Za-z0-9")
    assert fields["alert_emails"]["maxItems"] == series_service.MAX_ADDRESSES
    assert fields["alert_webhooks"]["items"]["format"] == "uri"
    assert (fields["alert_threshold"]["minimum"], fields["alert_threshold"]["maximum"]) == (0.001, 10)
    # the definition's own schema: its fields, closed, with their enums and ranges
    definition = fields["definition"]
    assert definition["type"] == "object" and definition["additionalProperties"] is False
    assert definition["properties"]["engines"]["items"]["enum"] == list(RUNNABLE_ENGINES)
    assert definition["properties"]["workload"]["properties"]["threads"]["maximum"] == 256
    assert written["additionalProperties"] is False  # the service refuses fields it does not know


@pytest.mark.parametrize(
    "change, field",
    [
        ({"name": "n" * 151}, "name"),
        ({"name": "Bob's"}, "name"),
        ({"definition": ["not", "an", "object"]}, "definition"),
        ({"schedule": "x" * 101}, "schedule"),
        ({"alert_threshold": "high"}, "alert_threshold"),
        ({"alert_threshold": 11}, "alert_threshold"),
        ({"alert_emails": [f"dba{n}@example.com" for n in range(11)]}, "alert_emails"),
        ({"alert_webhooks": ["not a url"]}, "alert_webhooks"),
    ],
)
def test_what_the_schema_forbids_is_refused_with_the_field_named(change, field, local_host, user, api):
    body = {"name": "checked", "definition": DEFINITION, "schedule": "@nightly", **change}
    answer = api.post("/api/series/", body, format="json")
    assert answer.status_code == 400 and field in answer.json(), answer.json()
    series = series_service.create_series(
        {"name": "patched", "definition": DEFINITION, "schedule": "@nightly"}, user=user
    )
    patched = api.patch(f"/api/series/{series.pk}/", change, format="json")
    assert patched.status_code == 400 and field in patched.json(), patched.json()
