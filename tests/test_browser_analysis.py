"""The analysis pages in Debian's Chromium: an experiment with live, imported and suspect runs,
/explore/ on each of the five axes, and /compare/ of two real experiments."""

import pytest

from experiments import services
from experiments.models import Experiment, Run, RunStatus
from experiments.services.imports import import_runs

from .conftest import wait_for
from .samples import samples
from .test_browser import log_in, plotted_run_ids, screenshot
from .test_imports import parameters, upload

pytestmark = [pytest.mark.browser, pytest.mark.mariadb, pytest.mark.django_db(transaction=True)]

# Small real runs: two engines, two repetitions each; the same definition twice can be compared.
DEFINITION = {
    "hosts": ["local"],
    "engines": ["innodb", "rocksdb"],
    "parameters": {"buffer_pool_size": ["64M"], "redo_log_size": ["64M"], "insert_rate": [0]},
    "workload": {"name": "oltp_write_only", "tables": 2, "table_size": 4000, "threads": 2, "events": 2500},
    "crash": {"method": "sigkill", "when": "after_workload"},
    "repetitions": 2,
}
AXES = {  # byte axes: the ticks say the unit (binary, "256 MiB")
    "redo_bytes": "redo to replay",
    "buffer_pool_size": "buffer pool",
    "redo_log_size": "redo log size",
    "insert_rate": "insert rate asked (rows/s)",
    "engine": "storage engine",
}


def finished(experiment: Experiment) -> bool:
    return not experiment.runs.exclude(status__in=RunStatus.finished()).exists()


def test_experiment_explore_and_compare_pages_on_real_runs(
    page, live_server, local_host, celery_worker_process
):
    log_in(page, live_server)
    first, _ = services.create_experiment({**DEFINITION, "name": "Browser: engines A"})
    page.goto(f"{live_server.url}/experiments/{first.id}/")
    assert "of 4 runs finished" in page.locator("#experiment-progress").inner_text()
    page.evaluate("window.notReloaded = true")
    page.wait_for_selector("tr.run-row[data-status=done] >> nth=3", timeout=600_000)
    assert page.evaluate("window.notReloaded") is True  # updated from JSON, not reloaded
    # the report's sentences are on the page too, brought in with the runs that finished
    found = page.locator("#experiment-findings ul.findings li").all_inner_texts()
    assert found and any("MyRocks" in line and "InnoDB" in line for line in found), found
    page.goto(f"{live_server.url}/experiments/{first.id}/report/")
    assert page.locator("#findings li").all_inner_texts() == found
    second, _ = services.create_experiment({**DEFINITION, "name": "Browser: engines B"})

    # Imported runs join the first experiment: glued excerpts of MySQL 8.0 logs (read as separate
    # starts), and a MySQL 5.5 recovery whose 130 MB of redo cannot fit the 1 MB log its importer
    # declared: suspect.
    glued = b"".join(samples("mysql80_recovery.txt").values())
    result = import_runs({"error_log": upload(glued)}, parameters(), experiment_id=first.id)
    mysql55 = samples("mysql55_56_percona_recovery.txt")["A"]
    import_runs({"error_log": upload(mysql55)}, parameters(redo_log_size="1M"), experiment_id=first.id)
    suspects = list(Run.objects.filter(experiment=first, suspect=True).values_list("id", flat=True))
    assert len(suspects) == 1
    imported = [run.id for run in result.runs if not run.suspect and run.recovery_seconds is not None]
    assert imported

    page.goto(f"{live_server.url}/experiments/{first.id}/")
    page.wait_for_selector("#figure-redo .scatterlayer .point")
    live_runs = list(Run.objects.filter(experiment=first, imported=False).values_list("id", flat=True))
    assert set(live_runs) <= set(plotted_run_ids(page, "figure-redo"))
    # Imported runs (no redo in those fragments) are charted against the parameters that vary.
    against_pool = plotted_run_ids(page, "figure-axis-buffer_pool_size")
    assert set(live_runs) | set(imported) <= set(against_pool)
    figures = page.evaluate("Array.from(document.querySelectorAll('.figure')).map(f => f.id)")
    assert not {i for figure in figures for i in plotted_run_ids(page, figure)} & set(suspects)
    assert page.locator("tr.run-row.suspect").count() == 1
    assert page.locator("table.summary tr.cell-row").count() >= 3  # InnoDB, MyRocks, imported
    assert "needs more repetitions" in page.locator("table.summary").inner_text()  # n = 2
    axis_titles = page.locator(".xtitle").evaluate_all("titles => titles.map(t => t.textContent)")
    assert {"redo to replay (MiB)", "buffer pool", "insert rate asked (rows/s)"} <= set(axis_titles)
    # byte axes count as the servers' settings do: binary units, on the ticks
    pool_ticks = page.locator("#figure-axis-buffer_pool_size .xtick").evaluate_all(
        "ticks => ticks.map(t => t.textContent)"
    )
    assert any(t.endswith(" MiB") or t.endswith(" GiB") for t in pool_ticks), pool_ticks
    screenshot(page, "experiment-analysis.png")

    def analysable_ids(x: str) -> set[int]:
        expected = Run.objects.filter(status="done", suspect=False, recovery_seconds__isnull=False)
        if x == "redo_bytes":
            expected = expected.filter(redo_bytes__isnull=False)
        return set(expected.values_list("id", flat=True))

    for x, title in AXES.items():
        # The second experiment's runs go on finishing meanwhile: every run done before the
        # request is plotted, and nothing that was not done by the time it is checked.
        done_before = analysable_ids(x)
        page.goto(f"{live_server.url}/explore/?x={x}&y=recovery_seconds&group=engine")
        page.wait_for_selector("#explore-chart .point")
        assert page.locator("#explore-chart .xtitle").text_content() == title
        plotted = plotted_run_ids(page, "explore-chart")
        assert len(plotted) == len(set(plotted))
        assert done_before <= set(plotted) <= analysable_ids(x)
        assert not set(plotted) & set(suspects)
        assert int(page.locator("#point-count").inner_text()) == len(plotted)
        screenshot(page, f"explore-{x}.png")
    page.check("input[name=include_suspect]")  # the form submits itself: the address changes
    page.wait_for_url("**include_suspect=true**")
    assert set(plotted_run_ids(page, "explore-chart")) & set(suspects)

    wait_for(lambda: finished(second), 600, "the second experiment's runs")
    page.goto(f"{live_server.url}/compare/?experiments={first.id},{second.id}")
    page.wait_for_selector("#compare-chart .point")
    findings = page.locator("#findings li").all_inner_texts()
    assert len(findings) == 4  # InnoDB and MyRocks cells, recovery and downtime each
    assert all(f"#{second.id}" in line for line in findings)
    bars = page.evaluate("document.getElementById('compare-chart').data.map(t => t.y.length)")
    assert bars == [2, 2]  # a bar per matched cell, per experiment
    assert page.locator("#engine-findings li").count() >= 2
    screenshot(page, "compare.png")
