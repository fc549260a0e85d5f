"""The downtime a crash would cause now, from a lab's fit: what GET /api/predict/ answers and what
`recovery-lab predict` and `recovery-lab exporter` compute at every read of a live server.

Plain Python (no Django, no scipy): the command-line client imports it, and the dashboard hands
it the t quantile with the fit. The fit is the planner's (experiments/analysis/planner.py): kill
to first query against redo replayed, least squares over the lab's runs on one host, engine and
server release; a prediction is the line at the redo the live server would replay, with the 95%
*prediction* interval of one crash there (not of the mean line).
"""

import math
from dataclasses import asdict, dataclass

from runner.families import declared_for

# Beyond this many times the largest redo the lab replayed, a line says nothing: refused.
EXTRAPOLATION_LIMIT = 2.0
# Runs whose largest redo is within this share of it from their smallest replayed nearly the same:
# their line says nothing of another volume (nor is its slope a rate: analysis/stats.py).
NARROW_SPAN = 0.2
# A prediction whose 95% interval's half-width is over this share of its typical value is said
# to be wide, with why (Fit.why_wide); fewer runs than WELL_MEASURED ask for more repetitions.
WIDE = 0.5
WELL_MEASURED = 10
# systemd stops a unit whose start takes longer (DefaultTimeoutStartSec) unless the unit sets
# TimeoutStartSec (MariaDB's own unit sets 900 s and extends it while InnoDB recovers).
SYSTEMD_DEFAULT_START_TIMEOUT_S = 90.0


@dataclass(frozen=True)
class Prediction:
    redo_bytes: int
    typical_seconds: float | None = None
    low_seconds: float | None = None
    high_seconds: float | None = None
    extrapolated: bool = False
    refused: str = ""  # why there is no prediction at this redo

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Fit:
    """A least-squares line of downtime (s) against redo replayed (bytes) and what its prediction
    interval needs."""

    intercept: float
    slope: float
    residual: float  # the runs' standard deviation about the line (s)
    n: int
    mean_redo: float
    sxx: float  # sum of squared deviations of the runs' redo from their mean
    t: float  # the two-sided 95% quantile of Student's t with n - 2 degrees of freedom
    measured_redo: tuple[int, int]

    def at(self, redo_bytes: int) -> Prediction:
        low_measured, high_measured = self.measured_redo
        if redo_bytes < 0:
            return Prediction(redo_bytes, refused="a negative redo volume")
        if redo_bytes > EXTRAPOLATION_LIMIT * high_measured:
            return Prediction(
                redo_bytes,
                refused=(
                    f"{_mib(redo_bytes)} is more than {EXTRAPOLATION_LIMIT:g} times the largest redo the lab "
                    f"replayed ({_mib(high_measured)}): measure runs near it (a crash.at_redo_bytes target)"
                ),
            )
        inside = low_measured <= redo_bytes <= high_measured
        if not inside and high_measured - low_measured < NARROW_SPAN * high_measured:
            return Prediction(
                redo_bytes,
                refused=(
                    f"the lab's runs replayed {_mib(low_measured)} to {_mib(high_measured)} only: too "
                    "narrow a range to tell what another volume takes; measure runs at several redo targets"
                ),
            )
        typical = self.intercept + self.slope * redo_bytes
        spread = (
            self.t * self.residual * math.sqrt(1 + 1 / self.n + (redo_bytes - self.mean_redo) ** 2 / self.sxx)
        )
        return Prediction(
            redo_bytes,
            typical_seconds=round(max(typical, 0.0), 6),
            low_seconds=round(max(typical - spread, 0.0), 6),
            high_seconds=round(max(typical + spread, 0.0), 6),
            extrapolated=not inside,
        )

    def why_wide(self, prediction: "Prediction", disturbed: int = 0) -> str:
        """Why a prediction's 95% interval is wide (a half-width over WIDE of the typical value),
        from the terms that make it: the runs' scatter about the line, how few they are, how far
        this redo is from theirs; and what would narrow it. '' where it is not wide."""
        if prediction.refused or not prediction.typical_seconds:
            return ""
        half = (prediction.high_seconds - prediction.low_seconds) / 2
        if half <= WIDE * prediction.typical_seconds:
            return ""
        low, high = self.measured_redo
        distance = (prediction.redo_bytes - self.mean_redo) ** 2 / self.sxx
        said = (
            f"the interval is ±{half:.3g} s ({half / prediction.typical_seconds:.0%} of the typical): "
            f"{self.n} runs, {disturbed} of them on a disturbed host, scatter {self.residual:.3g} s about "
            "the line"
        )
        narrower = ["more repetitions"] if self.n < WELL_MEASURED else []
        if disturbed:
            narrower.append("a quiet host")
        if distance > 1:  # further from the runs' mean than their own spread: the line's slope counts
            said += f", this redo {_mib(prediction.redo_bytes)} far from the runs' ({_mib(low)}-{_mib(high)})"
            narrower.append(f"redo targets nearer {_mib(prediction.redo_bytes)}")
        return said + (f"; narrower with {', '.join(narrower)}" if narrower else "")

    def as_dict(self) -> dict:
        data = asdict(self)
        data["measured_redo"] = list(self.measured_redo)
        return data

    @classmethod
    def from_dict(cls, data: dict) -> "Fit":
        fields = {name: data[name] for name in cls.__dataclass_fields__}
        fields["measured_redo"] = tuple(int(v) for v in data["measured_redo"])
        return cls(**fields)


def release_of(version: str, family: str = "") -> tuple[str, str] | None:
    """The server and release series a version string names, as the lab groups its runs and as
    its family declares it (runner/families/NAME: `FAMILY.version`):
    '10.11.19-MariaDB-0+deb12u1' -> ('MariaDB', '10.11'); '8.0.36' -> ('MySQL', '8.0');
    'PostgreSQL 15.20 (Debian ...)' -> ('PostgreSQL', '15'). `family`: the one a run said ran it
    (a run carries it); without it, the family whose declaration claims the version."""
    declared = declared_for(version, family)
    return declared.series(version) if declared else None


def server_named(version: str, family: str = "") -> str | None:
    """The server and version number a version string names: '9.7.4-2' -> 'MySQL 9.7.4',
    '10.11.19-MariaDB-0+deb12u1' -> 'MariaDB 10.11.19'; None where it names none."""
    declared = declared_for(version, family)
    return declared.named(version) if declared else None


# A prediction against the RTO: its 95% interval all under it, the RTO inside it, or all over it.
# The exporter serves each as a number (recovery_lab_rto_outcome).
OUTCOMES = {"within": 0, "at_risk": 1, "exceeded": 2}


def rto_outcome(prediction: Prediction, rto: float) -> str | None:
    """'within' (the interval's upper end under the RTO), 'at_risk' (the RTO inside the
    interval), 'exceeded' (its lower end over it); None where nothing was predicted."""
    if prediction.refused or prediction.high_seconds is None or prediction.low_seconds is None:
        return None
    if prediction.high_seconds <= rto:
        return "within"
    return "exceeded" if prediction.low_seconds > rto else "at_risk"


def stall_risk(stalls: list[dict], recovered: dict, pool: int | None, redo: int | None) -> str:
    """Where the lab saw a recovery stall (runner/stall.py) on this server's buffer pool or a
    larger one, whether `redo` is beyond what the lab recovered on this pool: the sentence that
    says so, '' where it is not (or the lab saw no stall). `stalls`: [{run_id, buffer_pool_bytes,
    redo_bytes}]; `recovered`: {pool: {run_id, redo_bytes}}, the most each pool recovered."""
    if not pool or redo is None:
        return ""
    seen = [s for s in stalls if s.get("buffer_pool_bytes") and s["buffer_pool_bytes"] >= pool]
    if not seen:
        return ""
    stall = min(seen, key=lambda s: (s.get("redo_bytes") is None, s.get("redo_bytes") or 0))
    most = recovered.get(str(pool)) or recovered.get(pool)
    if (
        most
        and redo <= most["redo_bytes"]
        and (stall.get("redo_bytes") is None or redo < stall["redo_bytes"])
    ):
        return ""  # within what the lab recovered on this very pool
    at = f" at {_mib(stall['redo_bytes'])}" if stall.get("redo_bytes") is not None else ""
    done = (
        f"the most the lab recovered on a {_mib(pool)} pool was {_mib(most['redo_bytes'])} "
        f"(run #{most['run_id']})"
        if most
        else f"the lab recovered none on a {_mib(pool)} pool"
    )
    return (
        f"the lab saw a {_mib(stall['buffer_pool_bytes'])} buffer pool's recovery stall{at} (run "
        f"#{stall['run_id']}); this server's pool is {_mib(pool)} with {_mib(redo)} to replay, and {done}"
    )


def orchestrator_verdicts(worst: Prediction, startup_probe_seconds: float | None = None) -> list[str]:
    """What the worst case means for what restarts the server: systemd's start timeout, and a
    Kubernetes startupProbe's budget (failureThreshold x periodSeconds) if given."""
    if worst.high_seconds is None:
        return []
    high = worst.high_seconds
    lines = []
    budgets = [("systemd's default start timeout", SYSTEMD_DEFAULT_START_TIMEOUT_S)]
    if startup_probe_seconds:
        budgets.append((f"a startupProbe of {startup_probe_seconds:g} s", startup_probe_seconds))
    for name, budget in budgets:
        if high > budget:
            lines.append(
                f"{name} would kill this server during recovery at the worst case "
                f"(up to {high:.3g} s, over {budget:g} s)"
            )
        else:
            lines.append(
                f"{name} leaves {budget - high:.3g} s to spare at the worst case (up to {high:.3g} s)"
            )
    if high > SYSTEMD_DEFAULT_START_TIMEOUT_S:
        lines.append(
            "(a unit may set TimeoutStartSec: MariaDB's own sets 900 s and extends it while InnoDB recovers)"
        )
    return lines


def _mib(size: float) -> str:
    return f"{size / 2**20:,.1f} MiB"
