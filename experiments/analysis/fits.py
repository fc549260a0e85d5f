"""Lines fitted through runs (recovery against redo): the slope, its interval and band, and why
a line cannot carry a rate. No Django; scipy does the maths."""

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from recovery_lab_cli.prediction import NARROW_SPAN

from .stats import CONFIDENCE


@dataclass(frozen=True)
class LineFit:
    slope: float
    intercept: float
    r2: float
    n: int
    slope_ci: tuple[float, float] | None

    def band(self, xs: Sequence[float], x_values, y_values) -> tuple[list[float], list[float]]:
        """Confidence band of the fitted line at xs (not of single points), from the fit's own
        coefficient covariance."""
        return _band(xs, np.asarray(x_values, float), np.asarray(y_values, float))


def fit_line(x_values: Sequence[float], y_values: Sequence[float]) -> LineFit | None:
    """Least-squares line y = slope * x + intercept with the slope's 95% interval; None when
    there are fewer than three points or x does not vary."""
    pairs = [(x, y) for x, y in zip(x_values, y_values, strict=True) if x is not None and y is not None]
    if len(pairs) < 3:
        return None
    xs, ys = np.array(pairs, dtype=float).T
    if np.ptp(xs) == 0:
        return None
    result = stats.linregress(xs, ys)
    t = stats.t.ppf((1 + CONFIDENCE) / 2, len(xs) - 2)
    half = t * result.stderr
    return LineFit(
        slope=float(result.slope),
        intercept=float(result.intercept),
        r2=float(result.rvalue**2),
        n=len(xs),
        slope_ci=(float(result.slope - half), float(result.slope + half)),
    )


# A rate read from a line (bytes per second = 1 / slope) needs the bytes to differ (NARROW_SPAN:
# runs whose largest volume is within this share of it from their smallest replayed nearly the same).


def why_no_rate(fit: LineFit | None, xs: Sequence[float], ys: Sequence[float]) -> str:
    """Why the line through (volume, seconds) points may not be read as a rate (1 / slope), or ''
    when it may. A significant slope is not enough: six MyRocks runs at 5.6 MiB (the demo) gave
    one of R² 0.83 that read "0.2 MiB/s", which would take 28 s to replay what took 0.08 s."""
    if fit is None:
        return why_no_rate_of(None, 0.0, 0.0, 0.0, 0.0)
    return why_no_rate_of(fit.slope_ci, fit.intercept, min(xs), max(xs), float(np.median(ys)))


def why_no_rate_of(
    slope_ci: tuple[float, float] | None, intercept: float, low: float, high: float, median_y: float
) -> str:
    """why_no_rate from the numbers it looks at, for a caller that has them from SQL (explore:
    its points stay JSON text). `slope_ci` None: no line (fewer than three runs, or one volume)."""
    if slope_ci is None:
        return "fewer than three runs, or one volume"
    if not slope_ci[0] > 0:  # nan too (runs of one value)
        return "recovery does not grow with redo beyond the noise here"
    if high - low < NARROW_SPAN * high:
        return f"the runs replayed nearly the same redo (within {NARROW_SPAN:.0%}): too narrow a range"
    if intercept < -0.5 * median_y:
        return f"the line would put a recovery of no redo at {intercept:.2g} s"
    return ""


def slope_interval(slope: float, n: int, sxx: float, syy: float, sxy: float) -> tuple[float, float] | None:
    """The slope's 95% interval from the sums of squares (PostgreSQL's regr_sxx, regr_syy,
    regr_sxy), as fit_line's: None where there is no line (n < 3, or x does not vary)."""
    if n < 3 or not sxx > 0:
        return None
    residual = max(syy - slope * sxy, 0.0) / (n - 2)
    half = stats.t.ppf((1 + CONFIDENCE) / 2, n - 2) * math.sqrt(residual / sxx)
    return (slope - half, slope + half)


def _band(at: Sequence[float], xs: np.ndarray, ys: np.ndarray) -> tuple[list[float], list[float]]:
    """Lower and upper 95% bounds of the fitted line at the points `at`: numpy's polyfit gives
    the coefficients' covariance, scipy the t quantile."""
    coefficients, covariance = np.polyfit(xs, ys, 1, cov=True)
    design = np.column_stack([np.asarray(at, float), np.ones(len(at))])
    fitted = design @ coefficients
    spread = np.sqrt(np.einsum("ij,jk,ik->i", design, covariance, design))
    t = stats.t.ppf((1 + CONFIDENCE) / 2, len(xs) - 2)
    return list(fitted - t * spread), list(fitted + t * spread)
