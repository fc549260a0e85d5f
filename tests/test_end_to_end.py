"""The whole path with real parts: API -> PostgreSQL -> Redis -> Celery worker -> host runner
(private mariadbd, sysbench, kill -9, restart) -> ingest -> metrics."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings

from experiments import services
from experiments.models import Run, RunStatus
from experiments.reports.answers import startup_answers
from experiments.reports.findings import parameter_findings
from recovery_lab_cli.units import duration_text
from workers.local import read_bundle
from workers.transports import write_runner

from .conftest import runner_processes, wait_for
from .factories import RunFactory, UserFactory

pytestmark = [pytest.mark.mariadb, pytest.mark.django_db(transaction=True)]


def runner_command(folder, out: str = "bundle") -> list[str]:
    """The host runner as a transport starts it, on folder/spec.json, writing folder/<out>."""
    return [
        sys.executable,
        str(write_runner(folder)),
        "--spec",
        str(folder / "spec.json"),
        "--out",
        str(folder / out),
    ]


def run_runner(folder, spec: dict) -> tuple[int, dict]:
    """Run the host runner as a transport would; its exit code and last event."""
    (folder / "spec.json").write_text(json.dumps(spec))
    done = subprocess.run(
        runner_command(folder),
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done.returncode, json.loads(done.stdout.strip().splitlines()[-1])


def runner_in_its_workload(folder, spec: dict) -> subprocess.Popen:
    """The runner started as a transport starts it (stdin held open), once its workload runs:
    its server and sysbench are both up."""
    (folder / "spec.json").write_text(json.dumps(spec))
    runner = subprocess.Popen(
        [
            sys.executable,
            str(write_runner(folder)),
            "--watch-stdin",
            "--spec",
            str(folder / "spec.json"),
            "--out",
            str(folder / "b"),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    for line in runner.stdout:
        if f"running {spec['workload']['name']}:" in line:
            return runner
    raise AssertionError(f"the runner ended (exit {runner.wait()}) before its workload ran")


def test_four_runs_innodb_and_myrocks_two_redo_sizes(api, client, user, local_host, celery_worker_process):
    body = {
        "name": "InnoDB vs MyRocks, two redo sizes",
        "hosts": ["local"],
        "engines": ["innodb", "rocksdb"],
        "parameters": {"redo_log_size": ["64M", "512M"]},
        "workload": {
            "name": "oltp_write_only",
            "tables": 2,
            "table_size": 20000,  # the dataset most tests here share (loaded once, then copied)
            "threads": 4,
            "events": 8000,
        },
        "crash": {"method": "sigkill", "when": "after_workload"},
        "repetitions": 1,
    }
    created = api.post("/api/experiments/", body, format="json")
    assert created.status_code == 201, created.content
    experiment_id = created.json()["id"]

    def finished():
        runs = Run.objects.filter(experiment_id=experiment_id)
        return all(r.status in (RunStatus.DONE, RunStatus.FAILED) for r in runs)

    wait_for(finished, timeout_s=900, what="4 runs to finish", interval_s=1)
    runs = api.get(f"/api/experiments/{experiment_id}/").json()["runs"]
    assert [r["status"] for r in runs] == ["done"] * 4, [r["error"] for r in runs]
    for run in runs:
        metrics = run["metrics"]
        assert metrics["recovery_seconds"] > 0, run
        assert metrics["downtime_seconds"] > 0 and metrics["ready_seconds"] > 0, run
        assert metrics["downtime_seconds"] >= metrics["ready_seconds"], run
        assert metrics["verified"] is True, run
    innodb = [r for r in runs if r["engine"] == "innodb"]
    assert all(r["metrics"]["redo_bytes"] > 1_000_000 for r in innodb)
    assert all(r["metrics"]["checkpoint_lsn"] < r["metrics"]["crash_lsn"] for r in innodb)
    assert Run.objects.get(id=runs[0]["id"]).files.filter(name="error.log.stamped").exists()
    # what the flushing did, as the run recorded it: held back, the checkpoint where it was
    client.force_login(user)
    for row in innodb:
        page = client.get(f"/runs/{row['id']}/").content.decode()
        moved = Run.objects.get(id=row["id"]).checkpoint_moved_bytes
        assert moved is not None and moved < 64 << 10, moved
        assert "Flushing was held back (the method&#x27;s default): the checkpoint did not move" in page
    # a warm restart's page says whether its redo could come from memory: InnoDB's log (buffering
    # OFF, the default) is read with O_DIRECT, RocksDB's WAL through the cache
    for run in Run.objects.filter(id__in=[r["id"] for r in runs]):
        direct = run.engine == "innodb"
        assert run.resources["restart_cache"]["redo_direct"] is direct, (
            run.engine,
            run.resources["restart_cache"],
        )
        assert run.effective_settings["innodb_log_file_buffering"] == "OFF"  # InnoDB's, on MyRocks runs too
    assert runner_processes() == []


def test_server_that_never_comes_back_fails_clearly_and_leaves_no_process(tmp_path):
    spec = {
        "run_id": 0,
        "engine": "innodb",
        "parameters": {"buffer_pool_size": "64M", "redo_log_size": "64M", "insert_rate": 0},
        "server_options": {},
        "workload": {
            "name": "oltp_write_only",
            "tables": 1,
            "table_size": 100,
            "threads": 1,
            "events": 10,
            "time_seconds": 0,
        },
        "crash": {"method": "sigkill", "when": "after_workload"},
        "work_dir": str(settings.RUNNER_WORK_DIR),
        "start_timeout_s": 0,  # no time at all: the server cannot answer in time
    }
    exit_code, last_event = run_runner(tmp_path, spec)
    assert exit_code == 1
    assert last_event["event"] == "failed"
    assert "never came back" in last_event["error"]
    result = json.loads((tmp_path / "bundle" / "result.json").read_text())
    assert result["status"] == "failed"
    assert runner_processes() == []


def mariadbd_pids(work) -> list[int]:
    """Processes whose command line starts a mariadbd in that work directory (setpriv before its
    exec included)."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                line = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if "mariadbd" in line and str(work) in line:
                found.append(int(proc.name))
    return found


def test_a_restart_that_stops_moving_ends_stalled_once_with_its_evidence_and_the_page_says_so(
    tmp_path, client
):
    """The restarted server is frozen (SIGSTOP) as soon as it appears: no reads, no writes, no
    new log line, as a recovery out of free blocks (MySQL 9.7 on a 256M pool had looped for 8
    minutes). The runner ends it as "stalled" after stall_after_s, long before the start timeout,
    once (permanent: never tried again), with the evidence, and kills it; the dashboard stores a
    stalled run, and its experiment page says what stalled beside what recovered."""
    work = settings.RUNNER_WORK_DIR  # its dataset cached by the tests before
    spec = {**insert_spec("64M", work), "start_timeout_s": 120, "stall_after_s": 4}
    spec["workload"].update(events=0, time_seconds=120)  # to the redo target, then the kill
    spec["crash"] = {"method": "sigkill", "when": "at_redo_bytes", "redo_bytes": "16M"}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    runner = subprocess.Popen(runner_command(tmp_path, "b"), stdout=subprocess.PIPE, text=True)
    events = []
    for line in runner.stdout:
        events.append(json.loads(line))
        if events[-1].get("message", "").startswith("restarting after the crash"):
            break
    hung = wait_for(lambda: mariadbd_pids(work), 30, "the restarted server", interval_s=0.005)
    for pid in hung:
        os.kill(pid, signal.SIGSTOP)
    started = time.monotonic()
    events += [json.loads(line) for line in runner.stdout]
    assert runner.wait(timeout=120) == 1
    assert time.monotonic() - started < spec["stall_after_s"] + 20  # not the 120 s start timeout
    stalled = events[-1]
    assert stalled["event"] == "stalled" and stalled["permanent"] is True, stalled
    assert re.match(
        r"recovery stalled: nothing moved for [4-9] s, from \d+ s into the restart", stalled["error"]
    )
    result = json.loads((tmp_path / "b" / "result.json").read_text())
    assert result["status"] == "stalled" and result["error"] == stalled["error"]
    assert result["stall"]["still_s"] >= 4 and result["stall"]["stall_lines"] == 0, result["stall"]
    assert "killed" in result["times"] and "recovery_first_query" not in result["times"]  # kept
    assert mariadbd_pids(work) == []  # the stopped server killed too

    # the dashboard: a stalled run (the driver retries only what is not permanent), and a sentence
    recovered = RunFactory(status=RunStatus.DONE, redo_bytes=9 << 20, parameters=spec["parameters"])
    run = RunFactory(experiment=recovered.experiment, status=RunStatus.RUNNING, parameters=spec["parameters"])
    services.ingest_bundle(run.id, read_bundle(tmp_path / "b"))
    run.refresh_from_db()
    assert run.status == RunStatus.STALLED and run.error == stalled["error"]
    client.force_login(UserFactory())
    page = client.get(f"/experiments/{run.experiment_id}/").content.decode()
    said = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", page))
    redo = re.search(
        rf"Run #{run.id} \(InnoDB\): recovery stalled with a 256 MiB buffer pool at about (\S+) MiB", said
    )
    assert redo and 12 <= float(redo.group(1)) <= 17, said  # the last sample's checkpoint age: 16M
    assert f"The most redo InnoDB recovered on that pool here: 9 MiB (run #{recovered.id})" in said
    assert "1 stalled (recovery stopped moving)" in said


def test_a_recovery_that_outlives_a_short_start_timeout_while_it_moves_runs_to_its_end(tmp_path):
    """Issue 68: seed 000's restart was killed at the 600 s start timeout, 97% through its redo and
    writing pages at its class's cap. Here a cold restart reads through a class capped at 1.5 MB/s:
    it takes well over its 6 s start timeout, moving all along, and runs to its end; the
    timeout counts from the last sign of progress (a server that never moves still fails: the
    test above). Every start is held to it: the loaded dataset's and the clean restart's too."""
    cap = {"name": "slow-start", "read_bps": 1_500_000, "write_bps": 0, "read_iops": 0, "write_iops": 0}
    spec = {**insert_spec("64M", settings.RUNNER_DISK_WORK_DIR), "start_timeout_s": 6, "stall_after_s": 60}
    # the pool's pages loaded in the background would queue behind the cap, counted when asked
    spec["server_options"] = {**spec["server_options"], "innodb_buffer_pool_load_at_startup": 0}
    spec["crash"] = {"method": "sigkill", "when": "at_redo_bytes", "redo_bytes": "8M"}
    spec["workload"].update(events=0, time_seconds=120)
    spec["parameters"] = {**spec["parameters"], "restart_cache": "cold", "storage": cap["name"]}
    spec["storage"] = cap
    exit_code, last_event = run_runner(tmp_path, spec)
    assert exit_code == 0, last_event
    result, analysis = analysed(tmp_path)
    times = result["times"]
    restart_s = times["recovery_first_query"] - times["recovery_spawned"]
    assert restart_s > spec["start_timeout_s"] * 1.3, times  # it outlived its timeout
    metrics = analysis.metrics
    assert metrics["redo_bytes"] >= 4 << 20 and metrics["verified"] is True, metrics
    assert result["restart_cache"]["resident_bytes"] == 0  # cold: its reads went through the cap
    assert runner_processes() == []


@pytest.mark.skipif(
    os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") >= 60 << 30, reason="a 64G buffer pool fits here"
)
def test_a_server_refusing_its_settings_fails_the_run_with_its_own_words(tmp_path):
    """Settings the allow-list takes and the server cannot start with (a 64G buffer pool on a
    machine with less memory): the run fails with mariadbd's own words from its log's tail."""
    work = settings.RUNNER_WORK_DIR / "bad-option"
    spec = insert_spec("64M", work)
    spec["parameters"]["buffer_pool_size"] = "64G"
    exit_code, last_event = run_runner(tmp_path, spec)
    assert exit_code == 1 and last_event["event"] == "failed"
    assert "mariadbd exited with code 1 while starting" in last_event["error"]
    assert "[ERROR] InnoDB: Plugin initialization aborted" in last_event["error"]  # the log's tail
    assert mariadbd_pids(work) == []


def test_an_option_outside_the_allow_list_or_of_another_engine_is_refused_before_anything_starts(tmp_path):
    work = settings.RUNNER_WORK_DIR / "bad-option"
    spec = {**insert_spec("64M", work), "server_options": {"innodb_no_such_option": "1"}}
    exit_code, last_event = run_runner(tmp_path, spec)
    assert exit_code == 1 and last_event["permanent"] is True
    assert "server option 'innodb_no_such_option' is not one this runner sets" in last_event["error"]
    # an option of MyRocks for an InnoDB run (its plugin not loaded, the server would not know it)
    exit_code, last_event = run_runner(
        tmp_path, {**spec, "server_options": {"rocksdb_max_background_jobs": 4}}
    )
    assert exit_code == 1 and last_event["permanent"] is True
    assert "server option 'rocksdb_max_background_jobs' is not one of innodb's" in last_event["error"]
    assert mariadbd_pids(work) == []
    assert mariadbd_pids(work) == []


def test_runner_refuses_a_malformed_spec_before_starting_anything(tmp_path):
    spec = {
        "run_id": 1,
        "engine": "innodb",
        "parameters": {"redo_log_size": "64M; reboot"},
        "workload": {"name": "oltp_write_only"},
        "crash": {"when": "after_workload"},
    }
    exit_code, last_event = run_runner(tmp_path, spec)
    assert exit_code == 1
    assert "not a size" in last_event["error"] and last_event["permanent"] is True
    result = json.loads((tmp_path / "bundle" / "result.json").read_text())
    assert result["status"] == "failed" and result["permanent"] and "times" not in result


def endless_spec(run_id: int) -> dict:
    """A run whose workload goes on until the runner is stopped (ten million events)."""
    return {
        "run_id": run_id,
        "engine": "innodb",
        "parameters": {"buffer_pool_size": "64M", "redo_log_size": "64M", "insert_rate": 0},
        "workload": {
            "name": "oltp_write_only",
            "tables": 1,
            "table_size": 1000,
            "threads": 1,
            "events": 10_000_000,
            "time_seconds": 0,
        },
        "crash": {"method": "sigkill", "when": "after_workload"},
        "work_dir": str(settings.RUNNER_WORK_DIR),
        "start_timeout_s": 120,
    }


def test_a_runner_whose_stdin_closes_stops_everything_it_started(tmp_path):
    """The worker died or the SSH session dropped: no mariadbd or sysbench of ours is left."""
    runner = runner_in_its_workload(tmp_path, endless_spec(2))
    assert any("sysbench" in p for p in runner_processes()) and any(
        "mariadbd" in p for p in runner_processes()
    )
    runner.stdin.close()
    assert runner.wait(timeout=30) == 3
    wait_for(lambda: runner_processes() == [], 10, "the runner's processes to be gone")


def test_a_server_killed_from_outside_before_the_planned_crash_is_said_and_retried(tmp_path):
    """Another process kills the run's server during its workload: the run fails saying how the
    server ended, that the runner did not do it, and its last log lines; and the failure is
    passing (retried), not permanent as a bad spec would be."""
    spec = endless_spec(900_005)  # an id no run of the session's database has
    runner = runner_in_its_workload(tmp_path, spec)
    (server,) = mariadbd_pids(settings.RUNNER_WORK_DIR / f"run-{spec['run_id']}-")  # not the runner
    os.kill(server, signal.SIGKILL)
    events = [json.loads(line) for line in runner.stdout]
    assert runner.wait(timeout=60) == 1
    failed = events[-1]
    assert failed["event"] == "failed" and failed["permanent"] is False, failed
    assert failed["error"].startswith(
        "the server was killed by SIGKILL before the planned crash; not by the runner: another process"
    ), failed["error"]
    assert "(then: sysbench run failed" in failed["error"]
    assert "Last lines of its error log" in failed["error"]
    result = json.loads((tmp_path / "b" / "result.json").read_text())
    assert result["status"] == "failed" and result["permanent"] is False
    wait_for(lambda: runner_processes() == [], 10, "the runner's processes to be gone")


def analysed(folder) -> tuple[dict, object]:
    """A runner's bundle as ingest reads it: its result and the analysis of its files."""
    from experiments.ingest.bundle import analyse_run
    from runner.contract import size_bytes

    files = {p.name: p.read_bytes() for p in (folder / "bundle").iterdir()}
    result = json.loads(files["result.json"])
    redo_log = size_bytes(result["spec"]["parameters"]["redo_log_size"])
    return result, analyse_run(result, files, "innodb", redo_log)


def insert_spec(redo_log_size: str, work_dir) -> dict:
    """A runner-level spec on the tables most tests share: with the session's work directory as
    work_dir, its dataset is the one the worker's runs cached (loaded once a session)."""
    return {
        "run_id": 3,
        "engine": "innodb",
        "parameters": {"buffer_pool_size": "256M", "redo_log_size": redo_log_size, "insert_rate": 0},
        "workload": {"name": "oltp_insert", "tables": 2, "table_size": 20000, "threads": 2, "events": 20000},
        # no fsync per commit: the same redo in a few seconds instead of ~15 (a kill loses
        # nothing the OS holds); the test of throughput after the restart asks for the fsync
        "server_options": {"innodb_flush_log_at_trx_commit": 2},
        "crash": {"method": "sigkill", "when": "after_workload"},
        "work_dir": str(work_dir),
        "start_timeout_s": 120,
    }


def test_runs_start_from_a_cached_clean_dataset_so_the_redo_replayed_is_the_workloads(tmp_path):
    """Loaded once, shut down slowly, copied for each run: the load is not in the redo."""
    work = settings.RUNNER_WORK_DIR / "cached"
    (tmp_path / "first").mkdir()
    (tmp_path / "second").mkdir()
    assert run_runner(tmp_path / "first", insert_spec("256M", work))[0] == 0
    assert run_runner(tmp_path / "second", insert_spec("256M", work))[0] == 0

    first, first_analysis = analysed(tmp_path / "first")
    second, second_analysis = analysed(tmp_path / "second")
    assert (first["dataset"]["reused"], second["dataset"]["reused"]) == (False, True)
    assert first["dataset"]["key"] == second["dataset"]["key"]
    assert second["dataset"]["seconds"] < first["dataset"]["seconds"]
    for analysis in (first_analysis, second_analysis):
        metrics = analysis.metrics
        # 20,000 inserts write ~8 MB of redo; the 2 x 20,000-row load (~10 MB more) is not in it
        assert 0.85 <= metrics["redo_bytes"] / metrics["log_bytes_written"] <= 1.15, metrics
        assert metrics["verified"] is True and not analysis.warnings, analysis.warnings
    effective = second["effective_settings"]
    assert float(effective["innodb_max_dirty_pages_pct"]) == 99  # the checkpoint held back
    assert int(effective["innodb_log_file_size"]) == 256 << 20
    assert runner_processes() == []


def test_a_checkpoint_that_moves_during_the_workload_is_reported(tmp_path):
    """A 4 MB redo log cannot hold 8 MB of workload redo: recovery replays less than was written,
    and the run says so rather than passing the smaller number off as the workload's."""
    assert run_runner(tmp_path, insert_spec("4M", settings.RUNNER_WORK_DIR))[0] == 0
    _, analysis = analysed(tmp_path)
    assert analysis.metrics["redo_bytes"] < 0.85 * analysis.metrics["log_bytes_written"]
    assert any("a checkpoint moved during the workload" in w for w in analysis.warnings), analysis.warnings


def test_crash_when_the_redo_to_replay_reaches_a_target(tmp_path):
    spec = insert_spec("128M", settings.RUNNER_WORK_DIR)
    spec["workload"].update(events=0, time_seconds=300)  # the target ends it, not the workload
    spec["crash"] = {"method": "sigkill", "when": "at_redo_bytes", "redo_bytes": "32M"}
    assert run_runner(tmp_path, spec)[0] == 0
    result, analysis = analysed(tmp_path)
    target = 32 << 20
    assert result["crash_plan"]["target_bytes"] == target <= result["crash_plan"]["reached_bytes"]
    assert abs(analysis.metrics["checkpoint_age_bytes"] - target) / target < 0.15, analysis.metrics
    assert abs(analysis.metrics["redo_bytes"] - target) / target < 0.15, analysis.metrics
    assert not analysis.warnings, analysis.warnings


def test_crash_with_a_transaction_open_times_its_rollback(tmp_path):
    spec = insert_spec("256M", settings.RUNNER_WORK_DIR)
    spec["crash"] = {"method": "sigkill", "when": "during_transaction", "open_rows": 100_000}
    assert run_runner(tmp_path, spec)[0] == 0
    result, analysis = analysed(tmp_path)
    metrics = analysis.metrics
    assert metrics["trx_rolled_back"] == 1 and metrics["rows_undone"] == 100_000, metrics
    assert metrics["rollback_seconds"] > 0
    # the workload's tables as they were, none of the open transaction's rows
    assert metrics["verified"] is True and result["crash_plan"]["rows_left_after_recovery"] == 0
    assert runner_processes() == []


@pytest.mark.quiet
def test_insert_rates_on_both_engines_from_cached_datasets_give_the_workloads_redo(
    api, local_host, celery_worker_process
):
    """The method, unattended: oltp_insert at 500 and 2,000 rows/s on InnoDB and MyRocks, a crash
    after fixed events, two repetitions."""
    body = {
        "name": "Method: insert rates on both engines",
        "hosts": ["local"],
        "engines": ["innodb", "rocksdb"],
        "parameters": {"redo_log_size": ["256M"], "insert_rate": [500, 2000]},
        "workload": {"name": "oltp_insert", "tables": 2, "table_size": 20000, "threads": 4, "events": 2000},
        "crash": {"method": "sigkill", "when": "after_workload"},
        "repetitions": 2,
    }
    created = api.post("/api/experiments/", body, format="json")
    assert created.status_code == 201, created.content
    experiment_id = created.json()["id"]
    wait_for(
        lambda: all(r.is_finished for r in Run.objects.filter(experiment_id=experiment_id)),
        timeout_s=1200,
        what="8 runs",
        interval_s=1,
    )
    runs = list(Run.objects.filter(experiment_id=experiment_id).order_by("started_at"))
    assert [r.status for r in runs] == ["done"] * 8, [r.error for r in runs]
    for engine in ("innodb", "rocksdb"):
        mine = [r for r in runs if r.engine == engine]
        # loaded once per engine at most (an earlier test of the session may have cached the same
        # tables: oltp_insert and oltp_write_only prepare the same dataset), then copied
        assert [r.dataset_reused for r in mine][1:] == [True] * 3
    for run in runs:
        assert run.achieved_insert_rate is not None and run.achieved_insert_rate > 0, run
        if run.achieved_insert_rate < 0.9 * run.insert_rate:
            assert "insert rate not reached" in run.error, run.error
        else:
            assert "insert rate not reached" not in run.error
        if run.engine == "innodb":
            assert 0.85 <= run.redo_bytes / run.log_bytes_written <= 1.15, (
                run.redo_bytes,
                run.log_bytes_written,
            )
    slow = [r.achieved_insert_rate for r in runs if r.insert_rate == 500]
    assert all(450 <= rate <= 550 for rate in slow), slow  # sysbench's --rate holds 500 rows/s (±10%)
    assert runner_processes() == []


def test_the_server_holds_the_binlog_files_asked_for_and_the_finding_says_what_their_phase_did(tmp_path):
    """One run with 1 binlog file at the crash, one with 200; the finding on binlog files names
    their own phase, binlog / XA recovery, with what it measured on each side (issue 42: a
    finding had called 200 files 1.4x faster while only InnoDB's redo apply had moved)."""
    rows = []
    for files in (1, 200):
        (tmp_path / str(files)).mkdir()
        spec = insert_spec("256M", settings.RUNNER_WORK_DIR)
        spec["parameters"]["binlog_files"] = files
        assert run_runner(tmp_path / str(files), spec)[0] == 0
        result, analysis = analysed(tmp_path / str(files))
        assert result["binlog_files_at_crash"] == files
        assert "binlog_recovery" in analysis.phases  # timed, whatever it shows
        # to the runner's stamps: a phase shorter than 5 ms is below resolution, not zero
        assert analysis.phase_resolution["binlog_recovery"] == 0.005
        assert analysis.metrics["verified"] is True and not analysis.warnings, analysis.warnings
        rows.append(analysed_row(files, spec, analysis))
    # compared on the downtime, which their phase is part of, not on crash recovery (seed 003)
    assert parameter_findings(rows, ["binlog_files"]) == []
    (finding,) = startup_answers(rows, ["binlog_files"])
    low, high = (duration_text(row["phases"]["binlog_recovery"], 0.005) for row in rows)
    assert f"binlog / XA recovery {low} at 1, {high} at 200 (medians)" in finding, finding
    assert "the number of binary log files (1 to 200)" in finding and "downtime " in finding


def analysed_row(run_id: int, spec: dict, analysis) -> dict:
    """A run's analysis as the dashboard's analysis reads a run (cells.ROW_FIELDS)."""
    from experiments.analysis.cells import ROW_FIELDS
    from experiments.metrics import NUMERIC_METRICS

    row = dict.fromkeys(ROW_FIELDS)
    row.update(
        id=run_id, experiment_id=1, status="done", engine=spec["engine"], host_label="local",
        parameters=spec["parameters"], server_options=spec["server_options"], repetition=1,
        imported=False, phases=analysis.phases, phase_resolution=analysis.phase_resolution, suspect=False,
        disturbed=False, excluded=False,
    )  # fmt: skip
    row.update({name: analysis.metrics.get(name) for name in NUMERIC_METRICS})
    return row


@pytest.mark.quiet
def test_the_way_back_to_full_throughput_after_the_restart_is_timed(tmp_path):
    # a sync per commit, on the disk: seconds of workload whose throughput the restart must regain
    # (in memory the workload ends within its first one-second report)
    spec = {**insert_spec("256M", settings.RUNNER_DISK_WORK_DIR), "server_options": {}}
    spec["workload"]["warmup_max_seconds"] = 30
    assert run_runner(tmp_path, spec)[0] == 0
    result, analysis = analysed(tmp_path)
    warmup = result["warmup"]
    assert warmup["pre_crash_tps"] > 0 and 1 <= warmup["seconds"] <= 30
    assert analysis.metrics["warmup_seconds"] == warmup["seconds"]
    report = (tmp_path / "bundle" / "sysbench_warmup.txt").read_text()
    first_back = [line for line in report.splitlines() if line.startswith(f"[ {warmup['seconds']:g}s ]")]
    assert first_back, report  # the one-second report that crossed 90% is in the raw file
    assert runner_processes() == []


@pytest.mark.parametrize(
    ("build", "option"),
    [
        (
            "/usr/sbin/mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64",
            "innodb-log-file-size",
        ),
        (
            "/usr/sbin/mysqld  Ver 8.0.36 for Linux on x86_64 (MySQL Community Server - GPL)",
            "innodb-redo-log-capacity",
        ),
        (
            "/usr/sbin/mysqld  Ver 8.0.29 for Linux on x86_64 (MySQL Community Server - GPL)",
            "innodb-log-file-size",
        ),
        (
            "/usr/sbin/mysqld  Ver 8.4.3 for Linux on x86_64 (MySQL Community Server - GPL)",
            "innodb-redo-log-capacity",
        ),
        (
            "/usr/sbin/mysqld  Ver 5.7.44 for Linux on x86_64 (MySQL Community Server (GPL))",
            "innodb-log-file-size",
        ),
    ],
)
def test_redo_log_size_is_named_as_each_server_build_names_it(build, option):
    from runner.families.mariadb.engines import redo_log_option

    assert redo_log_option(build, "512M") == f"--{option}=512M"


def test_this_hosts_server_reports_the_redo_log_size_asked_for(tmp_path):
    """The translation, read back from a real server: requested beside effective."""
    assert run_runner(tmp_path, insert_spec("128M", settings.RUNNER_WORK_DIR))[0] == 0
    result = json.loads((tmp_path / "bundle" / "result.json").read_text())
    assert int(result["effective_settings"]["innodb_log_file_size"]) == 128 << 20
    assert "--innodb-log-file-size=128M" in result["server_args"]


@pytest.mark.parametrize(
    ("stop", "exit_code"),
    [
        # A stopped service signals the worker's whole process group, the runner included: it
        # stops its servers (in sessions of their own) itself.
        ("terminate", 128 + 15),
        # SIGKILL reaches no handler: the kernel ends what the runner started (parent-death signal).
        ("kill", -9),
    ],
)
def test_a_runner_stopped_by_a_signal_takes_everything_it_started_with_it(tmp_path, stop, exit_code):
    work = settings.RUNNER_WORK_DIR / f"signalled-{stop}"  # where runner_processes() looks
    spec = insert_spec("64M", work)
    spec["workload"].update(events=0, time_seconds=600)
    runner = runner_in_its_workload(tmp_path, spec)
    ours = [p for p in runner_processes() if str(work) in p]
    assert any("mariadbd" in p for p in ours) and any("sysbench" in p for p in ours)
    getattr(runner, stop)()
    assert runner.wait(timeout=30) == exit_code
    runner.stdin.close()
    wait_for(lambda: not [p for p in runner_processes() if str(work) in p], 10, "the runner's processes")


def test_a_full_work_directory_fails_the_run_saying_so_and_leaves_nothing(tmp_path):
    """The work directory on a file system of the test's own, too small for a server (40 MB)."""
    mount = settings.RUNNER_WORK_DIR / "full-disk"
    mount.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=40m", "tmpfs", str(mount)], check=True)
    try:
        spec = insert_spec("16M", mount / "work")
        code, last = run_runner(tmp_path, spec)
        assert code == 1 and last["event"] == "failed"
        assert "the file system of the work directory" in last["error"] and "is full" in last["error"]
        assert runner_processes() == []
        assert not list((mount / "work").glob("run-*"))  # the run's half-made files are gone
        result = json.loads((tmp_path / "bundle" / "result.json").read_text())
        assert result["status"] == "failed" and result["error"] == last["error"]
    finally:
        subprocess.run(["umount", str(mount)], check=True)
