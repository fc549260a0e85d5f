"""A recurring series' history and the change points in it.

One point per firing and metric: the median of the firing's analysable runs. Change points are
found by Apache Otava (`otava.analysis.compute_change_points`: E-Divisive means with a Student
t-test deciding each split, the method of Fleming et al., "Hunter", ICPE 2023), on the firings'
medians. Each is then measured on the runs themselves: the median of the firings before it and
after it (up to the neighbouring change points) and the ratio after/before with its 95% interval
(`stats.compare`, Welch on the logarithms), with what differed between the last firing before and
the first after: server build and version, host facts, settings of the definition.

The numbers are plain Python; `history` at the end is the one reader of the database.
"""

from dataclasses import dataclass, field
from datetime import UTC, datetime
from statistics import median

from otava.analysis import compute_change_points

from experiments.analysis import stats
from experiments.models import Experiment, Run, RunStatus
from runner.contract import SYSTEM_BUILD

# metric -> True when more is worse
SERIES_METRICS = {
    "recovery_seconds": True,
    "downtime_seconds": True,
    "redo_bytes": True,
    "log_bytes_written": True,
    "redo_apply_mb_per_s": False,
    "workload_tps": False,
}
# A split is kept when its t-test gives p below this (Otava's default), and each step looks at
# this many firings at a time. Otava's 30 saw a whole nightly history at once, where a temporary
# regression's first edge splits it into a low part and a mixed one, too weak to keep: both edges
# were found in 4 of 40 generated histories, and in 36 of 40 with 10 (scripts/bench_series.py).
MAX_P_VALUE = 0.001
WINDOW = 10
# A shift smaller than this share of the median is not reported, however significant: over a long
# history, the firings of a shared machine drift by a percent or two (make bench counts them).
MIN_MAGNITUDE = 0.05
MIN_FIRINGS = 4  # fewer firings than this: nothing is searched
# Host facts that change from run to run without meaning anything (free space, the venv's path).
VOLATILE_FACTS = ("disk.free_bytes", "python_path", "disk.path")


@dataclass
class Firing:
    experiment_id: int
    fired_for: datetime | None
    status: str
    definition: dict
    builds: list[str] = field(default_factory=list)
    versions: list[str] = field(default_factory=list)
    hosts: list[str] = field(default_factory=list)
    host_facts: dict = field(default_factory=dict)
    values: dict[str, list[float]] = field(default_factory=dict)  # metric -> the runs' values
    runs: int = 0
    disturbed: int = 0  # of its runs, those measured while other work used the host

    def median(self, metric: str) -> float | None:
        values = self.values.get(metric)
        return median(values) if values else None

    def as_dict(self) -> dict:
        return {
            "experiment": self.experiment_id,
            "fired_for": self.fired_for.isoformat() if self.fired_for else None,
            # the scheduled moment as pages, charts and the client print it (UTC, to the minute)
            "scheduled": f"{self.fired_for.astimezone(UTC):%Y-%m-%d %H:%M}" if self.fired_for else None,
            "status": self.status,
            "builds": self.builds,
            "server_versions": self.versions,
            "hosts": self.hosts,
            "medians": {m: self.median(m) for m in SERIES_METRICS},
            "values": self.values,
        }


@dataclass(frozen=True)
class Found:
    metric: str
    index: int  # of the first firing after the change, 0-based in the firings given
    experiment_id: int
    before_median: float
    after_median: float
    comparison: stats.Comparison
    worse: bool
    differences: list[str]
    firings_before: int = 0  # measured firings on each side, up to the neighbouring change points
    firings_after: int = 0
    firings_agreeing: int = 0  # from the change on, nearer its after median, until one is not

    def as_fields(self) -> dict:
        """What a stored change point keeps of it (ChangePoint's fields)."""
        ci = self.comparison.ratio_ci
        return {
            "firing_index": self.index + 1,
            "before_median": self.before_median,
            "after_median": self.after_median,
            "ratio": self.comparison.ratio,
            "ratio_low": ci[0] if ci else None,
            "ratio_high": ci[1] if ci else None,
            "p_value": self.comparison.p_value,
            "worse": self.worse,
            "differences": self.differences,
            "firings_before": self.firings_before,
            "firings_after": self.firings_after,
            "firings_agreeing": self.firings_agreeing,
        }


def change_points(firings: list[Firing], metric: str) -> list[Found]:
    """The change points of one metric, oldest first."""
    measured = [i for i, firing in enumerate(firings) if firing.median(metric) is not None]
    if len(measured) < MIN_FIRINGS:
        return []
    medians = [firings[i].median(metric) for i in measured]
    found, _weak = compute_change_points(
        medians, window_len=WINDOW, max_pvalue=MAX_P_VALUE, min_magnitude=MIN_MAGNITUDE
    )
    edges = [0, *sorted(int(point.index) for point in found), len(measured)]
    answers = []
    for k in range(1, len(edges) - 1):
        before = [firings[i] for i in measured[edges[k - 1] : edges[k]]]
        after = [firings[i] for i in measured[edges[k] : edges[k + 1]]]
        comparison = stats.compare(
            [v for f in before for v in f.values[metric]], [v for f in after for v in f.values[metric]]
        )
        if comparison.ratio is None:
            continue
        before_median = median(f.median(metric) for f in before)
        after_median = median(f.median(metric) for f in after)
        answers.append(
            Found(
                metric=metric,
                index=measured[edges[k]],
                experiment_id=after[0].experiment_id,
                before_median=before_median,
                after_median=after_median,
                comparison=comparison,
                worse=comparison.ratio > 1 if SERIES_METRICS[metric] else comparison.ratio < 1,
                differences=differences(before[-1], after[0]) + _disturbed(before + after),
                firings_before=len(before),
                firings_after=len(after),
                firings_agreeing=_agreeing(medians[edges[k] :], before_median, after_median),
            )
        )
    return answers


def _agreeing(later: list[float], before: float, after: float) -> int:
    """How many firings from a change on stand on its after side (nearer the after median than
    the before one), up to the first that does not: the nights that confirm it, across a later,
    smaller shift; a change that went back is not confirmed by the nights after its return."""
    count = 0
    for value in later:
        if abs(value - after) >= abs(value - before):
            break
        count += 1
    return count


def _disturbed(firings: list[Firing]) -> list[str]:
    """A change found on runs measured while other work used the host says so."""
    disturbed, total = sum(f.disturbed for f in firings), sum(f.runs for f in firings)
    if not disturbed:
        return []
    return [
        f"{disturbed} of {total} runs on either side were measured on a disturbed host: other work on "
        "it can make a change look significant"
    ]


def all_change_points(firings: list[Firing]) -> list[Found]:
    return [point for metric in SERIES_METRICS for point in change_points(firings, metric)]


def _flat(value, prefix: str = "") -> dict:
    if isinstance(value, dict):
        flat = {}
        for key, inner in value.items():
            flat.update(_flat(inner, f"{prefix}{key}."))
        return flat
    return {prefix.rstrip("."): value}


def _changes(what: str, before: dict, after: dict, skip: tuple = ()) -> list[str]:
    a, b = _flat(before), _flat(after)
    return [
        f"{what} {key}: {a.get(key, '-')} -> {b.get(key, '-')}"
        for key in sorted(set(a) | set(b))
        if a.get(key) != b.get(key) and not key.startswith(skip)
    ]


def differences(before: Firing, after: Firing) -> list[str]:
    """What differed between two firings, in lines a person reads: build, version, hosts,
    settings of the definition, host facts."""
    lines = []
    for what, a, b in (
        ("server build", before.builds, after.builds),
        ("server version", before.versions, after.versions),
        ("host", before.hosts, after.hosts),
    ):
        if a != b:
            lines.append(f"{what}: {', '.join(a) or '-'} -> {', '.join(b) or '-'}")
    lines += _changes("setting", before.definition, after.definition, skip=("name", "description", "tags"))
    lines += _changes("host fact", before.host_facts, after.host_facts, skip=VOLATILE_FACTS)
    return lines


def history(series_id: int) -> list[Firing]:
    """The series' firings, oldest first, with their analysable runs' values (done, neither
    suspect nor excluded)."""
    experiments = Experiment.objects.filter(series_id=series_id).order_by("fired_for", "id")
    firings = {
        e.id: Firing(e.id, e.fired_for, e.status, e.definition)
        for e in experiments.only("id", "fired_for", "status", "definition")
    }
    runs = Run.objects.filter(
        experiment_id__in=firings, status=RunStatus.DONE, suspect=False, excluded=False
    ).order_by("id")
    for run in runs.only(
        *SERIES_METRICS,
        "experiment_id",
        "server_version",
        "host_label",
        "host_facts",
        "parameters",
        "disturbed",
    ):
        firing = firings[run.experiment_id]
        firing.runs += 1
        firing.disturbed += run.disturbed
        build = (run.parameters or {}).get("server_build") or SYSTEM_BUILD
        for listed, value in (
            (firing.builds, build),
            (firing.versions, run.server_version),
            (firing.hosts, run.host_label),
        ):
            if value and value not in listed:
                listed.append(value)
        firing.host_facts = firing.host_facts or (run.host_facts or {})
        for metric in SERIES_METRICS:
            value = getattr(run, metric)
            if value is not None:
                firing.values.setdefault(metric, []).append(float(value))
    return list(firings.values())
