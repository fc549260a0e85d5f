"""Statistics over repetitions: summaries, comparisons and fits. No Django; scipy does the maths.

Recovery times are positive and skewed (a slow disk flush makes one repetition much longer, never
much shorter), so intervals and comparisons of positive values are computed on their logarithms:
the interval of the mean log, turned back, is an interval for the typical value (the geometric
mean, which is the median of a log-normal sample), and the difference of two mean logs, turned
back, is the ratio of the two typical values. Samples holding zero or negative values (rows
undone, an unthrottled insert rate) are summarised on their own scale.

With n = 2 an interval exists but is very wide; with n = 1 there is none. Both are reported as
"needs more repetitions", as is an interval wider than the median itself.
"""

import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace

import numpy as np
from scipy import stats

CONFIDENCE = 0.95
MIN_REPETITIONS = 3
# An interval wider than this share of the median says the spread swamps the value.
WIDE_INTERVAL_RATIO = 1.0
# Runs that could not have called a difference below this ratio cannot say that nothing differs:
# a comparison that finds none says they are too few to tell (docs/sentences.md).
TOO_FEW_RATIO = 2.0


@dataclass(frozen=True)
class Summary:
    n: int
    median: float | None
    min: float | None
    max: float | None
    ci: tuple[float, float] | None
    needs_more: bool
    reason: str

    def as_dict(self) -> dict:
        data = asdict(self)
        data["ci"] = list(self.ci) if self.ci else None
        return data


@dataclass(frozen=True)
class Comparison:
    """B against A: ratio of typical values (B / A) with its interval and a Welch t-test; the
    difference is significant when the test says so and the ratio is beyond `min_effect` (the
    host's noise floor: see the module's docstring). Tested as one of a family (a page's
    comparisons), `p_adjusted` is its Benjamini-Hochberg p over the `family` tests, and the test
    says so only when that is below 0.05."""

    ratio: float | None
    ratio_ci: tuple[float, float] | None
    p_value: float | None
    significant: bool
    min_effect: float = 1.0
    p_adjusted: float | None = None
    family: int = 1
    # why there is no interval, in words, where there is none (a 0 s run is not "one run a side")
    no_interval: str = ""
    runs: tuple[int, int] = (0, 0)  # the values compared on each side (A, B)
    # The smallest ratio, either way, these runs could have called: the floor, or the interval's
    # half-width on the log scale (a ratio within it has p >= 0.05 before any adjustment).
    detectable: float | None = None
    # Where the noise is an experiment's, pooled over its cells: the degrees of freedom it has.
    pooled_df: int | None = None
    # A's and B's typical values (geometric means: what the ratio is of) and medians, where tested
    typical: tuple[float, float] | None = None
    medians: tuple[float, float] | None = None

    @property
    def too_few(self) -> bool:
        """No difference found by runs that could not have called one below TOO_FEW_RATIO."""
        return bool(not self.significant and self.detectable and self.detectable >= TOO_FEW_RATIO)

    @property
    def p(self) -> float | None:
        """The p the decision stands on: adjusted over its family, if it was tested in one."""
        return self.p_adjusted if self.p_adjusted is not None else self.p_value

    @property
    def within_floor(self) -> bool:
        """The test would call it significant; the ratio is within the noise floor."""
        return bool(not self.significant and self.p is not None and self.p < 1 - CONFIDENCE)

    @property
    def within_family(self) -> bool:
        """Alone the test would call it significant; not among the family's comparisons (one of
        many small p-values is what chance alone gives a page of tests)."""
        alone = self.p_value is not None and self.p_value < 1 - CONFIDENCE
        return bool(alone and self.p_adjusted is not None and self.p_adjusted >= 1 - CONFIDENCE)

    def as_dict(self) -> dict:
        return {
            "ratio": self.ratio,
            "ratio_ci": list(self.ratio_ci) if self.ratio_ci else None,
            "p_value": self.p_value,
            "significant": self.significant,
            "min_effect": self.min_effect,
            "within_floor": self.within_floor,
            "p_adjusted": self.p_adjusted,
            "family": self.family,
            "within_family": self.within_family,
            "no_interval": self.no_interval,
            "runs": list(self.runs),
            "detectable": self.detectable,
            "too_few": self.too_few,
            "pooled_df": self.pooled_df,
            "typical": list(self.typical) if self.typical else None,
            "medians": list(self.medians) if self.medians else None,
        }


def _clean(values: Sequence[float | int | None]) -> np.ndarray:
    array = np.array([v for v in values if v is not None], dtype=float)
    return array[np.isfinite(array)]


def _median(sample: np.ndarray) -> float:
    """np.median's value (the middle one, or the mean of the middle two) for the few repetitions
    of a cell, where numpy's own call costs more than the work: a comparison takes a thousand."""
    return float(statistics.median(sample.tolist()))


def _round(value: float, digits: int = 6) -> float:
    return float(f"{value:.{digits}g}")


def summarize(values: Sequence[float | int | None]) -> Summary:
    """n, median, min, max and a 95% interval for the typical value of one cell's repetitions."""
    return summarize_many([values])[0]


def summarize_many(samples: Sequence[Sequence[float | int | None]]) -> list[Summary]:
    """summarize() of many samples at once: scipy computes the intervals of all samples of the
    same size in one vectorised call (a page summarises hundreds of cells)."""
    cleaned = [_clean(values) for values in samples]
    intervals = _intervals(cleaned)
    return [_summary(sample, intervals.get(index)) for index, sample in enumerate(cleaned)]


def _intervals(samples: list[np.ndarray]) -> dict[int, tuple[float, float]]:
    """95% intervals by sample index: on logarithms where all values are positive, else on the
    values; a constant sample's interval is the value itself."""
    found: dict[int, tuple[float, float]] = {}
    batches: dict[tuple[int, bool], list[int]] = {}
    for index, sample in enumerate(samples):
        if len(sample) < 2:
            continue
        if np.ptp(sample) == 0:
            found[index] = (float(sample[0]), float(sample[0]))
            continue
        batches.setdefault((len(sample), bool(np.all(sample > 0))), []).append(index)
    for (_, positive), indices in batches.items():
        stacked = np.vstack([samples[i] for i in indices])
        low, high = stats.ttest_1samp(
            np.log(stacked) if positive else stacked, 0.0, axis=1
        ).confidence_interval(CONFIDENCE)
        if positive:
            low, high = np.exp(low), np.exp(high)
        for index, lo, hi in zip(indices, low, high, strict=True):
            found[index] = (float(lo), float(hi))
    return found


def _summary(sample: np.ndarray, ci: tuple[float, float] | None) -> Summary:
    n = len(sample)
    if n == 0:
        return Summary(0, None, None, None, None, True, "no values")
    median = _median(sample)
    reason = ""
    if n < MIN_REPETITIONS:
        reason = f"n = {n}: at least {MIN_REPETITIONS} repetitions give an interval worth reading"
    elif ci and median and (ci[1] - ci[0]) > WIDE_INTERVAL_RATIO * abs(median):
        reason = "the 95% interval is wider than the median: the repetitions disagree"
    return Summary(
        n=n,
        median=_round(median),
        min=_round(float(sample.min())),
        max=_round(float(sample.max())),
        ci=(_round(ci[0]), _round(ci[1])) if ci else None,
        needs_more=bool(reason),
        reason=reason,
    )


def compare(a: Sequence[float | None], b: Sequence[float | None], min_effect: float = 1.0) -> Comparison:
    """How B's typical value relates to A's: B / A, its 95% interval, and whether the difference
    is beyond the noise: Welch's t-test on the logarithms (p < 0.05) and a ratio beyond
    `min_effect` either way (1.25: more than 1.25x or less than 1/1.25x).

    Needs two or more positive values on each side; otherwise the ratio of medians alone, not
    significant.
    """
    return compare_many([(a, b)], [min_effect])[0]


def compare_many(
    pairs: Sequence[tuple[Sequence, Sequence]],
    min_effects: Sequence[float] | None = None,
    family: bool = False,
    noise: Sequence[tuple[float, int] | None] | None = None,
) -> list[Comparison]:
    """compare() of many pairs (each with its min_effect, 1.0 if none given); pairs of the same
    sizes go to scipy in one vectorised call. `family`: the pairs are one page's comparisons, read
    together; their p-values are adjusted (Benjamini-Hochberg, scipy) so that the page as a whole,
    not each test, calls a difference by chance at most 5% of the time where nothing differs
    (docs/statistics.md has the figures: 18 tests at 5% each called one in about a third of
    identical pairs). `noise`: per pair, an experiment's noise pooled over its cells
    (pooled_noise), which the pair's test then stands on instead of its own two samples'."""
    floors = list(min_effects) if min_effects is not None else [1.0] * len(pairs)
    results: dict[int, Comparison] = {}
    batches: dict[tuple[int, int], list[int]] = {}
    cleaned = [(_clean(a), _clean(b)) for a, b in pairs]
    for index, (sample_a, sample_b) in enumerate(cleaned):
        pooled = noise[index] if noise else None
        early = _without_test(sample_a, sample_b, floors[index], pooled is not None)
        if early is not None:
            results[index] = replace(early, runs=(len(sample_a), len(sample_b)))
        elif pooled is not None:
            results[index] = contrast([(sample_a, sample_b)], *pooled, floors[index])
        else:
            batches.setdefault((len(sample_a), len(sample_b)), []).append(index)
    for (size_a, size_b), indices in batches.items():
        log_a = np.log(np.vstack([cleaned[i][0] for i in indices]))
        log_b = np.log(np.vstack([cleaned[i][1] for i in indices]))
        test = stats.ttest_ind(log_b, log_a, equal_var=False, axis=1)
        low, high = test.confidence_interval(CONFIDENCE)
        ratios = np.exp(log_b.mean(axis=1) - log_a.mean(axis=1))
        for row, index in enumerate(indices):
            p_value = float(test.pvalue[row])
            results[index] = Comparison(
                ratio=_round(float(ratios[row]), 4),
                ratio_ci=(_round(math.exp(low[row]), 4), _round(math.exp(high[row]), 4)),
                p_value=_round(p_value, 4),
                significant=p_value < 1 - CONFIDENCE and _beyond(float(ratios[row]), floors[index]),
                min_effect=floors[index],
                runs=(size_a, size_b),
                detectable=_detectable((high[row] - low[row]) / 2, floors[index]),
                **_values_of(cleaned[index]),
            )
    if family:
        results = _adjusted(results)
    return [results[i] for i in range(len(pairs))]


def pooled_noise(samples: Sequence[Sequence[float | None]]) -> tuple[float, int] | None:
    """The variance of the log values within samples (an experiment's cells: one setting's
    repetitions each), pooled as a designed experiment's analysis pools it, and its degrees of
    freedom: each sample of 2 or more positive values gives n - 1. None where none gives any."""
    squares, df = 0.0, 0
    for values in samples:
        sample = _clean(values)
        if len(sample) >= 2 and np.all(sample > 0):
            logs = np.log(sample)
            squares += float(np.sum((logs - logs.mean()) ** 2))
            df += len(sample) - 1
    return (squares / df, df) if df else None


def contrast(
    pairs: Sequence[tuple[Sequence, Sequence]], variance: float, df: int, min_effect: float = 1.0
) -> Comparison:
    """B against A on the logs with the noise of a whole experiment (Student's t on its pooled
    variance and degrees of freedom), over one pair of cells or several: the mean of each pair's
    difference of mean logs, as a factorial experiment reads a main effect (each pair: cells
    that differ in one setting alone). A cell of 2 runs borrows the precision of the others."""
    cleaned = [(_clean(a), _clean(b)) for a, b in pairs]
    runs = (sum(len(a) for a, _ in cleaned), sum(len(b) for _, b in cleaned))
    for sample_a, sample_b in cleaned:  # no values, or values of 0 s: said as a pair says them
        early = _without_test(sample_a, sample_b, min_effect, pooled=True)
        if early is not None:
            return replace(early, runs=runs) if len(cleaned) == 1 else replace(early, ratio=None, runs=runs)
    difference = float(np.mean([np.log(b).mean() - np.log(a).mean() for a, b in cleaned]))
    error = math.sqrt(variance * sum(1 / len(a) + 1 / len(b) for a, b in cleaned)) / len(cleaned)
    ratio = _round(math.exp(difference), 4)
    if error == 0:
        return Comparison(ratio, (ratio, ratio), None, _beyond(ratio, min_effect), min_effect, runs=runs)
    p_value = float(2 * stats.t.sf(abs(difference) / error, df))
    half = float(stats.t.ppf(0.5 + CONFIDENCE / 2, df)) * error
    return Comparison(
        ratio=ratio,
        ratio_ci=(_round(math.exp(difference - half), 4), _round(math.exp(difference + half), 4)),
        p_value=_round(p_value, 4),
        significant=p_value < 1 - CONFIDENCE and _beyond(math.exp(difference), min_effect),
        min_effect=min_effect,
        runs=runs,
        detectable=_detectable(half, min_effect),
        pooled_df=df,
        **(_values_of(cleaned[0]) if len(cleaned) == 1 else {}),
    )


def _values_of(pair: tuple[np.ndarray, np.ndarray]) -> dict:
    """A tested pair's typical values (geometric means) and medians, A's first."""
    return {
        "typical": tuple(_round(float(np.exp(np.log(side).mean())), 4) for side in pair),
        "medians": tuple(_round(_median(side), 4) for side in pair),
    }


def _detectable(half_width_log: float, min_effect: float) -> float:
    """The smallest ratio a test with this interval could call: its half-width turned back, or
    the floor where that is larger."""
    return max(min_effect, _round(math.exp(half_width_log), 3))


def adjusted(results: Sequence[Comparison]) -> list[Comparison]:
    """Comparisons made apart (pairs and contrasts), adjusted as one page's family."""
    found = _adjusted(dict(enumerate(results)))
    return [found[i] for i in range(len(results))]


def _adjusted(results: dict[int, Comparison]) -> dict[int, Comparison]:
    tested = [i for i, r in results.items() if r.p_value is not None and math.isfinite(r.p_value)]
    if not tested:
        return results
    adjusted = stats.false_discovery_control([results[i].p_value for i in tested], method="bh")
    for i, p_adjusted in zip(tested, adjusted, strict=True):
        result = results[i]
        results[i] = replace(
            result,
            p_adjusted=_round(float(p_adjusted), 4),
            family=len(tested),
            significant=bool(p_adjusted < 1 - CONFIDENCE) and _beyond(result.ratio, result.min_effect),
        )
    return results


def _beyond(ratio: float, min_effect: float) -> bool:
    return abs(math.log(ratio)) > math.log(min_effect)


def _without_test(
    sample_a: np.ndarray, sample_b: np.ndarray, min_effect: float, pooled: bool = False
) -> Comparison | None:
    """The comparison where no t-test applies (empty, non-positive, single or constant
    samples; with an experiment's pooled noise, one run a side and a constant side are tested);
    None where one does."""
    if len(sample_a) == 0 or len(sample_b) == 0:
        return Comparison(None, None, None, False, no_interval="no values on one side")
    median_a, median_b = _median(sample_a), _median(sample_b)
    if not (np.all(sample_a > 0) and np.all(sample_b > 0)):
        ratio = median_b / median_a if median_a else None
        zeros = int(np.sum(sample_a <= 0) + np.sum(sample_b <= 0))
        why = f"{zeros} run{'s' if zeros > 1 else ''} measured 0 or less (shorter than the log resolves)"
        return Comparison(_round(ratio, 4) if ratio else None, None, None, False, no_interval=why)
    if pooled:
        return None
    if len(sample_a) < 2 or len(sample_b) < 2:
        return Comparison(
            _round(median_b / median_a, 4), None, None, False, no_interval="fewer than 2 runs a side"
        )
    if np.ptp(sample_a) == 0 and np.ptp(sample_b) == 0:
        ratio = _round(median_b / median_a, 4)
        return Comparison(ratio, (ratio, ratio), None, _beyond(ratio, min_effect), min_effect)
    return None


def spans_decades(values: Sequence[float | None], decades: float = 2.0) -> bool:
    """True when the values are all positive and span more than `decades` powers of ten: chart
    them on a log axis, or the small ones are squashed to zero. A zero or negative value keeps a
    linear axis (a log axis would silently drop that point)."""
    sample = _clean(values)
    if len(sample) < 2 or np.any(sample <= 0):
        return False
    return math.log10(sample.max() / sample.min()) > decades
