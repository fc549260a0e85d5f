"""The statistics module on its own: no database, synthetic samples from a seeded generator."""

import numpy as np
import pytest

from experiments.analysis import fits, stats


def noise(seed: int, n: int, typical: float = 2.0, spread: float = 0.15) -> list[float]:
    """Recovery times around `typical` seconds with log-normal noise (about 15% here)."""
    rng = np.random.default_rng(seed)
    return list(typical * np.exp(rng.normal(0.0, spread, n)))


def test_a_2x_slowdown_with_five_repetitions_a_side_is_significant():
    before, after = noise(1, 5), noise(2, 5, typical=4.0)
    result = stats.compare(before, after)
    assert result.significant
    assert result.ratio_ci[0] < 2.0 < result.ratio_ci[1]
    assert 1.5 < result.ratio < 2.7


def test_two_samples_of_the_same_noise_with_three_repetitions_are_not_significant():
    result = stats.compare(noise(3, 3), noise(4, 3))
    assert not result.significant
    assert result.ratio_ci[0] < 1.0 < result.ratio_ci[1]


def test_same_noise_is_called_significant_about_as_often_as_the_level_says():
    false_alarms = sum(stats.compare(noise(s, 3), noise(1000 + s, 3)).significant for s in range(400))
    assert false_alarms / 400 < 0.09  # 5% expected; Welch is slightly conservative at n = 3


def test_pages_of_identical_pairs_call_something_as_rarely_as_one_test_would():
    # pages of 18 identical pairs, as a compare page of 2 engines x 9 metrics, at 15% noise: with
    # each test at 5% (and beyond 1.25x) a page calls something far more often than 5%
    def page(seed: int) -> list[tuple[list, list]]:
        return [(noise(seed * 100 + i, 3), noise(seed * 100 + 50 + i, 3)) for i in range(18)]

    pages = [page(seed) for seed in range(200)]
    alone = [any(c.significant for c in stats.compare_many(p, [1.25] * 18)) for p in pages]
    together = [stats.compare_many(p, [1.25] * 18, family=True) for p in pages]
    assert sum(alone) / len(pages) > 0.15, sum(alone)
    assert sum(any(c.significant for c in results) for results in together) / len(pages) < 0.06
    held = [c for results in together for c in results if c.within_family]
    assert held and all(c.p_value < 0.05 <= c.p_adjusted and c.family == 18 for c in held)


def test_a_real_slowdown_among_a_page_of_comparisons_is_still_found():
    pairs = [(noise(i, 3), noise(100 + i, 3)) for i in range(17)]
    slowdown = (noise(500, 3, spread=0.05), noise(501, 3, typical=6.0, spread=0.05))  # 3x
    results = stats.compare_many([slowdown, *pairs], [1.25] * 18, family=True)
    assert results[0].significant and results[0].p_adjusted < 0.05 and 2.5 < results[0].ratio < 3.5
    assert results[0].as_dict()["family"] == 18


def test_the_fitted_slope_of_points_with_a_known_slope_is_within_its_interval():
    rng = np.random.default_rng(7)
    redo_mb = np.linspace(10, 500, 12)
    seconds = 0.004 * redo_mb + 0.3 + rng.normal(0, 0.05, len(redo_mb))
    fit = fits.fit_line(redo_mb, seconds)
    assert fit.slope_ci[0] < 0.004 < fit.slope_ci[1]
    assert fit.n == 12 and fit.r2 > 0.9


def test_the_confidence_band_holds_the_line_and_is_narrowest_at_the_mean_x():
    rng = np.random.default_rng(8)
    xs = np.linspace(0, 100, 20)
    ys = 2 * xs + 5 + rng.normal(0, 4, len(xs))
    fit = fits.fit_line(xs, ys)
    low, high = fit.band([0, 50, 100], xs, ys)
    for at, lo, hi in zip([0, 50, 100], low, high, strict=True):
        assert lo < fit.slope * at + fit.intercept < hi
    widths = [hi - lo for lo, hi in zip(low, high, strict=True)]
    assert widths[1] < widths[0] and widths[1] < widths[2]


def test_a_line_needs_three_points_and_a_varying_x():
    assert fits.fit_line([1, 2], [1, 2]) is None
    assert fits.fit_line([5, 5, 5], [1, 2, 3]) is None


def test_a_summary_of_three_close_values_is_trusted():
    summary = stats.summarize([2.0, 2.1, 1.95])
    assert summary.n == 3 and summary.median == 2.0
    assert summary.min == 1.95 and summary.max == 2.1
    assert summary.ci[0] < 2.0 < summary.ci[1]
    assert not summary.needs_more


def test_two_repetitions_need_more_whatever_their_values():
    summary = stats.summarize([0.074, 0.197])
    assert summary.needs_more and "n = 2" in summary.reason


def test_a_wide_spread_needs_more_repetitions_even_with_three():
    summary = stats.summarize([0.074, 0.197, 0.5])
    assert summary.needs_more and "wider than the median" in summary.reason


def test_values_with_zeros_are_summarised_on_their_own_scale():
    summary = stats.summarize([0, 0, 10, None])
    assert summary.n == 3 and summary.median == 0
    assert summary.ci[0] < 0 < summary.ci[1]


def test_an_empty_sample_says_so():
    assert stats.summarize([None]).reason == "no values"
    assert stats.compare([], [1.0]).ratio is None


@pytest.mark.parametrize(
    ("values", "expected"),
    [([0.01, 0.5, 20.0], True), ([1, 50, 99], False), ([0, 0.001, 10], False), ([5], False)],
)
def test_log_axes_where_positive_values_span_more_than_two_decades(values, expected):
    assert stats.spans_decades(values) is expected


def test_the_median_of_a_few_repetitions_is_numpys():
    rng = np.random.default_rng(7)
    for n in range(1, 12):
        for _ in range(50):
            sample = rng.lognormal(0, 1, n)
            assert stats._median(sample) == float(np.median(sample))
