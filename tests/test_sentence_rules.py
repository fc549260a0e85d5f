"""Each kind of sentence the product prints, held to its rule (docs/sentences.md) over generated
numbers: what the sentence says must be true of the numbers beside it. Pure functions: no database."""

import math
import re
import statistics

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from experiments.analysis.planner import MIB, PlanRefused, Point, plan
from experiments.analysis.sentences import finding_sentence
from experiments.analysis.stats import compare
from experiments.reports.planner import plan_sentences

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
