"""How much the runs can tell (issue 65, item 1): a comparison that finds no difference says the
smallest one its runs could have called, and "too few runs to tell" where that is a doubling or
more; an experiment's cells estimate the noise together, and a parameter is also read over every
pair of cells that differ in it alone. Rules in docs/sentences.md ("How much the runs can tell").
Pure functions: no database."""

import math
import re

from hypothesis import given
from hypothesis import strategies as st

from experiments.analysis import stats
from experiments.analysis.cells import build_cells
from experiments.analysis.compare import compare_engines
from experiments.analysis.sentences import finding_sentence, flushing_sentence
from experiments.charts.tradeoff import no_pages_note
from experiments.metrics import moved_beyond_a_record, within_its_range
from experiments.reports.answers import tradeoff_answers
from experiments.reports.effects import cell_noise, parameter_findings
from experiments.reports.findings import checkpoint_caveat
from experiments.reports.redo import redo_findings
from recovery_lab_cli.units import parse_size

from .test_sentence_rules import QUICK, row_of

times = st.floats(0.05, 60.0, allow_nan=False)
sample = st.lists(times, min_size=2, max_size=5)


@QUICK
@given(sample, sample, st.floats(1.0, 1.6))
def test_no_difference_is_said_with_the_smallest_its_runs_could_call_and_too_few_past_a_doubling(a, b, floor):
    """Rule: a comparison that finds no difference says the smallest ratio its runs could have
    called (never below the floor), and the ratio it saw is within it; where that smallest is 2x
    or more it says the runs are too few to tell, never "no significant difference"."""
    result = stats.compare(a, b, min_effect=floor)
    said = finding_sentence("crash recovery", "B", "A", "cell", result.as_dict(), subject_first=False)
    if result.significant or result.detectable is None:  # called, or no test (constant or too few)
        assert "could have been called" not in said and "too few runs" not in said, said
        return
    assert result.detectable >= floor - 1e-9
    assert ("too few runs to tell" in said) == (result.detectable >= stats.TOO_FEW_RATIO), said
    assert ("no significant difference" in said) == (result.detectable < stats.TOO_FEW_RATIO), said
    could = re.search(
        r"only a difference beyond (?:the noise floor of )?([0-9.,]+)x could have been called", said
    )
    if result.within_floor or result.within_family:
        return  # the sentence says why instead: within the floor, or its p over the page
    assert could, said
    sides = re.search(r"with (\d+) runs a side|with (\d+) and (\d+) runs", said)
    counted = [int(n) for n in sides.groups() if n]
    assert counted in ([len(a)], [len(a), len(b)]) and (len(counted) == 1) == (len(a) == len(b)), said
    seen = max(result.ratio, 1 / result.ratio)
    assert seen <= float(could.group(1).replace(",", "")) * 1.01, (
        said
    )  # what it saw is within what it could call


@QUICK
@given(
    st.lists(st.tuples(times, st.floats(0.3, 10.0)), min_size=2, max_size=4),
    st.floats(0.01, 0.4),
    st.integers(2, 3),
    st.lists(st.floats(-2.0, 2.0), min_size=24, max_size=24),
)
def test_a_parameter_over_its_pairs_of_cells_reads_their_mean_on_the_experiment_s_noise(
    cells, spread, runs, z
):
    """Rule: where several pairs of cells differ in one parameter alone, its effect over all of
    them comes first, on the noise of every cell together: its ratio lies within the pairs' own
    (each pair's ratio of geometric means), and "slower" only where its test, adjusted with the
    page's others, found a difference."""
    rows, draws = [], iter(z)
    for index, (base, effect) in enumerate(cells):
        for value, scale in (("local", 1.0), ("hdd-raid10", effect)):
            for _ in range(runs):
                seconds = base * scale * math.exp(spread * next(draws))
                rows.append(
                    row_of(parameters={"storage": value, "rate": 100 * (index + 1)}, recovery_seconds=seconds)
                )
    found = parameter_findings(rows, ["storage"])
    over_all = [line for line in found if "pairs of cells" in line]
    assert len(over_all) == 1 and found[0] == over_all[0], found
    said = over_all[0]
    assert f"over its {len(cells)} pairs of cells" in said, said

    def geometric(value: str, rate: int) -> float:
        picked = [r["recovery_seconds"] for r in rows if r["parameters"] == {"storage": value, "rate": rate}]
        return math.exp(sum(map(math.log, picked)) / len(picked))

    pair_ratios = [
        geometric("hdd-raid10", 100 * (i + 1)) / geometric("local", 100 * (i + 1)) for i in range(len(cells))
    ]
    value = float(re.search(r"([0-9.]+)x (?:slower|faster|as long)", said).group(1))
    raid_longer = "slower than" in said or "storage hdd-raid10 took" in said
    seen = value if raid_longer else 1 / value
    assert min(pair_ratios) / 1.06 <= seen <= max(pair_ratios) * 1.06, (said, pair_ratios)
    if "slower than" in said or "faster than" in said:
        assert ("slower than" in said) == (seen > 1), said
    else:
        assert "no significant difference" in said or "too few runs to tell" in said, said


def seed_002_innodb() -> list[dict]:
    """Seed 002's InnoDB cells as run (two runs a cell, power cut, cold): crash recovery took
    2.63-3.07 s on hdd-raid10 against 0.20-0.86 s locally, 6.8x and 3.8x by medians; each pair
    alone had read "no significant difference"."""
    cells = {
        (200, "local"): [0.20, 0.58],
        (200, "hdd-raid10"): [2.63, 2.68],
        (2000, "local"): [0.86, 0.70],
        (2000, "hdd-raid10"): [3.07, 2.85],
    }
    return [
        row_of(parameters={"insert_rate": rate, "storage": storage}, recovery_seconds=seconds)
        for (rate, storage), values in cells.items()
        for seconds in values
    ]


def test_seed_002_s_raid10_class_is_slower_over_its_pairs_of_cells_and_no_pair_says_nothing_differs():
    rows = seed_002_innodb()
    variance, df = cell_noise(rows)[("local", "innodb")]
    assert df == 4 and variance > 0
    found = parameter_findings(rows, ["storage"])
    assert found[0].startswith("InnoDB, over its 2 pairs of cells: storage hdd-raid10: crash recovery "), (
        found
    )
    assert " slower than storage local" in found[0], found[0]
    for line in found[1:]:  # each pair alone: never "no significant difference" on what it could not see
        assert "no significant difference" not in line or "could have been called" in line, line
        if "could have been called" in line:
            beyond = float(re.search(r"beyond ([0-9.,]+)x could", line).group(1).replace(",", ""))
            assert beyond < stats.TOO_FEW_RATIO or "too few runs to tell" in line, line


def test_two_runs_a_side_on_a_noisy_pair_say_too_few_and_what_they_could_have_called():
    """The DBAs' case: 2 runs a side, the local side spread 0.20-0.86 s, read as "no significant
    difference" beside a 6.8x ratio."""
    result = stats.compare([0.20, 0.86], [2.63, 3.07])
    said = finding_sentence("crash recovery", "hdd-raid10", "local", "InnoDB", result.as_dict(), False)
    if not result.significant:
        assert said.startswith("InnoDB: too few runs to tell whether crash recovery differs"), said
        assert "with 2 runs a side and the spread they had, only a difference beyond" in said, said


@QUICK
@given(
    st.sampled_from(["held_back", "natural"]),
    st.one_of(st.none(), st.integers(0, 2**34)),
    st.one_of(st.none(), st.integers(1, 2**34)),
)
def test_flushing_is_said_as_the_run_recorded_its_checkpoint(flushing, moved, written):
    """Rule (issue 65, item 2): "held back ... replayed the redo the workload wrote" only where
    the checkpoint recorded stayed put; a move beyond a checkpoint record is said with its size;
    nothing is said of the checkpoint where the run recorded none."""
    said = flushing_sentence(flushing, moved, written)
    beyond = moved_beyond_a_record(moved, written)
    assert ("replayed the redo the workload wrote" in said) == (
        flushing != "natural" and moved is not None and not beyond
    )
    assert ("the checkpoint moved" in said) == beyond, said
    assert ("the checkpoint did not move" in said) == (moved is not None and not beyond), said
    assert ("natural" in said) == (flushing == "natural"), said
    if moved is None:
        assert "checkpoint moved" not in said and "did not move" not in said, said


def test_seed_001_s_runs_whose_checkpoint_moved_are_said_on_the_experiment_page():
    """Seed 001 on MySQL 9.7 at 100,000 transactions: the checkpoint moved in all three runs
    (246 of 332 MB replayed), each run page warned of it, the experiment page said nothing."""
    from types import SimpleNamespace

    runs = [
        SimpleNamespace(
            pk=pk,
            status="done",
            parameters={},
            checkpoint_moved_bytes=86 << 20,
            redo_bytes=246 << 20,
            log_bytes_written=332 << 20,
        )
        for pk in (1, 2, 3)
    ]
    (said,) = checkpoint_caveat(runs)
    assert said.startswith(
        "In 3 of 3 runs the checkpoint moved during the workload though flushing was to be held back"
    )
    assert "run 1: 246 MiB of 332 MiB" in said
    natural = [SimpleNamespace(**{**vars(runs[0]), "parameters": {"flushing": "natural"}})]
    assert checkpoint_caveat(natural) == []  # what production does: nothing to warn of


def seed_004_rows(flushing: str, moved: list[int | None]) -> list[dict]:
    """Seed 004 as run: flushing natural, 500 tx/s for 45 s, logs of 256M and 1G; no log filled,
    0 pages written at every size, throughput the same (497 vs 499 tx/s)."""
    rows = []
    for log, took, tps in (
        ("256M", [0.61, 0.66, 0.58], [497, 496, 498]),
        ("1G", [0.63, 0.60, 0.65], [499, 498, 500]),
    ):
        for seconds, rate in zip(took, tps, strict=True):
            rows.append(
                row_of(
                    id=len(rows) + 1,
                    parameters={"redo_log_size": log, "flushing": flushing},
                    redo_log_bytes=parse_size(log),
                    recovery_seconds=seconds,
                    workload_tps=rate,
                    pages_written=0,
                    log_bytes_written=20 << 20,
                    redo_bytes=20 << 20,
                    checkpoint_moved_bytes=moved[len(rows) % len(moved)],
                )
            )
    return rows


@QUICK
@given(
    st.sampled_from(["held_back", "natural"]),
    st.lists(st.one_of(st.none(), st.sampled_from([0, 40 << 20])), min_size=1, max_size=6),
)
def test_what_a_bigger_log_bought_is_said_from_why_no_page_was_written(flushing, moved):
    """Rule (seed 004): where no log size wrote a page while running, "a bigger log bought
    nothing" only with the server's own flushing and the checkpoint recorded still in every
    run; the chart's note says to run with natural flushing only where it was held back."""
    rows = seed_004_rows(flushing, moved)
    said = " ".join(tradeoff_answers(rows, build_cells(rows)))
    still = all(
        m is not None and not moved_beyond_a_record(m, 20 << 20)
        for m in [r["checkpoint_moved_bytes"] for r in rows]
    )
    assert ("a bigger log bought nothing here" in said) == (flushing == "natural" and still), said
    if said:
        assert "with no measurable gain in throughput (TPS 499 against 497" in said, said
        assert "not beyond the noise" in said, said
    note = no_pages_note([flushing])
    assert ("run with parameters.flushing: [natural]" in note) == (flushing == "held_back"), note


def test_seed_004_s_redo_finding_does_not_advise_the_sweep_it_ran():
    rows = seed_004_rows("natural", [0])
    (said,) = redo_findings(rows, {"crash": {"when": "after_workload"}})
    assert "cannot show how recovery grows with redo" in said, said
    assert "the redo log size for that" not in said and "sweep crash.redo_bytes for that" in said, said
    assert "its redo log sizes replayed the same redo" in said, said


@QUICK
@given(st.lists(st.floats(0.01, 1.0), min_size=2, max_size=5))
def test_a_share_s_interval_never_passes_its_range(shares):
    """Rule (issue 65, item 3): a share's interval never passes 100% ("79% [57%-102%]"), nor 0%;
    other metrics' intervals are as computed."""
    summary = stats.summarize(shares)
    shown = within_its_range("recovery_core_wait_share", summary.ci)
    if summary.ci:
        assert 0.0 <= shown[0] <= shown[1] <= 1.0, (summary.ci, shown)
        assert shown[1] == min(1.0, summary.ci[1])
    assert within_its_range("recovery_seconds", summary.ci) == summary.ci


@QUICK
@given(st.lists(st.lists(st.booleans(), min_size=2, max_size=3), min_size=3, max_size=3))
def test_a_disturbed_note_counts_the_runs_its_comparison_stands_on(flags):
    """Rule (issue 65, item 3): "on a disturbed host: N of M runs" counts the two sides the
    sentence compares, never a third side's runs ("9 of 9" had been said of a comparison of 6)."""
    engines = ("innodb", "rocksdb", "postgresql")
    rows = [
        row_of(
            id=10 * e + i,
            engine=engine,
            parameters={},
            disturbed=flag,
            recovery_seconds=1.0 + 0.1 * i,
            replay_seconds=None,
            downtime_seconds=2.0 + 0.1 * i,
        )
        for e, (engine, side) in enumerate(zip(engines, flags, strict=True))
        for i, flag in enumerate(side)
    ]
    (cell,) = compare_engines(rows)["cells"]
    for sentence in cell["sentences"]:
        named = [
            e
            for e, name in zip(engines, ("InnoDB", "MyRocks", "PostgreSQL"), strict=True)
            if name in sentence
        ]
        pair = [flag for e, side in zip(engines, flags, strict=True) if e in named for flag in side]
        counted = re.search(r"on a disturbed host: (\d+) of (\d+) runs", sentence)
        if any(pair):
            assert counted and (int(counted.group(1)), int(counted.group(2))) == (sum(pair), len(pair)), (
                sentence
            )
        else:
            assert not counted, sentence


def test_a_pair_with_runs_shorter_than_the_log_resolves_says_so_on_the_experiment_s_noise():
    """A cell's 0 s runs (no resolution known) are said as a pair says them, never as "no values";
    and the pairs together are not read where one of them has none to read."""
    rows = seed_002_innodb()
    rows[0] = {**rows[0], "recovery_seconds": 0.0}
    found = parameter_findings(rows, ["storage"])
    assert not any("pairs of cells" in line for line in found), found
    (zeros,) = [line for line in found if "at rate 200:" in line]
    assert "1 run measured 0 or less" in zeros and "no values on one side" not in zeros, zeros


@QUICK
@given(sample, sample)
def test_a_ratio_beside_medians_that_point_the_other_way_says_what_it_is_of(a, b):
    """Rule (issue 65, item 3): where the sides' medians point the other way from the sentence's
    ratio (or give one 10% apart from it), the sentence prints the geometric means the ratio is
    of, which agree with it, and the medians ("#4 took 1.08x as long as #5" had stood beside
    medians of 0.327 and 0.414 s)."""
    result = stats.compare(a, b).as_dict()
    said = finding_sentence("crash recovery", "B", "A", "cell", result, subject_first=False)
    if result["medians"] is None:
        return
    by_medians = result["medians"][1] / result["medians"][0]
    if (by_medians - 1) * (result["ratio"] - 1) < 0:
        assert "the ratio is of geometric means" in said, said
        typical_b, typical_a = map(
            float, re.search(r"geometric means, B ([0-9.e+-]+) and A ([0-9.e+-]+)", said).groups()
        )
        assert (typical_b > typical_a) == (result["ratio"] > 1) or math.isclose(
            typical_b, typical_a, rel_tol=2e-3
        ), said


def test_issue_65_s_ratio_beside_medians_of_0_327_and_0_414_s():
    result = stats.compare([0.300, 0.327, 0.52], [0.21, 0.414, 0.45]).as_dict()
    said = finding_sentence("crash recovery", "#5", "#4", "cell", result, subject_first=False)
    assert result["medians"] == [0.327, 0.414] and result["ratio"] < 1, result
    assert "the medians are #5 0.414 and #4 0.327" in said, said


def test_a_cell_of_one_run_on_the_experiment_s_noise_is_said_in_the_singular():
    """With an experiment's pooled noise a cell of one run is compared: "with 1 run a side"."""
    result = stats.compare_many([([1.0], [1.1])], noise=[(0.04, 6)])[0].as_dict()
    said = finding_sentence("crash recovery", "B", "A", "cell", result, subject_first=False)
    assert "with 1 run a side and the spread of the experiment's cells together" in said, said
