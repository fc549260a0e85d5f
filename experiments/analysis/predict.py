"""The lab's fit for a live server: which runs stand for it (one host, engine and server release),
the line of downtime against redo replayed through them, and its prediction at given redo volumes.

A live server is comparable with the lab's runs of its own server and release series (MariaDB
10.11, MySQL 8.0, PostgreSQL 15: recovery_lab_cli.prediction.release_of); runs of its exact version
are preferred where there are enough of them, and so are runs of its buffer pool and redo log
size (SETTINGS): where too few have them, the fit pools the others and says which differ. The
line is the planner's (kill to first query against redo replayed, the same runs' filter); unlike
the planner, a prediction needs no slope significantly above zero: a flat line with its
interval is an answer too.
"""

import math
from dataclasses import dataclass, field

import numpy as np
from django.db.models import Max
from scipy import stats

from experiments.analysis.planner import MIN_RUNS, PlanRefused, authors, matching_runs, workload_shape
from experiments.analysis.stats import CONFIDENCE
from experiments.models import Run, RunStatus
from recovery_lab_cli.prediction import Fit, release_of
from recovery_lab_cli.units import binary_bytes


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
    disturbed_runs: int = 0  # of run_ids, measured on a disturbed host
    warnings: list[str] = field(default_factory=list)
    # the live server's settings the fit's runs all share, and those its runs differ from it in:
    # {name: {"server": value, "lab": [values]}}
    matched: dict[str, int] = field(default_factory=dict)
    differing: dict[str, dict] = field(default_factory=dict)
    # runs of this host, engine and release whose recovery stalled, and the most redo each pool
    # recovered (prediction.stall_risk)
    stalls: list[dict] = field(default_factory=list)
    recovered: dict[str, dict] = field(default_factory=dict)

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
            "disturbed_runs": self.disturbed_runs,
            "warnings": self.warnings,
            "matched": self.matched,
            "differing": self.differing,
            "stalls": self.stalls,
            "recovered": self.recovered,
        }


# The servers whose predictions the calibration bench (scripts/bench_calibration.py) has held to
# real crashes: a prediction for another says it is not calibrated yet.
CALIBRATED = ("MariaDB", "MySQL")

# A live server's settings the fit matches where the lab has enough runs of them, most telling
# first: recovery reads and writes pages through the buffer pool; the log's size bounds the redo.
SETTINGS = (("buffer_pool_bytes", "buffer pool"), ("redo_log_bytes", "redo log size"))


def lab_fit(
    host: str,
    engine: str,
    server_version: str,
    include_imported: bool = False,
    settings: dict[str, int] | None = None,
) -> LabFit:
    """The fit for a live server of `server_version` (and `settings`: SETTINGS' names), from
    `host`'s runs of `engine` that the lab's runners measured (and imported ones too with
    `include_imported`); PlanRefused says why there is none."""
    release = release_of(server_version)
    if release is None:
        raise PlanRefused(
            f"'{server_version}' names no server release the lab knows (MariaDB, MySQL, PostgreSQL)"
        )
    runs = matching_runs({"host": host, "engine": engine, "include_imported": include_imported}).filter(
        redo_bytes__isnull=False, downtime_seconds__isnull=False
    )
    versions = set(runs.values_list("server_version", "server_family"))  # a run says its family
    same_release = sorted({version for version, family in versions if release_of(version, family) == release})
    if not same_release:
        measured = ", ".join(sorted({version for version, _ in versions})) or "none"
        raise PlanRefused(
            f"the lab has no run of {release[0]} {release[1]} ({engine}) on {host} to predict a "
            f"{server_version} server from (versions measured there: {measured})"
        )
    warnings = []
    if release[0] not in CALIBRATED:
        warnings.append(
            f"{release[0]} predictions are not yet held to real crashes by the calibration bench "
            "(docs/production.md): read the interval as the lab's runs' alone"
        )
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
    disturbed_in_fit = 0 if runs is quiet else disturbed
    described = list(runs.values("id", "redo_bytes", "disturbed", *(name for name, _ in SETTINGS)))
    kept, matched, differing = like_the_server(described, settings or {}, warnings)
    if len(kept) < len(described):
        runs = runs.filter(id__in=[row["id"] for row in kept])
        disturbed_in_fit = sum(row["disturbed"] for row in kept)
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
    fit, r2 = fit_points([r[1] for r in rows], [r[2] for r in rows])
    if fit.slope <= 0:
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
        r2=r2,
        made_by=made_by,
        imported_runs=imported_runs,
        disturbed_runs=disturbed_in_fit,
        warnings=warnings,
        matched=matched,
        differing=differing,
        **stall_history(host, engine, same_release, include_imported),
    )


def like_the_server(rows: list[dict], settings: dict[str, int], warnings: list[str]) -> tuple:
    """`rows` (each run's id, redo_bytes and SETTINGS) narrowed, setting by setting, to those with
    the live server's value where at least MIN_RUNS of them replayed more than one redo volume;
    the settings matched, and those the rows left differ in. One warning says what the fit was
    narrowed to, one each setting it differs in (of the runs left at that setting's turn)."""
    total, matched, differing, narrowed, others = len(rows), {}, {}, [], []
    for name, words in SETTINGS:
        value = settings.get(name)
        if not value:
            continue
        lab = sorted({row[name] for row in rows if row[name] is not None})
        same = [row for row in rows if row[name] == value]
        if len(same) == len(rows):
            matched[name] = value
        elif len(same) >= MIN_RUNS and len({row["redo_bytes"] for row in same}) > 1:
            narrowed.append(f"{words} ({binary_bytes(value)})")
            left = ", ".join(binary_bytes(v) for v in lab if v != value) or "none recorded"
            others.append(f"a {words} of {left}")
            rows, matched[name] = same, value
        elif lab:
            differing[name] = {"server": value, "lab": lab}
            few = f" ({len(same)} runs of it, too few to fit on)" if same else ""
            scope = f" with this server's {' and '.join(narrowed)}" if narrowed else ""
            warnings.append(
                f"the lab's runs{scope} had a {words} of {', '.join(binary_bytes(v) for v in lab)}, this "
                f"server {binary_bytes(value)}{few}: runs of {binary_bytes(value)} would stand for it"
            )
    if narrowed:
        warnings.insert(
            len(warnings) - len(differing),
            f"the fit stands on the {len(rows)} of {total} runs with this server's {' and '.join(narrowed)}; "
            f"the others had {' or '.join(others)}",
        )
    return rows, matched, differing


def fit_points(redo: list[float], downtime: list[float]) -> tuple[Fit, float]:
    """The least-squares line of downtime against redo replayed, with what its prediction interval
    needs, and its R²; PlanRefused where every run replayed the same redo."""
    xs, ys = np.array(redo, float), np.array(downtime, float)
    n = len(xs)
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
    return fit, round(float(line.rvalue**2), 4)


def stall_history(host: str, engine: str, versions: list[str], include_imported: bool) -> dict:
    """The runs of these versions on `host` whose recovery stalled (with their pool and the redo
    they had to replay), and, per buffer pool, the run that recovered the most redo on it."""
    stalled = Run.objects.filter(
        host_label=host, engine=engine, status=RunStatus.STALLED, excluded=False, server_version__in=versions
    )
    stalls = [
        {"run_id": run_id, "buffer_pool_bytes": pool, "redo_bytes": redo}
        for run_id, pool, redo in stalled.order_by("id").values_list("id", "buffer_pool_bytes", "redo_bytes")
    ]
    if not stalls:
        return {"stalls": [], "recovered": {}}
    done = matching_runs({"host": host, "engine": engine, "include_imported": include_imported}).filter(
        server_version__in=versions, redo_bytes__isnull=False, buffer_pool_bytes__isnull=False
    )
    recovered: dict[str, dict] = {}
    for run_id, pool, redo in done.order_by("redo_bytes").values_list(
        "id", "buffer_pool_bytes", "redo_bytes"
    ):
        recovered[str(pool)] = {"run_id": run_id, "redo_bytes": redo}  # the largest last
    return {"stalls": stalls, "recovered": recovered}
