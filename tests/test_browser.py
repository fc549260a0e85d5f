"""A person's path through the pages, in Debian's Chromium driven by Playwright."""

from pathlib import Path

import pytest

from experiments.models import LogImport, Run

from .conftest import ROOT
from .factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.mariadb, pytest.mark.django_db(transaction=True)]


def screenshot(page, name: str) -> Path:
    folder = ROOT / "test-artifacts"
    folder.mkdir(exist_ok=True)
    path = folder / name
    page.screenshot(path=str(path), full_page=True)
    return path


def plotted_run_ids(page, holder_id: str) -> list[int]:
    """The run ids behind the points Plotly drew in a chart (each point's customdata)."""
    return page.evaluate(
        "id => document.getElementById(id).data.flatMap(t => (t.customdata || []))", holder_id
    )


def drawn_charts(page, *holders: str) -> None:
    """Scroll to each chart, as a reader does, and wait until it is drawn: a page draws the charts
    off the screen when they come near it (static/js/charts.js)."""
    for holder in holders:
        page.locator(holder).scroll_into_view_if_needed()
        page.wait_for_selector(f"{holder} .main-svg")


def log_in(page, live_server):
    UserFactory(username="alice", password="correct horse battery")
    page.goto(f"{live_server.url}/experiments/")
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", "correct horse battery")
    page.click("button[type=submit]")
    page.wait_for_selector("text=Log out")


def test_bad_values_in_the_form_are_shown_next_to_their_fields(page, live_server, local_host):
    log_in(page, live_server)
    page.goto(f"{live_server.url}/experiments/new/")
    page.fill("input[name=name]", "bad sizes")
    page.fill("input[name=redo_log_size]", "64, 512M")
    page.click("text=Create and run")
    error = page.locator(".error[data-field=redo_log_size]")
    assert "unit" in error.inner_text()
    screenshot(page, "form-error.png")


def test_every_bad_field_of_the_form_is_shown_at_once_the_host_s_refusal_too(page, live_server, local_host):
    """Issue 68: a size, a build the host does not have and no repetitions, in one answer."""
    local_host.facts = {"server_builds": [{"name": "system", "path": "/usr/sbin/mariadbd", "version": "x"}]}
    local_host.save()
    log_in(page, live_server)
    page.goto(f"{live_server.url}/experiments/new/")
    page.fill("input[name=name]", "three bad fields")
    page.check("input[name=hosts][value=local]")
    page.fill("input[name=redo_log_size]", "64Q")
    page.fill("input[name=server_build]", "nosuch")
    page.fill("input[name=repetitions]", "0")
    page.click("text=Create and run")
    assert "is not a size" in page.locator(".error[data-field=redo_log_size]").inner_text()
    assert "has no server build nosuch" in page.locator(".error[data-field=server_build]").inner_text()
    assert "outside 1..20" in page.locator(".error[data-field=repetitions]").inner_text()
    assert page.locator("input[name=redo_log_size]").input_value() == "64Q"  # nothing typed is lost
    screenshot(page, "form-three-errors.png")


def test_create_an_experiment_through_the_form_and_see_the_chart(
    page, live_server, local_host, celery_worker_process
):
    log_in(page, live_server)
    page.click("text=New experiment")
    page.fill("input[name=name]", "Browser: two redo sizes")
    page.fill("input[name=redo_log_size]", "64M, 256M")
    page.fill("input[name=tables]", "2")
    page.fill("input[name=table_size]", "5000")
    page.fill("input[name=events]", "3000")
    page.click("text=Create and run")
    page.wait_for_url("**/experiments/*/")
    assert page.locator("tr.run-row").count() == 2
    # The page updates itself while runs go (no reload: the marker set now survives); the charts
    # fill in as runs finish.
    page.evaluate("window.notReloaded = true")
    page.wait_for_selector("tr.run-row[data-status=done] >> nth=1", timeout=600_000)
    page.wait_for_selector("#figure-redo .scatterlayer .point")
    assert page.evaluate("window.notReloaded") is True
    runs = sorted(
        int(i) for i in page.locator("tr.run-row").evaluate_all("rows => rows.map(r => r.dataset.run)")
    )
    assert sorted(plotted_run_ids(page, "figure-redo")) == runs  # recovery against redo: a point per run
    # Against redo log size: recovery and downtime per run (the medians carry no run id).
    assert sorted(plotted_run_ids(page, "figure-axis-redo_log_size")) == sorted(runs * 2)
    assert page.locator("tr.run-row[data-status=done]").count() == 2
    assert "2 of 2 runs finished" in page.locator("#experiment-progress").inner_text()
    screenshot(page, "experiment.png")
    page.locator("tr.run-row a").first.click()
    page.wait_for_selector("td[data-metric=recovery_seconds]")
    assert page.locator("td[data-metric=recovery_seconds]").inner_text() != "-"
    attempt = page.locator("tr[data-attempt='1']")
    assert "done" in attempt.inner_text() and "celery@" in attempt.inner_text()
    drawn_charts(page, "#samples-chart", "#timeline-chart")
    screenshot(page, "run.png")


def test_import_a_percona8_log_into_an_experiment_and_see_it_on_the_chart(page, live_server, tmp_path):
    from .factories import RunFactory
    from .samples import sample

    alice = UserFactory(username="alice", password="correct horse battery")
    live = RunFactory(
        status="done",
        redo_bytes=32_000_000,
        recovery_seconds=0.29,
        downtime_seconds=0.45,
        experiment__created_by=alice,  # runs are imported into an experiment of one's own
    )
    log = tmp_path / "greatsql-error.log"
    log.write_bytes(sample("mysql80_recovery.txt", "A"))
    log_in(page, live_server)
    page.click("text=Import")
    page.set_input_files("input[name=error_log]", str(log))
    page.fill("input[name=host_label]", "mgr07 bad label")
    page.click("button:text('Import')")
    assert "letters, digits" in page.locator(".error[data-field=host_label]").inner_text()
    screenshot(page, "import-form-error.png")
    page.set_input_files("input[name=error_log]", str(log))  # a browser does not keep files
    page.fill("input[name=host_label]", "mgr07.greatsql")
    page.fill("input[name=buffer_pool_size]", "2G")
    page.select_option("select[name=experiment]", str(live.experiment_id))
    page.click("button:text('Import')")
    page.wait_for_url(f"**/experiments/{live.experiment_id}/")
    rows = page.locator("tr.run-row")
    assert rows.count() == 2
    assert "mgr07.greatsql" in page.locator("table.runs").inner_text()
    page.wait_for_selector("#figure-redo .scatterlayer .point")
    imported = Run.objects.get(imported=True)
    assert sorted(plotted_run_ids(page, "figure-redo")) == sorted([live.id, imported.id])
    # the imported run is drawn with a square marker
    symbols = page.evaluate(
        "document.getElementById('figure-redo').data.flatMap(t => (t.marker && t.marker.symbol) || [])"
    )
    assert "square" in symbols
    screenshot(page, "import.png")
    # the imports have a home (issue 68): from the history and the import page, who, when, which
    # file and what it became; the history filters the experiments made of imported runs
    page.goto(f"{live_server.url}/experiments/")
    page.click("#imports-link")
    row = page.locator(f"#imports tr#import-{LogImport.objects.get(source_sha256=imported.source_sha256).id}")
    said = row.inner_text()
    assert "alice" in said and "mgr07.greatsql" in said and "greatsql-error.log" in said, said
    assert f"1 run in #{live.experiment_id}" in said, said
    row.locator("a").click()
    page.wait_for_url(f"**/experiments/{live.experiment_id}/")
    page.goto(f"{live_server.url}/imports/new/")
    page.click("#imports-link")
    page.wait_for_url("**/imports/")
    screenshot(page, "imports.png")


def test_a_stalled_run_is_said_on_its_experiment_page_beside_what_recovered(page, live_server):
    """A run whose restart stopped moving (runner/stall.py): the findings say it stalled, on which
    pool, at how much redo, against the most that pool recovered; the runs table shows it
    stalled with the runner's words; no recovery time is drawn for it."""
    import datetime

    from django.utils import timezone

    from experiments.models import RunStatus
    from experiments.services import refresh_experiment_status

    from .factories import RunFactory

    now = timezone.now()
    pool = {"buffer_pool_size": "256M", "redo_log_size": "1G", "insert_rate": 0}
    times = {"started_at": now - datetime.timedelta(seconds=30), "finished_at": now}
    recovered = RunFactory(
        status=RunStatus.DONE, parameters=pool, buffer_pool_bytes=256 << 20, redo_bytes=128 << 20,
        recovery_seconds=3.1, downtime_seconds=3.6, **times,
    )  # fmt: skip
    said = (
        "recovery stalled: nothing moved for 90 s, from 14 s into the restart (no reads or writes but to "
        "its own log, no new line in it); it wrote 2,417 lines like: Difficult to find free blocks in the "
        "buffer pool (21 search iterations)!"
    )
    stalled = RunFactory(
        experiment=recovered.experiment, status=RunStatus.STALLED, parameters=pool,
        buffer_pool_bytes=256 << 20, redo_bytes=320 << 20, error=said, **times,
    )  # fmt: skip
    refresh_experiment_status(recovered.experiment_id)
    log_in(page, live_server)
    page.goto(f"{live_server.url}/experiments/{recovered.experiment_id}/")
    findings = page.inner_text("#experiment-findings")
    assert (
        f"Run #{stalled.id} (InnoDB): recovery stalled with a 256 MiB buffer pool at about 320 MiB of redo"
        in findings
    ), findings
    assert f"The most redo InnoDB recovered on that pool here: 128 MiB (run #{recovered.id})" in findings
    assert "1 stalled (recovery stopped moving)" in page.inner_text("#experiment-progress")
    row = page.locator("tr", has_text="nothing moved for 90 s").first
    assert "stalled" in row.inner_text()
    # the redo chart draws it as a failed result: a dotted line at its redo, its legend says why
    page.wait_for_selector("#figure-redo .shapelayer path", state="attached")  # a line: no area
    legend = page.locator("#figure-redo .legendtext", has_text="recovery stalled").first
    drawn = f"recovery stalled, no time to draw (run #{stalled.id}: 256M pool, 320.0 MiB)"
    assert legend.text_content() == drawn
    screenshot(page, "experiment-stalled.png")


def test_the_runs_of_a_crash_sweep_are_told_apart_in_the_runs_table_before_they_finish(
    page, live_server, local_host
):
    """Issue 68: the runs table showed the same options for the 4M runs as for the 32M ones of a
    redo_bytes sweep until they finished: each row says its crash target."""
    from experiments import services

    from .test_definition import definition

    crash = {"method": "sigkill", "when": "at_redo_bytes", "redo_bytes": ["4M", "32M"]}
    swept = definition(engines=["innodb"], parameters={"redo_log_size": ["64M"]}, server_options={})
    experiment, _ = services.create_experiment({**swept, "crash": crash, "repetitions": 1})
    log_in(page, live_server)
    page.goto(f"{live_server.url}/experiments/{experiment.id}/")
    targets = page.locator("#experiment-runs td.crash-target").all_inner_texts()
    assert sorted(targets) == ["at 32M of redo", "at 4M of redo"], targets
    screenshot(page, "runs-crash-targets.png")


def test_explore_draws_a_recovery_phase_against_the_binlog_files(page, live_server):
    """Issue 68: seed 003's binlog / XA phase, charted on /explore/ (its Y offers every phase)."""
    from .factories import ExperimentFactory
    from .test_analysis import done_run

    experiment = ExperimentFactory()
    runs = [
        done_run(
            experiment,
            parameters={
                "buffer_pool_size": "128M",
                "redo_log_size": "64M",
                "insert_rate": 0,
                "binlog_files": files,
            },
            phases={"binlog_recovery": seconds},
        )
        for files, seconds in ((1, 0.02), (200, 0.4), (2000, 3.1))
    ]
    log_in(page, live_server)
    page.goto(f"{live_server.url}/explore/")
    page.select_option("select[name=x]", "binlog_files")
    page.select_option("select[name=y]", "phase_binlog_recovery_seconds")
    page.click("#explore-form button[type=submit]")
    page.wait_for_selector("#explore-chart .point")
    assert "binlog / XA recovery" in page.locator("#explore-chart .ytitle").text_content()
    assert sorted(plotted_run_ids(page, "explore-chart")) == sorted(run.id for run in runs)
    screenshot(page, "explore-binlog-phase.png")
