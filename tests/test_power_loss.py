"""The power_loss crash with the real server: the runner mounts the power-cut layer over its
private mariadbd's datadir, runs the workload and the commit ledger, kills the server, drops every
write not yet synced, and restarts it on what a disk would hold. With the redo log synced at each
commit no acknowledged commit is lost; with it synced once a second, some are, and the run says
how many."""

import json
import os
from pathlib import Path

import pytest
from django.conf import settings

from .conftest import runner_processes
from .test_end_to_end import run_runner

pytestmark = pytest.mark.skipif(not Path("/dev/fuse").exists(), reason="no /dev/fuse here")


def power_loss_spec(name: str, engine: str, options: dict) -> dict:
    return {
        "run_id": 7,
        "engine": engine,
        "parameters": {"buffer_pool_size": "128M", "redo_log_size": "64M", "insert_rate": 0},
        "server_options": options,
        "workload": {
            "name": "oltp_write_only",
            "tables": 1,
            "table_size": 2000,
            "threads": 2,
            "events": 4000,
        },
        "crash": {"method": "power_loss", "when": "after_workload"},
        "work_dir": str(settings.RUNNER_WORK_DIR / name),
        "start_timeout_s": 120,
    }


def fuse_mounts() -> list[str]:
    return [line for line in Path("/proc/self/mounts").read_text().splitlines() if " fuse" in line]


def power_cut(tmp_path, name: str, engine: str, options: dict) -> dict:
    spec = power_loss_spec(name, engine, options)
    exit_code, last_event = run_runner(tmp_path, spec)
    assert exit_code == 0, last_event
    result = json.loads((tmp_path / "bundle" / "result.json").read_text())
    assert result["times"]["recovery_first_query"] > result["times"]["killed"]
    assert not [m for m in fuse_mounts() if spec["work_dir"] in m]  # the layer is gone
    assert runner_processes() == []
    return result


@pytest.mark.mariadb
@pytest.mark.quiet
def test_a_log_not_even_written_at_each_commit_loses_the_commits_after_the_last_sync(tmp_path):
    """innodb_flush_log_at_trx_commit=0: the log buffer goes out with the timeout's flush only.
    (A log synced at each commit, and one synced once a second, on InnoDB and MyRocks: the
    experiment's four runs below, through the worker.)"""
    options = {"innodb_flush_log_at_trx_commit": 0, "innodb_flush_log_at_timeout": 2700}
    durability = power_cut(tmp_path, "lossy-innodb", "innodb", options)["durability"]
    assert durability["acknowledged_commits"] > 100, durability
    assert 0 < durability["lost_commits"] <= durability["acknowledged_commits"], durability


def test_the_host_probe_says_whether_a_power_cut_can_run_here():
    from runner.probe import power_loss_ready

    found = power_loss_ready()
    assert found == {"ready": True, "missing": []}, found
    assert os.access("/dev/fuse", os.W_OK)


@pytest.mark.django_db
def test_power_loss_is_a_crash_method_of_the_api_and_a_host_without_fuse_is_refused(api, local_host):
    from experiments.models import Host

    from .test_roles import DEFINITION

    body = {**DEFINITION, "crash": {"method": "power_loss", "when": "after_workload"}}
    Host.objects.filter(id=local_host.id).update(
        facts={"power_loss": {"ready": False, "missing": ["fusermount3 (apt-get install fuse3)"]}}
    )
    refused = api.post("/api/experiments/", body, format="json")
    assert refused.status_code == 400
    assert refused.json()["crash.method"] == [
        "host local cannot cut power: missing fusermount3 (apt-get install fuse3)"
    ]
    Host.objects.filter(id=local_host.id).update(facts={"power_loss": {"ready": True, "missing": []}})
    created = api.post("/api/experiments/", body, format="json")
    assert created.status_code == 201, created.content
    assert created.json()["definition"]["crash"]["method"] == "power_loss"
    bad = api.post(
        "/api/experiments/", {**body, "crash": {"method": "unplug", "when": "after_workload"}}, format="json"
    )
    assert bad.status_code == 400 and "crash.method" in bad.json()


@pytest.mark.browser
@pytest.mark.mariadb
@pytest.mark.django_db(transaction=True)
@pytest.mark.quiet
def test_an_experiment_of_log_flush_settings_under_power_loss_shows_lost_commits_per_setting(
    page, live_server, api, local_host, celery_worker_process
):
    """The issue's experiment: InnoDB's and MyRocks' log flushed at each commit (1) or once a
    second (2), each crashed by a power cut on the local host through the real worker; the page
    shows recovery and lost commits per setting."""
    from experiments.models import Run

    from .conftest import wait_for
    from .test_browser import drawn_charts, log_in, screenshot

    body = {
        "name": "Power loss: log flush at commit",
        "hosts": ["local"],
        "engines": ["innodb", "rocksdb"],
        "parameters": {"buffer_pool_size": ["128M"], "redo_log_size": ["64M"], "insert_rate": [0]},
        "server_options": {
            "innodb_flush_log_at_trx_commit": [1, 2],
            "rocksdb_flush_log_at_trx_commit": [1, 2],
        },
        # two tables: on one, MyRocks' two threads wait on each other's row locks (8 s, not 2 s)
        "workload": {
            "name": "oltp_write_only",
            "tables": 2,
            "table_size": 2000,
            "threads": 2,
            "events": 3000,
        },
        "crash": {"method": "power_loss", "when": "after_workload"},
        "repetitions": 1,
    }
    created = api.post("/api/experiments/", body, format="json")
    assert created.status_code == 201, created.content
    experiment_id = created.json()["id"]
    runs = Run.objects.filter(experiment_id=experiment_id)
    assert runs.count() == 4  # each engine varies its own option only
    wait_for(lambda: all(r.is_finished for r in runs.all()), 900, "the four runs", interval_s=1)
    for run in runs.all():
        assert run.status == "done", run.error
        assert run.crash_method == "power_loss" and run.acknowledged_commits > 100
        setting = run.server_options[f"{run.engine}_flush_log_at_trx_commit"]
        said = (run.engine, setting, run.lost_commits, run.acknowledged_commits)
        if setting == 1:  # synced at each commit: none lost, and every sysbench transaction there
            assert run.lost_commits == 0 and run.verified is True, said
        else:  # written at each commit, synced once a second: the commits after the last sync
            assert 0 < run.lost_commits <= run.acknowledged_commits, said
        assert run.recovery_seconds is not None or run.downtime_seconds is not None
    # each run's layer unmounted, and no runner left
    assert not [mount for mount in fuse_mounts() if str(settings.RUNNER_WORK_DIR) in mount]
    assert runner_processes() == []

    log_in(page, live_server)
    page.goto(f"{live_server.url}/experiments/{experiment_id}/")
    page.wait_for_selector("text=acknowledged commits lost")
    summary = page.locator("table").filter(has_text="acknowledged commits lost").first.inner_text()
    assert "innodb_flush_log_at_trx_commit=2" in summary and "rocksdb_flush_log_at_trx_commit=1" in summary
    screenshot(page, "power-loss-experiment.png")
    lossy = runs.get(engine="innodb", server_options__innodb_flush_log_at_trx_commit=2)
    page.goto(f"{live_server.url}/runs/{lossy.id}/")
    page.wait_for_selector("td[data-metric=lost_commits]")
    assert page.locator("td[data-metric=lost_commits]").inner_text().replace(",", "") == str(
        lossy.lost_commits
    )
    assert "crashed by a power cut" in page.locator("h1 + p").inner_text()
    drawn_charts(page, "#samples-chart", "#timeline-chart")
    assert "power cut" in page.locator("#samples-chart").inner_text()
    assert "power cut: unsynced writes dropped" in page.locator("#timeline-chart").inner_text()
    screenshot(page, "power-loss-run.png")


@pytest.mark.django_db
def test_runs_crashed_by_a_power_cut_are_a_series_of_their_own_in_explore(api):
    from .factories import ExperimentFactory
    from .test_analysis import done_run

    experiment = ExperimentFactory()
    for index in range(3):
        done_run(experiment, engine="innodb", crash_method="sigkill", redo_bytes=(index + 1) * 10**7)
        done_run(experiment, engine="innodb", crash_method="power_loss", redo_bytes=(index + 1) * 10**7)
    body = api.get("/api/explore/", {"x": "redo_bytes", "y": "recovery_seconds", "group": "engine"}).json()
    assert [(s["name"], s["key"], len(s["run_ids"])) for s in body["series"]] == [
        ("InnoDB", "innodb", 3),
        ("InnoDB · power loss", "innodb|power_loss", 3),
    ]
    by_method = api.get(
        "/api/explore/", {"x": "redo_bytes", "y": "recovery_seconds", "group": "crash_method"}
    )
    assert [s["name"] for s in by_method.json()["series"]] == ["power loss", "kill -9"]
    only_cut = api.get("/api/runs/", {"crash_method": "power_loss"}).json()
    assert only_cut["count"] == 3
