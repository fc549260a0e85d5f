"""Each kind of sentence the product prints, held to its rule (docs/sentences.md) over generated
numbers: what the sentence says must be true of the numbers beside it. Pure functions: no database."""

import math
import re
import statistics

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from experiments.analysis import fits, stats
from experiments.analysis.cells import ROW_FIELDS, build_cells
from experiments.analysis.compare import compare_experiments
from experiments.analysis.planner import MIB, PlanRefused, Point, plan
from experiments.analysis.predict import SETTINGS, like_the_server
from experiments.analysis.sentences import (
    COMPARED_METRICS,
    RESOURCE_METRICS,
    crash_image_sentence,
    finding_sentence,
    restart_cache_sentence,
    storage_sentence,
)
from experiments.analysis.stats import compare
from experiments.analysis.where import HELD_BACK, resource_sentence
from experiments.ingest.verdict import CAP_WORDS, thread_shares, verdict
from experiments.metrics import NUMERIC_METRICS
from experiments.pages.context import compared_value
from experiments.reports.answers import repeat_answers, startup_answers, tradeoff_answers
from experiments.reports.findings import parameter_findings, redo_findings
from experiments.reports.moved import what_moved
from experiments.reports.planner import plan_sentences
from experiments.reports.stalled import stall_findings
from recovery_lab_cli.prediction import Fit, Prediction, rto_outcome, stall_risk
from recovery_lab_cli.production import _outcome_text
from recovery_lab_cli.units import binary_bytes, parse_size

QUICK = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# a side's runs: recovery times of 0 (shorter than the log resolves) to minutes, one to five runs
seconds = st.one_of(st.just(0.0), st.floats(0.001, 300, allow_nan=False))
side = st.lists(seconds, min_size=1, max_size=5)


@QUICK
@given(side, side, st.floats(1.0, 2.0))
def test_a_comparison_says_which_side_took_longer_and_why_it_has_no_interval(a, b, floor):
    """Rule: the side named as taking longer took longer (by the ratio printed, at least 1x); a
    comparison without an interval gives the reason its runs have, not another one; "slower" or
    "faster" only where the test found a difference beyond the floor."""
    result = compare(a, b, min_effect=floor).as_dict()
    said = finding_sentence("crash recovery", "B", "A", "cell", result, subject_first=False)
    if result["ratio"] is None:
        assert "cannot be compared" in said
        return
    times = re.search(r"(?:took|recovery) ([0-9.]+)x", said)
    assert times and float(times.group(1)) >= 1.0, said
    longer = re.search(r"([AB]) took [0-9.]+x as long as ([AB])", said)
    if longer:
        b_longer = longer.group(1) == "B"
        assert b_longer == (result["ratio"] >= 1), (said, result)
    if "fewer than 2 runs a side" in said:
        assert min(len(a), len(b)) < 2, said
    if "measured 0" in said:
        zeros = int(re.search(r"(\d+) runs? measured 0", said).group(1))
        assert zeros == sum(v <= 0 for v in a + b), said
    if min(len(a), len(b)) >= 2 and all(v > 0 for v in a + b):
        assert "no interval" not in said, said
    if "slower than" in said or "faster than" in said:
        assert result["significant"], said
        assert ("slower" in said) == (result["ratio"] > 1), said


@QUICK
@given(
    st.lists(st.lists(seconds, min_size=1, max_size=4), min_size=2, max_size=2),
    st.sampled_from([0.005, 1.0]),
)
def test_a_recovery_shorter_than_its_log_resolves_counts_at_the_resolution_and_is_said(sides, resolution):
    """Rule: a run measured 0 s (its first and last lines stamped alike) is compared at its log's
    resolution, an upper bound, never left out: two runs a side have an interval, and the sentence
    counts the runs so counted (MariaDB 11.8 recovered 3,000 events in under 5 ms: the gate had
    exited 2 on "1 run measured 0")."""
    rows = []
    for experiment, values in enumerate(sides, start=1):
        for value in values:
            row = dict.fromkeys(ROW_FIELDS)
            row.update(
                id=len(rows) + 1,
                experiment_id=experiment,
                status="done",
                engine="innodb",
                host_label="local",
                parameters={},
                server_options={},
                server_version="",
                imported=False,
                phases={"redo_apply": value},
                phase_resolution={"redo_apply": resolution},
                recovery_seconds=value,
            )
            rows.append(row)
    (cell,) = compare_experiments(rows, [1, 2], {1: "A", 2: "B"})["cells"]
    (said,) = [line for line in cell["sentences"] if "crash recovery" in line]
    raised = sum(value < resolution for values in sides for value in values)
    assert "measured 0" not in said, said
    if raised:
        counted = re.search(r"\((\d+) runs? shorter than the log resolves, counted as (.+?)\)", said)
        assert counted and int(counted.group(1)) == raised, said
        assert counted.group(2) == ("1 s" if resolution == 1.0 else "5 ms"), said
    else:
        assert "shorter than the log resolves" not in said, said
    if min(len(values) for values in sides) >= 2:
        assert "no interval" not in said, said


# planner: settings (cells) of one to three runs whose downtime grows with redo, straight or faster
# than straight (more batches at a larger log)
@st.composite
def measured_runs(draw):
    cells = draw(st.lists(st.floats(8, 2048), min_size=2, max_size=6, unique=True))
    start = draw(st.floats(0.0, 3.0))
    per_gib = draw(st.floats(0.5, 40.0))
    power = draw(st.sampled_from([1.0, 1.5, 2.0]))  # 2: growth faster than linear (multi-batch)
    points = []
    for cell, mib in enumerate(cells):
        for _ in range(draw(st.integers(1, 3))):
            redo = mib * draw(st.floats(0.95, 1.05))
            noise = draw(st.floats(-0.3, 0.3))
            downtime = max(0.01, start + per_gib * (redo / 1024) ** power + noise)
            points.append(Point(len(points) + 1, redo * MIB, downtime, 4 << 30, cell=(1, str(cell))))
    return points


def cell_medians(points):
    cells = {}
    for p in points:
        cells.setdefault(p.cell, []).append(p)
    return [
        (statistics.median(p.redo_bytes for p in runs), statistics.median(p.downtime_seconds for p in runs))
        for runs in cells.values()
    ]


@QUICK
@given(measured_runs(), st.floats(0.5, 60.0))
def test_the_planner_never_prints_a_negative_time_nor_contradicts_a_measured_cell(points, target):
    """Rules: no time below zero is printed; no measured cell (a setting's runs, their medians) at
    or below the headline's redo took longer than the target; the interval holds the headline."""
    try:
        answer = plan(points, target)
    except PlanRefused as refused:
        assert refused.reason and not re.search(r"-\d[\d.]* s\b", refused.reason)
        return
    question = {"engine": "innodb", "host": "h", "target_downtime_seconds": target}
    said = " ".join(plan_sentences(answer.as_dict(), question) + answer.warnings)
    assert not re.search(r"-\d[\d.]* s\b", said), said
    over = [(r / MIB, d) for r, d in cell_medians(points) if r <= answer.max_redo_bytes and d > target]
    assert not over, (answer.max_redo_bytes / MIB, over)
    low, high = answer.interval
    assert low <= answer.max_redo_bytes <= high or math.isclose(low, answer.max_redo_bytes, abs_tol=1)


def test_the_planner_from_a_line_through_zero_above_no_redo_says_where_it_holds():
    """The seeds' case: faster than linear growth, a fit whose intercept is below zero (-2.52 s)."""
    points = [
        Point(i, mib * MIB, 0.02 * (mib / 64) ** 2 + 0.1 * (i % 2), 4 << 30)
        for i, mib in enumerate([64, 64, 128, 128, 256, 256, 512, 512], 1)
    ]
    answer = plan(points, 3.0)
    assert answer.intercept_seconds < 0
    said = plan_sentences(answer.as_dict(), {"engine": "innodb", "host": "h", "target_downtime_seconds": 3.0})
    assert "with none the restart" not in " ".join(said)
    assert any("reaches 0 s at" in line and "not below it" in line for line in said), said


# a run's verdict: the busiest thread's shares of its recovery, and what the host had
share = st.floats(0.0, 1.0)


@st.composite
def read_recoveries(draw):
    cpu = draw(share)
    queue = draw(st.floats(0.0, 1.0 - cpu))
    disk = draw(st.floats(0.0, 1.0 - cpu - queue))
    cpus = draw(st.integers(1, 8))
    thread = {"name": "main", "cpu_share": cpu, "runqueue_share": queue, "disk_wait_share": disk}
    cores = draw(st.floats(cpu, max(cpu, cpus * 1.0)))
    seconds = draw(st.floats(0.5, 600))
    read_mb_s = draw(st.floats(0, 3000))
    return {
        "interval_s": 0.05,
        "cpus": cpus,
        "floor": {"seq_read_mb_s": draw(st.sampled_from([500.0, 3000.0]))},
        "recovery": {
            "seconds": seconds,
            "threads": [thread],
            "cores": cores,
            "read_bytes": int(read_mb_s * 1e6 * seconds),
            "rchar": int(read_mb_s * 1e6 * seconds),
            "read_mb_s": read_mb_s,
            "runqueue_s": queue * seconds,
        },
    }


@QUICK
@given(read_recoveries())
def test_a_verdict_names_the_largest_share_and_says_every_share(found):
    """Rule: the verdict's word is the busiest thread's largest share (or every core busy with the
    server's own threads); "one core" only for a thread on a core more than anything else and
    wanting one (on it or waiting) 80% of the time; a thread that waited for a core more than
    anything else was held back by the host; every share is said."""
    said = verdict(found, None)
    thread, recovery = found["recovery"]["threads"][0], found["recovery"]
    shares = thread_shares(thread)
    largest = max(shares, key=shares.get)
    if recovery["cores"] >= 0.8 * found["cpus"]:
        assert said["bound"] == "cpu_all_cores", said
        return
    for words in ("on a core", "waiting for a core", "waiting on the disk", "waiting otherwise"):
        assert words in said["sentence"], said
    if said["bound"] == "cpu_one_core":
        assert shares["cpu"] + shares["queue"] >= 0.8 and largest == "cpu", (shares, said)
    if largest == "queue":
        assert said["bound"] == "host_busy" and "held back by other work on the host" in said["sentence"]
    if said["bound"] == "host_busy":
        assert largest == "queue"
    if said["bound"] == "waiting":
        assert largest == "other"
    assert "bound by one core" not in said["sentence"] or said["bound"] == "cpu_one_core"


@QUICK
@given(
    read_recoveries(),
    st.dictionaries(st.sampled_from(list(CAP_WORDS)), st.integers(1, 10**9)),
    st.fixed_dictionaries({count: st.integers(0, 10**9) for count, _, _ in CAP_WORDS.values()}),
    st.floats(0.05, 100.0),
    st.one_of(st.none(), st.fixed_dictionaries({cap: share for cap in CAP_WORDS})),
    share,
)
def test_a_verdict_names_a_storage_class_s_cap_only_where_the_recovery_reached_it(
    found, caps, counts, seconds, at_cap, held
):
    """Rule: under a storage class, a cap is named only where the recovery's own rate (the group's
    counts over the seconds between the readings around it) reached 90% of it, or where it spent a
    quarter of its seconds at 90% of it or more, with the rate, the cap and that share beside
    it; the class bounds the recovery ("bound by storage class X's caps") only where it spent half
    its seconds at one cap or another and no core held it; with no class, no cap is named."""
    assert "storage class" not in verdict(found, None)["sentence"]
    whole = int(seconds)
    io = {"seconds": seconds, **counts}
    if at_cap is not None and whole:
        io.update(whole_s=whole, at_cap_s={cap: round(part * whole) for cap, part in at_cap.items()},
                  held_s=round(held * whole))  # fmt: skip
    found["floor"].update(storage="hdd-raid10", caps=caps, recovery_io=io)
    judged = verdict(found, None)
    said = judged["sentence"]
    named = said.partition("the recovery reached storage class hdd-raid10's cap on ")[2]
    at_share = {cap: io["at_cap_s"][cap] / seconds for cap in CAP_WORDS} if "at_cap_s" in io else {}
    for cap, (count, words, unit) in CAP_WORDS.items():
        scale = 1e6 if cap.endswith("_bps") else 1
        rate, limit = counts[count] / seconds, caps.get(cap, 0)
        clause = (
            f"{words} ({unit.format(rate / scale)} over the recovery; its cap {unit.format(limit / scale)}"
        )
        reached = cap in caps and (rate >= 0.9 * limit or at_share.get(cap, 0) >= 0.25)
        assert (clause in named) == reached, (cap, caps, counts, seconds, said)
        if reached and at_share:
            assert f"{clause}; at it {at_share[cap]:.0%} of the recovery)" in named, said
    class_bound = "bound by storage class hdd-raid10's caps" in said
    if class_bound:
        assert judged["bound"] == "disk" and io["held_s"] / seconds >= 0.5, said
        assert f"at one of them {io['held_s'] / seconds:.0%} of the recovery" in said
    elif "held_s" in io and io["held_s"] / seconds >= 0.5:
        assert judged["bound"] in ("cpu_all_cores", "cpu_one_core", "host_busy"), said


@QUICK
@given(st.floats(1.3, 5.0), st.booleans(), share, share)
def test_a_difference_in_neither_cpu_nor_reads_names_a_wait_for_a_core_where_the_slower_side_had_one(
    ratio, subject_slower, subject_wait, baseline_wait
):
    """Rule: where a difference in recovery is in neither CPU time nor reads, the sentence blames
    fsync, locks or sleeps only if the slower side did not wait for a core; a wait for a core is
    named only for the side that had it (the 2.89x slowdown beside a CPU hog, 72-83% waiting)."""
    took = ratio if subject_slower else 1 / ratio
    metrics = {
        "recovery_seconds": {
            "versus": {"2": {"ratio": took, "ratio_ci": [took * 0.9, took * 1.1], "significant": True}}
        },
        "recovery_cpu_seconds": {"versus": {"2": {"ratio": 1.0, "ratio_ci": [0.9, 1.1]}}},
        "recovery_disk_read_bytes": {"versus": {"2": {"ratio": 1.0, "ratio_ci": [0.9, 1.1]}}},
        "recovery_core_wait_share": {"2": {"median": subject_wait}, "1": {"median": baseline_wait}},
    }
    said = resource_sentence(metrics, "B", "A", "2", "cell", "1")
    slower, slow_wait, fast_wait = (
        ("B", subject_wait, baseline_wait) if subject_slower else ("A", baseline_wait, subject_wait)
    )
    if slow_wait >= HELD_BACK and slow_wait > fast_wait:
        assert f"{slower}'s busiest thread waited for a core {slow_wait:.0%}" in said, said
        assert "fsync" not in said
    else:
        assert "waited for a core" not in said and "fsync" in said, said


@QUICK
@given(
    st.sampled_from(sorted({*NUMERIC_METRICS, *COMPARED_METRICS, *RESOURCE_METRICS})),
    st.floats(0, 1e12, allow_nan=False),
)
def test_every_value_is_printed_in_its_own_unit(metric, value):
    """Rule: one formatter, one unit per metric; a byte count is never printed in seconds (compare
    had printed "recovery's reads from the disk 71,361,000.000 s"), a duration always is."""
    text = compared_value(metric, value)
    assert "e+" not in text, text
    if metric.endswith(("_bytes", "_bytes_written")):
        assert text.endswith(("bytes", "KiB", "MiB", "GiB", "TiB")), text
    elif metric.endswith("_seconds"):
        assert text.endswith(" s"), text
    else:
        assert not text.endswith(" s"), text


# an experiment's runs as rows: cells of a redo log size, each with its redo and recovery
@st.composite
def swept_rows(draw):
    held = draw(st.booleans())  # redo held equal by the crash plan: every cell near one volume
    cells = draw(
        st.lists(st.sampled_from(["64M", "128M", "256M", "512M", "1G"]), min_size=2, max_size=4, unique=True)
    )
    per_gib = draw(st.floats(0.5, 30.0))
    power = draw(st.sampled_from([1.0, 2.0]))
    rows = []
    for log in cells:
        mib = 390.0 if held else float(parse_size(log) // MIB) * draw(st.floats(0.5, 0.9))
        for repetition in range(draw(st.integers(1, 3))):
            redo = mib * draw(st.floats(0.99, 1.01))
            batches = max(1, round((redo / 256) ** power))
            rows.append(
                {
                    "id": len(rows) + 1,
                    "status": "done",
                    "suspect": False,
                    "excluded": False,
                    "host_label": "local",
                    "engine": "innodb",
                    "repetition": repetition,
                    "parameters": {"redo_log_size": log},
                    "server_options": {},
                    "disturbed": False,
                    "redo_bytes": redo * MIB,
                    "recovery_batches": batches,
                    "server_version": "",
                    "recovery_seconds": max(
                        0.01, 0.2 + per_gib * (redo / 1024) ** power + draw(st.floats(-0.05, 0.05))
                    ),
                    "phases": {"redo_scan": 0.1, "redo_apply": 0.1},
                }
            )
    return rows


@QUICK
@given(swept_rows())
def test_a_redo_finding_reads_a_slope_only_from_a_range_that_can_show_one(rows):
    """Rules: runs that replayed nearly the same redo (held by the design) get no slope and never
    "other costs dominate"; a line that reaches 0 s above no redo is named faster than straight;
    a pairwise "no significant difference" beside a fitted slope says what the line predicts."""
    said = " ".join(redo_findings(rows))
    assert "other costs dominate" not in said
    redo = [r["redo_bytes"] / MIB for r in rows]
    if max(redo) - min(redo) < 0.2 * max(redo) and len(rows) >= 3:
        assert "cannot show how recovery grows with redo" in said and "MiB/s" not in said, said
    fit = fits.fit_line(redo, [r["recovery_seconds"] for r in rows])
    if "replayed redo at about" in said and fit.intercept < -0.1 * statistics.median(
        r["recovery_seconds"] for r in rows
    ):
        assert "faster than a straight line" in said, said
    for line in parameter_findings(rows, ["redo_log_size"]):
        if "no significant difference" in line and "line through all the runs" in line:
            assert "replayed redo at about" in said  # the fit it cites is there, and beyond the noise


def test_a_redo_finding_on_runs_held_equal_says_the_design_fixed_it():
    """The DBAs' case: 387 to 391 MiB, all redo scan and apply, had read "other costs dominate"."""
    rows = [
        {
            "id": i,
            "status": "done",
            "suspect": False,
            "excluded": False,
            "host_label": "local",
            "engine": "innodb",
            "parameters": {"buffer_pool_size": pool},
            "server_options": {},
            "disturbed": False,
            "redo_bytes": mib * MIB,
            "recovery_seconds": seconds,
            "phases": {"redo_scan": seconds * 0.4, "redo_apply": seconds * 0.6},
        }
        for i, (pool, mib, seconds) in enumerate(
            [("128M", 387, 4.1), ("128M", 391, 3.2), ("1G", 389, 2.2), ("1G", 388, 2.9)], 1
        )
    ]
    (said,) = redo_findings(rows)
    assert "387 to 391 MiB" in said and "cannot show how recovery grows with redo" in said
    assert "other costs" not in said and "crash plan" not in said  # the design is not assumed
    # the definition's crash plan held it: said so
    (said,) = redo_findings(rows, {"crash": {"when": "at_redo_bytes", "redo_bytes": ["384M"]}})
    held = "387 to 391 MiB of redo, within 20%), as the crash plan held it (crash.redo_bytes 384M): they"
    assert held in said
    # or the same work each run, crashed after it (seed 001's design)
    design = {"crash": {"when": "after_workload"}, "workload": {"name": "oltp_write_only", "events": 20000}}
    (said,) = redo_findings(rows, design)
    assert "as the design held it (the same 20,000 events each run, crashed after the workload)" in said
    (said,) = redo_findings(rows, {**design, "workload": {"time_seconds": 60}})
    assert "held it" not in said  # a timed workload writes what it gets through: not held
    # or copies of one crash, restarted (crash.one_crash, runner/image.py)
    one_crash = {"when": "at_redo_bytes", "redo_bytes": "384M", "one_crash": True}
    (said,) = redo_findings(rows, {"crash": one_crash})
    assert "as the design held it (crash.one_crash: copies of one crash, the same redo to the byte)" in said


def row_of(**values) -> dict:
    """A run as the analysis reads it (cells.ROW_FIELDS)."""
    row = dict.fromkeys(ROW_FIELDS)
    row.update(
        status="done", suspect=False, excluded=False, disturbed=False, imported=False, host_label="local"
    )
    row.update(
        engine="innodb", server_options={}, phases={}, phase_resolution={}, server_version="", experiment_id=1
    )
    row.update(values)
    return row


positive = st.floats(0.05, 50.0)


def kept(value: float) -> float:
    """A value as a cell's summary keeps it, six significant digits, which its table shows: a
    sentence rounds that (10.8500004 is kept 10.85, said 10.8), as the reader checks it."""
    return float(f"{value:.6g}")


@QUICK
@given(st.lists(st.lists(positive, min_size=1, max_size=4), min_size=1, max_size=8))
def test_the_repeats_are_said_with_their_own_range_and_agree_only_within_ten_percent(cells_values):
    """Rule (seed 001): a cell's repeats are said with their own min and max; "agree" only where
    they spread within 10% of their median; many cells name the widest."""
    rows = [
        row_of(
            id=len(cells_values) * 10 + i * 5 + j,
            parameters={"buffer_pool_size": f"{i + 1}M"},
            recovery_seconds=v,
        )
        for i, values in enumerate(cells_values)
        for j, v in enumerate(values)
    ]
    said = repeat_answers(build_cells(rows))
    repeated = [values for values in cells_values if len(values) >= 2]
    if not repeated:
        assert said == []
        return
    if len(repeated) > 6:
        (line,) = said
        widest = max(repeated, key=lambda v: (max(v) - min(v)) / statistics.median(v))
        assert f"took {kept(min(widest)):.3g} s to {kept(max(widest)):.3g} s" in line, (line, widest)
        return
    for values, line in zip(repeated, said, strict=True):
        assert (
            f"its {len(values)} runs took {kept(min(values)):.3g} s to {kept(max(values)):.3g} s" in line
        ), line
        share = (max(values) - min(values)) / statistics.median(values)
        assert ("the repeats agree" in line) == (share <= 0.1), (share, line)


@QUICK
@given(
    st.lists(positive, min_size=2, max_size=4),
    st.lists(positive, min_size=2, max_size=4),
    st.lists(st.floats(1000, 9000), min_size=2, max_size=4),
    st.lists(st.floats(1000, 9000), min_size=2, max_size=4),
    # pages written are a count (a float of 1000.0039 against 1000 was a difference no cell keeps)
    st.integers(0, 20000),
    st.integers(0, 20000),
)
def test_the_trade_off_says_fewer_pages_and_a_gain_only_where_the_numbers_have_them(
    recovery_small, recovery_large, tps_small, tps_large, pages_small, pages_large
):
    """Rule (seed 004): "fewer pages" only where the larger log wrote fewer; its ratio is the
    medians'; "no measurable gain in throughput" where the TPS test found no difference, a gain
    or a loss only where it did."""
    rows = []
    for log, took, tps, pages in (
        ("128M", recovery_small, tps_small, pages_small),
        ("1G", recovery_large, tps_large, pages_large),
    ):
        for seconds, rate in zip(took, tps, strict=False):
            rows.append(
                row_of(
                    id=len(rows) + 1,
                    parameters={"redo_log_size": log},
                    recovery_seconds=seconds,
                    workload_tps=rate,
                    pages_written=pages,
                )
            )
    said = tradeoff_answers(rows, build_cells(rows))
    if not pages_small:
        assert said == []
        return
    (line,) = said
    assert ("fewer pages" in line) == (0 < pages_large < pages_small), line
    if 0 < pages_large < pages_small:
        assert f"about {pages_small / pages_large:.3g}x fewer pages" in line
    small = [r["workload_tps"] for r in rows if r["parameters"]["redo_log_size"] == "128M"]
    large = [r["workload_tps"] for r in rows if r["parameters"]["redo_log_size"] == "1G"]
    tps = compare(small, large)
    assert ("no measurable gain in throughput" in line) == (not tps.significant), line


@QUICK
@given(
    st.dictionaries(st.sampled_from([1, 200, 2000]), st.lists(positive, min_size=2, max_size=4), min_size=2)
)
def test_a_startup_parameter_is_compared_on_the_restart_every_value_and_said_plainly(downtimes):
    """Rule (seed 003): binary log files act after crash recovery: every value against the fewest
    on the downtime; "did not change the restart" exactly where no comparison is beyond the noise."""
    rows = [
        row_of(id=i * 10 + j, parameters={"binlog_files": files}, downtime_seconds=d, recovery_seconds=0.1)
        for i, (files, values) in enumerate(sorted(downtimes.items()))
        for j, d in enumerate(values)
    ]
    (line,) = startup_answers(rows, ["binlog_files"])
    fewest = min(downtimes)
    for files in downtimes:
        assert f" at {files:,}" in line  # every cell, the 200-file one too
    results = [compare(downtimes[fewest], downtimes[f], min_effect=1.25) for f in sorted(downtimes)[1:]]
    family = stats.compare_many(
        [(downtimes[fewest], downtimes[f]) for f in sorted(downtimes)[1:]], [1.25] * len(results), family=True
    )
    assert ("did not change the restart" in line) == (not any(r.significant for r in family)), line


predicted = st.tuples(st.floats(0.0, 100.0), st.floats(0.0, 100.0), st.floats(0.0, 100.0)).map(sorted)


@QUICK
@given(predicted, st.floats(0.001, 150.0))
def test_a_prediction_against_the_rto_says_the_outcome_its_interval_gives(bounds, rto):
    """Rule: "within" only where the whole 95% interval is under the RTO, "EXCEEDED" only where
    all of it is over, "AT RISK" where the RTO lies inside it; the text cites the bound that
    decides (a wide interval had cried "exceeded" five times in six)."""
    low, typical, high = bounds
    prediction = Prediction(1 << 20, typical, low, high)
    outcome = rto_outcome(prediction, rto)
    said = _outcome_text(outcome, prediction)
    if high <= rto:
        assert outcome == "within" and f"{high:.3g} s" in said
    elif low > rto:
        assert outcome == "exceeded" and said.startswith("EXCEEDED") and f"{low:.3g} s" in said
    else:
        assert outcome == "at_risk" and said.startswith("AT RISK") and f"{low:.3g}-{high:.3g} s" in said


mib = st.integers(1, 4096).map(lambda n: n << 20)


@QUICK
@given(
    st.lists(st.tuples(st.sampled_from([128 << 20, 256 << 20, 1 << 30]), mib), max_size=3),
    st.dictionaries(st.sampled_from([128 << 20, 256 << 20, 1 << 30]), mib),
    st.sampled_from([128 << 20, 256 << 20, 1 << 30]),
    mib,
)
def test_a_stall_risk_is_said_only_beyond_what_the_lab_recovered_on_that_pool(stalled, most, pool, redo):
    """Rule: the risk is said where the lab saw a stall on this pool or a larger one and this redo
    is past what it recovered on this pool (or reaches the stall); never where no such stall was
    seen; the sentence cites the stall and the most recovered, as measured."""
    stalls = [{"run_id": i, "buffer_pool_bytes": p, "redo_bytes": r} for i, (p, r) in enumerate(stalled, 1)]
    recovered = {str(p): {"run_id": 100 + i, "redo_bytes": r} for i, (p, r) in enumerate(most.items())}
    said = stall_risk(stalls, recovered, pool, redo)
    seen = [s for s in stalls if s["buffer_pool_bytes"] >= pool]
    if not seen:
        assert said == ""
        return
    smallest = min(s["redo_bytes"] for s in seen)
    done = most.get(pool)
    beyond = done is None or redo > done or redo >= smallest
    assert bool(said) == beyond, (said, stalls, recovered, pool, redo)
    if said:
        assert f"stall at {smallest / 2**20:,.1f} MiB" in said
        assert (f"was {done / 2**20:,.1f} MiB" in said) if done else "recovered none" in said


@QUICK
@given(
    st.lists(
        st.tuples(st.sampled_from(["done", "stalled"]), st.sampled_from(["128M", "1G"]), mib), max_size=6
    )
)
def test_a_stalled_run_is_said_with_no_recovery_time_and_the_most_recovered_on_its_pool(runs):
    """Rule: each stalled run has one sentence, with its pool and redo, never a recovery time;
    "the most redo ... recovered on that pool" is the largest done run's of that pool."""
    rows = [
        {"id": i, "status": status, "engine": "innodb", "parameters": {"buffer_pool_size": pool},
         "buffer_pool_bytes": parse_size(pool), "redo_bytes": redo, "excluded": False}
        for i, (status, pool, redo) in enumerate(runs, 1)
    ]  # fmt: skip
    said = stall_findings(rows)
    assert len(said) == sum(r["status"] == "stalled" for r in rows)
    for line, row in zip(said, [r for r in rows if r["status"] == "stalled"], strict=True):
        assert line.startswith(f"Run #{row['id']} (InnoDB): recovery stalled with a ") and " s " not in line
        same = [
            r for r in rows if r["status"] == "done" and r["buffer_pool_bytes"] == row["buffer_pool_bytes"]
        ]
        if same:
            top = max(same, key=lambda r: r["redo_bytes"])
            assert (
                f"recovered on that pool here: {binary_bytes(top['redo_bytes'])} (run #{top['id']})" in line
            )
        else:
            assert "No InnoDB run here recovered on that pool" in line


@QUICK
@given(
    st.integers(3, 30),
    st.floats(0.001, 5.0),
    st.floats(0.0, 5.0),
    st.floats(0.0, 0.05),
    st.integers(1, 400).map(lambda n: n << 20),
    st.integers(0, 5),
)
def test_a_wide_interval_says_why_and_only_what_would_narrow_it(
    n, residual, intercept, slope, redo, disturbed
):
    """Rule: a prediction whose interval's half-width is over half its typical value says so,
    with the runs, the disturbed and the scatter behind it; it asks for more repetitions only
    under ten runs, a quiet host only where runs were disturbed, nearer redo only where this
    redo is further from the runs' mean than their spread."""
    fit = Fit(
        intercept,
        slope / 2**20,
        residual,
        n,
        64.0 * 2**20,
        n * (32.0 * 2**20) ** 2,
        2.2,
        (16 << 20, 112 << 20),
    )
    prediction = fit.at(redo)
    said = fit.why_wide(prediction, min(disturbed, n))
    if prediction.refused or not prediction.typical_seconds:
        assert said == ""
        return
    half = (prediction.high_seconds - prediction.low_seconds) / 2
    assert bool(said) == (half > 0.5 * prediction.typical_seconds), (said, prediction)
    if said:
        assert f"±{half:.3g} s" in said and f"{n} runs, {min(disturbed, n)} of them" in said
        assert ("more repetitions" in said) == (n < 10)
        assert ("a quiet host" in said) == (min(disturbed, n) > 0)
        assert ("redo targets nearer" in said) == ((redo - fit.mean_redo) ** 2 / fit.sxx > 1)


pools = st.sampled_from([128 * MIB, 256 * MIB, 1024 * MIB, None])
logs = st.sampled_from([48 * MIB, 128 * MIB, None])


@QUICK
@given(
    st.lists(st.tuples(pools, logs, st.integers(1, 4)), min_size=1, max_size=20),
    st.sampled_from([128 * MIB, 256 * MIB, 1024 * MIB]),
    st.sampled_from([48 * MIB, 128 * MIB]),
)
def test_a_fit_says_it_stands_on_the_server_s_settings_only_where_every_run_of_it_has_them(runs, pool, log):
    """Rule (docs/sentences.md, "Which lab runs a prediction stands on"): "stands on the N of M
    runs with this server's X" only where the fit's N runs all have the server's X; where they do
    not, a note names the lab's values and the server's, with how many runs had the server's."""
    rows = [
        {"id": i, "buffer_pool_bytes": p, "redo_log_bytes": g, "redo_bytes": r * MIB}
        for i, (p, g, r) in enumerate(runs)
    ]
    warnings: list[str] = []
    server = {"buffer_pool_bytes": pool, "redo_log_bytes": log}
    kept, matched, differing = like_the_server(rows, server, warnings)
    narrowing = [w for w in warnings if w.startswith("the fit stands on")]
    if narrowing:
        (sentence,) = narrowing
        found = re.match(
            r"the fit stands on the (\d+) of (\d+) runs with this server's (.*); the others", sentence
        )
        assert int(found.group(1)) == len(kept) < int(found.group(2)) == len(rows)
        for name, words in SETTINGS:  # a setting it names, every run of the fit has
            if f"{words} (" in found.group(3):
                assert name in matched and all(row[name] == server[name] for row in kept)
    scope = rows
    for name, words in SETTINGS:
        value = server[name]
        if name in matched and not all(row[name] == value for row in scope):
            scope = [row for row in scope if row[name] == value]  # narrowed at its turn
        assert name not in matched or all(row[name] == value for row in kept)
        if name in differing:
            assert not all(row[name] == value for row in kept)
            (sentence,) = [w for w in warnings if f"had a {words} of" in w and "this server" in w]
            assert f"this server {binary_bytes(value)}" in sentence
            assert all(binary_bytes(v) in sentence for v in differing[name]["lab"])
            having = sum(row[name] == value for row in scope)
            assert (f"({having} runs of it, too few to fit on)" in sentence) == (having > 0)
    assert {row["id"] for row in kept} <= {row["id"] for row in rows} and kept


@QUICK
@given(
    st.sampled_from(["warm", "cold"]),
    st.integers(0, 2**40),
    st.integers(0, 2**40),
    st.integers(0, 10**5),
    st.sampled_from([True, False, None]),
)
def test_the_restart_s_page_cache_is_said_as_it_was_counted(mode, held, total, files, direct):
    """Rule (docs/sentences.md, "The page cache at the restart"): the mode is said as recorded;
    "what the recovery read came from the disk" only for a cold restart with nothing left
    resident; otherwise the bytes still cached are said, beside the server's whole. A warm
    restart says its redo log could come from memory only where the engine read it through the
    cache, and says it could not where it read it with O_DIRECT; unknown, nothing of it."""
    held = min(held, total)
    cache = {"mode": mode, "resident_bytes": held, "bytes": total, "files": files, "redo_direct": direct}
    said = restart_cache_sentence(cache)
    assert said.startswith(f"Restarted {mode}")
    assert f"{binary_bytes(total)} in {files:,} files" in said
    assert ("came from the disk" in said) == (mode == "cold" and held == 0)
    assert "came from memory" not in said  # "could", never "did": the run cannot tell
    assert ("its redo log included" in said) == (mode == "warm" and direct is False)
    assert ("not its redo log, which the engine read with O_DIRECT" in said) == (
        mode == "warm" and direct is True
    )
    assert ("redo" in said) == (mode == "warm" and direct is not None)
    if held or mode == "warm":
        assert f"{binary_bytes(held)} of the server's" in said
    assert restart_cache_sentence(None) == "" and restart_cache_sentence({"mode": "hot"}) == ""


@QUICK
@given(
    st.integers(0, 10**10),
    st.integers(0, 10**6),
    st.integers(0, 10**10),
    st.one_of(st.none(), st.floats(0.1, 10**5)),
    st.one_of(st.none(), st.floats(0.1, 10**5)),
)
def test_a_storage_class_is_said_with_its_caps_and_what_held_its_reads(read_bps, iops, write_bps, fio, disk):
    """Rule (docs/sentences.md, "The storage class at the restart"): the caps as held, the
    uncapped workload said, fio's figure where measured; under 90% of the byte cap, "the disk,
    not the class" only where the host's disk measured uncapped reads under 90% of it, else the
    request cap named (and an unmeasured disk as a maybe)."""
    held = {"name": "hdd-raid10", "read_bps": read_bps, "read_iops": iops, "write_bps": write_bps,
            "write_iops": iops, "device": "254:0", "how": "cgroup v1 blkio throttle"}  # fmt: skip
    if fio is not None:
        held["floor"] = {"seq_read_mb_s": fio, "rand_read_qd1_iops": 80}
    said = storage_sentence(held, "RAID10 of four 7,200 rpm disks", disk)
    assert said.startswith("Restarted through storage class hdd-raid10 (RAID10 of four 7,200 rpm disks)")
    reads = f"{read_bps / 1e6:,.0f} MB/s and {iops:,} requests/s" if read_bps else "no cap"
    assert f"reads capped at {reads}, its writes at " in said and "ran uncapped" in said
    assert fio is None or f"fio in the cap read {fio:,.0f} MB/s in sequence" in said
    assert ("fio did not measure the cap" in said) == (fio is None)
    limit = read_bps / 1e6
    under = fio is not None and read_bps > 0 and fio < 0.9 * limit
    disk_slower = under and disk is not None and disk < 0.9 * limit
    assert ("the disk, not the class, bounds these reads" in said) == disk_slower
    assert (f"its cap of {iops:,} requests/s" in said) == (under and not disk_slower and iops > 0)
    assert ("not measured uncapped" in said) == (under and disk is None)
    assert storage_sentence(None) == "" and storage_sentence({}) == ""


@QUICK
@given(
    st.one_of(st.none(), st.integers(1, 10**6)),
    st.sampled_from(["", "128M", "1G", "8G"]),
    st.sampled_from(["128M", "1G", "8G"]),
    st.sampled_from(["to come", "done", "failed"]),
    st.integers(0, 100),
    st.integers(0, 100),
)
def test_a_restart_from_a_crash_image_names_its_crash_and_the_pool_the_workload_had(
    lead, lead_pool, pool, state, restarted, to_come
):
    """Rule (docs/sentences.md, "One crash recovered many ways"): a restart from an image names the
    run that makes the crash and says the redo is the same; the workload's pool is said only where
    it differs from the restart's; the run that makes it counts the restarts done and to come; every
    sentence in the tense of what has happened (a queued restart had read "Restarted")."""
    said = crash_image_sentence(lead, lead_pool, pool, state, restarted, to_come)
    past = {"to come": False, "done": True, "failed": None}[state]
    if lead is None:
        assert (said == "") == (restarted + to_come == 0)
        if not said:
            return
        assert ("was kept as an image" in said) == (state == "done")
        if state == "done":
            assert f"{restarted} run{'s' if restarted != 1 else ''} restarted copies of it" in said
            assert (f", {to_come} still to," in said) == (to_come > 0)
        else:
            total = restarted + to_come
            assert (
                f"for {total} run{'s' if total != 1 else ''} to restart" in said
                and "restarted copies" not in said
            )
        return
    start = {True: "Restarted", False: "Restarts", None: "Was to restart"}[past]
    assert (
        said.startswith(f"{start} from a copy of run {lead}'s crash") and "the same redo to the byte" in said
    )
    differs = bool(lead_pool) and lead_pool != pool
    assert (f"the workload's buffer pool is {lead_pool}, this restart's {pool}" in said) == differs


@QUICK
@given(
    st.lists(st.sampled_from(["disk", "cpu_one_core", "waiting", "mixed"]), min_size=1, max_size=6),
    st.lists(st.sampled_from(["disk", "cpu_one_core", "waiting", "mixed"]), min_size=1, max_size=6),
    st.floats(1.3, 4.0),
)
def test_a_finding_says_the_slower_side_waited_on_the_disk_only_where_its_verdicts_say_so(slow, fast, ratio):
    """Rule: a difference in neither CPU time nor the bytes read is put on the disk only where most
    of the slower side's runs were bound by the disk, and a larger share than the other side's
    (seed 000's RAID10 class: "the slower side waited" had said nothing of where)."""

    def rows(bounds, seconds):
        return [{"recovery_seconds": seconds, "recovery_cpu_seconds": 0.4, "recovery_disk_read_bytes": 5e7,
                 "recovery_core_wait_share": 0.02, "recovery_bound": bound,
                 "phases": {"redo_scan": seconds / 2}} for bound in bounds]  # fmt: skip

    said = what_moved("storage", (rows(fast, 0.4), rows(slow, 0.4 * ratio)), True, ("local", "hdd-raid10"))
    share = [bounds.count("disk") / len(bounds) for bounds in (slow, fast)]
    named = share[0] > 0.5 and share[0] > share[1]
    assert ("hdd-raid10 waited on the disk (bound by the disk in " in said) == named, said
    if named:
        assert (
            f"in {slow.count('disk')} of its {len(slow)} runs, local in {fast.count('disk')} of {len(fast)}"
            in said
        )
    else:
        assert "the slower side waited" in said, said


@QUICK
@given(st.lists(st.integers(0, 4), min_size=1, max_size=12))
def test_a_one_crash_caveat_counts_the_crashes_and_says_what_a_repetition_repeats(groups):
    """Rule (docs/sentences.md): runs that restart crash images are said to; one crash: they differ
    by their restart alone; more: a repetition repeats the restart, and cells from different
    crashes stand on one crash a side. Runs that each made their own crash get no such caveat."""
    from types import SimpleNamespace

    from experiments.reports.findings import one_crash_caveat

    # group g > 0: the runs restart the crash of the first run of that group; 0: a crash of its own
    runs, leads = [], {}
    for pk, group in enumerate(groups, start=1):
        lead = leads.setdefault(group, pk) if group else pk
        runs.append(SimpleNamespace(pk=pk, image_of_id=None if lead == pk else lead))
    said = " ".join(one_crash_caveat(runs))
    crashes = len({r.image_of_id or r.pk for r in runs})
    if not any(r.image_of_id for r in runs):
        assert said == ""
    elif crashes == 1:
        alone = "(crash.one_crash): they differ by their restart alone."
        assert said == f"All {len(runs)} runs restart one crash {alone}"
    else:
        assert f"The {len(runs)} runs restart {crashes} crashes (crash.one_crash)" in said
        assert "a repetition repeats the restart, not the workload" in said and "one crash a side" in said
