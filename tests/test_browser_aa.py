"""An A/A check asked for on the hosts page, in Debian's Chromium: the real worker runs an
experiment's definition twice on the local host, interleaved, and the page shows copy B against
copy A and the floor a difference on that host must clear."""

import re

import pytest

from experiments.analysis import aa
from experiments.models import Experiment, Run, RunStatus

from .conftest import wait_for
from .factories import ExperimentFactory
from .test_browser import log_in, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.mariadb, pytest.mark.django_db(transaction=True)]

SOURCE = {
    "name": "Nightly InnoDB",
    "hosts": ["local"],
    "engines": ["innodb"],
    "parameters": {"buffer_pool_size": ["256M"], "redo_log_size": ["256M"], "insert_rate": [0]},
    "workload": {"name": "oltp_insert", "tables": 2, "table_size": 20000, "threads": 2, "events": 2000},
    "crash": {"method": "sigkill", "when": "after_workload"},
    "repetitions": 2,
}


def test_an_a_a_check_from_the_hosts_page_runs_interleaved_and_shows_its_copies(
    page, live_server, local_host, celery_worker_process
):
    source = ExperimentFactory(name=SOURCE["name"], definition=SOURCE)  # its definition only: no runs
    log_in(page, live_server)
    page.goto(f"{live_server.url}/hosts/")
    floor = page.locator(".aa-host[data-host=local] .aa-floor").inner_text()
    assert f"Crash recovery: a difference must exceed {aa.DEFAULT_MIN_EFFECT:.2f}x" in floor
    assert "no A/A check of local on record" in floor
    page.select_option(".aa-host[data-host=local] select[name=experiment]", str(source.id))
    page.click(".aa-host[data-host=local] button[type=submit]")
    check = Experiment.objects.get(aa_check=True)
    assert (
        page.locator(".messages")
        .inner_text()
        .strip()
        .endswith(f"A/A check #{check.id} queued on local: 4 runs, interleaved")
    )
    runs = Run.objects.filter(experiment=check)
    wait_for(
        lambda: not runs.exclude(status__in=RunStatus.finished()).exists(), 600, "the A/A check's 4 runs"
    )
    assert list(runs.order_by("matrix_index").values_list("status", "repetition")) == [
        (RunStatus.DONE, repetition) for repetition in (1, 2, 3, 4)
    ], list(runs.values("error"))
    page.goto(f"{live_server.url}/hosts/")
    row = page.locator(".aa-host[data-host=local] table.aa-results tbody tr")
    assert row.count() == 1
    cells = row.locator("td").all_inner_texts()
    assert cells[0].startswith(f"#{check.id}") and cells[1].startswith("InnoDB at pool 256M"), cells
    for metric, measured in zip(("recovery_seconds", "downtime_seconds"), cells[2:4], strict=True):
        # copy B over copy A, with its interval where each copy measured two or more values above 0
        # (a busy host can leave a run's recovery shorter than its log resolves); else the reason
        values = {
            copy: [v for v in runs.filter(repetition__in=reps).values_list(metric, flat=True) if v]
            for copy, reps in (("A", (1, 3)), ("B", (2, 4)))
        }
        if all(len(side) >= 2 for side in values.values()):
            assert re.match(r"^[0-9.]+x \(95% CI [0-9.]+-[0-9.]+x\)", measured), measured
        else:
            assert re.match(r"^[0-9.]+x \(no interval: .+\)$", measured), (measured, values)
    assert cells[4] == "2, 2"
    floor = page.locator(".aa-host[data-host=local] .aa-floor").inner_text()
    assert "(local's A/A spread" in floor and "from 1 A/A check)" in floor, floor
    screenshot(page, "hosts-aa-check.png")
