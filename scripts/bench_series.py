"""`make bench`, series part: the change-point search (Apache Otava, as the series use it) over
a history of 10,000 firings, each with three runs: recovery times around 10 s with 5% noise,
30% slower from firing 4,001 on and back from firing 7,001. Prints the search's time (the best
and the median of 5, in this process, warm) and where the change points fell.

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


def main() -> int:
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
