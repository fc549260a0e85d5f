"""The `recovery-lab` console script against the real web application (live server, real
PostgreSQL): what it prints and the exit code a CI job sees, for good and bad input."""

import csv
import io
import subprocess
from pathlib import Path

import pytest
import yaml

from experiments.models import Experiment
from experiments.services.tokens import new_token
from recovery_lab_cli.client import (
    ClientError,
    changed_settings,
    comparison_rows,
    parse_threshold,
    verdict,
)

from .factories import ExperimentFactory
from .test_analysis import done_run, noisy

ROOT = Path(__file__).resolve().parent.parent
CLIENT = ROOT / ".venv" / "bin" / "recovery-lab"
pytestmark = pytest.mark.django_db(transaction=True)


def run_cli(url: str, token: str, *args: str) -> subprocess.CompletedProcess:
    environment = {"RECOVERY_LAB_URL": url, "RECOVERY_LAB_TOKEN": token, "PATH": "/usr/bin:/bin"}
    return subprocess.run([str(CLIENT), *args], capture_output=True, text=True, env=environment, timeout=120)


@pytest.fixture
def token(user):
    return new_token(user)


def test_a_bad_definition_is_refused_with_the_servers_message_per_field_and_nothing_queued(
    live_server, token, local_host, tmp_path
):
    path = tmp_path / "bad.yaml"
    path.write_text(
        yaml.safe_dump({"name": "bad", "hosts": ["local"], "engines": ["oracle"], "repetitions": 1})
    )
    done = run_cli(live_server.url, token, "run", str(path), "--wait")
    assert done.returncode == 2
    assert "HTTP 400" in done.stderr and "engines" in done.stderr and "oracle" in done.stderr
    assert Experiment.objects.count() == 0


def test_the_command_line_says_every_bad_field_at_once(live_server, token, local_host, tmp_path):
    from .test_api import ON_THE_HOST, THREE_BAD
    from .test_definition import definition

    local_host.facts = ON_THE_HOST
    local_host.save()
    path = tmp_path / "three.yaml"
    path.write_text(yaml.safe_dump(definition(**THREE_BAD)))
    done = run_cli(live_server.url, token, "run", str(path))
    assert done.returncode == 2
    for field in ("parameters.redo_log_size", "repetitions", "parameters.server_build"):
        assert field in done.stderr, done.stderr
    assert "has no server build nosuch" in done.stderr and Experiment.objects.count() == 0


@pytest.mark.parametrize(
    "text, said",
    [("- just\n- a list\n", "must be a mapping"), ("name: [unclosed\n", "is not taken: not YAML: line 2")],
)
def test_a_definition_file_that_is_no_definition_is_refused_before_any_request(
    live_server, token, tmp_path, text, said
):
    path = tmp_path / "definition.yaml"
    path.write_text(text)
    done = run_cli(live_server.url, token, "run", str(path))
    assert done.returncode == 2 and said in done.stderr
    assert run_cli(live_server.url, token, "run", str(tmp_path / "missing.yaml")).returncode == 2


def test_an_unreachable_server_and_a_wrong_token_exit_2_with_what_to_check(live_server, token, db):
    refused = run_cli(live_server.url, "not-a-token", "compare", "1", "2")
    assert refused.returncode == 2 and "refused the token (HTTP 401" in refused.stderr
    # two tries again (2 + 4 s) rather than the default six (a minute): the same path
    unreachable = run_cli("http://127.0.0.1:9", token, "--retries", "2", "compare", "1", "2")
    assert unreachable.returncode == 2
    assert "cannot reach http://127.0.0.1:9 (tried 3 times)" in unreachable.stderr
    nothing = subprocess.run([str(CLIENT), "compare", "1", "2"], capture_output=True, text=True, env={})
    assert nothing.returncode == 2 and "RECOVERY_LAB_URL" in nothing.stderr


def two_builds(slowdown: float) -> tuple[Experiment, Experiment]:
    """Two experiments at the same settings but the buffer pool, three runs each, the second's
    recovery `slowdown` times the first's."""
    baseline, candidate = ExperimentFactory(), ExperimentFactory()
    for seconds in noisy(1, 3, 1.0):
        done_run(baseline, recovery_seconds=seconds)
    for seconds in noisy(2, 3, slowdown):
        done_run(candidate, recovery_seconds=seconds, buffer_pool_bytes=16 * 2**20)
    return baseline, candidate


def test_compare_matches_cells_only_with_the_changed_setting_ignored(live_server, token):
    baseline, candidate = two_builds(3.0)
    unmatched = run_cli(live_server.url, token, "compare", str(baseline.id), str(candidate.id))
    assert unmatched.returncode == 2 and "no cell in common" in unmatched.stderr
    # the page's hint, on the command line too (issue 68)
    assert "they differ in buffer_pool_size; --ignore buffer_pool_size compares them" in unmatched.stderr
    matched = run_cli(
        live_server.url, token, "compare", str(baseline.id), str(candidate.id), "--ignore", "buffer_pool_size"
    )
    assert matched.returncode == 0, matched.stderr
    row = next(line for line in matched.stdout.splitlines() if "recovery_seconds" in line)
    assert "buffer_pool_size 128M -> 16M" in row and "redo_log_size=64M" in row
    assert "(n=3)" in row and "slower" in row


def test_export_writes_the_experiments_runs_as_csv(live_server, token, tmp_path):
    baseline, _ = two_builds(1.0)
    target = tmp_path / "runs.csv"
    done = run_cli(live_server.url, token, "export", str(baseline.id), "-o", str(target))
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(io.StringIO(target.read_text())))
    assert len(rows) == 3 and {float(r["recovery_seconds"]) for r in rows} == set(noisy(1, 3, 1.0))


def test_the_gate_refuses_a_sweep_of_the_setting_it_changes_before_queueing_anything(
    live_server, token, local_host, tmp_path
):
    baseline, _ = two_builds(1.0)
    Experiment.objects.filter(id=baseline.id).update(
        status="done", definition={"parameters": {"buffer_pool_size": ["128M"]}}
    )
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump({"name": "sweep", "parameters": {"buffer_pool_size": ["16M", "32M"]}}))
    done = run_cli(live_server.url, token, "gate", str(path), "--baseline", str(baseline.id))
    assert done.returncode == 2 and "parameters.buffer_pool_size differs" in done.stderr
    assert Experiment.objects.count() == 2  # nothing new queued


def test_the_gate_waits_for_a_baseline_still_queued_only_when_asked_and_never_cancels_it(
    live_server, token, local_host, tmp_path
):
    baseline = ExperimentFactory(status="queued")
    path = tmp_path / "same.yaml"
    path.write_text(yaml.safe_dump({"name": "same"}))
    refused = run_cli(live_server.url, token, "gate", str(path), "--baseline", str(baseline.id))
    assert refused.returncode == 2 and "is still queued: pass --wait" in refused.stderr, refused.stderr
    waited = run_cli(
        live_server.url,
        token,
        "gate",
        str(path),
        "--baseline",
        str(baseline.id),
        "--wait",
        "--timeout",
        "0.5",
        "--poll",
        "0.2",
    )
    assert waited.returncode == 2 and f"waiting for the baseline, experiment {baseline.id}" in waited.stdout
    assert "did not finish within 0.5 s (left running" in waited.stderr, waited.stderr
    baseline.refresh_from_db()
    assert baseline.status == "queued" and Experiment.objects.count() == 1  # not cancelled, nothing queued


def test_the_gate_adjusts_its_p_values_over_the_metrics_it_decides_on(api):
    """A gate on two metrics had adjusted over every metric the page shows (twelve comparisons)."""
    baseline, candidate = two_builds(3.0)
    query = {"experiments": f"{baseline.id},{candidate.id}", "ignore": "buffer_pool_size"}
    everything = api.get("/api/compare/", query).json()
    gated = api.get("/api/compare/", {**query, "tested": "recovery_seconds,downtime_seconds"}).json()
    (cell,), (gated_cell,) = everything["cells"], gated["cells"]
    tested = [
        m
        for m in ("recovery_seconds", "downtime_seconds")
        if (gated_cell["metrics"].get(m) or {}).get("p_value")
    ]
    assert gated_cell["metrics"]["recovery_seconds"]["family"] == len(tested)
    assert cell["metrics"]["recovery_seconds"]["family"] > len(tested)
    assert (
        gated_cell["metrics"]["recovery_seconds"]["p_adjusted"]
        <= cell["metrics"]["recovery_seconds"]["p_adjusted"]
    )
    refused = api.get("/api/compare/", {**query, "tested": "recovery_seconds,bogus"})
    assert refused.status_code == 400 and "bogus" in refused.json()["tested"][0]


def test_compare_takes_what_the_page_compares_the_recovery_s_reads_too(live_server, token):
    """`--metric recovery_disk_read_bytes` had been refused ("not a compared metric") though the
    compare page shows it: the recovery's resources are each tested alone, asked for or not."""
    baseline, candidate = ExperimentFactory(), ExperimentFactory()
    for index, seconds in enumerate(noisy(3, 3, 1.0)):
        done_run(baseline, recovery_seconds=seconds, recovery_disk_read_bytes=10_000_000 + index)
        done_run(candidate, recovery_seconds=seconds * 2, recovery_disk_read_bytes=40_000_000 + index)
    ids = (str(baseline.id), str(candidate.id))
    done = run_cli(live_server.url, token, "compare", *ids, "--metric", "recovery_disk_read_bytes")
    assert done.returncode == 0, done.stderr
    row = next(line for line in done.stdout.splitlines() if "recovery_disk_read_bytes" in line)
    assert "(n=3)" in row, row


def test_compare_api_refuses_an_ignored_name_that_is_no_name(api):
    first, second = ExperimentFactory(), ExperimentFactory()
    answer = api.get("/api/compare/", {"experiments": f"{first.id},{second.id}", "ignore": "a;rm -rf"})
    assert answer.status_code == 400 and "ignore" in answer.json()


@pytest.mark.parametrize("text, share", [("10%", 0.1), ("0.25", 0.25), (" 5 % ", 0.05), ("0", 0.0)])
def test_thresholds_read_as_shares(text, share):
    assert parse_threshold(text) == pytest.approx(share)


@pytest.mark.parametrize("text", ["ten", "-5%", "5000%", ""])
def test_thresholds_that_are_no_share_are_refused(text):
    with pytest.raises(ClientError):
        parse_threshold(text)


def test_only_a_significant_slowdown_beyond_the_threshold_is_a_regression():
    slow = {"ratio": 1.3, "ratio_ci": [1.2, 1.4], "significant": True}
    assert verdict(slow, 0.1) == ("REGRESSION: B slower beyond 10%, 1.30x as long as A", True)
    assert verdict(slow, 0.0) == ("REGRESSION: B slower, 1.30x as long as A", True)  # compare: no "beyond 0%"
    assert verdict(slow, 0.5) == ("slower, within 50%", False)
    unsure = {**slow, "significant": False}
    assert verdict(unsure, 0.1) == ("no significant difference (B 1.30x as long as A)", False)
    faster = {"ratio": 0.87, "ratio_ci": [0.7, 1.1], "significant": False}
    assert verdict(faster, 0.1) == ("no significant difference (A 1.15x as long as B)", False)
    assert verdict({"ratio": 0.5, "ratio_ci": [0.4, 0.6], "significant": True}, 0.1) == ("faster", False)
    assert verdict({"ratio": 2.0, "ratio_ci": None, "significant": False}, 0.1)[1] is False


def test_no_difference_says_what_its_runs_could_have_called_and_too_few_decides_nothing():
    """Issue 65: "no significant difference" on two runs a side where RAID10 took 6.8x as long.
    The CLI and the gate say what the runs could have called, and too few to see a doubling in
    words (a gate's pass counts those rows)."""
    seen = {"ratio": 1.05, "ratio_ci": [0.9, 1.2], "significant": False, "detectable": 1.31, "too_few": False}
    assert verdict(seen, 0.1) == (
        "no significant difference (B 1.05x as long as A; only beyond 1.31x could have been called)",
        False,
    )
    blind = {
        "ratio": 6.85,
        "ratio_ci": [0.001, 47690],
        "significant": False,
        "detectable": 6960.0,
        "too_few": True,
    }
    said, regression = verdict(blind, 0.1)
    assert said == "too few runs to tell (B 6.85x as long as A; only beyond 6,960.00x could have been called)"
    assert not regression


def test_changed_settings_are_the_ones_whose_values_differ():
    baseline = {"parameters": {"buffer_pool_size": ["1G"], "redo_log_size": ["256M"]}, "server_options": {}}
    candidate = {"parameters": {"buffer_pool_size": "64M", "redo_log_size": ["256M"]}}
    assert changed_settings(baseline, candidate) == ["buffer_pool_size"]
    assert changed_settings(baseline, baseline) == []
    # a parameter the file leaves to the server's default is not a change; an unnamed build is "system"
    assert changed_settings({"parameters": {"insert_rate": [0]}}, {"parameters": {}}) == []
    with_build = {**baseline, "parameters": {**baseline["parameters"], "server_build": ["candidate"]}}
    assert changed_settings(baseline, with_build) == ["server_build"]
    assert changed_settings(baseline, {"parameters": {"server_build": "system"}}) == []
    options = {"parameters": {}, "server_options": {"innodb_doublewrite": [0]}}
    assert changed_settings(options, {"parameters": {}}) == ["innodb_doublewrite"]


def test_the_compare_page_matches_on_all_but_the_settings_left_out(client, user):
    baseline, candidate = two_builds(3.0)
    client.force_login(user)
    ids = f"{baseline.id},{candidate.id}"
    unmatched = client.get("/compare/", {"experiments": ids}).content.decode()
    assert "nothing to match" in unmatched
    # and it points at what to leave out (it had said "nothing to match" and no more)
    assert "They differ in buffer_pool_size" in unmatched
    assert f'href="?experiments={ids.replace(",", "%2C")}&amp;ignore=buffer_pool_size"' in unmatched
    page = client.get("/compare/", {"experiments": ids, "ignore": "buffer_pool_size"}).content.decode()
    assert "matched on all but buffer_pool_size" in page and "Slower beyond the noise" in page
    assert client.get("/compare/", {"experiments": ids, "ignore": "a b"}).status_code == 400
    assert (
        f'?experiments={ids}&amp;ignore=buffer_pool_size" id="compare-report-link"' in page
    )  # links keep it
    report = client.get("/compare/report/", {"experiments": ids, "ignore": "buffer_pool_size"})
    assert report.status_code == 200 and "slower in #" in report.content.decode()
    assert client.get("/compare/report/", {"experiments": ids, "ignore": "a;b"}).status_code == 400


def test_rows_without_an_interval_are_counted_as_undecided():
    def cell(block):
        return {
            "engine": "innodb",
            "parameters": {},
            "server_options": {},
            "metrics": {"recovery_seconds": block},
        }

    result = {
        "experiments": [1, 2],
        "cells": [
            cell(
                {"1": {"n": 1, "median": 1.0}, "2": {"n": 1, "median": 3.0}, "ratio": 3.0, "ratio_ci": None}
            ),
            cell({"ratio": 1.5, "ratio_ci": [1.3, 1.7], "significant": True, "p_value": 0.001}),
        ],
    }
    rows, regressions, undecided = comparison_rows(result, ["recovery_seconds"], 0.1)
    assert (len(rows), regressions, undecided) == (2, 1, 1)
    assert rows[0][-1] == "no interval: fewer than 2 runs a side" and rows[0][4] == "1.000 (n=1)"
