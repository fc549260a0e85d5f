"""A recurring series with a real history, in Debian's Chromium: twelve firings of real runs (a
private mariadbd crashed by the real worker), the definition's work tripled from the seventh
firing on. The change point is found at firing 7 (±1) with a ratio whose interval holds the
factor, the metrics the step does not move have none, the worker's own search alerts once per
change point (a real HTTP server takes the webhook), and the series page draws it all."""

import statistics
from datetime import UTC, datetime, timedelta

import pytest

from experiments.models import ChangePoint, DeliveryStatus, Experiment, Notification, Run, Series
from experiments.services import series as series_service

from .conftest import wait_for
from .factories import UserFactory
from .test_browser import log_in, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.mariadb, pytest.mark.django_db(transaction=True)]

EVENTS = 2000
FACTOR = 3
FIRINGS, STEP_AT = 12, 7


def definition(events: int) -> dict:
    return {
        "name": "nightly",
        "hosts": ["local"],
        "engines": ["innodb"],
        "parameters": {"buffer_pool_size": ["128M"], "redo_log_size": ["512M"]},
        "workload": {"name": "oltp_insert", "tables": 2, "table_size": 20000, "threads": 2, "events": events},
        "server_options": {"innodb_flush_log_at_trx_commit": [2]},  # the same redo, no fsync a commit
        "crash": {"method": "sigkill", "when": "after_workload"},
        "repetitions": 1,
    }  # fmt: skip


def test_twelve_real_firings_with_the_work_tripled_from_the_seventh(
    page,
    live_server,
    local_host,
    celery_worker_process,
    webhook,
):
    url, received = webhook
    user = UserFactory(username="alice", password="correct horse battery")  # log_in's user
    series = series_service.create_series(
        {"name": "nightly write-only", "definition": definition(EVENTS), "schedule": "@nightly",
         "alert_webhooks": [url], "alert_threshold": 0.25},
        user=user,
    )  # fmt: skip
    nights = [datetime(2026, 11, 1, 2, 0, tzinfo=UTC) + timedelta(days=i) for i in range(FIRINGS)]
    for number, night in enumerate(nights, start=1):
        if number == STEP_AT:  # the team triples the workload: the firings to come carry it
            series_service.update_series(series.pk, {"definition": definition(EVENTS * FACTOR)}, user=user)
        Series.objects.filter(pk=series.pk).update(next_firing_at=night)
        assert len(series_service.fire_due_series(now=night + timedelta(minutes=1))) == 1
    firings = Experiment.objects.filter(series=series)
    wait_for(
        lambda: not firings.exclude(status__in=("done", "partial", "failed", "cancelled")).exists(),
        900,
        "twelve firings to finish",
    )
    assert not firings.exclude(status="done").exists(), list(firings.values("status"))
    assert sorted(firings.values_list("fired_for", flat=True)) == nights
    # the worker searched the history as it stood once the last firing ended (analysed_at: when
    # the history was read; a search sent by an earlier firing may end later, having found less);
    # its alerts went out once each
    last_ended = max(firings.values_list("finished_at", flat=True))

    def searched_and_sent() -> bool:
        series.refresh_from_db(fields=["analysed_at"])
        return (
            series.analysed_at is not None
            and series.analysed_at >= last_ended
            and ChangePoint.objects.filter(series=series, metric="log_bytes_written").exists()
            and not Notification.objects.filter(status=DeliveryStatus.PENDING).exists()
        )

    try:
        wait_for(searched_and_sent, 120, "the worker's search and its alerts")
    except AssertionError as timed_out:  # say which part never came (a pending alert retries in 2 min)
        series.refresh_from_db(fields=["analysed_at"])
        state = {
            "analysed_at": series.analysed_at,
            "last firing ended": last_ended,
            "change points": list(
                ChangePoint.objects.filter(series=series).values_list("metric", "firing_index")
            ),
            "alerts": list(Notification.objects.values_list("status", "attempts", "error_detail")),
        }
        raise AssertionError(f"{timed_out}: {state}") from None
    runs = list(Run.objects.filter(experiment__series=series).order_by("experiment__fired_for"))
    # the definition's work really tripled from the seventh firing: sysbench's own count
    assert [r.rows_inserted for r in runs] == [EVENTS] * (STEP_AT - 1) + [EVENTS * FACTOR] * (
        FIRINGS - STEP_AT + 1
    )
    # the redo the workload wrote steps at the firing where the work changed; the redo of a run's
    # own background work (purge, flushing) may shift it again by a few per cent (x1.07 at the
    # next firing in a CI run, 2026-11-27): the machine's, under the alert threshold, alerting no one
    points = list(ChangePoint.objects.filter(series=series, metric="log_bytes_written"))
    (written,) = [p for p in points if abs(p.firing_index - STEP_AT) <= 1 and p.ratio > 2]
    assert written.worse
    assert all(max(p.ratio, 1 / p.ratio) < 1.25 for p in points if p != written), points
    # its ratio holds the runs' own: each run writes a fixed part of redo besides its inserts
    # (about 150 KB here), so three times the inserts give a little under three times the redo
    # Each side is the firings up to the neighbouring change point, as the search compared them.
    start = written.firing_index - 1
    before = statistics.median(r.log_bytes_written for r in runs[start - written.firings_before : start])
    after = statistics.median(r.log_bytes_written for r in runs[start : start + written.firings_after])
    if min(written.firings_before, written.firings_after) >= 2:
        # (kept to 3 decimals: a ratio at the interval's very edge, 2.5877 against 2.588, is in it)
        assert written.ratio_low - 0.001 <= after / before <= written.ratio_high + 0.001, (
            written.ratio_low,
            after / before,
        )
    else:  # a point at the next firing (a full suite, 2026-11-29) left one firing: no interval
        assert written.ratio_low is None and written.ratio == pytest.approx(after / before, rel=1e-3)
    assert 0.75 * FACTOR <= written.ratio <= FACTOR, [r.log_bytes_written for r in runs]
    assert any("workload.events: 2000 -> 6000" in line for line in written.differences), written.differences
    # the redo to replay steps there too; it also depends on where InnoDB's last checkpoint fell, so
    # it may move again between firings (a second change point there is the machine's, not ours)
    redo = ChangePoint.objects.filter(series=series, metric="redo_bytes")
    assert any(abs(p.firing_index - STEP_AT) <= 1 and p.worse for p in redo), list(redo.values())
    alerted = Notification.objects.filter(change_point__series=series)
    assert alerted.filter(change_point=written, status=DeliveryStatus.SENT).count() == 1
    assert not alerted.exclude(status=DeliveryStatus.SENT).exists()
    assert len(received) == alerted.count() and any(r["metric"] == "log_bytes_written" for r in received)
    # searched again: nothing new, nothing sent twice
    assert series_service.refresh_change_points(series.pk) == []
    assert len(received) == alerted.count()

    log_in(page, live_server)
    page.goto(f"{live_server.url}/series/{series.pk}/")
    page.wait_for_function("() => document.getElementById('series-log_bytes_written-chart').data")
    row = page.locator(f"#change-point-{written.pk}")
    assert "worse" in row.inner_text() and "workload.events: 2000 -> 6000" in row.inner_text()
    drawn = page.evaluate(
        "(() => { const c = document.getElementById('series-log_bytes_written-chart');"
        " return {points: c.data[0].y.length, lines: c.layout.shapes.length}; })()"
    )
    assert drawn == {"points": FIRINGS, "lines": len(points)}
    screenshot(page, "series.png")
    # triaged on the page: expected, with the reason
    row.locator("select[name=triage]").select_option("expected")
    row.locator("input[name=note]").fill("workload tripled on purpose")
    row.locator("button[type=submit]").click()
    page.wait_for_selector(f"#change-point-{written.pk}:has-text('workload tripled on purpose')")
    written.refresh_from_db()
    assert written.triage == "expected" and written.triaged_by == user
