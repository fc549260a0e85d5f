"""The lab's fit for a live server: which runs stand for it (one host, engine and server release),
the line of downtime against redo replayed through them, and its prediction at given redo volumes.

A live server is comparable with the lab's runs of its own server and release series (MariaDB
10.11, MySQL 8.0, PostgreSQL 15: experiments.prediction.release_of); runs of its exact version
are preferred where there are enough of them. The line is the planner's (kill to first query
against redo replayed, the same runs' filter); unlike the planner, a prediction needs no slope
significantly above zero: a flat line with its interval is an answer too.
"""

import math
from dataclasses import dataclass, field

import numpy as np
from django.db.models import Max
from scipy import stats

from experiments.analysis.planner import MIN_RUNS, PlanRefused, authors, matching_runs, workload_shape
from experiments.analysis.stats import CONFIDENCE
from experiments.prediction import Fit, release_of


@dataclass
class LabFit:
    fit: Fit
    run_ids: list[int]
    experiment_ids: list[int]
    versions: list[str]  # the server versions of the runs it stands on
    newest_run_finished_at: str  # ISO 8601: the fit's age is the time since
    buffer_pool_bytes: list[int]
    redo_log_bytes: list[int]
    r2: float
    made_by: list[str] = field(default_factory=list)  # who defined the experiments
    imported_runs: int = 0  # of run_ids, imported ones (only when asked for)
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "fit": self.fit.as_dict(),
            "based_on_runs": len(self.run_ids),
            "run_ids": self.run_ids,
            "experiment_ids": self.experiment_ids,
            "versions": self.versions,
            "newest_run_finished_at": self.newest_run_finished_at,
            "buffer_pool_bytes": self.buffer_pool_bytes,
            "redo_log_bytes": self.redo_log_bytes,
            "r2": self.r2,
            "made_by": self.made_by,
            "imported_runs": self.imported_runs,
            "warnings": self.warnings,
        }


def lab_fit(host: str, engine: str, server_version: str, include_imported: bool = False) -> LabFit:
    """The fit for a live server of `server_version`, from `host`'s runs of `engine` that the lab's
    runners measured (and imported ones too with `include_imported`); PlanRefused says why there
    is none."""
    release = release_of(server_version)
    if release is None:
        raise PlanRefused(
            f"'{server_version}' names no server release the lab knows (MariaDB, MySQL, PostgreSQL)"
        )
    runs = matching_runs({"host": host, "engine": engine, "include_imported": include_imported}).filter(
        redo_bytes__isnull=False, downtime_seconds__isnull=False
    )
    versions = sorted(set(runs.values_list("server_version", flat=True)))
    same_release = [v for v in versions if release_of(v) == release]
    if not same_release:
        measured = ", ".join(versions) or "none"
        raise PlanRefused(
            f"the lab has no run of {release[0]} {release[1]} ({engine}) on {host} to predict a "
            f"{server_version} server from (versions measured there: {measured})"
        )
    warnings = []
    exact = runs.filter(server_version=server_version)
    if exact.count() >= MIN_RUNS:
        runs, used = exact, [server_version]
    else:
        runs, used = runs.filter(server_version__in=same_release), same_release
        if used != [server_version]:
            warnings.append(
                f"the lab's runs are of {', '.join(used)}, not {server_version} itself: the same "
                f"{release[0]} {release[1]} release series"
            )
    quiet = runs.filter(disturbed=False)
    disturbed = runs.count() - quiet.count()
    if disturbed and quiet.count() >= MIN_RUNS:
        runs = quiet
        warnings.append(
            f"{disturbed} matching runs were measured on a disturbed host (other work used it): the fit "
            "stands on the others alone"
        )
    elif disturbed:
        warnings.append(
            f"{disturbed} of these runs were measured on a disturbed host (other work used it), and too "
            "few others are left to fit on: read the prediction as rough"
        )
    shapes = sorted(
        {
            workload_shape((definition or {}).get("workload") or {})
            for definition in runs.values_list("experiment__definition", flat=True)
        }
    )
    if len(shapes) > 1:
        warnings.append(
            f"these runs ran {len(shapes)} workload shapes ({'; '.join(shapes)}): the fit pools them"
        )
    rows = list(runs.order_by("id").values_list("id", "redo_bytes", "downtime_seconds", "experiment_id"))
    n = len(rows)
    if n < MIN_RUNS:
        raise PlanRefused(
            f"{n} run(s) of {release[0]} {release[1]} on {host} measured both redo replayed and downtime; "
            f"a prediction needs at least {MIN_RUNS}",
            n,
        )
    xs = np.array([r[1] for r in rows], float)
    ys = np.array([r[2] for r in rows], float)
    if np.ptp(xs) == 0:
        raise PlanRefused(
            "every run replayed the same redo: the lab cannot say how downtime grows with it", n
        )
    line = stats.linregress(xs, ys)
    residual = math.sqrt(float(np.sum((ys - (line.intercept + line.slope * xs)) ** 2)) / (n - 2))
    fit = Fit(
        intercept=float(line.intercept),
        slope=float(line.slope),
        residual=residual,
        n=n,
        mean_redo=float(xs.mean()),
        sxx=float(np.sum((xs - xs.mean()) ** 2)),
        t=float(stats.t.ppf((1 + CONFIDENCE) / 2, n - 2)),
        measured_redo=(int(xs.min()), int(xs.max())),
    )
    if line.slope <= 0:
        warnings.append("downtime does not grow with redo in these runs: the prediction is their spread")
    facts = runs.aggregate(newest=Max("finished_at"))
    made_by, imported_runs = authors(runs)
    if imported_runs:
        warnings.append(
            f"{imported_runs} of the {n} runs were imported, not measured by the lab's runners: "
            "their numbers come from whoever made the archive or the log"
        )
    return LabFit(
        fit=fit,
        run_ids=[r[0] for r in rows],
        experiment_ids=sorted({r[3] for r in rows}),
        versions=used,
        newest_run_finished_at=facts["newest"].isoformat() if facts["newest"] else "",
        buffer_pool_bytes=sorted(
            set(runs.exclude(buffer_pool_bytes=None).values_list("buffer_pool_bytes", flat=True))
        ),
        redo_log_bytes=sorted(
            set(runs.exclude(redo_log_bytes=None).values_list("redo_log_bytes", flat=True))
        ),
        r2=round(float(line.rvalue**2), 4),
        made_by=made_by,
        imported_runs=imported_runs,
        warnings=warnings,
    )
