"""Measured, below resolution and not measured are different things (issue 31, item 8): a
phase whose first and last lines carry the same stamp is "< 5 ms" (the runner's stamps) or
"< 1 s" (MariaDB's own whole seconds), not 0.000, on the run page, in the API and the CSV."""

import pytest

from experiments.ingest.bundle import stamp_resolution
from experiments.parsers import parse_bytes, parse_path
from recovery_lab_cli.units import duration_text
from runner.processes import POLL_S

from .factories import ExperimentFactory, RunFactory
from .test_parsers import MARIADB
from .test_public_logs import only_episode, parse


def test_a_duration_below_its_resolution_is_not_zero_and_a_missing_one_is_not_measured():
    assert duration_text(0.0, 0.005) == "< 5 ms"
    assert duration_text(0.0, 1.0) == "< 1 s"
    assert duration_text(0.0, 1e-6) == "< 1 µs"
    assert duration_text(0.4, 1.0) == "< 1 s"
    assert duration_text(0.0123, 0.005) == "0.012 s"
    assert duration_text(None, 0.005) == "not measured"


def test_each_log_says_how_finely_its_lines_were_timed():
    whole_seconds = parse_path(MARIADB / "innodb_after_workload" / "error.log").crash_episodes[0]
    assert stamp_resolution("error.log", whole_seconds) == 1.0
    microseconds = only_episode(parse("mysql80_recovery.txt", "B"))
    assert stamp_resolution("error.log", microseconds) == 1e-6
    line = b"[runner 10.000000] 2026-11-25 10:00:00 0 [Note] InnoDB: Starting crash recovery from checkpoint"
    stamped = parse_bytes("error.log.stamped", line + b"\n")
    assert stamp_resolution("error.log.stamped", stamped.episodes[0]) == POLL_S == 0.005


@pytest.mark.django_db
def test_the_run_page_the_api_and_the_csv_tell_below_resolution_from_zero(api, client, user):
    run = RunFactory(
        experiment=ExperimentFactory(created_by=user),
        status="done",
        phases={"binlog_recovery": 0.0, "redo_apply": 0.25},
        phase_resolution={"binlog_recovery": 0.005, "redo_apply": 0.005},
    )
    body = api.get(f"/api/runs/{run.id}/").json()
    assert body["phases_below_resolution"] == ["binlog_recovery"]
    assert body["phase_resolution"] == {"binlog_recovery": 0.005, "redo_apply": 0.005}
    answer = api.get("/api/runs/", {"experiment": run.experiment_id, "format": "csv"})
    csv = b"".join(answer.streaming_content).decode()
    assert "phase_resolution" in csv.splitlines()[0]
    client.force_login(user)
    page = client.get(f"/runs/{run.id}/").content.decode()
    phases = page[page.index('id="phases"') :]
    assert "&lt; 5 ms" in phases[: phases.index("</table>")]
    assert "0.250 s" in phases and "0.000" not in phases[: phases.index("</table>")]
