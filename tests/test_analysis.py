"""The analysis side: suspect runs, exclusion, duplicate imports, explore, compare, exports and
the experiment page's summary, against the real database."""

import csv
import io
import json

import numpy as np
import pytest
from scipy import stats as scipy_stats

from experiments import services
from experiments.analysis import fits
from experiments.ingest.bundle import impossible_values
from experiments.models import Run, RunStatus
from recovery_lab_cli.units import format_size

from .factories import ExperimentFactory, RunFactory
from .samples import samples
from .test_imports import parameters, upload

pytestmark = pytest.mark.django_db


def done_run(experiment, **values) -> Run:
    defaults = {
        "status": RunStatus.DONE,
        "recovery_seconds": 1.0,
        "downtime_seconds": 1.5,
        "redo_bytes": 50_000_000,
        "buffer_pool_bytes": 128 * 2**20,
        "redo_log_bytes": 64 * 2**20,
        "insert_rate": 0,
        "server_version": "10.11.19-MariaDB",
    }
    values = {**defaults, **values}
    values.setdefault(
        "parameters",
        {
            "buffer_pool_size": format_size(values["buffer_pool_bytes"]),
            "redo_log_size": format_size(values["redo_log_bytes"]),
            "insert_rate": values["insert_rate"],
        },
    )
    return RunFactory(experiment=experiment, **values)


def noisy(seed: int, n: int, typical: float) -> list[float]:
    rng = np.random.default_rng(seed)
    return list(typical * np.exp(rng.normal(0, 0.1, n)))


# Suspect values ------------------------------------------------------------------------------


def test_unrelated_fragments_in_one_import_store_no_absurd_value(api):
    # Every MySQL 8.0 sample glued into one file. It once stored a recovery of 1,688,219,052 s
    # (from a 1970 fragment to a 2023 one) and 67 TB of redo (LSNs of unrelated servers) as done.
    glued = b"".join(samples("mysql80_recovery.txt").values())
    response = api.post("/api/imports/", {**parameters(), "error_log": upload(glued)}, format="multipart")
    assert response.status_code == 201, response.content
    runs = response.json()["runs"]
    assert len(runs) >= 5
    for run in runs:
        metrics = run["metrics"]
        assert metrics["recovery_seconds"] is None or 0 <= metrics["recovery_seconds"] < 10, run
        assert metrics["redo_bytes"] is None or metrics["redo_bytes"] < 100 * 4 * 2**30, run
        assert not run["suspect"], run["suspect_reason"]
    warnings = " ".join(r["error"] for r in runs)
    assert "runs backwards" in warnings and "read as two excerpts" in warnings


def test_a_suspect_run_is_left_out_of_explore_and_charts_unless_asked_for(api, client, user):
    # MySQL 5.5's 130 MB of redo on a redo log declared as 1 MB: more than 100 times its size.
    log = samples("mysql55_56_percona_recovery.txt")["A"]
    response = api.post(
        "/api/imports/", {**parameters(redo_log_size="1M"), "error_log": upload(log)}, format="multipart"
    )
    assert response.status_code == 201, response.content
    suspect = [r for r in response.json()["runs"] if r["suspect"]]
    assert len(suspect) == 1 and "more than 100 times the redo log size" in suspect[0]["suspect_reason"]

    explored = api.get("/api/explore/", {"x": "redo_bytes", "y": "recovery_seconds"}).json()
    charted = {run_id for series in explored["series"] for run_id in series["run_ids"]}
    assert suspect[0]["id"] not in charted
    explored = api.get("/api/explore/", {"x": "redo_bytes", "include_suspect": "true"}).json()
    assert suspect[0]["id"] in {run_id for s in explored["series"] for run_id in s["run_ids"]}

    client.force_login(user)
    page = client.get(f"/experiments/{response.json()['experiment']}/")
    on_charts = {
        p for f in page.context["figures"].values() for t in f["data"] for p in t.get("customdata", [])
    }
    assert suspect[0]["id"] not in on_charts
    assert b"suspect" in page.content


def test_a_negative_duration_is_suspect():
    reasons = impossible_values(
        {"recovery_seconds": -249_316_031.0, "ready_seconds": -39_515_648.0}, None, True
    )
    assert any("recovery_seconds is negative" in r for r in reasons)


def test_a_recovery_longer_than_the_downtime_on_the_same_clock_is_suspect():
    assert impossible_values({"recovery_seconds": 9.0, "downtime_seconds": 2.0}, None, same_clock=True)
    # MyRocks' recovery is timed in RocksDB's LOG, another clock: not compared with the downtime.
    assert not impossible_values({"recovery_seconds": 9.0, "downtime_seconds": 2.0}, None, same_clock=False)


def test_plausible_values_are_not_suspect():
    assert (
        impossible_values(
            {"recovery_seconds": 0.3, "ready_seconds": 0.5, "downtime_seconds": 0.6}, None, True
        )
        == []
    )


# Exclusion -----------------------------------------------------------------------------------


def test_a_user_excludes_a_run_with_a_reason_and_takes_it_back(api, user):
    experiment = ExperimentFactory(created_by=user)  # the author annotates (tests/test_roles.py)
    kept, dropped = done_run(experiment, recovery_seconds=1.0), done_run(experiment, recovery_seconds=30.0)
    assert api.post(f"/api/runs/{dropped.id}/exclude/", {"reason": ""}, format="json").status_code == 400
    response = api.post(f"/api/runs/{dropped.id}/exclude/", {"reason": "host was swapping"}, format="json")
    assert response.status_code == 200 and response.json()["excluded_reason"] == "host was swapping"
    dropped.refresh_from_db()
    assert dropped.excluded and dropped.excluded_by == user

    ids = lambda: {i for s in api.get("/api/explore/").json()["series"] for i in s["run_ids"]}  # noqa: E731
    assert ids() == {kept.id}
    assert api.post(f"/api/runs/{dropped.id}/include/").status_code == 200
    assert ids() == {kept.id, dropped.id}


def test_the_run_page_excludes_through_a_form(client, user):
    run = done_run(ExperimentFactory(created_by=user))
    client.force_login(user)
    client.post(f"/runs/{run.id}/exclude/", {"reason": "wrong build"})
    run.refresh_from_db()
    assert run.excluded and run.excluded_reason == "wrong build"
    assert b"Excluded from analysis" in client.get(f"/runs/{run.id}/").content


# Duplicate imports ---------------------------------------------------------------------------


def test_the_same_error_log_imported_twice_is_refused_naming_the_first_import(api):
    log = samples("mysql80_recovery.txt")["A"]
    first = api.post("/api/imports/", {**parameters(), "error_log": upload(log)}, format="multipart")
    assert first.status_code == 201
    again = api.post(
        "/api/imports/", {**parameters(host_label="other"), "error_log": upload(log)}, format="multipart"
    )
    assert again.status_code == 400
    message = again.json()["error_log"][0]
    assert f"experiment {first.json()['experiment']}" in message
    assert str(first.json()["runs"][0]["id"]) in message
    assert Run.objects.count() == 1


# Explore -------------------------------------------------------------------------------------


@pytest.fixture
def two_engines():
    experiment = ExperimentFactory(name="sweep", tags=["nightly"])
    runs = []
    for index, redo_mb in enumerate([20, 40, 80, 160]):
        for engine, seconds_per_mb in (("innodb", 0.01), ("rocksdb", 0.004)):
            runs.append(
                done_run(
                    experiment,
                    engine=engine,
                    redo_bytes=redo_mb * 1_000_000,
                    recovery_seconds=0.2 + seconds_per_mb * redo_mb + 0.01 * index,
                    insert_rate=[0, 200, 2000, 2000][index],
                    buffer_pool_bytes=[2**27, 2**28, 2**30, 2**30][index],
                    host_label=["local", "db7"][index % 2],
                )
            )
    return experiment, runs


def test_explore_answers_in_the_shape_design_md_gives(api, two_engines):
    body = api.get("/api/explore/", {"x": "redo_bytes", "y": "recovery_seconds", "group": "engine"}).json()
    assert (body["x"], body["y"], body["group"], body["count"]) == (
        "redo_bytes",
        "recovery_seconds",
        "engine",
        8,
    )
    assert [s["name"] for s in body["series"]] == ["InnoDB", "MyRocks"]
    for series in body["series"]:
        assert set(series) >= {"name", "x", "y", "run_ids"}
        assert len(series["x"]) == len(series["y"]) == len(series["run_ids"]) == 4
        for x, y, run_id in zip(series["x"], series["y"], series["run_ids"], strict=True):
            run = Run.objects.get(id=run_id)  # the three arrays line up point by point
            assert (x, y) == (run.redo_bytes, pytest.approx(run.recovery_seconds))
    assert {f["series"] for f in body["fits"]} == {"InnoDB", "MyRocks"}
    assert all(set(f) >= {"series", "slope", "intercept", "r2", "n"} for f in body["fits"])


def test_the_explore_fit_is_scipy_s_least_squares_line(api, two_engines):
    body = api.get("/api/explore/", {"x": "redo_bytes", "y": "recovery_seconds"}).json()
    for series, fit in zip(body["series"], body["fits"], strict=True):
        expected = scipy_stats.linregress(series["x"], series["y"])
        assert fit["slope"] == pytest.approx(expected.slope)
        assert fit["intercept"] == pytest.approx(expected.intercept)
        assert fit["r2"] == pytest.approx(expected.rvalue**2)


@pytest.mark.parametrize(
    ("x", "expected_x", "fitted"),
    [
        ("buffer_pool_size", {2**27, 2**28, 2**30}, True),
        ("redo_log_size", {64 * 2**20}, False),  # one value: no line to fit
        ("insert_rate", {0, 200, 2000}, True),
        ("engine", {"innodb", "rocksdb"}, False),
        ("host", {"local", "db7"}, False),
        ("server_version", {"10.11.19-MariaDB"}, False),
    ],
)
def test_explore_puts_each_parameter_on_the_x_axis(api, two_engines, x, expected_x, fitted):
    body = api.get("/api/explore/", {"x": x, "y": "recovery_seconds"}).json()
    assert {value for s in body["series"] for value in s["x"]} == expected_x
    assert body["count"] == 8
    assert bool(body["fits"]) is fitted


def test_explore_charts_a_recovery_phase_seed_003_s_binlog_phase_against_the_files_held(api):
    """Issue 68: /explore/ could not chart a phase. Seed 003 asks whether the binlog / XA phase
    grows with the binary log files held at the kill: each run's phase against its files."""
    from experiments.ingest.bundle import PHASE_NAMES
    from experiments.metrics import PHASE_AXES, RUN_PHASES

    assert set(PHASE_NAMES.values()) == set(RUN_PHASES)  # every phase a run keeps is an axis
    experiment = ExperimentFactory()
    for files, seconds in ((1, 0.02), (200, 0.4), (2000, 3.1)):
        parameters = {
            "buffer_pool_size": "128M",
            "redo_log_size": "64M",
            "insert_rate": 0,
            "binlog_files": files,
        }
        done_run(experiment, parameters=parameters, phases={"binlog_recovery": seconds, "redo_apply": 0.2})
    done_run(experiment, phases={"redo_apply": 0.3})  # no binlog phase: not a point
    done_run(experiment, phases={"binlog_recovery": "crafted"})  # a value that is no number: skipped
    body = api.get("/api/explore/", {"x": "binlog_files", "y": "phase_binlog_recovery_seconds"}).json()
    (series,) = body["series"]
    assert sorted(zip(series["x"], series["y"], strict=True)) == [(1, 0.02), (200, 0.4), (2000, 3.1)]
    assert body["y_title"] == "phase: binlog / XA recovery (s)" and body["y_unit"] == "s"
    assert "phase_binlog_recovery_seconds" in PHASE_AXES


def test_explore_groups_by_experiment_and_filters(api, two_engines):
    experiment, _ = two_engines
    other = ExperimentFactory(name="other")
    done_run(other, engine="innodb")
    body = api.get("/api/explore/", {"group": "experiment", "tag": "nightly"}).json()
    assert [s["name"] for s in body["series"]] == [f"#{experiment.id} sweep"]
    body = api.get("/api/explore/", {"engine": "rocksdb", "host": "db7"}).json()
    assert body["count"] == 2
    body = api.get(
        "/api/explore/", {"experiments": f"{experiment.id},{other.id}", "group": "experiment"}
    ).json()
    assert body["count"] == 9


def test_explore_refuses_unknown_names_listing_the_allowed_ones(api, two_engines):
    response = api.get("/api/explore/", {"x": "shoe_size", "y": "recovery_seconds", "group": "colour"})
    assert response.status_code == 400
    assert "buffer_pool_size" in response.json()["x"][0] and "experiment" in response.json()["group"][0]


def test_explore_downloads_its_points_as_csv(api, two_engines):
    response = api.get("/api/explore/", {"x": "redo_bytes", "format": "csv"})
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    lines = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert lines[0] == ["run_id", "engine", "redo_bytes", "recovery_seconds"] and len(lines) == 9


def test_the_explore_page_holds_its_state_in_the_address(client, user, two_engines):
    client.force_login(user)
    page = client.get("/explore/", {"x": "insert_rate", "y": "downtime_seconds", "group": "host"})
    figure = json.loads(page.context["figure"])
    assert figure["layout"]["xaxis"]["title"]["text"] == "insert rate asked (rows/s)"
    assert sorted(t["name"] for t in figure["data"] if t["mode"] == "markers") == ["db7 (4)", "local (4)"]
    assert client.get("/explore/", {"x": "nonsense"}).status_code == 400


# Compare -------------------------------------------------------------------------------------


def test_compare_flags_a_2x_slowdown_between_two_server_versions(api):
    before = ExperimentFactory(name="10.11.18")
    after = ExperimentFactory(name="10.11.19")
    for seconds in noisy(1, 5, 1.0):
        done_run(before, recovery_seconds=seconds, server_version="10.11.18")
    for seconds in noisy(2, 5, 2.0):
        done_run(after, recovery_seconds=seconds, server_version="10.11.19")
    body = api.get("/api/compare/", {"experiments": f"{before.id},{after.id}"}).json()
    assert body["experiments"] == [before.id, after.id]
    (cell,) = body["cells"]
    assert cell["engine"] == "innodb" and cell["parameters"]["redo_log_size"] == "64M"
    recovery = cell["metrics"]["recovery_seconds"]
    assert recovery[str(before.id)]["n"] == 5 and len(recovery[str(after.id)]["ci"]) == 2
    assert recovery["significant"] and recovery["ratio_ci"][0] < 2.0 < recovery["ratio_ci"][1]
    assert any("slower" in line and "10.11.19" in line for line in cell["regressions"])


def test_compare_does_not_call_the_same_noise_a_difference(api):
    a, b = ExperimentFactory(), ExperimentFactory()
    for seconds in noisy(3, 3, 1.0):
        done_run(a, recovery_seconds=seconds)
    for seconds in noisy(4, 3, 1.0):
        done_run(b, recovery_seconds=seconds)
    (cell,) = api.get("/api/compare/", {"experiments": f"{a.id},{b.id}"}).json()["cells"]
    assert not cell["metrics"]["recovery_seconds"]["significant"] and cell["regressions"] == []
    assert any("no significant difference in crash recovery" in line for line in cell["sentences"])


def test_compare_puts_engines_side_by_side_in_words_a_manager_reads(api):
    experiment = ExperimentFactory()
    for seconds in noisy(5, 4, 2.7):
        done_run(experiment, engine="innodb", recovery_seconds=seconds, insert_rate=2000)
    for seconds in noisy(6, 4, 1.0):
        done_run(experiment, engine="rocksdb", recovery_seconds=seconds, insert_rate=2000)
    other = ExperimentFactory()
    body = api.get("/api/compare/", {"experiments": f"{experiment.id},{other.id}"}).json()
    (line, *_) = body["engines"]["cells"][0]["sentences"]
    assert (
        line.startswith("MyRocks: crash recovery") and "faster than InnoDB at" in line and "rate 2000" in line
    )


def test_compare_refuses_a_bad_list_of_experiments(api):
    """Malformed is 400 (one id, a repeat, not an id); well formed but not there is 404."""
    experiment = ExperimentFactory()
    for bad in ("1", f"{experiment.id},{experiment.id}", f"{experiment.id},²"):
        assert api.get("/api/compare/", {"experiments": bad}).status_code == 400, bad
    missing = api.get("/api/compare/", {"experiments": "999998,999999"})
    assert missing.status_code == 404
    assert missing.json()["experiments"] == ["no experiment 999998, 999999"]
    response = api.get("/api/compare/", {"experiments": f"{experiment.id},999999"})
    assert response.status_code == 404 and "no experiment 999999" in response.json()["experiments"][0]


# Exports and the schema ----------------------------------------------------------------------


def test_runs_export_as_csv_with_every_metric_a_column_and_the_same_filters(api, two_engines):
    response = api.get("/api/runs/", {"engine": "innodb", "format": "csv"})
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert len(rows) == 4 and {r["engine"] for r in rows} == {"innodb"}
    assert {"recovery_seconds", "redo_bytes", "achieved_insert_rate", "buffer_pool_size"} <= set(rows[0])


def test_run_filters_and_the_explore_api_are_in_the_openapi_schema(api):
    schema = api.get("/api/schema/", {"format": "json"}).json()
    runs = {p["name"] for p in schema["paths"]["/api/runs/"]["get"]["parameters"]}
    assert {"engine", "host", "experiment", "since", "tag", "imported"} <= runs
    explore = {p["name"] for p in schema["paths"]["/api/explore/"]["get"]["parameters"]}
    assert {"x", "y", "group", "include_suspect", "experiments"} <= explore
    assert "/api/compare/" in schema["paths"]


def test_swagger_ui_is_served_from_the_installed_sidecar_not_a_cdn(client, user):
    client.force_login(user)
    page = client.get("/api/docs/").content.decode()
    assert "drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in page
    assert "cdn" not in page.lower()


# The experiment page -------------------------------------------------------------------------


def test_the_experiment_page_summarises_each_cell_and_flags_too_few_repetitions(client, user):
    experiment = ExperimentFactory()
    for seconds in (1.0, 1.1, 0.95):
        done_run(experiment, recovery_seconds=seconds, insert_rate=200, workload_tps=198)
    for seconds in (0.074, 0.197):
        done_run(experiment, recovery_seconds=seconds, insert_rate=2000, achieved_insert_rate=1100)
    client.force_login(user)
    context = client.get(f"/experiments/{experiment.id}/").context
    slow, fast = sorted(context["cells"], key=lambda c: c.parameters["insert_rate"])
    assert slow.summaries["recovery_seconds"].n == 3 and not slow.needs_more
    assert fast.needs_more and "n = 2" in fast.needs_more[0]
    assert "reached 1,100 of the 2,000 rows/s" in fast.rate_note
    # Insert rate varies, so it gets a chart of its own.
    assert "axis-insert_rate" in context["figures"]
    assert {"redo", "phases"} <= set(context["figures"])
    assert "tradeoff" not in context["figures"]  # one redo log size trades nothing


def test_the_experiment_list_is_newest_first_and_searchable(client, user):
    older, newer = ExperimentFactory(name="older sweep"), ExperimentFactory(name="newer", tags=["v11"])
    client.force_login(user)
    listed = list(client.get("/experiments/").context["experiments"])
    assert listed.index(newer) < listed.index(older)
    assert list(client.get("/experiments/", {"q": "v11"}).context["experiments"]) == [newer]


def test_the_live_endpoint_reports_progress_and_fresh_fragments(client, user):
    experiment = ExperimentFactory()
    done_run(experiment)
    RunFactory(
        experiment=experiment,
        status=RunStatus.RUNNING,
        progress="running oltp_write_only: 40%",
        progress_percent=43,
    )
    RunFactory(experiment=experiment, status=RunStatus.QUEUED)
    client.force_login(user)
    body = client.get(f"/experiments/{experiment.id}/live/").json()
    assert body["in_progress"] and body["progress"]["finished"] == 1 and body["progress"]["total"] == 3
    assert (
        "running oltp_write_only: 40%" in body["fragments"]["runs"]
        and "width: 43%" in body["fragments"]["runs"]
    )
    assert "1 of 3 runs finished" in body["fragments"]["progress"]


def test_excluding_and_including_twice_changes_nothing_more():
    run = done_run(ExperimentFactory())
    services.exclude_run(run.id, "first reason")
    services.exclude_run(run.id, "second reason")
    assert Run.objects.get(id=run.id).excluded_reason == "second reason"
    services.include_run(run.id)
    services.include_run(run.id)
    assert not Run.objects.get(id=run.id).excluded


def test_redo_flushed_before_the_kill_but_not_replayed_is_reported_and_buffered_redo_is_not():
    from pathlib import Path

    from experiments.ingest.bundle import analyse_run

    folder = Path(__file__).parent / "data" / "mariadb-10.11" / "innodb_after_workload"
    error_log = (folder / "error.log").read_bytes()
    status = (folder / "innodb_status_at_crash.txt").read_text()
    crash_lsn = analyse_run({}, {"error.log": error_log}, "innodb").metrics["crash_lsn"]

    def warnings_with(sequence: int, flushed: int) -> list[str]:
        edited = status.replace("Log sequence number 74274561", f"Log sequence number {sequence}")
        edited = edited.replace("Log flushed up to   74274561", f"Log flushed up to   {flushed}")
        files = {"error.log": error_log, "innodb_status_at_crash.txt": edited.encode()}
        return analyse_run({}, files, "innodb").warnings

    # redo still in the log buffer at the kill (purge's, say) is lost by design: no warning
    assert not [w for w in warnings_with(crash_lsn + 80_000, crash_lsn) if "committed work" in w]
    # redo flushed to the log and not replayed is
    assert any(
        "committed work may be missing" in w for w in warnings_with(crash_lsn + 80_000, crash_lsn + 500)
    )


@pytest.mark.django_db
def test_explore_reads_a_rate_where_the_charts_would_and_refuses_it_where_they_would(api):
    """The explore fit's 'reads as' comes from PostgreSQL's sums of squares, range and median (its
    points stay JSON text): it says what fits.why_no_rate says of the same points in Python."""
    cases = {
        "innodb": [(10 + 40 * i, 0.1 + (10 + 40 * i) / 150 + 0.003 * (-1) ** i) for i in range(6)],  # a rate
        # the demo's MyRocks: a significant slope over nearly one volume
        "rocksdb": list(
            zip([5.60, 5.61, 5.62, 5.63, 5.64, 5.66], [0.078, 0.081, 0.084, 0.085, 0.088, 0.132], strict=True)
        ),
        "postgresql": [(8 + 4 * i, 0.2 + 0.01 * ((i * 7) % 5)) for i in range(6)],  # flat: noise
    }
    for engine, points in cases.items():
        for mib, seconds in points:
            RunFactory(
                status=RunStatus.DONE, engine=engine, redo_bytes=int(mib * 2**20), recovery_seconds=seconds
            )
    body = api.get("/api/explore/", {"x": "redo_bytes", "y": "recovery_seconds", "group": "engine"}).json()
    said = {fit["series"]: fit["reads_as"] for fit in body["fits"]}
    for series in body["series"]:
        xs, ys = series["x"], series["y"]
        refusal = fits.why_no_rate(fits.fit_line(xs, ys), xs, ys)
        if refusal:
            assert said[series["name"]] == f"no rate: {refusal}", series["name"]
        else:
            assert said[series["name"]].endswith(" MiB/s"), series["name"]
    assert said["InnoDB"].endswith(" MiB/s")
    assert (
        said["MyRocks"] == "no rate: the runs replayed nearly the same redo (within 20%): too narrow a range"
    )
    assert said["PostgreSQL"] == "no rate: recovery does not grow with redo beyond the noise here"


@pytest.mark.parametrize(
    ("ratio", "ci", "longer", "shorter", "times", "interval"),
    [
        # the first side took 0.87x the second's time: the second took 1.15x as long
        (0.87, (0.7, 1.05), "build mariadb-11.8", "build system", "1.15x", "95% CI 0.95-1.43x"),
        (1.3, (0.9, 1.8), "build system", "build mariadb-11.8", "1.30x", "95% CI 0.90-1.80x"),
    ],
)
def test_a_difference_that_is_not_significant_still_says_which_side_took_longer(
    ratio, ci, longer, shorter, times, interval
):
    """Builds whose names sort against their speed: the sentence names the slower one in words,
    whatever the order of the names."""
    from experiments.analysis.sentences import finding_sentence

    result = {"ratio": ratio, "ratio_ci": ci, "significant": False}
    said = finding_sentence("crash recovery", "build system", "build mariadb-11.8", "log 96M", result, False)
    assert said.startswith("log 96M: no significant difference in crash recovery between build system and")
    assert f": {longer} took {times} as long as {shorter} ({interval})" in said
