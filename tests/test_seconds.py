"""The seconds before and after the crash, from real runner bundles (tests/data/bundles)."""

import json
from pathlib import Path

import pytest

from experiments.charts.run import live_samples_chart, samples_chart, timeline_chart
from experiments.ingest.bundle import analyse_run
from experiments.ingest.seconds import AFTER_CRASH, CLEAN_START, sample_series
from runner.contract import SAMPLE_COUNTERS, SAMPLE_LEVELS
from runner.families import FAMILY_ENGINES

BUNDLES = Path(__file__).parent / "data" / "bundles"


def bundle(name: str) -> tuple[dict, dict[str, bytes]]:
    files = {p.name: p.read_bytes() for p in (BUNDLES / name).iterdir() if p.name != "README.md"}
    return json.loads(files["result.json"]), files


def bars(timeline: dict, group: str) -> dict[str, dict]:
    return {bar["name"]: bar for bar in timeline["bars"] if bar["group"] == group}


def test_innodb_samples_climb_to_the_crash_and_end_before_it():
    result, files = bundle("innodb_during_workload")
    samples = analyse_run(result, files, "innodb").samples
    series, t = samples["series"], samples["t"]
    assert len(t) >= 8 and t == sorted(t)
    age = series["checkpoint_age_bytes"]
    assert age[-1] > age[0] and age[-1] > 1_000_000  # the redo to replay grew under the workload
    assert t[-1] <= samples["crash_at"] < t[-1] + 1.5  # the last sample is the last second before it
    assert series["log_bytes_written_per_s"][0] is None  # no rate before a second sample
    assert all(rate > 0 for rate in series["log_bytes_written_per_s"][1:])
    assert all(rate > 0 for rate in series["rows_changed_per_s"][1:])
    at_crash = result["counters"]["log_bytes_written"]
    assert series["lsn"][-1] - series["lsn"][0] <= at_crash  # sampled inside the workload's span
    assert len(samples["sysbench"]["tps"]) >= 8
    assert 0 < samples["sample_ms_median"] < 100  # what a reading cost the server, kept with it


@pytest.mark.parametrize(
    "name, family, engine",
    [
        ("innodb_during_workload", "mariadb", "innodb"),
        ("myrocks_during_workload", "mariadb", "rocksdb"),
        ("postgresql_300M_profiled", "postgresql", "postgresql"),
    ],
)
def test_samples_written_under_an_engines_own_names_read_as_under_the_shared_ones(name, family, engine):
    """These bundles' samples.jsonl predate the shared names (Innodb_*, Rocksdb_*, wal_lsn...).
    The same seconds written as the runner writes them now (the engine's sample_of) make the
    same series, to the value; a new row holds only shared names."""
    result, files = bundle(name)
    kind, shared = FAMILY_ENGINES[family][engine], {*SAMPLE_LEVELS, *SAMPLE_COUNTERS}
    rows = [json.loads(line) for line in files["samples.jsonl"].splitlines()]
    assert any(key not in shared | {"t", "took_ms"} for key in rows[0])  # an engine's own names
    rewritten = [
        {
            "t": row["t"],
            **({"took_ms": row["took_ms"]} if "took_ms" in row else {}),
            **kind.sample_of(row),
            **{key: row[key] for key in row if key in shared},  # sample_extras: shared already
        }
        for row in rows
    ]
    assert all(key in shared | {"t", "took_ms"} for row in rewritten for key in row)
    now = b"".join(json.dumps(row).encode() + b"\n" for row in rewritten)
    stored, _ = sample_series(files["samples.jsonl"], result["times"])
    assert sample_series(now, result["times"])[0] == stored
    assert len(stored["series"]) >= 4
    assert all(any(v is not None for v in values) for values in stored["series"].values())


def test_every_engine_samples_only_shared_names_from_values_it_reads():
    for family, engines in FAMILY_ENGINES.items():
        for kind in engines.values():
            shared = {*SAMPLE_LEVELS, *SAMPLE_COUNTERS}
            assert kind.samples and set(kind.samples) <= shared, (family, kind.name)
            sql = kind.sample_sql("end")
            assert all(f"'{own}'" in sql for own in kind.own_sampled()), (family, kind.name)


def test_myrocks_samples_hold_its_wal_and_memtables():
    result, files = bundle("myrocks_during_workload")
    series = analyse_run(result, files, "rocksdb").samples["series"]
    assert "checkpoint_age_bytes" not in series
    assert series["wal_on_disk_bytes"][-1] > series["wal_on_disk_bytes"][0] > -1
    assert series["memtable_bytes"][-1] > 0 and series["wal_bytes_per_s"][-1] > 0


def test_restart_timeline_orders_the_steps_from_the_kill():
    result, files = bundle("innodb_during_workload")
    timeline = analyse_run(result, files, "innodb").timeline
    after = bars(timeline, AFTER_CRASH)
    times = result["times"]
    assert after["nothing running"]["start"] == 0.0
    assert after["nothing running"]["end"] == pytest.approx(
        times["recovery_spawned"] - times["killed"], abs=0.001
    )
    recovery, scan, apply = (
        after[n] for n in ("crash recovery (start to redo applied)", "redo scan", "redo apply")
    )
    assert recovery["start"] <= scan["start"] <= scan["end"] <= apply["start"] <= apply["end"]
    ready = after["start to ready for connections"]
    assert apply["end"] <= ready["end"]
    first_query = next(
        m for m in timeline["moments"] if m["group"] == AFTER_CRASH and m["name"] == "first query answered"
    )
    assert first_query["at"] == pytest.approx(times["recovery_first_query"] - times["killed"], abs=0.001)
    clean = bars(timeline, CLEAN_START)
    assert "redo apply" not in clean and clean["start to ready for connections"]["start"] == 0.0


def test_a_ready_line_stamped_after_the_first_query_was_answered_is_bounded_by_it():
    # the same real run, its first query answered 50 ms before its log's ready line was stamped
    # (what a busy host's stamper did in a full suite: ready 0.525 s, downtime 0.479 s)
    result, files = bundle("innodb_during_workload")
    honest = analyse_run(result, files, "innodb").metrics
    times = result["times"]
    ready_at = times["recovery_spawned"] + honest["ready_seconds"]
    result["times"] = {**times, "recovery_first_query": ready_at - 0.05}
    analysis = analyse_run(result, files, "innodb")
    answered = round(ready_at - 0.05 - times["recovery_spawned"], 6)
    assert analysis.metrics["ready_seconds"] == pytest.approx(answered, abs=1e-6)
    assert analysis.metrics["ready_seconds"] <= analysis.metrics["downtime_seconds"]
    (warning,) = [w for w in analysis.warnings if "stamped" in w and "first query" in w]
    assert "0.050 s after the first query was answered" in warning
    assert not [w for w in analyse_run(*bundle("innodb_during_workload"), "innodb").warnings if "lagged" in w]
    # 1 and 6 ms late (full suites' runs): within the stamps' 5 ms and a thread's wake-up, as a
    # stamp may be: bounded, not said
    for late in (0.001, 0.006):
        result["times"] = {**times, "recovery_first_query": ready_at - late}
        analysis = analyse_run(result, files, "innodb")
        within = ready_at - late - times["recovery_spawned"]
        assert analysis.metrics["ready_seconds"] == pytest.approx(within, abs=1e-6)
        assert not [w for w in analysis.warnings if "lagged" in w]


def test_myrocks_restart_shows_its_wal_replay_from_rocksdbs_log():
    result, files = bundle("myrocks_during_workload")
    analysis = analyse_run(result, files, "rocksdb")
    after = bars(analysis.timeline, AFTER_CRASH)
    replay = after["WAL replay (RocksDB's LOG)"]
    assert replay["end"] - replay["start"] == pytest.approx(analysis.metrics["recovery_seconds"], abs=0.002)
    assert after["process start to its first log line"]["end"] <= replay["start"]
    assert replay["end"] <= after["start to ready for connections"]["end"]
    names = [bar["name"] for bar in analysis.timeline["bars"] if bar["group"] == AFTER_CRASH]
    assert names[-2:] == ["start to ready for connections", "ready to the first query answered"]
    starts = [bar["start"] for bar in analysis.timeline["bars"] if bar["group"] == AFTER_CRASH][:-2]
    assert starts == sorted(starts)  # the steps in the order they began


def test_an_imported_log_gets_its_timeline_from_its_servers_first_line():
    log = (Path(__file__).parent / "data" / "bundles" / "innodb_during_workload" / "error.log").read_bytes()
    analysis = analyse_run({"imported": True}, {"error.log": log}, "innodb")
    after = bars(analysis.timeline, AFTER_CRASH)
    assert "nothing running" not in after  # nobody timed the kill
    assert analysis.timeline["zero"][AFTER_CRASH] == "the server's first line"
    assert after["crash recovery (start to redo applied)"]["start"] >= 0
    assert CLEAN_START not in analysis.timeline["zero"]


def test_samples_cut_short_by_the_crash_are_skipped_with_a_warning():
    result, files = bundle("innodb_during_workload")
    cut = files["samples.jsonl"] + b'{"t": 17954\x00\x00'
    samples, warnings = sample_series(cut, result["times"])
    assert len(samples["t"]) == files["samples.jsonl"].count(b"\n")
    assert warnings == ["samples: 1 line(s) that are no sample were skipped"]
    assert sample_series(b"not json\n", {}) == ({}, ["samples: 1 line(s) that are no sample were skipped"])


def test_run_charts_mark_the_crash_and_draw_each_step():
    result, files = bundle("innodb_during_workload")
    analysis = analyse_run(result, files, "innodb")
    figure = samples_chart(analysis.samples, "sigkill")
    crash_line = figure["layout"]["shapes"][0]
    assert crash_line["x0"] == analysis.samples["crash_at"]
    assert "crash (kill -9)" in [note["text"] for note in figure["layout"]["annotations"]]
    assert "power cut" in [
        n["text"] for n in samples_chart(analysis.samples, "power_loss")["layout"]["annotations"]
    ]
    names = {trace["name"] for trace in figure["data"]}
    assert {
        "checkpoint age: redo since the last checkpoint",
        "dirty pages in the buffer pool",
        "sysbench transactions",
    } <= names
    gantt = timeline_chart(analysis.timeline)
    rows = gantt["layout"]["yaxis"]["categoryarray"][::-1]
    assert rows[0] == "nothing running" and "clean start: start to ready for connections" in rows
    assert samples_chart({}, "") == {"data": [], "layout": {}} == timeline_chart({})


@pytest.mark.django_db
def test_ingest_keeps_both_with_the_run_and_the_run_api_answers_them(api):
    from experiments.services.runs import Bundle, ingest_bundle, reparse_run

    from .factories import ExperimentFactory, RunFactory

    result, files = bundle("innodb_during_workload")
    run = RunFactory(experiment=ExperimentFactory(), engine="innodb", status="running")
    run = ingest_bundle(run.id, Bundle(result, files))
    assert run.status == "done" and run.samples["crash_at"] > 0 and run.timeline["bars"]
    detail = api.get(f"/api/runs/{run.id}/").json()
    assert detail["samples"]["t"] == run.samples["t"] and detail["timeline"] == run.timeline
    listed = api.get("/api/runs/", {"experiment": run.experiment_id}).json()["results"][0]
    assert "samples" not in listed and "timeline" not in listed  # lists stay light
    type(run).objects.filter(id=run.id).update(samples={}, timeline={})
    assert reparse_run(run.id).timeline == run.timeline  # rebuilt from the stored files


def test_a_run_whose_parser_raised_is_suspect_with_the_reason_and_reparse_clears_it(db, monkeypatch):
    """A parser bug must not leave a "done" run with metrics quietly missing."""
    import experiments.parsers as parsers
    from experiments.services.runs import Bundle, ingest_bundle, reparse_run

    from .factories import ExperimentFactory, RunFactory

    real = parsers.parse_sysbench

    def broken(parsed, lines):
        raise ZeroDivisionError("division by zero")

    result, files = bundle("innodb_during_workload")
    run = RunFactory(experiment=ExperimentFactory(), engine="innodb", status="running")
    monkeypatch.setattr(parsers, "parse_sysbench", broken)
    run = ingest_bundle(run.id, Bundle(result, files))
    assert run.status == "done" and run.suspect and run.workload_tps is None
    assert run.suspect_reason.startswith(
        "the parser failed on sysbench_report.txt (ZeroDivisionError: division by zero)"
    )
    assert run.recovery_seconds is not None  # what the other files gave is kept
    monkeypatch.setattr(parsers, "parse_sysbench", real)  # the parser fixed
    run = reparse_run(run.id)
    assert not run.suspect and run.suspect_reason == "" and run.workload_tps > 0


@pytest.mark.django_db
def test_live_samples_keep_the_latest_and_a_superseded_attempts_are_dropped(monkeypatch):
    from django.utils import timezone

    from experiments.models import RunAttempt
    from experiments.services import runs as run_services

    from .factories import ExperimentFactory, RunFactory

    monkeypatch.setattr(run_services, "LIVE_SAMPLES_KEPT", 5)
    run = RunFactory(experiment=ExperimentFactory(), status="running")
    attempt = RunAttempt.objects.create(run=run, number=1, started_at=timezone.now())
    for second in range(7):
        run_services.record_sample(
            run.id, {"t": 1000.0 + second, "checkpoint_age_bytes": second * 10}, attempt.id
        )
    run.refresh_from_db()
    assert [sample["t"] for sample in run.live_samples] == [1002.0, 1003.0, 1004.0, 1005.0, 1006.0]
    RunAttempt.objects.filter(id=attempt.id).update(ended_at=timezone.now())  # superseded
    run_services.record_sample(run.id, {"t": 2000.0}, attempt.id)
    run.refresh_from_db()
    assert run.live_samples[-1]["t"] == 1006.0
    figure = live_samples_chart(run.live_samples)
    assert figure["data"] and not figure["layout"]["shapes"]  # the workload so far: no crash yet


@pytest.mark.django_db
def test_a_stored_run_s_engine_named_series_is_renamed_by_its_migration():
    import importlib

    from django.apps import apps

    from .factories import ExperimentFactory, RunFactory

    migration = importlib.import_module("experiments.migrations.0036_samples_shared_names")
    run = RunFactory(experiment=ExperimentFactory())
    run.samples = {"t": [0.0, 1.0], "series": {"rocksdb_bytes_written_per_s": [None, 5.0], "lsn": [1, 2]}}
    run.save(update_fields=["samples"])
    migration.renamed(apps, migration.OLD, migration.NEW)
    run.refresh_from_db()
    assert run.samples["series"] == {"engine_bytes_written_per_s": [None, 5.0], "lsn": [1, 2]}
    names = {trace["name"] for trace in samples_chart(run.samples)["data"]}
    assert "bytes given to the engine to write" in names
