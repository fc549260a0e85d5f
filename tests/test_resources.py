"""Where a restart's time went: what the server's threads used over the recovery and the rest of
start-up, the verdict naming the bound resource, the disk's floor and the CPU profile; from real
runner bundles of 300 MiB recoveries (tests/data/bundles/*_300M_profiled, README there)."""

import copy
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from experiments.analysis.where import resource_sentence
from experiments.charts.experiment import redo_fit_chart
from experiments.charts.profile import diff_chart, flame_chart
from experiments.charts.resources import with_resources
from experiments.charts.run import timeline_chart
from experiments.ingest.bundle import analyse_run
from experiments.ingest.profile import NOT_EXPORTED, stacks_of
from experiments.ingest.resources import RESOURCES_FILE
from experiments.ingest.seconds import AFTER_CRASH
from experiments.ingest.verdict import verdict
from runner import floor
from runner.probe import host_facts

from .test_seconds import bundle

INNODB, POSTGRESQL = "innodb_300M_profiled", "postgresql_300M_profiled"


def analysed(name: str, engine: str, drop_floor: bool = False):
    result, files = bundle(name)
    if drop_floor:
        result = copy.deepcopy(result)
        del result["facts"]["disk"]["floor"]
    return result, files, analyse_run(result, files, engine, 1 << 30)


def readings(files: dict) -> list[tuple[float, dict]]:
    """(moment, {tid: row}) of each reading, read here without the module under test."""
    found = []
    for line in files[RESOURCES_FILE].splitlines():
        row = json.loads(line)
        if "tasks" in row:
            found.append((row["t"], {task[1]: task for task in row["tasks"]}))
    return found


def test_an_innodb_recovery_of_300_mib_is_bound_by_one_core_its_main_thread_scanning_the_redo():
    result, files, analysis = analysed(INNODB, "innodb")
    resources, metrics = analysis.resources, analysis.metrics
    recovery = resources["recovery"]
    # the window is the recovery the timeline draws: the redo scan's start to the redo apply's end
    bars = {bar["name"]: bar for bar in analysis.timeline["bars"] if bar["group"] == AFTER_CRASH}
    assert recovery["window"] == pytest.approx(
        [bars["redo scan"]["start"], bars["redo apply"]["end"]], abs=0.001
    )
    # InnoDB read its redo from the disk: at least the redo it replayed (314,848,903 bytes)
    assert metrics["redo_bytes"] > 300e6 and recovery["read_bytes"] >= 0.95 * metrics["redo_bytes"]
    busiest = recovery["threads"][0]
    pid = json.loads(files[RESOURCES_FILE].splitlines()[0])["pid"]
    assert busiest["name"] == f"mariadbd {pid} (main thread)"
    # its CPU within the window lies between the readings on either side of it (schedstat's ns)
    start, end = (result["times"]["killed"] + moment for moment in recovery["window"])
    seen = [(t, rows[pid][6]) for t, rows in readings(files) if pid in rows]
    inner = [ns for t, ns in seen if start <= t <= end]
    outer_start = max(ns for t, ns in seen if t <= start)
    outer_end = min(ns for t, ns in seen if t >= end)
    assert (inner[-1] - inner[0]) / 1e9 <= busiest["cpu_s"] <= (outer_end - outer_start) / 1e9
    assert 0.8 <= busiest["cpu_share"] <= 1.0
    assert recovery["cores"] <= result["facts"]["cpu_count"]
    said = resources["verdict"]
    assert said["bound"] == "cpu_one_core"
    assert (
        f"bound by one core (mostly redo scan): mariadbd {pid} (main thread) was on a core"
        in said["sentence"]
    )
    assert "waiting for a core" in said["sentence"] and "waiting otherwise" in said["sentence"]
    assert (
        "of this disk's sequential read (fio: " in said["sentence"] and "mostly redo scan" in said["sentence"]
    )
    # the rest of start-up is the spawn to the first query less the recovery
    rest = resources["rest"]
    assert rest["seconds"] + recovery["seconds"] == pytest.approx(
        result["times"]["recovery_first_query"] - result["times"]["recovery_spawned"], abs=0.002
    )


def test_a_postgresql_recovery_is_its_startup_process_replaying_wal_from_the_page_cache():
    _, _, analysis = analysed(POSTGRESQL, "postgresql")
    recovery = analysis.resources["recovery"]
    busiest = recovery["threads"][0]
    assert busiest["name"].startswith("postgres: startup") and busiest["cpu_share"] >= 0.8
    # the WAL it replayed came through read() calls, most of it from the page cache a kill -9 keeps
    assert recovery["rchar"] >= 0.95 * analysis.metrics["redo_bytes"]
    assert recovery["read_bytes"] < 0.5 * recovery["rchar"]
    sentence = analysis.resources["verdict"]["sentence"]
    assert "more from the page cache" in sentence and "mostly WAL replay" in sentence


def test_a_main_thread_kept_from_its_core_by_other_work_is_held_back_by_the_host_not_by_one_core():
    """The busy host the DBAs saw: the main thread on a core 15% of its recovery, waiting for one
    73% (a CPU hog beside it) had been "bound by one core", the two added together."""
    _, _, analysis = analysed(INNODB, "innodb")
    busy = copy.deepcopy(analysis.resources)
    thread = busy["recovery"]["threads"][0]
    thread.update(cpu_share=0.15, runqueue_share=0.73, disk_wait_share=0.02)
    busy["recovery"]["cores"] = 0.3
    said = verdict(busy, None)
    assert said["bound"] == "host_busy", said
    assert "held back by other work on the host, not by one core" in said["sentence"]
    assert (
        "on a core 15%, waiting for a core 73%, waiting on the disk 2%, waiting otherwise 10%"
        in said["sentence"]
    )
    # on a core 34%, waiting for one 43%, on the disk 13%: not "neither a core nor the disk was busy"
    thread.update(cpu_share=0.34, runqueue_share=0.43, disk_wait_share=0.13)
    assert verdict(busy, None)["bound"] == "host_busy"


def test_a_reading_right_after_a_delayed_one_draws_no_rate_its_readings_do_not_allow():
    """A busy host delayed a reading, and the next came 5 ms after it: the bytes between them,
    counted over the slow reading, had drawn a rate six times the disk's. Each rate is now drawn
    over at least most of an interval between readings."""
    result, files, analysis = analysed(INNODB, "innodb")
    drawn = max(analysis.resources["series"]["read_mb_s"])
    lines = files[RESOURCES_FILE].splitlines()
    moments = [i for i, line in enumerate(lines) if b'"tasks"' in line]
    peak = max(range(1, len(moments)), key=lambda k: _read_between(lines, moments[k - 1], moments[k]))
    earlier, squeezed = json.loads(lines[moments[peak - 1]]), json.loads(lines[moments[peak]])
    squeezed["t"] = earlier["t"] + 0.005  # as if the reading had come 5 ms after the one before
    lines[moments[peak]] = json.dumps(squeezed).encode()
    busy = analyse_run(result, {**files, RESOURCES_FILE: b"\n".join(lines)}, "innodb", 1 << 30)
    series = busy.resources["series"]
    assert max(series["read_mb_s"]) <= 1.5 * drawn, (max(series["read_mb_s"]), drawn)
    steps = [b - a for a, b in zip(series["t"], series["t"][1:], strict=False)]
    assert min(steps) >= 0.9 * 0.1 * 0.9, min(steps)  # no step under most of the 0.1 s interval


def _read_between(lines: list[bytes], first: int, second: int) -> float:
    """Bytes read by all threads between two readings (by line index), read here without the module."""
    before, after = json.loads(lines[first]), json.loads(lines[second])
    start = {task[1]: task[8] for task in before["tasks"]}
    return sum(task[8] - start.get(task[1], 0) for task in after["tasks"])


def test_without_a_measured_disk_the_verdict_says_so_and_a_short_recovery_is_not_judged():
    _, _, analysis = analysed(INNODB, "innodb", drop_floor=True)
    sentence = analysis.resources["verdict"]["sentence"]
    assert "floor" not in analysis.resources
    assert "this host's disk was not measured" in sentence and "fio:" not in sentence
    short = copy.deepcopy(analysis.resources)
    short["recovery"]["seconds"] = 0.25
    assert verdict(short, None)["bound"] == "unknown"
    assert "too short to say" in verdict(short, None)["sentence"]


def test_the_timeline_draws_cores_and_reads_under_its_steps_with_the_disks_floor():
    _, _, analysis = analysed(INNODB, "innodb")
    figure = with_resources(timeline_chart(analysis.timeline), analysis.resources)
    names = [trace.get("name", "") for trace in figure["data"]]
    assert any(name.startswith("CPU: mariadbd") for name in names)
    floor_line = next(trace for trace in figure["data"] if "sequential read (fio)" in trace.get("name", ""))
    assert floor_line["y"][0] == analysis.resources["floor"]["seq_read_mb_s"]
    layout = figure["layout"]
    assert layout["yaxis"]["domain"][0] > layout["yaxis2"]["domain"][1] > layout["yaxis3"]["domain"][1]
    assert layout["shapes"][-1]["x0"] == analysis.resources["recovery"]["window"][0]
    assert with_resources(timeline_chart(analysis.timeline), {}) == timeline_chart(analysis.timeline)


@pytest.mark.parametrize(
    ("name", "engine", "process"), [(INNODB, "innodb", "mariadbd"), (POSTGRESQL, "postgresql", "postgres")]
)
def test_a_profiled_restart_has_a_flame_graph_whose_top_frames_are_the_servers(name, engine, process):
    result, files, analysis = analysed(name, engine)
    profile = analysis.resources["profile"]
    stacks = stacks_of(files["profile.folded"])
    assert profile["samples"] == result["profile"]["samples"] == sum(count for _, count in stacks)
    assert all(0 <= own <= whole <= 1 for own, whole in profile["functions"].values())
    # a run of frames perf could not name is one frame
    assert not any(
        a == b == NOT_EXPORTED for frames, _ in stacks for a, b in zip(frames, frames[1:], strict=False)
    )
    trace = flame_chart(files["profile.folded"])["data"][0]
    roots = [label for label, parent in zip(trace["labels"], trace["parents"], strict=True) if not parent]
    assert roots in ([process], ["the server: every process and thread"])
    top = {
        label
        for label, parent in zip(trace["labels"], trace["parents"], strict=True)
        if parent in ("", "all")
    }
    assert process in top


def test_the_difference_of_two_profiles_lists_what_grew_and_shrank_by_share():
    *_, innodb = analysed(INNODB, "innodb")
    *_, postgresql = analysed(POSTGRESQL, "postgresql")
    a, b = innodb.resources["profile"]["functions"], postgresql.resources["profile"]["functions"]
    trace = diff_chart(a, b, "InnoDB", "PostgreSQL")["data"][0]
    for name, moved in zip(trace["y"], trace["x"], strict=True):
        assert moved == pytest.approx(
            ((b.get(name) or [0, 0])[0] - (a.get(name) or [0, 0])[0]) * 100, abs=0.01
        )
    assert max(map(abs, trace["x"])) == abs(trace["x"][-1])  # the largest move at the top
    assert diff_chart(a, a, "A", "A again") == {"data": [], "layout": {}}


def test_one_function_is_one_name_and_the_difference_says_what_it_could_not_see():
    """10.11 against 11.8 had drawn pthread_mutex_lock@@GLIBC_2.2.5 at -5 points and
    pthread_mutex_lock at +5: the same function as perf named it with and without its version.
    The kept bundle names it with its version; the same profile with plain names moves nothing."""
    result, files, analysis = analysed(INNODB, "innodb")
    folded = files["profile.folded"]
    assert b"pthread_mutex_lock@@GLIBC_2.2.5" in folded and b".isra.0" in folded
    functions = analysis.resources["profile"]["functions"]
    assert "pthread_mutex_lock" in functions and not any("@" in name or ".isra" in name for name in functions)
    plain = re.sub(rb"@@?GLIBC_[0-9.]+|\.isra\.0|\.constprop\.0|\.part\.0", b"", folded)
    again = analyse_run(result, {**files, "profile.folded": plain}, "innodb", 1 << 30)
    assert diff_chart(functions, again.resources["profile"]["functions"], "A", "B") == {
        "data": [],
        "layout": {},
    }
    # against another engine's, the chart says the share of each side's samples it cannot see
    *_, postgresql = analysed(POSTGRESQL, "postgresql")
    figure = diff_chart(functions, postgresql.resources["profile"]["functions"], "InnoDB", "PostgreSQL")
    unseen = functions[NOT_EXPORTED][0]
    assert unseen > 0.5  # Debian's mariadbd exports few of InnoDB's functions
    assert f"not seen: {unseen:.0%} of A's samples" in figure["layout"]["xaxis"]["title"]["text"]


def test_the_disks_floor_is_measured_with_fio_kept_and_reported_by_the_probe_on_its_device(tmp_path):
    work = tmp_path / "work"
    work.mkdir(mode=0o700)
    found = floor.measure(work, file_bytes=32 << 20, seconds=0.3)
    assert found["seq_read_mb_s"] > 0 and found["rand_read_qd1_iops"] > 0 and found["fsync_per_s"] > 0
    assert host_facts(str(work))["disk"]["floor"] == found
    moved = {**found, "device": "0:0"}  # the work folder now on another disk: no floor
    (work / floor.FLOOR_FILE).write_text(json.dumps(moved))
    assert "floor" not in host_facts(str(work))["disk"]
    assert not list(work.glob("floor-*"))  # fio's file went with its folder


def test_without_fio_the_disk_is_not_measured_and_the_reason_says_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(floor.NotMeasured, match="apt-get install fio"):
        floor.measure(tmp_path)


@pytest.mark.skipif(os.geteuid() != 0, reason="the work folder must be root's")
def test_a_work_folder_others_may_write_is_refused_before_fio_runs(tmp_path):
    work = tmp_path / "shared"
    work.mkdir()
    work.chmod(0o777)
    with pytest.raises(Exception, match="work directory"):
        floor.measure(work, file_bytes=1 << 20, seconds=0.1)
    assert not list(work.iterdir())


def test_the_fixtures_readme_names_each_bundle():
    text = (Path(__file__).parent / "data" / "bundles" / "README.md").read_text()
    assert INNODB in text and POSTGRESQL in text


def test_the_recovery_chart_draws_the_floor_of_the_disk_its_runs_ran_on():
    rows = []
    for index, (name, engine) in enumerate(((INNODB, "innodb"), (POSTGRESQL, "postgresql"))):
        *_, analysis = analysed(name, engine)
        for host in ("measured", "in memory"):
            rows.append(
                {
                    "id": index,
                    "engine": engine,
                    "host_label": host,
                    "redo_bytes": analysis.metrics["redo_bytes"],
                    "recovery_seconds": analysis.metrics["recovery_seconds"],
                    "imported": False,
                    "hover": "",
                }
            )
    rate = analysis.resources["floor"]["seq_read_mb_s"]
    figure = redo_fit_chart(rows, {"measured": rate})
    lines = [trace for trace in figure["data"] if "the floor" in trace["name"]]
    assert len(lines) == 1 and lines[0]["name"].startswith("measured's disk")
    top = max(row["redo_bytes"] for row in rows) / (1 << 20)
    assert lines[0]["x"] == [0, top]
    # the seconds it takes to read the most redo at the disk's rate: far under either recovery
    assert lines[0]["y"][1] == pytest.approx(top * (1 << 20) / (rate * 1e6))
    assert lines[0]["y"][1] < min(row["recovery_seconds"] for row in rows) / 10
    assert not [t for t in redo_fit_chart(rows, {})["data"] if "the floor" in t.get("name", "")]


def _versus(ratio: float, significant: bool = True) -> dict:
    return {
        "versus": {"2": {"ratio": ratio, "ratio_ci": [ratio * 0.9, ratio * 1.1], "significant": significant}}
    }


@pytest.mark.parametrize(
    ("cpu", "reads", "said"),
    [
        (1.8, 1.0, "the difference is in CPU work: B's threads used 1.80x"),
        (1.0, 2.0, "the difference is in reads from the disk: B read 2.00x"),
        (1.0, 1.0, "neither in CPU time (1.00x"),
    ],
)
def test_compare_says_which_resource_a_significant_difference_in_recovery_is_in(cpu, reads, said):
    metrics = {
        "recovery_seconds": _versus(1.9),
        "recovery_cpu_seconds": _versus(cpu),
        "recovery_disk_read_bytes": _versus(reads),
    }
    sentence = resource_sentence(metrics, "B", "A", "2", "InnoDB at pool 1G")
    assert sentence.startswith(
        "InnoDB at pool 1G: B's recovery took 1.90x as long as A's "
        "(a significant difference, 95% CI 1.71-2.09x); "
    )
    assert said in sentence
    faster = {**metrics, "recovery_seconds": _versus(1 / 1.9)}
    assert resource_sentence(faster, "B", "A", "2", "cell").startswith(
        "cell: A's recovery took 1.90x as long as B's (a significant difference, 95% CI 1.73-2.11x)"
    )
    # no difference to place, or no readings on a side: nothing said
    assert (
        resource_sentence({**metrics, "recovery_seconds": _versus(1.9, False)}, "B", "A", "2", "cell") is None
    )
    assert resource_sentence({"recovery_seconds": _versus(1.9)}, "B", "A", "2", "cell") is None


def test_the_disk_is_not_measured_while_a_run_holds_the_work_folder(tmp_path):
    """fio beside a run would be its noise: the work folder's lock (held here as a runner holds it
    through its run) makes the measure say why it did not run."""
    import fcntl

    from runner.runner import measure_disk

    work = tmp_path / "work"
    work.mkdir()
    with open(work / ".runner.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        said = measure_disk(work)
    assert said and "the host is busy elsewhere" in said
    assert not (work / floor.FLOOR_FILE).exists() and not list(work.glob("floor-*"))


def test_perfs_kernel_mark_and_unnamed_frames_are_read_as_such():
    folded = (
        b"mariadbd;[unknown];[unknown];recv_sys_t::parse;read_[k];vfs_read_[k] 7\n"
        b"mariadbd;[unknown] 3\nno stack\n"
    )
    stacks = stacks_of(folded)
    assert stacks == [
        (["mariadbd", NOT_EXPORTED, "recv_sys_t::parse", "read [kernel]", "vfs_read [kernel]"], 7),
        (["mariadbd", NOT_EXPORTED], 3),
    ]
    trace = flame_chart(folded)["data"][0]
    colours = dict(zip(trace["labels"], trace["marker"]["colors"], strict=True))
    assert colours["vfs_read [kernel]"] != colours["recv_sys_t::parse"] != colours[NOT_EXPORTED]


def test_a_reader_that_stopped_early_is_said_and_its_readings_before_stand():
    result, files = bundle(INNODB)
    lines = files[RESOURCES_FILE].splitlines()
    cut = b"\n".join([*lines[:10], b'{"error": "RuntimeError: gone"}'])
    analysis = analyse_run(result, {**files, RESOURCES_FILE: cut}, "innodb", 1 << 30)
    assert any("the runner's reader stopped early (RuntimeError: gone)" in w for w in analysis.warnings)
    assert analysis.resources["readings"] == 9  # the header, then nine readings before the error


def test_a_process_that_ends_between_two_readings_keeps_its_io_in_them(tmp_path):
    """A child that reads 32 MiB and exits within one 50 ms interval (PostgreSQL's startup process
    reads its last WAL and exits) is never seen, or seen without its last reads: the readings still
    hold all it read, in the row for I/O after a thread's last reading, once its parent reaped it."""
    import subprocess
    import sys

    from runner.events import Clock
    from runner.resources import ENDED, Resources

    data = tmp_path / "data"
    data.write_bytes(os.urandom(32 << 20))
    forks = (
        "import os, sys\n"
        "sys.stdin.readline()\n"
        "if os.fork() == 0:\n"
        f"    with open({str(data)!r}, 'rb', buffering=0) as f:\n"
        "        while f.read(1 << 20): pass\n"
        "    os._exit(0)\n"
        "os.wait(); print('reaped', flush=True); sys.stdin.readline()\n"
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", forks], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        watcher = Resources(parent.pid, Clock(), tmp_path / RESOURCES_FILE)
        watcher.start()
        parent.stdin.write("go\n")
        parent.stdin.flush()
        assert parent.stdout.readline() == "reaped\n"
        watcher.stop()
    finally:
        parent.communicate("end\n", timeout=10)
    last = json.loads((tmp_path / RESOURCES_FILE).read_text().splitlines()[-1])
    ended = [row for row in last["tasks"] if row[2] == ENDED]
    assert len(ended) == 1 and ended[0][0] == parent.pid, last
    # rchar: bytes read through system calls, whether the page cache or the disk served them
    assert sum(row[10] for row in last["tasks"]) >= 32 << 20, last


def test_a_storage_class_s_counts_are_taken_over_the_recovery_s_own_window():
    """The group's counts at the recovery's two ends are drawn straight between the readings around
    them: a 1 s recovery read every 50 ms is not widened to the readings' 1.1 s."""
    from experiments.ingest.resources import group_use

    readings = [(t / 20, {"read_requests": 320 * t // 20, "read_bytes": 2**20 * t, "write_requests": 0,
                          "write_bytes": 0}) for t in range(0, 41)]  # fmt: skip
    asked = group_use(readings, [0.525, 1.525])
    assert asked["seconds"] == 1.0 and asked["read_requests"] == 320, asked
    assert asked["read_bytes"] == 20 * 2**20 and asked["write_requests"] == 0, asked
    assert group_use(readings[:1], [0.5, 1.5]) is None and group_use(readings, None) is None
    # by the second, against the class's caps: reads at the 320/s cap, writes never
    held = group_use(readings, [0.0, 2.0], {"read_iops": 320, "write_iops": 160})
    assert held["whole_s"] == 2 and held["held_s"] == 2, held
    assert held["at_cap_s"] == {"read_iops": 2, "write_iops": 0}, held
    # reads at the cap the first second only, then none: half the recovery held
    stopped = [(t, counts if t <= 1 else {**counts, "read_requests": 320}) for t, counts in readings]
    assert group_use(stopped, [0.0, 2.0], {"read_iops": 320})["at_cap_s"] == {"read_iops": 1}


def test_asynchronous_direct_writes_count_as_a_restart_moving(tmp_path):
    """InnoDB writes pages through libaio or io_uring with O_DIRECT: no write() call, so only the
    thread's write_bytes shows them. A recovery under a class's caps wrote pages for 90 s and read
    none, and the stall watch, which counted read() and write() calls and disk reads, ended it as
    stalled (seed 000, run 2). fio writes the same way here, at 16 MB/s for 2 s."""
    from runner.events import Clock
    from runner.resources import Resources

    fio = subprocess.Popen(
        ["fio", "--name=aio", "--ioengine=libaio", "--direct=1", "--rw=write", "--bs=16k", "--size=32m",
         "--rate=16m", f"--filename={tmp_path / 'pages'}", "--output=/dev/null"]
    )  # fmt: skip
    watcher = Resources(fio.pid, Clock(), tmp_path / "resources.jsonl")
    watcher.start()
    assert fio.wait(timeout=60) == 0
    watcher.join(timeout=10)
    assert watcher.io_total >= 24 * 2**20, watcher.io_total
