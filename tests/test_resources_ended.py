"""What a thread did after its last reading (the runner's ENDED row) is timed at the thread's own
pace: a fast PostgreSQL recovery's startup process reads 14 MB between two readings and exits, and
its last reads belong to the recovery, not to the start-up after it."""

import json

from hypothesis import given
from hypothesis import strategies as st
from pytest import approx

from experiments.ingest.resources import ENDED_TID, RCHAR, read_resources, restart_resources

INTERVAL = 0.05
MB = 10**6


def reading(moment: float, startup_rchar: int | None, ended_rchar: int, ended_wchar: int = 0) -> dict:
    """One reading: the server process, the startup process while it lives, the ENDED row."""
    tasks = [[100, 100, "postgres", "S", 1, 0, 10**6, 0, 0, 0, 4096, 0]]
    if startup_rchar is not None:
        tasks.append([100, 101, "postgres: startup recovering", "R", 5, 0, 10**8, 0, 0, 0, startup_rchar, 0])
    tasks.append(
        [100, 0, "I/O after a thread's last reading", "X", 0, 0, 0, 0, 0, 0, ended_rchar, ended_wchar]
    )
    return {"t": moment, "took_ms": 0.5, "tasks": tasks}


def file_of(readings: list[dict]) -> bytes:
    header = {"interval_s": INTERVAL, "ticks_per_s": 100, "pid": 100}
    return "\n".join(json.dumps(line) for line in [header, *readings]).encode()


def replay(rate_mb_s: float, left_mb: float, wchar: int = 0) -> list[dict]:
    """The startup process reads at `rate_mb_s` from 0 to 0.2 s, reads `left_mb` more after its
    last reading and exits: the next reading (0.25 s) finds it gone, its reads in the ENDED row."""
    per_reading = rate_mb_s * MB * INTERVAL
    readings = [reading(i * INTERVAL, int(i * per_reading), 0) for i in range(5)]
    return [*readings, reading(0.25, None, int(left_mb * MB), wchar)]


def ended_and_startup(content: bytes):
    _, threads, _ = read_resources(content, 0.0)
    by_tid = {thread.tid: thread for thread in threads}
    return by_tid[ENDED_TID], by_tid[101]


def test_a_threads_last_reads_are_timed_at_its_own_pace_not_spread_over_the_interval():
    ended, startup = ended_and_startup(file_of(replay(rate_mb_s=280, left_mb=5.6)))
    # 5.6 MB at 280 MB/s: done 20 ms after its last reading, at 0.22 s
    assert ended.at(0.22, RCHAR) == approx(5.6 * MB) and ended.at(0.21, RCHAR) == approx(2.8 * MB)
    # a recovery that ended at 0.23 s read all 61.6 MB (on the line over 0.2-0.25 s: 59.36 MB)
    assert startup.over(0, 0.23, RCHAR) + ended.over(0, 0.23, RCHAR) == approx(61.6 * MB)
    # the wchar the process also did then does not change which column times it
    ended, _ = ended_and_startup(file_of(replay(rate_mb_s=280, left_mb=5.6, wchar=13_102)))
    assert ended.at(0.22, RCHAR) == approx(5.6 * MB)


def test_a_pace_that_would_outlast_the_interval_or_is_unknown_leaves_the_line():
    ended, _ = ended_and_startup(file_of(replay(rate_mb_s=10, left_mb=5)))  # 0.5 s at 10 MB/s
    assert ended.moments == [i * INTERVAL for i in range(6)] and ended.at(0.225, RCHAR) == approx(2.5 * MB)
    seen_once = [reading(0.2, 10 * MB, 0), reading(0.25, None, 4 * MB)]  # one reading: no pace
    ended, _ = ended_and_startup(file_of(seen_once))
    assert ended.moments == [0.2, 0.25]


def test_the_timeline_steps_stay_the_readings():
    """The moment found is no reading: the timeline's rates are drawn between readings only."""
    times = {"killed": 0.0, "recovery_spawned": 0.0, "recovery_first_query": 0.25}
    found, _ = restart_resources(file_of(replay(rate_mb_s=280, left_mb=5.6)), times, None)
    assert len(found["series"]["t"]) == 5 and 0.21 not in found["series"]["t"], found["series"]


@given(
    rate=st.floats(min_value=1, max_value=2000),
    left=st.floats(min_value=0, max_value=200),
    wchar=st.integers(min_value=0, max_value=10**6),
)
def test_timing_moves_the_ended_reads_within_their_interval_and_keeps_every_byte(rate, left, wchar):
    ended, _ = ended_and_startup(file_of(replay(rate_mb_s=rate, left_mb=left, wchar=wchar)))
    assert ended.moments == sorted(set(ended.moments)) and ended.moments[-1] == 0.25
    assert ended.moments[-2] >= 0.2 and ended.at(0.25, RCHAR) == int(left * MB)
    values = [row[RCHAR] for row in ended.rows]
    assert values == sorted(values)  # a counter: it never goes back
