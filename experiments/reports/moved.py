"""What moved between the two sides of a finding: the phase that carried a difference, the
parameter's own phase, and the redo replayed where it differs (MySQL 9.7 wrote twice MariaDB's
redo for the same transactions: a reader of "7.3x slower" must know it)."""

import math
import statistics

from experiments.analysis.where import carried_by, core_wait_text, held_back
from experiments.parameters import OWN_PHASES
from experiments.vocabulary import PHASE_WORDS
from recovery_lab_cli.units import MIB, duration_text

# The redo replayed is said when one side's median is this many times the other's.
REDO_DIFFERS = 1.25


def _phase_text(rows: tuple[list[dict], list[dict]], medians: dict, name: str) -> str:
    """A phase's median as a duration: "< 5 ms" below what its lines could time, not zero."""
    resolution = max(
        ((row.get("phase_resolution") or {}).get(name, 0.0) for side in rows for row in side), default=0.0
    )
    return duration_text(medians.get(name, 0.0), resolution)


def _phase_medians(rows: list[dict]) -> dict[str, float]:
    names = {name for row in rows for name in (row.get("phases") or {})}
    found = {}
    for name in names:
        values = [row["phases"][name] for row in rows if (row.get("phases") or {}).get(name) is not None]
        if values:
            found[name] = float(statistics.median(values))
    return found


def what_moved(
    axis: str, sides: tuple[list[dict], list[dict]], significant: bool, names: tuple[str, str] = ("", "")
) -> str:
    """For a significant difference, which phase carried it (the largest change of its median);
    and, significant or not, what the parameter's own phase did (the binlog files' binlog / XA
    recovery, ...), so a reader sees whether the parameter acted where it should; and the redo
    each side replayed where it differs (`names`: the two sides, as the finding names them)."""
    low, high = (_phase_medians(rows) for rows in sides)
    changes = {name: high.get(name, 0.0) - low.get(name, 0.0) for name in set(low) | set(high)}
    changes = {name: change for name, change in changes.items() if name in PHASE_WORDS}
    if not changes:
        return _redo_text(sides, names)
    name = max(changes, key=lambda n: abs(changes[n])) if significant else None
    said = (
        f"; the phase that moved: {PHASE_WORDS[name]} ({low.get(name, 0.0):.3f} s to "
        f"{high.get(name, 0.0):.3f} s, medians)"
        if name
        else ""
    )
    own = [phase for phase in OWN_PHASES.get(axis, ()) if phase in low or phase in high]
    if own and name not in own:
        stayed = ", ".join(
            f"{PHASE_WORDS[phase]} {_phase_text(sides, low, phase)} to {_phase_text(sides, high, phase)}"
            for phase in own
        )
        said += f"; this parameter's own phase {'did not carry it' if name else 'went'} ({stayed}, medians)"
    return said + _redo_text(sides, names) + (_resource_text(sides, names) if significant else "")


def _median(rows: list[dict], name: str) -> float | None:
    values = [row[name] for row in rows if row.get(name) is not None]
    return float(statistics.median(values)) if values else None


def _resource_text(sides: tuple[list[dict], list[dict]], names: tuple[str, str]) -> str:
    """Which resource the difference is in, where both sides' recoveries were read: the CPU time
    of their threads, their reads from the disk, or neither (they waited)."""
    took, used, read = (
        [_median(rows, metric) for rows in sides]
        for metric in ("recovery_seconds", "recovery_cpu_seconds", "recovery_disk_read_bytes")
    )
    if not all(took) or not all(used):
        return ""
    ratio = lambda pair: math.log(pair[1] / pair[0]) if all(pair) else None  # noqa: E731
    carrier = carried_by(ratio(took), ratio(used), ratio(read))
    cpu = f"the threads' CPU time: {names[1]} {used[1]:.2f} s, {names[0]} {used[0]:.2f} s"
    if carrier == "cpu":
        return f"; the difference is in CPU work ({cpu}, medians)"
    if carrier == "reads":
        return (
            f"; the difference is in reads from the disk ({names[1]} {read[1] / MIB:.1f} MiB, "
            f"{names[0]} {read[0] / MIB:.1f} MiB, medians)"
        )
    if carrier == "waiting":
        waits = [_median(rows, "recovery_core_wait_share") for rows in sides]
        slow = 1 if took[1] >= took[0] else 0
        if held_back(waits[slow], waits[1 - slow]):
            waited = core_wait_text(names[slow], waits[slow], waits[1 - slow], names[1 - slow])
            return f"; the difference is in neither CPU time nor reads ({cpu}, medians): {waited}"
        if on_disk := _disk_wait_text(sides, names, slow, cpu):
            return on_disk
        return (
            "; the difference is in neither CPU time, reads nor a wait for a core: the slower side waited "
            f"({cpu}, medians)"
        )
    return ""


def _disk_wait_text(sides: tuple[list[dict], list[dict]], names: tuple[str, str], slow: int, cpu: str) -> str:
    """Where the slower side's own verdicts say it waited on the disk (most of its runs bound by
    the disk, a larger share than the other side's: a storage class's cap, say), that sentence."""
    on_disk = [sum(row.get("recovery_bound") == "disk" for row in rows) for rows in sides]
    share = [count / len(rows) for count, rows in zip(on_disk, sides, strict=True)]
    if share[slow] <= 0.5 or share[slow] <= share[1 - slow]:
        return ""
    fast = 1 - slow
    return (
        f"; the difference is in neither CPU time nor the bytes read: {names[slow]} waited on the disk "
        f"(bound by the disk in {on_disk[slow]} of its {len(sides[slow])} runs, {names[fast]} in "
        f"{on_disk[fast]} of {len(sides[fast])}; {cpu}, medians)"
    )


def _redo_text(sides: tuple[list[dict], list[dict]], names: tuple[str, str]) -> str:
    """The redo each side replayed, where it differs enough to explain a difference in time."""
    low, high = (
        statistics.median([r["redo_bytes"] for r in rows if r.get("redo_bytes")] or [0]) for rows in sides
    )
    if not low or not high or max(low, high) / min(low, high) < REDO_DIFFERS:
        return ""
    return (
        f"; the redo replayed differed too: {names[1]} {high / MIB:.1f} MiB, "
        f"{names[0]} {low / MIB:.1f} MiB (medians)"
    )
