"""The recovery-time planner: how much redo keeps the downtime after a crash under a target.

From the runs measured on one host and engine (and server version), downtime (kill to first
query) is fitted against the redo replayed with a least-squares line. The answer is the redo at
which the line meets the target, with the 95% *prediction* interval of that redo (the range of a
single future crash, not of the mean line): its lower end is the redo at which the upper
prediction bound meets the target, the volume a careful designer sizes for.

Redo to replay is the checkpoint age at the crash, and InnoDB never lets the checkpoint age pass
the redo log's capacity; so a redo log no larger than that volume keeps every crash under the
target (the measured share of the log the runs filled is reported beside it). With a write rate,
it says how many seconds of writes that log holds, and, where runs measured page writes at two
or more log sizes, what each size costs in page writes.

The model is plain Python. At the end, what the planner page and GET /api/planner/ share: one
form for their parameters, and `plan_from`, which reads the runs to answer from (the analysable
ones of one host and engine, and one server version if given) and hands their values in.
"""

import json
import math
import statistics
from dataclasses import asdict, dataclass, field

import numpy as np
from scipy import optimize, stats

from experiments.analysis.fits import fit_line
from experiments.analysis.stats import CONFIDENCE
from experiments.models import Run, RunStatus
from recovery_lab_cli.units import GIB, MB_PER_MIB, MIB
from runner.contract import SYSTEM_BUILD

MIN_RUNS = 5


class PlanRefused(ValueError):
    """The runs cannot carry an answer; `reason` says why in words."""

    def __init__(self, reason: str, based_on_runs: int = 0):
        super().__init__(reason)
        self.reason = reason
        self.based_on_runs = based_on_runs


@dataclass(frozen=True)
class Point:
    run_id: int
    redo_bytes: float
    downtime_seconds: float
    redo_log_bytes: int | None = None
    # the run's setting (experiment and parameters): its runs together are a measured cell
    cell: tuple | None = None


@dataclass(frozen=True)
class PageWrites:
    """Pages written per MiB of redo written, at one redo log size (median over its runs)."""

    redo_log_bytes: int
    pages_per_mib: float
    runs: int
    pages_per_second: float | None = None  # at the plan's write rate


@dataclass
class Plan:
    target_downtime_seconds: float
    max_redo_bytes: int
    interval: tuple[int, int]
    based_on_runs: int
    extrapolated: bool
    log_size_suggestion: int
    slope_seconds_per_gb: float
    slope_seconds_per_gib: float  # the same slope in binary units, as the sentences and chart say it
    intercept_seconds: float
    r2: float
    measured_redo: tuple[int, int]
    filled_share: float | None = None
    write_mb_per_s: float | None = None
    seconds_of_writes: float | None = None
    page_writes: list[PageWrites] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    run_ids: list[int] = field(default_factory=list)
    # What it stands on: the experiments its runs belong to and the workload shapes they ran.
    experiment_ids: list[int] = field(default_factory=list)
    workloads: list[str] = field(default_factory=list)
    # Who defined those experiments, and how many of the runs were imported (0 unless asked for).
    made_by: list[str] = field(default_factory=list)
    imported_runs: int = 0
    # Runs measured while other work used the host: how many matched, and whether the plan
    # stands on the others alone (it does where they are enough).
    disturbed_runs: int = 0
    disturbed_left_out: bool = False
    server_versions: list[str] = field(default_factory=list)
    # The fitted line and its 95% prediction band on a grid of redo (bytes), for the chart.
    band: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        data = asdict(self)
        data["interval"] = list(self.interval)
        data["measured_redo"] = list(self.measured_redo)
        return data


def round_log_size(size: float) -> int:
    """A redo log size a DBA would type, no larger than `size`: whole 64 MiB steps from 128 MiB,
    whole MiB below (0 when under 1 MiB)."""
    if size >= 128 * MIB:
        return int(size // (64 * MIB)) * 64 * MIB
    return int(size // MIB) * MIB


def plan(
    points: list[Point],
    target_downtime_seconds: float,
    write_mb_per_s: float | None = None,
    page_samples: list[tuple[int, float, float]] | None = None,
) -> Plan:
    """The plan for `target_downtime_seconds` from measured (redo, downtime) points.

    `page_samples` are (redo log size, pages written, log bytes written) of runs that counted
    them. Raises PlanRefused with the reason when the runs cannot carry an answer.
    """
    if not math.isfinite(target_downtime_seconds) or target_downtime_seconds <= 0:
        raise PlanRefused("the target downtime must be a positive number of seconds")
    n = len(points)
    if n < MIN_RUNS:
        raise PlanRefused(
            f"{n} run(s) measured both redo replayed and downtime here; the planner needs at least "
            f"{MIN_RUNS} (a line and its prediction interval from fewer would say nothing)",
            n,
        )
    xs = np.array([p.redo_bytes for p in points], float)
    ys = np.array([p.downtime_seconds for p in points], float)
    if np.ptp(xs) == 0:
        raise PlanRefused("every run replayed the same redo: vary the insert rate or redo log size", n)
    fit = fit_line(xs, ys)  # the line and slope interval the charts draw
    t = stats.t.ppf((1 + CONFIDENCE) / 2, n - 2)
    if not fit.slope_ci[0] > 0 or not fit.slope > 0:  # (NaN where every downtime was the same)
        raise PlanRefused(
            "downtime does not grow measurably with redo in these runs (the slope's 95% interval "
            "reaches zero): redo volume is not what limits it here",
            n,
        )
    residual = math.sqrt(float(np.sum((ys - (fit.intercept + fit.slope * xs)) ** 2)) / (n - 2))
    mean_x, sxx = float(xs.mean()), float(np.sum((xs - xs.mean()) ** 2))

    def spread(x: float) -> float:
        return t * residual * math.sqrt(1 + 1 / n + (x - mean_x) ** 2 / sxx)

    def crossing(bound: float) -> float:
        """The redo at which line + bound * spread meets the target; both are increasing in
        redo when the slope is significant (see module doc)."""

        def gap(x: float) -> float:
            return fit.intercept + fit.slope * x + bound * spread(x) - target_downtime_seconds

        if gap(0.0) >= 0:
            return 0.0
        high = max(float(xs.max()), 1.0)
        while gap(high) < 0:
            high *= 2
        return optimize.brentq(gap, 0.0, high)

    warnings: list[str] = []
    best = (target_downtime_seconds - fit.intercept) / fit.slope
    if best <= 0:
        raise PlanRefused(
            f"even with no redo to replay, the line predicts {fit.intercept:.2f} s of downtime: "
            f"the target of {target_downtime_seconds:g} s is below what this host takes to restart",
            n,
        )
    low, high = crossing(+1.0), crossing(-1.0)
    line_best = best
    best, contradicted = _within_measured(points, target_downtime_seconds, best, n)
    if contradicted:
        warnings.append(
            f"the line alone says {line_best / MIB:,.0f} MiB, but {contradicted}: the answer is the most "
            f"redo a setting replayed within it ({best / MIB:,.0f} MiB, its median)"
        )
        low = min(low, best)
    if low == 0:
        warnings.append(
            "one crash in twenty may take longer than the target even with no redo: the low end "
            "of the interval is 0 bytes"
        )
    measured = (int(xs.min()), int(xs.max()))
    extrapolated = best > measured[1] or best < measured[0]
    if extrapolated:
        warnings.append(
            f"the answer ({best / MIB:,.0f} MiB) is outside the redo these runs replayed "
            f"({measured[0] / MIB:,.0f} to {measured[1] / MIB:,.0f} MiB): the line is extended "
            "beyond its data; measure runs near it before trusting it"
        )
    filled = [p.redo_bytes / p.redo_log_bytes for p in points if p.redo_log_bytes]
    result = Plan(
        target_downtime_seconds=target_downtime_seconds,
        max_redo_bytes=int(best),
        interval=(int(low), int(high)),
        based_on_runs=n,
        extrapolated=extrapolated,
        log_size_suggestion=round_log_size(low),
        slope_seconds_per_gb=round(fit.slope * 1e9, 6),
        slope_seconds_per_gib=round(fit.slope * GIB, 6),
        intercept_seconds=round(float(fit.intercept), 6),
        r2=round(fit.r2, 4),
        measured_redo=measured,
        filled_share=round(max(filled), 3) if filled else None,
        warnings=warnings,
        run_ids=[p.run_id for p in points],
    )
    top = max(float(xs.max()), high) * 1.1
    grid = [top * i / 60 for i in range(61)]
    result.band = {
        "redo_bytes": [int(x) for x in grid],
        "line": [round(fit.intercept + fit.slope * x, 6) for x in grid],
        "lower": [round(fit.intercept + fit.slope * x - spread(x), 6) for x in grid],
        "upper": [round(fit.intercept + fit.slope * x + spread(x), 6) for x in grid],
    }
    if result.log_size_suggestion == 0:
        warnings.append("no redo log size keeps every crash under the target at 95%")
    if write_mb_per_s is not None:
        if not math.isfinite(write_mb_per_s) or write_mb_per_s <= 0:
            raise PlanRefused("the write rate must be a positive number of MB/s", n)
        result.write_mb_per_s = write_mb_per_s
        if result.log_size_suggestion:  # no log to hold them: nothing to say (not "0 s")
            result.seconds_of_writes = round(result.log_size_suggestion / (write_mb_per_s * 1e6), 1)
    result.page_writes = _page_writes(page_samples or [], write_mb_per_s)
    return result


def _within_measured(points: list[Point], target: float, best: float, n: int) -> tuple[float, str]:
    """The line's answer, or less where a measured cell (one setting's runs: their median redo and
    downtime) at or below it took longer than the target: then the most redo a cell below it
    replayed within the target, and why, in words. A headline "up to 143 MiB" beside the 128 MiB
    cell whose runs both took longer was a measured cell contradicted."""
    cells: dict[tuple, list[Point]] = {}
    for point in points:
        if point.cell is not None:
            cells.setdefault(point.cell, []).append(point)
    medians = [
        (
            statistics.median(p.redo_bytes for p in runs),
            statistics.median(p.downtime_seconds for p in runs),
            runs,
        )
        for runs in cells.values()
    ]
    over = [cell for cell in medians if cell[0] <= best and cell[1] > target]
    if not over:
        return best, ""
    redo, downtime, runs = min(over, key=lambda cell: cell[0])
    said = (
        f"the runs {', '.join(f'#{p.run_id}' for p in runs)} replayed {redo / MIB:,.0f} MiB "
        f"and took {downtime:.2f} s (median{'s' if len(runs) > 1 else ''}), over the target"
    )
    under = [cell[0] for cell in medians if cell[0] < redo and cell[1] <= target]
    if not under:
        raise PlanRefused(f"{said}, and no setting with less redo stayed within it", n)
    return max(under), said


def _page_writes(samples: list[tuple[int, float, float]], write_mb_per_s: float | None) -> list[PageWrites]:
    by_size: dict[int, list[float]] = {}
    for log_size, pages, log_bytes in samples:
        if log_size and pages is not None and log_bytes:
            by_size.setdefault(int(log_size), []).append(pages / (log_bytes / MIB))
    if len(by_size) < 2:  # one log size compares with nothing: no cost or gain to tell
        return []
    rows = []
    for size in sorted(by_size):
        per_mib = float(np.median(by_size[size]))
        per_second = round(per_mib * write_mb_per_s * MB_PER_MIB, 1) if write_mb_per_s else None
        rows.append(PageWrites(size, round(per_mib, 3), len(by_size[size]), per_second))
    return rows


def matching_runs(data: dict):
    runs = Run.objects.filter(
        status=RunStatus.DONE,
        suspect=False,
        excluded=False,
        host_label=data["host"],
        engine=data["engine"],
    )
    if not data.get("include_imported"):
        # the lab's own runners measured them: an imported archive or log is someone's word
        runs = runs.filter(imported=False, experiment__imported=False)
    if data.get("server_version"):
        runs = runs.filter(server_version=data["server_version"])
    if data.get("experiments"):
        runs = runs.filter(experiment_id__in=data["experiments"])
    if data.get("workload"):
        runs = runs.filter(experiment__definition__workload__name=data["workload"])
    if data.get("buffer_pool_size"):
        runs = runs.filter(buffer_pool_bytes=data["buffer_pool_size"])
    if data.get("server_build") == SYSTEM_BUILD:
        runs = runs.exclude(parameters__has_key="server_build") | runs.filter(
            parameters__server_build=SYSTEM_BUILD
        )
    elif data.get("server_build"):
        runs = runs.filter(parameters__server_build=data["server_build"])
    return runs


def workload_shape(workload: dict) -> str:
    """'oltp_insert 2x20000, 4 threads': what a workload's redo and pages depend on."""
    return (
        f"{workload.get('name', '?')} {workload.get('tables', '?')}x{workload.get('table_size', '?')}, "
        f"{workload.get('threads', '?')} thread{'' if workload.get('threads') == 1 else 's'}"
    )


def authors(runs) -> tuple[list[str], int]:
    """Who defined the experiments of `runs` (the usernames there are: a deleted user's are not),
    and how many of the runs were imported."""
    names = {name for name in runs.values_list("experiment__created_by__username", flat=True) if name}
    return sorted(names), runs.filter(imported=True).count()


def plan_from(data: dict) -> tuple[Plan, list[Point]]:
    """The plan for a validated form's data, and the runs' points it stands on (for the chart);
    PlanRefused says why there is none."""
    runs = matching_runs(data)
    rows = list(
        runs.filter(redo_bytes__isnull=False, downtime_seconds__isnull=False)
        .order_by("id")
        .values_list(
            "id",
            "redo_bytes",
            "downtime_seconds",
            "redo_log_bytes",
            "experiment_id",
            "experiment__definition",
            "disturbed",
            "server_version",
            "parameters",
        )
    )
    disturbed = sum(1 for row in rows if row[6])
    quiet = [row for row in rows if not row[6]]
    # Plan without the disturbed runs where the others are enough for a line; else with all, said.
    left_out = bool(disturbed) and len(quiet) >= MIN_RUNS and len({row[1] for row in quiet}) > 1
    if left_out:
        rows = quiet
    points = [
        Point(row[0], row[1], row[2], row[3], cell=(row[4], json.dumps(row[8], sort_keys=True)))
        for row in rows
    ]
    # pages counted (a run that wrote none counted nothing: no "0 pages per MiB")
    page_samples = list(
        runs.filter(redo_log_bytes__isnull=False, pages_written__gt=0, log_bytes_written__gt=0).values_list(
            "redo_log_bytes", "pages_written", "log_bytes_written"
        )
    )
    try:
        answer = plan(points, data["target_downtime_seconds"], data.get("write_mb_per_s"), page_samples)
    except PlanRefused as refused:
        if not points:
            version = f" {data['server_version']}" if data.get("server_version") else ""
            refused.reason = (
                f"no finished run of {data['engine']}{version} on {data['host']} measured both the redo "
                "it replayed and its downtime (imported runs have no downtime: the runner measures it)"
            )
        raise
    answer.experiment_ids = sorted({row[4] for row in rows})
    answer.disturbed_runs, answer.disturbed_left_out = disturbed, left_out
    if left_out:
        answer.warnings.append(
            f"{disturbed} of the matching runs were measured on a disturbed host (other work used it): the "
            f"plan stands on the other {len(rows)} alone"
        )
    elif disturbed:
        answer.warnings.append(
            f"{disturbed} of these {len(rows)} runs were measured on a disturbed host (other work used it), "
            "and too few others are left to plan on: read the line as rough, or measure again on a quiet host"
        )
    answer.server_versions = sorted({row[7] for row in rows if row[7]})
    if len(answer.server_versions) > 1:
        answer.warnings.append(
            f"these runs ran {len(answer.server_versions)} server versions "
            f"({', '.join(answer.server_versions)}): the line pools them; choose one server version if "
            "their recovery may differ"
        )
    answer.made_by, answer.imported_runs = authors(runs.filter(id__in=[row[0] for row in rows]))
    answer.workloads = sorted({workload_shape((row[5] or {}).get("workload") or {}) for row in rows})
    if len(answer.workloads) > 1:
        answer.warnings.append(
            f"these runs ran {len(answer.workloads)} workload shapes ({'; '.join(answer.workloads)}): "
            "the line pools them; limit it to one workload (or to experiments) if their redo differs in kind"
        )
    return answer, points
