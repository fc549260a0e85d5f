"""Recovery against the redo to replay, in sentences: the fitted line per engine and host where
the runs' redo spans a range that can show one, and what it predicts beside a pairwise finding of
the same runs (docs/sentences.md). Plain rows in, sentences out; no Django."""

import math
import statistics
from collections import defaultdict

from experiments.analysis import fits
from experiments.analysis.cells import ENGINE_NAMES, analysable
from experiments.engines import replay_seconds
from recovery_lab_cli.prediction import NARROW_SPAN
from recovery_lab_cli.units import MIB


def engine_where(engine: str, host: str, several_hosts: bool) -> str:
    name = ENGINE_NAMES.get(engine, engine)
    return f"{name} on {host}" if several_hosts else name


def _unswept(group: list[dict], design: dict | None) -> str:
    """What to sweep to see recovery grow with redo, of what this experiment did not sweep:
    seed 004, which swept the redo log size, had been told to sweep it."""
    crash = (design or {}).get("crash") or {}
    swept_redo = isinstance(crash.get("redo_bytes"), list) and len(set(map(str, crash["redo_bytes"]))) > 1
    logs = {row.get("redo_log_bytes") for row in group if row.get("redo_log_bytes")}
    left = [
        name
        for name, swept in (("crash.redo_bytes", swept_redo), ("the redo log size", len(logs) > 1))
        if not swept
    ]
    if not left:
        return ": the sweep's settings did not change the redo replayed"
    if len(logs) > 1:
        return f" (its redo log sizes replayed the same redo; sweep {' or '.join(left)} for that)"
    return f" (sweep {' or '.join(left)} for that)"


def held_by_design(design: dict | None) -> str:
    """How the definition held the redo equal, where it did: restarts of one crash (one_crash);
    ', as the crash plan held it (crash.redo_bytes 384M)' (every run crashed at one redo target),
    ', as the design held it (the same 5,000 events each run, crashed after the workload)'; ''
    otherwise."""
    crash, workload = (design or {}).get("crash") or {}, (design or {}).get("workload") or {}
    if crash.get("one_crash"):  # runner/image.py: the same crash restarted, to the byte
        return ", as the design held it (crash.one_crash: copies of one crash, the same redo to the byte)"
    target = crash.get("redo_bytes")
    if isinstance(target, list):
        target = target[0] if len(target) == 1 else None
    if target:
        return f", as the crash plan held it (crash.redo_bytes {target})"
    events = workload.get("events")
    if crash.get("when") == "after_workload" and isinstance(events, int) and not workload.get("time_seconds"):
        return f", as the design held it (the same {events:,} events each run, crashed after the workload)"
    return ""


def redo_findings(rows: list[dict], design: dict | None = None) -> list[str]:
    """Per engine and host: how recovery grows with the redo to replay (the fitted line), where
    the runs' redo spans a range that can show it (docs/sentences.md):

    - redo within NARROW_SPAN (held by the crash plan, or a sweep of something else): no slope to
      read, said so; never "other costs dominate" of a design that held redo equal;
    - a slope not beyond the noise over a wide range: said, with the log replay's share of the
      recovery (what else took the time), not a guess at it;
    - a line that reaches 0 s above no redo: growth faster than a straight line, named, with the
      batches the runs at the most redo applied it in where they took more."""
    grouped: dict[tuple, list[dict]] = defaultdict(list)
    for row in rows:
        if analysable(row) and row["redo_bytes"] is not None and row["recovery_seconds"] is not None:
            grouped[(row["host_label"], row["engine"])].append(row)
    several_hosts = len({host for host, _ in grouped}) > 1
    found = []
    for (host, engine), group in sorted(grouped.items()):
        xs = [r["redo_bytes"] / MIB for r in group]
        ys = [r["recovery_seconds"] for r in group]
        where = engine_where(engine, host, several_hosts)
        span = f"{min(xs):,.0f} to {max(xs):,.0f} MiB of redo"
        if len(group) >= 3 and max(xs) - min(xs) < NARROW_SPAN * max(xs):
            found.append(
                f"{where}: these {len(group)} runs replayed nearly the same redo ({span}, within "
                f"{NARROW_SPAN:.0%}){held_by_design(design)}: they cannot show how recovery grows with "
                f"redo{_unswept(group, design)}."
            )
            continue
        fit = fits.fit_line(xs, ys)
        if fit is None:
            continue
        if fit.slope_ci and fit.slope_ci[0] > 0:
            low, high = 1 / fit.slope_ci[1], 1 / fit.slope_ci[0]
            said = (
                f"{where} replayed redo at about {1 / fit.slope:,.1f} MiB/s (95% CI {low:,.1f}-{high:,.1f}): "
                f"each GiB of redo added {fit.slope * 1024:.3g} s to recovery "
                f"(R² {fit.r2:.2f}, {fit.n} runs, {span})"
            )
            if fit.intercept < -0.1 * statistics.median(ys):
                zero = -fit.intercept / fit.slope
                said += (
                    f"; recovery grew faster than a straight line: the line reaches 0 s at {zero:,.0f} MiB, "
                    "so its rate is an average over this range" + _batches_text(group)
                )
            found.append(said + ".")
        else:
            found.append(
                f"{where}: recovery did not grow measurably with the redo to replay over these {fit.n} runs "
                f"({span}){_replay_share_text(group)}."
            )
    return found


def _batches_text(group: list[dict]) -> str:
    """', where the runs at the most redo applied it in 6-7 batches and those at the least in 1'
    where the batches differ between the two ends of the range; '' otherwise."""
    ordered = sorted((r for r in group if r.get("recovery_batches")), key=lambda r: r["redo_bytes"])
    if len(ordered) < 2:
        return ""
    third = max(1, len(ordered) // 3)
    least, most = (
        [r["recovery_batches"] for r in ordered[:third]],
        [r["recovery_batches"] for r in ordered[-third:]],
    )
    if max(most) <= max(least):
        return ""

    def counted(values: list[int]) -> str:
        return f"{min(values)}" if min(values) == max(values) else f"{min(values)}-{max(values)}"

    return (
        f" (the runs at the most redo applied it in {counted(most)} batches, those at the least in "
        f"{counted(least)}: each batch re-reads the redo)"
    )


def _replay_share_text(group: list[dict]) -> str:
    """'; the log replay was 35% of the recovery (median)' from the runs' timed phases, or ''."""
    shares = [
        replay / row["recovery_seconds"]
        for row in group
        if row["recovery_seconds"]
        and (replay := replay_seconds(row["engine"], row.get("phases") or {})) is not None
    ]
    if not shares:
        return ""
    return f"; the log replay was {statistics.median(shares):.0%} of the recovery (median of its runs)"


def redo_fits(rows: list[dict]) -> dict[tuple, fits.LineFit]:
    """Per host and engine, the line of recovery against redo (MiB) where its slope is beyond the
    noise: what the redo finding says, which a pairwise finding of the same runs must agree with."""
    grouped: dict[tuple, list[dict]] = defaultdict(list)
    for row in rows:
        if analysable(row) and row["redo_bytes"] is not None and row["recovery_seconds"] is not None:
            grouped[(row["host_label"], row["engine"])].append(row)
    found = {}
    for key, group in grouped.items():
        xs = [r["redo_bytes"] / MIB for r in group]
        if len(group) < 3 or max(xs) - min(xs) < NARROW_SPAN * max(xs):
            continue
        fit = fits.fit_line(xs, [r["recovery_seconds"] for r in group])
        if fit is not None and fit.slope_ci and fit.slope_ci[0] > 0:
            found[key] = fit
    return found


def fit_says(fit, sides: tuple[list[dict], list[dict]], names: tuple[str, str]) -> str:
    """Beside "no significant difference" between two settings whose runs replayed different redo,
    what the line through all the runs predicts for them: the pair alone has too few runs to show
    what the fit of the same runs does (a 4.32x "no significant difference" beside a slope)."""
    if fit is None:
        return ""
    redo = [
        statistics.median([r["redo_bytes"] / MIB for r in rows if r.get("redo_bytes")] or [0])
        for rows in sides
    ]
    if not all(redo) or max(redo) / min(redo) < 1.5:
        return ""
    predicted = [fit.intercept + fit.slope * x for x in redo]
    if min(predicted) <= 0 or abs(math.log(predicted[1] / predicted[0])) < math.log(1.1):
        return ""
    times = predicted[1] / predicted[0]
    return (
        f"; but the line through all the runs (redo finding above) predicts {times:.2f}x "
        f"for the {redo[1]:,.0f} against {redo[0]:,.0f} MiB of redo {names[1]} and {names[0]} replayed: "
        "the pair alone has too few runs to show it"
    )
