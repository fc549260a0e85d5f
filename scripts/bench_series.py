"""`make bench`, series part. First, how often the change-point search finds what was written
in generated nightly histories (a temporary regression, one step, one bad night, none), 100 of
each. Then the search (Apache Otava, as the series use it) over a history of 10,000 firings,
each with three runs: recovery times around 10 s with 5% noise, 30% slower from firing 4,001 on
and back from firing 7,001. Prints the search's time (the best and the median of 5, in this
process, warm) and where the change points fell.

Runs without a database: experiments.analysis.series works on Firing values.
"""

import os
import random
import secrets
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(48))

import django  # noqa: E402

django.setup()

from experiments.analysis.series import Firing, change_points  # noqa: E402

POINTS = 10_000
STEPS = {4_000: 1.3, 7_000: 1.0}  # from this 0-based firing on, the level is this times 10 s
REPEATS = 5
DEFAULT_THRESHOLD = 0.10  # Series.alert_threshold's default


def history() -> list[Firing]:
    rng = random.Random(42)
    level, firings = 1.0, []
    for index in range(POINTS):
        level = STEPS.get(index, level)
        values = [10 * level * (1 + rng.gauss(0, 0.05)) for _ in range(3)]
        firings.append(Firing(index, None, "done", {}, values={"recovery_seconds": values}))
    return firings


# Nightly histories as a team's series make them: 24 firings of 3 runs, 8% noise (log-normal).
# Each shape with the change points a search should find (0-based first firing after each).
SHAPES = {
    "temporary x1.3, firings 8-15 of 24": ([1.0] * 7 + [1.3] * 8 + [1.0] * 9, [7, 15]),
    "one step x1.5 at firing 13": ([1.0] * 12 + [1.5] * 12, [12]),
    "one bad night x1.5": ([1.0] * 12 + [1.5] + [1.0] * 11, []),
    "flat": ([1.0] * 24, []),
}


def generated(levels: list[float], seed: int, noise: float = 0.08) -> list[Firing]:
    rng = random.Random(seed)
    return [
        Firing(
            i,
            None,
            "done",
            {},
            values={"recovery_seconds": [10 * level * rng.lognormvariate(0, noise) for _ in range(3)]},
        )
        for i, level in enumerate(levels)
    ]


def found_as_written(shape: str, seed: int) -> bool:
    """The search found exactly the shape's change points (each within one firing), no other."""
    levels, written = SHAPES[shape]
    found = [p.index for p in change_points(generated(levels, seed), "recovery_seconds")]
    return len(found) == len(written) and all(
        abs(f - w) <= 1 for f, w in zip(sorted(found), written, strict=True)
    )


def detection_rates(histories: int, first_seed: int = 0) -> dict[str, int]:
    """Per shape, in how many of `histories` seeded histories the search found what was written."""
    return {
        shape: sum(found_as_written(shape, first_seed + seed) for seed in range(histories))
        for shape in SHAPES
    }


def main() -> int:
    histories = 100
    print(f"change points on generated nightly histories (24 firings of 3 runs, 8% noise), {histories} each:")
    for shape, hits in detection_rates(histories, first_seed=1000).items():
        print(f"  {shape:<38} found as written in {hits:>3} of {histories}")
    firings = history()
    times, found = [], []
    for _ in range(REPEATS):
        started = time.perf_counter()
        found = change_points(firings, "recovery_seconds")
        times.append(time.perf_counter() - started)
    print(
        f"change-point search over {POINTS:,} firings (3 runs each), best of {REPEATS}: "
        f"{min(times):.2f} s, median {statistics.median(times):.2f} s"
    )
    for point in found:
        ci = point.comparison.ratio_ci
        print(
            f"  firing {point.index + 1:>6,}: x{point.comparison.ratio:.3f} (95% CI {ci[0]:.3f}-{ci[1]:.3f})"
        )
    written = sorted(index + 1 for index in STEPS)
    near = [p for p in found if any(abs(p.index + 1 - w) <= 2 for w in written)]
    others = [p for p in found if p not in near]
    beyond = [p for p in others if abs(p.comparison.ratio - 1) > DEFAULT_THRESHOLD]
    print(
        f"steps written at firings {', '.join(f'{w:,}' for w in written)}: {len(near)} found within 2 "
        f"firings; {len(others)} other change point(s) in the noise, {len(beyond)} of them beyond the "
        f"default alert threshold ({DEFAULT_THRESHOLD:.0%})"
    )
    return 0 if len(near) == len(written) else 1


if __name__ == "__main__":
    sys.exit(main())
