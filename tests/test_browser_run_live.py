"""The run page of a live run, in Chromium: the workload's seconds charted while it runs (the
runner's samples come through the worker each second), then, once the run is done, the seconds
up to the crash with the crash marked and the restart's timeline."""

import pytest

from experiments.models import Run

from .conftest import wait_for
from .test_browser import drawn_charts, log_in, screenshot


@pytest.mark.browser
@pytest.mark.mariadb
@pytest.mark.django_db(transaction=True)
def test_the_run_page_charts_the_workload_live_then_the_crash_and_the_restart(
    page, live_server, api, local_host, celery_worker_process
):
    body = {
        "name": "live seconds",
        "hosts": ["local"],
        "engines": ["innodb"],
        "parameters": {"redo_log_size": ["256M"], "insert_rate": [300]},
        "workload": {
            "name": "oltp_insert",
            "tables": 1,
            "table_size": 5000,
            "threads": 2,
            "events": 0,
            "time_seconds": 60,
        },
        "crash": {"method": "sigkill", "when": "during_workload", "after_seconds": 12},
        "repetitions": 1,
    }
    created = api.post("/api/experiments/", body, format="json")
    assert created.status_code == 201, created.content
    run = Run.objects.get(experiment_id=created.json()["id"])
    wait_for(lambda: len(Run.objects.get(id=run.id).live_samples) >= 3, 300, "the first live samples")

    log_in(page, live_server)
    page.goto(f"{live_server.url}/runs/{run.id}/")
    assert "running" in page.locator("h1 + p").inner_text()
    page.wait_for_selector("#samples-chart .main-svg")
    live = page.locator("#samples-chart").inner_text()
    assert "The workload so far" in live and "checkpoint age" in live and "crash (kill -9)" not in live
    screenshot(page, "run-live.png")

    # The page reloads itself once the run is done: the seconds up to the crash, and the restart.
    page.wait_for_selector("#timeline-chart", state="attached", timeout=300_000)
    drawn_charts(page, "#samples-chart", "#timeline-chart")  # drawn as a reader scrolls to them
    assert "crash (kill -9)" in page.locator("#samples-chart").inner_text()
    assert "redo apply" in page.locator("#timeline-chart").inner_text()
    run.refresh_from_db()
    assert run.status == "done", run.error
    assert run.live_samples == [] and len(run.samples["t"]) >= 9
    assert 11 < run.samples["crash_at"] < 15
    screenshot(page, "run-done.png")
