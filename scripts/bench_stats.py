"""`make bench`, statistics part: how often the comparison calls identical experiments different
(false alarms on A/A pairs) and how often it finds a known step (power), 3 repetitions against
3, for the plain t-test and for the calibrated one (the t-test and a ratio beyond the noise
floor, default or learned: experiments/analysis/aa.py). docs/statistics.md gives the figures
and the reasoning.

Generated samples: a run's log time is the experiment's offset (what the host did while that
experiment ran: between-experiment noise, sd `between`) plus the run's own noise (sd `within`).
The plain t-test sees only `within`. Runs without a database: stats works on lists.
"""

import os
import secrets
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(48))

import django  # noqa: E402

django.setup()

from experiments.analysis import aa, stats  # noqa: E402
from experiments.analysis.aa import DEFAULT_MIN_EFFECT  # noqa: E402

PAIRS = 2000
N = 3
# (within, between): log-normal sds. 10% within and none between is a quiet, steady host; 5%
# between is a host whose state drifts a little from one half hour to the next; 15% a shared
# one (another team's jobs, a cache warmed by someone else's work).
NOISE = [(0.10, 0.0), (0.10, 0.05), (0.10, 0.15), (0.25, 0.15)]
STEPS = [1.25, 1.5, 2.0, 3.0]


def experiments(rng, step: float, within: float, between: float) -> list[tuple[list, list]]:
    offsets = rng.normal(0, between, (PAIRS, 2))
    a = np.exp(offsets[:, :1] + rng.normal(0, within, (PAIRS, N)))
    b = step * np.exp(offsets[:, 1:] + rng.normal(0, within, (PAIRS, N)))
    return list(zip(a.tolist(), b.tolist(), strict=True))


def aa_floor(rng, within: float) -> list[float]:
    """The floor one interleaved A/A check of two cells teaches: its copies ran side by side, so
    only the within noise is in it; the larger of its two cells' differences."""
    floors = []
    for _ in range(PAIRS):
        ratios = [stats.compare(*pair).ratio for pair in experiments(rng, 1.0, within, 0.0)[:2]]
        floors.append(max(DEFAULT_MIN_EFFECT, *(max(r, 1 / r) for r in ratios)))
    return floors


def apart_floor(rng, within: float, between: float, pairs: int = 10) -> list[float]:
    """The floor ten earlier pairs of identical experiments run apart teach (a nightly series'
    firings): where 95% of their differences fall, from the median |log ratio| (aa._bound)."""
    shape = (PAIRS, pairs, 2, N)
    runs = rng.normal(0, between, shape[:3])[..., None] + rng.normal(0, within, shape)
    medians = np.median(np.exp(runs), axis=3)
    ratios = medians[:, :, 1] / medians[:, :, 0]
    return [max(DEFAULT_MIN_EFFECT, aa._bound(list(np.exp(np.abs(np.log(row)))))) for row in ratios]


def rates(pairs, floors) -> float:
    return float(np.mean([c.significant for c in stats.compare_many(pairs, floors)]))


# A compare page: 2 cells (engines) x 9 metrics. Recovery, recovery per GiB of redo and per 1000
# rows, the apply rate (its inverse) and downtime move with a run's recovery (correlation
# `COUPLED`); ready time, redo, TPS and the insert rate reached have noise of their own.
CELLS, METRICS, RECOVERY_LIKE, COUPLED = 2, 9, 5, 0.9
PAGES = 500
RECOVERY = 0  # the first cell's recovery: the first comparison of a page


def page(rng, step: float, within: float, between: float, n: int = N) -> list:
    """One page's pairs (cells x metrics, identical but for `step` on the first cell's recovery
    and what moves with it)."""
    pairs = []
    for cell in range(CELLS):
        # what the host did to each experiment, and each run's own noise: shared by the metrics
        # that move with recovery, their own for the others
        shared = rng.normal(0, between, (2, 1)) + rng.normal(0, within, (2, n))
        for metric in range(METRICS):
            own = rng.normal(0, between, (2, 1)) + rng.normal(0, within, (2, n))
            coupled = metric < RECOVERY_LIKE
            sign = -1 if metric == 3 else 1  # the apply rate: redo over recovery
            noise = sign * COUPLED * shared + np.sqrt(1 - COUPLED**2) * own if coupled else own
            sides = np.exp(noise)
            if cell == 0 and coupled:
                sides[1] *= step**sign
            pairs.append((sides[0].tolist(), sides[1].tolist()))
    return pairs


def page_rates(
    rng, step: float, within: float, between: float, family: bool, n: int = N
) -> tuple[float, float]:
    """Pages calling anything (of identical pairs: a false alarm), and pages finding the step in
    the first cell's recovery."""
    anything, found = [], []
    for _ in range(PAGES):
        pairs = page(rng, step, within, between, n)
        results = stats.compare_many(pairs, [DEFAULT_MIN_EFFECT] * len(pairs), family=family)
        anything.append(any(r.significant for r in results))
        found.append(results[RECOVERY].significant)
    return float(np.mean(anything)), float(np.mean(found))


def pages() -> None:
    rng = np.random.default_rng(20261126)
    print(
        f"== a compare page: {CELLS} cells x {METRICS} metrics, floor {DEFAULT_MIN_EFFECT}x, "
        f"{PAGES} generated pages per figure"
    )
    print("   each: every test at 5% (what compare did before); BH: p adjusted over the page")
    steps = "  ".join(f"{'x' + format(s, 'g'):>6}" for s in STEPS)
    print(f"{'n':>2} {'within':>6} {'between':>7}  {'rule':<4}  {'pages calling':>13}  {steps}")
    for n, (within, between) in [(N, noise) for noise in NOISE] + [(5, (0.10, 0.05))]:
        for rule, family in (("each", False), ("BH", True)):
            alarms, _ = page_rates(rng, 1.0, within, between, family, n)
            power = "  ".join(f"{page_rates(rng, s, within, between, family, n)[1]:6.0%}" for s in STEPS)
            print(f"{n:2} {within:6.0%} {between:7.0%}  {rule:<4}  {alarms:13.1%}  {power}")
    print(
        "   pages calling: identical experiments with anything on the page called different;"
        " x1.25 ... x3: a slowdown of one cell's recovery found"
    )


def main() -> None:
    rng = np.random.default_rng(20261125)
    print(f"== comparisons of {N} runs against {N}, {PAIRS} generated pairs per figure")
    print("   plain: Welch's t-test on the logarithms, p < 0.05 (what compare did before)")
    print(f"   floor: the same test and a ratio beyond {DEFAULT_MIN_EFFECT}x (the default noise floor)")
    print("   x1.5:  the same with a floor of 1.5x instead (what a drifting host would need)")
    print("   A/A:   the default floor raised to the larger difference of one A/A check's two cells")
    print(
        "   apart: the default floor raised to the 95% bound of 10 pairs of identical experiments run apart"
    )
    header = f"{'within':>6} {'between':>7}  {'rule':<5}  {'false alarms':>12}  " + "  ".join(
        f"{'x' + format(s, 'g'):>6}" for s in STEPS
    )
    print(header)
    for within, between in NOISE:
        null = experiments(rng, 1.0, within, between)
        stepped = {s: experiments(rng, s, within, between) for s in STEPS}
        learned = aa_floor(rng, within)[: len(null)]
        rules = (
            ("plain", [1.0] * PAIRS),
            ("floor", [DEFAULT_MIN_EFFECT] * PAIRS),
            ("x1.5", [1.5] * PAIRS),
            ("A/A", learned),
            ("apart", apart_floor(rng, within, between)),
        )
        for rule, floors in rules:
            power = "  ".join(f"{rates(stepped[s], floors):6.0%}" for s in STEPS)
            print(f"{within:6.0%} {between:7.0%}  {rule:<5}  {rates(null, floors):12.1%}  {power}")
    print(
        "   false alarms: identical experiments called different; x1.25 ... x3: a slowdown of that size found"
    )


if __name__ == "__main__":
    main()
    pages()
