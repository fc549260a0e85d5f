"""What the experiment and run pages show, assembled once for the HTML page and for the JSON
endpoint that keeps it live. Reads only."""

import hashlib
import pickle
from dataclasses import dataclass
from statistics import median

from django.core.cache import caches
from django.db.models import F, Func
from django.template.loader import render_to_string
from django.utils import timezone

from experiments.analysis import aa
from experiments.analysis.cells import (
    ENGINE_NAMES,
    ROW_FIELDS,
    SUMMARY_METRICS,
    Cell,
    build_cells,
    settings_text,
    varied_axes,
)
from experiments.analysis.sentences import COMPARED_METRICS, RESOURCE_METRICS
from experiments.analysis.stats import MIN_REPETITIONS
from experiments.charts.compare import compare_chart
from experiments.charts.experiment import experiment_figures
from experiments.charts.floors import AS_CLASS
from experiments.charts.layout import WIDE_FIGURES
from experiments.metrics import metric_text, within_its_range
from experiments.models import (
    PER_RUN_DETAIL_FIELDS,
    Engine,
    Experiment,
    ExperimentStatus,
    Run,
    RunStatus,
)
from experiments.reports.findings import caveats, findings, method
from experiments.reports.planner import sweep_plans
from recovery_lab_cli.units import MB_PER_MIB, MIB


def row_of(run: Run) -> dict:
    return {name: getattr(run, name) for name in ROW_FIELDS}


@dataclass
class Progress:
    total: int
    finished: int
    failed: int
    running: int
    eta_seconds: float | None
    stalled: int = 0
    overdue: tuple[int, int] | None = None  # a running run's seconds so far, the typical run's

    @property
    def percent(self) -> float:
        return 100.0 * self.finished / self.total if self.total else 100.0

    def as_dict(self) -> dict:
        return {**self.__dict__, "percent": round(self.percent, 1)}


# A run running this many times as long as the typical one done: no time left is said.
OVERDUE = 2.0


def experiment_progress(runs: list[Run]) -> Progress:
    """x of N runs finished, and the time left: the median duration of the runs done times the
    work left, spread over the hosts that run them (one run at a time per host). Runs that failed
    or were cancelled say nothing of how long one takes (a page had said "about 0 s left" with
    nine runs not started, after one cancelled at once): without a run done, no time is said."""
    finished = [r for r in runs if r.is_finished]
    running = [r for r in runs if r.status == RunStatus.RUNNING]
    durations = [
        (r.finished_at - r.started_at).total_seconds()
        for r in finished
        if r.status == RunStatus.DONE and r.started_at and r.finished_at and r.finished_at > r.started_at
    ]
    eta, overdue = None, None
    if durations and len(finished) < len(runs):
        typical = median(durations)
        left = sum(1 for r in runs if r.status == RunStatus.QUEUED)
        left += sum(1 - (r.progress_percent or 0) / 100 for r in running)
        hosts = max(1, len({r.host_id for r in runs if not r.is_finished}))
        eta = round(typical * left / hosts, 1)
        # a run far past the typical one (a restart that may have stalled) makes any time left a guess
        now = timezone.now()
        longest = max(((now - r.started_at).total_seconds() for r in running if r.started_at), default=0.0)
        if longest > OVERDUE * typical:
            eta, overdue = None, (round(longest), round(typical))
    return Progress(
        total=len(runs),
        finished=len(finished),
        failed=sum(1 for r in finished if r.status == RunStatus.FAILED),
        stalled=sum(1 for r in finished if r.status == RunStatus.STALLED),
        overdue=overdue,
        running=len(running),
        eta_seconds=eta,
    )


# How each summarised metric reads in the table: scale and decimals.
DISPLAY = {
    "redo_bytes": (1 / MIB, "{:,.1f}"),
    "rows_undone": (1, "{:,.0f}"),
    "lost_commits": (1, "{:,.0f}"),
    "workload_tps": (1, "{:,.0f}"),
    "achieved_insert_rate": (1, "{:,.0f}"),
    "redo_apply_mb_per_s": (MB_PER_MIB, "{:,.1f}"),  # stored in MB/s (the API's unit), shown in MiB/s
    "recovery_seconds_per_1000_rows": (1, "{:,.4f}"),
}
# Counts of events per run: summarised by their range, not an interval.
COUNTS = ("rows_undone", "lost_commits")


def _shown(metric: str, value: float) -> str:
    scale, pattern = DISPLAY.get(metric, (1, "{:,.3f}"))
    return pattern.format(value * scale)


def summary_table(cells: list[Cell]) -> list[dict]:
    """The summary per cell as the page shows it: median with its 95% interval, min-max on hover."""
    table = []
    for cell in cells:
        values = []
        for metric, _ in SUMMARY_METRICS:
            summary = cell.summaries[metric]
            if summary.median is None:
                values.append({"text": "-", "ci": "", "title": "no value", "metric": metric})
                continue
            if metric in COUNTS or (summary.n and summary.n < MIN_REPETITIONS):
                # a count of a few runs, mostly zero, has no interval worth reading (it read
                # "6 [0 - 13,701,600]"): its runs' range says what they did
                ci = f"range {_shown(metric, summary.min)}-{_shown(metric, summary.max)}"
            else:
                low, high = within_its_range(metric, summary.ci) or (None, None)
                ci = f"{_shown(metric, low)}-{_shown(metric, high)}" if summary.ci else "n < 2"
            spread = f"n {summary.n}, min {_shown(metric, summary.min)}, max {_shown(metric, summary.max)}"
            values.append(
                {
                    "metric": metric,
                    "text": _shown(metric, summary.median),
                    "ci": ci,
                    "title": spread + (f"; {summary.reason}" if summary.reason else ""),
                }
            )
        table.append(
            {
                "cell": cell,
                "n": cell.summaries["recovery_seconds"].n or len(cell.run_ids),
                "values": values,
                "needs_more": cell.needs_more,
            }
        )
    return table


def experiment_context(experiment: Experiment) -> dict:
    runs = list(experiment.runs.select_related("excluded_by").defer(*PER_RUN_DETAIL_FIELDS))
    definition = experiment.definition or {}
    design = {part: definition.get(part) for part in ("crash", "workload")}
    analysis = analysed([row_of(run) for run in runs], design)
    progress = experiment_progress(runs)
    return {
        "experiment": experiment,
        "runs": runs,
        **analysis,
        "summary_metrics": SUMMARY_METRICS,
        "several_hosts": len({c.host for c in analysis["cells"]}) > 1,
        "wide_figures": WIDE_FIGURES,
        "progress": progress,
        "in_progress": progress.finished < progress.total,
        "suspect_count": sum(1 for r in runs if r.suspect),
        "excluded_count": sum(1 for r in runs if r.excluded),
        "caveats": caveats(runs, analysis["cells"]),
    }


# How long an experiment's analysis is kept unread (any change to what it stands on makes another
# key before then).
ANALYSIS_CACHE_SECONDS = 24 * 3600


def disk_floors(run_ids: list[int]) -> dict[str, float]:
    """The disk the runs read from, as fio measured it (sequential read, MB/s): per host (its facts'
    floor; runs in memory have none), and per host and storage class (fio in the class's cap)."""
    runs = Run.objects.filter(id__in=run_ids)
    disks = runs.filter(host_facts__disk__floor__isnull=False).exclude(resources__has_key="storage")
    found = disks.values_list("host_label", "host_facts__disk__floor__seq_read_mb_s").distinct()
    capped = runs.filter(resources__storage__floor__isnull=False).values_list(
        "host_label", "resources__storage__name", "resources__storage__floor__seq_read_mb_s"
    )
    floors = {name: rate for name, rate in found if isinstance(rate, int | float)}
    floors.update(
        {f"{h}{AS_CLASS}{c}": rate for h, c, rate in capped.distinct() if isinstance(rate, int | float)}
    )
    return floors


def analysed(rows: list[dict], design: dict | None = None) -> dict:
    """What the experiment page works out from its runs: cells, their summary, the charts and the
    findings (the report's sentences). Cached under a digest of all it stands on (the runs' rows,
    their hosts' spreads, the floors): a run that changed or a new spread is worked out again, once;
    a page viewed again is not (tests/test_spread_fresh.py). The cache is the web process' own, in
    memory (settings.CACHES "analysis", ANALYSIS_CACHE_ENTRIES at most): a restart empties it."""
    spreads = aa.host_spreads({row["host_label"] for row in rows})
    floors = disk_floors([row["id"] for row in rows if row["redo_bytes"] is not None])
    digest = hashlib.sha256(pickle.dumps((rows, spreads, floors, design), protocol=5)).hexdigest()
    key = f"experiment-analysis:{digest}"
    found = caches["analysis"].get(key)
    if found is None:
        cells = build_cells(rows)
        axes = varied_axes([r for r in rows if r["status"] == RunStatus.DONE])
        found = {
            "cells": cells,
            "summary": summary_table(cells),
            "figures": experiment_figures(rows, cells, axes, floors),
            "axes": axes,
            # the report's sentences, on the page too
            "findings": findings(rows, cells, axes, spreads, design),
        }
        caches["analysis"].set(key, found, ANALYSIS_CACHE_SECONDS)
    return found


def report_context(experiment: Experiment) -> dict:
    """The experiment page's numbers, with the method, the findings in sentences and the caveats."""
    context = experiment_context(experiment)
    rows = [row_of(run) for run in context["runs"]]
    # On paper, a column no setting measured is only noise: leave it out.
    measured = [
        index
        for index, _ in enumerate(SUMMARY_METRICS)
        if any(line["values"][index]["text"] != "-" for line in context["summary"])
    ]
    context["summary_metrics"] = [SUMMARY_METRICS[i] for i in measured]
    for line in context["summary"]:
        line["values"] = [line["values"][i] for i in measured]
    context.update(
        method=method(experiment, context["runs"]),
        # an experiment that swept the redo at the crash answers the planner's question itself
        sweep_plans=sweep_plans(experiment.pk) if _swept_redo(rows) else [],
        generated_at=timezone.now(),
    )
    return context


def _swept_redo(rows: list[dict]) -> bool:
    """The runs crashed at two or more redo targets (crash.redo_bytes a list)."""
    return len({row["parameters"].get("crash_redo_bytes") for row in rows} - {None}) > 1


def compare_report_context(result: dict) -> dict:
    """A comparison for paper: its table, chart and findings, and each experiment's method and
    caveats (a ratio means little without how each side was measured)."""
    experiments = {
        e.pk: e for e in Experiment.objects.filter(pk__in=result["experiments"]).select_related("created_by")
    }
    sides = []
    for experiment_id in result["experiments"]:
        experiment = experiments[experiment_id]
        runs = list(experiment.runs.select_related("excluded_by").defer(*PER_RUN_DETAIL_FIELDS))
        cells = build_cells([row_of(run) for run in runs])
        sides.append(
            {
                "experiment": experiment,
                "method": method(experiment, runs),
                "caveats": caveats(runs, cells),
            }
        )
    figure = compare_chart(result)
    return {
        "result": result,
        "table": comparison_table(result),
        "figures": {"compare": figure} if figure["data"] else {},
        "sides": sides,
        "any_caveats": any(side["caveats"] for side in sides),
        "generated_at": timezone.now(),
    }


def experiment_live_context(experiment: Experiment, request) -> dict:
    """The JSON that keeps an open experiment page current without reloading it (zoom kept)."""
    context = experiment_context(experiment)
    return {
        "status": experiment.status,
        "status_display": experiment.get_status_display(),
        "in_progress": context["in_progress"],
        "progress": context["progress"].as_dict(),
        "figures": context["figures"],
        "fragments": {
            "runs": render_to_string("experiments/_runs.html", context, request),
            "summary": render_to_string("experiments/_summary.html", context, request),
            "progress": render_to_string("experiments/_progress.html", context, request),
            "findings": render_to_string("experiments/_findings.html", context, request),
        },
        "generated_at": timezone.now().isoformat(),
    }


def compared_value(metric: str, value: float | None) -> str:
    """A compared metric's value in its own unit (metrics.metric_text), never in scientific
    notation (it read '1.2e+06' for bytes) nor a byte count in seconds."""
    return metric_text(metric, value)


def _ratio_text(ratio: float) -> str:
    return f"{ratio:,.2f}x"


def comparison_table(result: dict) -> dict:
    """GET /api/compare/'s answer laid out for the page: a line per matched cell and metric, a
    column per experiment (its median, the geometric mean's interval, n) and one per pair it
    states (each later experiment over the first, with its interval and verdict)."""
    ids = [str(i) for i in result["experiments"]]
    cells = []
    for cell in result["cells"]:
        label = f"{ENGINE_NAMES.get(cell['engine'], cell['engine'])} · " + settings_text(cell)
        comparable = cell.get("comparable", True)
        lines = []
        for metric, block in cell["metrics"].items():
            sides = []
            for side in ids:
                found = block.get(side)
                if not found or found.get("median") is None:
                    sides.append(None)
                    continue
                ci = within_its_range(metric, found.get("ci"))
                sides.append(
                    {
                        "text": compared_value(metric, found["median"]),
                        "ci": f"{compared_value(metric, ci[0])}-{compared_value(metric, ci[1])}"
                        if ci
                        else "",
                        "n": found["n"],
                    }
                )
            ratios = []
            for side in ids[1:]:
                versus = (block.get("versus") or {}).get(side) or {}
                ratio, ci = versus.get("ratio"), versus.get("ratio_ci")
                ratios.append(
                    {
                        "text": _ratio_text(ratio) if ratio else "-",
                        "ci": f"{_ratio_text(ci[0])}-{_ratio_text(ci[1])}" if ci else "",
                        "significant": versus.get("significant") if comparable else None,
                        "p_value": versus.get("p_value"),
                        "has_interval": bool(ci),
                        "no_interval": versus.get("no_interval", ""),
                    }
                )
            lines.append(
                {
                    "label": {**COMPARED_METRICS, **RESOURCE_METRICS}[metric][0],
                    "sides": sides,
                    "ratios": ratios,
                    "significant": any(r["significant"] for r in ratios),
                    "comparable": comparable,
                }
            )
        cells.append({"label": label, "lines": lines})
    return {
        "pairs": [f"#{side}/#{ids[0]}" for side in ids[1:]],
        "sides": [(side, result["names"][side], result["server_versions"][side]) for side in ids],
        "cells": cells,
        "findings": [line for cell in result["cells"] for line in cell["sentences"]],
        "engine_findings": [line for cell in result["engines"]["cells"] for line in cell["sentences"]]
        + ([holds[0].upper() + holds[1:]] if (holds := result["engines"].get("holds")) else []),
        "regressions": [line for cell in result["cells"] for line in cell["regressions"]],
    }


def history_choices() -> dict:
    """What the experiment list's filters offer: the values that exist."""
    runs = Run.objects.order_by()
    return {
        "engine_choices": Engine.choices,
        "status_choices": ExperimentStatus.choices,
        "host_choices": sorted(set(runs.values_list("host_label", flat=True).distinct())),
        "version_choices": sorted(
            set(runs.exclude(server_version="").values_list("server_version", flat=True).distinct())
        ),
        "tag_choices": list(
            Experiment.objects.annotate(tag=Func(F("tags"), function="unnest"))
            .order_by("tag")
            .values_list("tag", flat=True)
            .distinct()
        ),
        "author_choices": sorted(
            set(
                Experiment.objects.exclude(created_by=None)
                .values_list("created_by__username", flat=True)
                .distinct()
            )
        ),
    }
