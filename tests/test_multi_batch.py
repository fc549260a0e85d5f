"""A recovery whose redo does not fit its buffer pool: applied in batches, every batch a part
of the phases, the phases adding up to the recovery (a real run: tests/data/bundles/README.md)."""

import pytest

from experiments.charts.run import progress_chart
from experiments.ingest.bundle import analyse_run
from experiments.parsers import parse_bytes

from .test_seconds import bundle

# The runner's stamps of the lines that bound the phases, read by hand from error.log.stamped.
CRASH_START = 1795767716.951221  # Starting crash recovery from checkpoint LSN=68341368
FIRST_BATCH = 1795767717.594139  # To recover: LSN 94890235/404092727; 1437 pages
AFTER_LAST_BATCH = 1795767720.234554  # 128 rollback segments are active.
BATCH_LSNS = [94890235, 147708733, 201413444, 254046708, 307413996, 361226317, None]


def crash_of(files: dict):
    parsed = parse_bytes("error.log.stamped", files["error.log.stamped"])
    [crash] = parsed.crash_episodes
    return crash


def test_every_batch_is_read_and_the_phases_add_up_to_the_recovery():
    crash = crash_of(bundle("innodb_multi_batch")[1])
    assert crash.multi_batch_lsn == 94890179
    assert [batch.lsn for batch in crash.batches] == BATCH_LSNS
    assert crash.batches[-1].pages == 2410 and crash.pages_to_recover == 16482  # summed over batches
    assert crash.redo_bytes == 404092727 - 68341368
    scan, apply = crash.phase("redo_scan"), crash.phase("redo_apply")
    assert scan.seconds == pytest.approx(FIRST_BATCH - CRASH_START, abs=1e-6)
    assert apply.seconds == pytest.approx(AFTER_LAST_BATCH - FIRST_BATCH, abs=1e-6)
    assert scan.seconds + apply.seconds == pytest.approx(crash.recovery_seconds, abs=0.05)


def test_the_run_keeps_the_batches_on_its_timeline_and_draws_its_progress():
    result, files = bundle("innodb_multi_batch")
    analysis = analyse_run(result, files, "innodb", redo_log_bytes=1 << 30)
    metrics, phases = analysis.metrics, analysis.phases
    assert not analysis.suspect_reasons
    assert phases["redo_scan"] + phases["redo_apply"] == pytest.approx(metrics["recovery_seconds"], abs=0.05)
    assert phases["redo_apply"] > 2 * phases["redo_scan"]  # the batches are where the time went
    timeline = analysis.timeline
    assert timeline["batches"] == 7 and timeline["batches_reread"]
    applied = [bar for bar in timeline["bars"] if bar["name"] == "redo apply (7 batches)"]
    assert len(applied) == 7
    assert all(
        a["end"] == b["start"] for a, b in zip(applied, applied[1:], strict=False)
    )  # one after another
    progress = timeline["progress"]
    read = progress["redo_read_bytes"]
    assert read == sorted(read) and read[-1] == progress["redo_bytes"] == metrics["redo_bytes"]
    assert progress["batch_pages"][0] == 1437
    figure = progress_chart(timeline)
    assert "7 batches" in figure["layout"]["title"]["text"]
    assert [trace["type"] for trace in figure["data"]] == ["scatter", "bar"]


def test_a_progress_report_inside_a_batch_is_no_new_batch():
    """MariaDB repeats a batch's line every 15 s while it goes on: the same LSN, fewer pages."""
    files = bundle("innodb_multi_batch")[1]
    log = files["error.log.stamped"]
    line = (
        b"[runner 1795767718.100000] 2026-11-27  8:21:58 0 [Note] InnoDB: "
        b"To recover: LSN 147708733/404092727; 1200 pages\n"
    )
    at = log.index(b"[runner 1795767718.342715]")
    crash = crash_of({"error.log.stamped": log[:at] + line + log[at:]})
    assert [batch.lsn for batch in crash.batches] == BATCH_LSNS
    assert [p.pages for p in crash.progress][1:3] == [2453, 1200]


# MySQL 8.0's wording (tests/data/public/mysql80_recovery.txt), a recovery of two batches: the
# scan goes on between them, so the time between a batch's end and the next is the scan's.
MYSQL_TWO_BATCHES = b"""\
2024-03-01T10:00:00.000000Z 1 [Note] [MY-012552] [InnoDB] Starting crash recovery.
2024-03-01T10:00:00.100000Z 1 [Note] [MY-012550] [InnoDB] Doing recovery: scanned up to log sequence number 50
2024-03-01T10:00:00.500000Z 1 [Note] [MY-012532] [InnoDB] Applying a batch of 1000 redo log records ...
2024-03-01T10:00:01.500000Z 1 [Note] [MY-012535] [InnoDB] Apply batch completed!
2024-03-01T10:00:01.800000Z 1 [Note] [MY-012550] [InnoDB] Doing recovery: scanned up to log sequence number 90
2024-03-01T10:00:02.000000Z 1 [Note] [MY-012532] [InnoDB] Applying a batch of 500 redo log records ...
2024-03-01T10:00:02.250000Z 1 [Note] [MY-012535] [InnoDB] Apply batch completed!
"""


def test_mysql_batches_split_the_scan_and_the_apply_into_their_goes():
    [crash] = parse_bytes("error.log", MYSQL_TWO_BATCHES).crash_episodes
    scan, apply = crash.phase("redo_scan"), crash.phase("redo_apply")
    assert scan.seconds == pytest.approx(0.5 + 0.5) and apply.seconds == pytest.approx(1.0 + 0.25)
    assert len(scan.parts()) == len(apply.parts()) == 2
    assert scan.seconds + apply.seconds == pytest.approx(crash.recovery_seconds)
    # "Applying a batch of N redo log records" counts the pages of the recovery hash (n_addrs)
    assert [batch.pages for batch in crash.batches] == [1000, 500] and crash.pages_to_recover == 1500
    assert crash.redo_records_applied is None
    assert crash.to_dict()["phases"][1]["parts"][1] == [
        "2024-03-01T10:00:01.500000+00:00",
        "2024-03-01T10:00:02.000000+00:00",
    ]


def test_a_recovery_of_any_length_keeps_a_bounded_evenly_thinned_progress():
    from datetime import UTC, datetime, timedelta

    from experiments.parsers.model import MAX_PROGRESS, Episode, Progress

    episode, start = Episode(), datetime(2026, 1, 1, tzinfo=UTC)
    for second in range(5 * MAX_PROGRESS):
        episode.add_progress(Progress(start + timedelta(seconds=second), lsn=second))
    kept = [p.lsn for p in episode.progress_lines()]
    assert len(kept) <= MAX_PROGRESS + 1 and kept[0] == 0 and kept[-1] == 5 * MAX_PROGRESS - 1  # the latest
    body = kept[:-1]
    steps = {b - a for a, b in zip(body, body[1:], strict=False)}
    assert steps == {8}  # evenly spaced: every 8th of 10,000 lines
