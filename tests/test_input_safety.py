"""Input a user types or imports never makes the site fail: numbers that only look like ids,
text that a spreadsheet would run, stored values of the wrong shape."""

import csv
import io

import pytest

from .factories import ExperimentFactory, RunFactory

ODD_IDS = ["²", "٣", "99999999999999999999", "-1", " 7 "]


@pytest.mark.parametrize("text", ODD_IDS)
@pytest.mark.parametrize("url", ["/api/experiments/?q=", "/experiments/?q="])
def test_a_search_for_something_that_only_looks_like_an_id_answers(text, url, api, client, user):
    experiment = ExperimentFactory(name="seven", created_by=user)
    client.force_login(user)
    answer = (api if url.startswith("/api/") else client).get(url + text)
    assert answer.status_code == 200
    if text == " 7 " and experiment.pk == 7:
        assert "seven" in answer.content.decode()


@pytest.mark.parametrize("text", ["²,3", "1,99999999999999999999"])
def test_a_comparison_of_odd_ids_says_what_it_takes(text, api):
    answer = api.get(f"/api/compare/?experiments={text}")
    assert answer.status_code == 400 and "experiment ids" in str(answer.json())


def test_the_host_lock_connects_with_the_database_options(db, monkeypatch):
    """sslmode and the like in DATABASES' OPTIONS hold for the lock's connection too."""
    from django.db import connection

    from workers.locks import host_lock

    monkeypatch.setitem(connection.settings_dict, "OPTIONS", {"application_name": "recovery-lab-lock-check"})
    with host_lock(987654) as acquired, connection.cursor() as cursor:
        cursor.execute(
            "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
            " WHERE l.locktype = 'advisory' AND l.objid = 987654 AND l.granted"
        )
        assert acquired and cursor.fetchall() == [("recovery-lab-lock-check",)]


def test_a_csv_cell_a_spreadsheet_would_run_is_quoted_and_numbers_are_not(api, user):
    experiment = ExperimentFactory(created_by=user)
    RunFactory(
        experiment=experiment,
        status="done",
        host_label='=HYPERLINK("http://evil.example/","click")',
        server_version="+cmd|' /C calc'!A0",
        excluded=True,
        excluded_reason="@SUM(1+1)*cmd|' /C calc'!A0",
        recovery_seconds=-0.5,  # a negative number stays a number
        parameters={"buffer_pool_size": "128M", "redo_log_size": "64M", "insert_rate": -1},
    )
    exported = b"".join(api.get("/api/runs/?format=csv").streaming_content).decode()
    rows = list(csv.DictReader(io.StringIO(exported)))
    (row,) = rows
    assert row["host"].startswith("'=") and row["server_version"].startswith("'+")
    assert row["excluded_reason"].startswith("'@")
    assert row["recovery_seconds"] == "-0.5" and row["insert_rate"] == "-1"


def test_the_experiment_list_counts_suspect_and_excluded_runs_apart_from_done(api, user):
    experiment = ExperimentFactory(created_by=user)
    RunFactory(experiment=experiment, status="done")
    RunFactory(experiment=experiment, status="done", suspect=True, suspect_reason="parser failed")
    RunFactory(experiment=experiment, status="done", excluded=True, excluded_reason="noisy host")
    (listed,) = api.get("/api/experiments/").json()["results"]
    assert (listed["runs_done"], listed["runs_suspect"], listed["runs_excluded"]) == (3, 1, 1)


@pytest.mark.parametrize("stored", ["abc", [1, 2], {"n": 1}, True])
def test_no_stored_parameter_makes_explore_or_the_experiment_page_fail(stored, api, client, user):
    experiment = ExperimentFactory(created_by=user, status="done")
    for repetition, binlogs in enumerate((stored, 2, 4), start=1):
        RunFactory(
            experiment=experiment,
            status="done",
            repetition=repetition,
            recovery_seconds=1.0 + repetition,
            redo_bytes=10**6 * repetition,
            parameters={
                "buffer_pool_size": "128M",
                "redo_log_size": "64M",
                "insert_rate": 0,
                "binlog_files": binlogs,
            },
        )
    explored = api.get("/api/explore/?x=binlog_files&y=recovery_seconds&group=engine")
    assert explored.status_code == 200
    # the two runs with a number are points; the third is on no point of a numeric axis
    assert sorted(x for series in explored.json()["series"] for x in series["x"]) == [2, 4]
    client.force_login(user)
    assert client.get(experiment.get_absolute_url()).status_code == 200
