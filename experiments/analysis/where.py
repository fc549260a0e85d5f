"""Which resource a difference in crash recovery is in: for a cell compared across experiments
(two builds, two settings), whether the slower side's recovery used more CPU time, read more from
the disk, or neither (it waited). From compare.py's metric blocks of recovery_seconds,
recovery_cpu_seconds and recovery_disk_read_bytes; plain dicts in, a sentence out."""

import math

# A resource "carries" a difference when its own ratio moved at least this share of the
# recovery's (on logarithms: 1.8x slower with 1.6x the CPU time is CPU).
CARRIES = 0.5
# Where neither CPU time nor reads moved, a slower side whose busiest thread waited for a core this
# share of its recovery (and longer than the other side's) was held back by other work on the host.
HELD_BACK = 0.2


def held_back(slower: float | None, faster: float | None) -> bool:
    """The slower side's busiest thread waited for a core a good share of its recovery, more than
    the faster side's did: other work on the host had the cores (not fsync, locks or sleeps)."""
    return slower is not None and slower >= HELD_BACK and slower > (faster or 0.0)


def core_wait_text(name: str, slower: float, faster: float | None, other: str) -> str:
    against = f", {other}'s {faster:.0%}" if faster is not None else ""
    return (
        f"{name}'s busiest thread waited for a core {slower:.0%} of its recovery{against}: other work on "
        "the host held it back (see the runs' pages)"
    )


def _moved(result: dict | None) -> float | None:
    """log of the ratio, where there is one."""
    ratio = (result or {}).get("ratio")
    return math.log(ratio) if ratio else None


def carried_by(took: float, used: float, read: float | None) -> str:
    """Which resource carried a change of the recovery's time, all as logs of ratios: "cpu" (its
    threads' CPU time moved with it), "reads" (its reads from the disk did), "waiting" (neither
    did), or "nothing" (the time hardly moved)."""
    if abs(took) < math.log(1.05):
        return "nothing"

    def same_way(moved: float | None) -> bool:
        return moved is not None and moved * took > 0 and abs(moved) >= CARRIES * abs(took)

    return "cpu" if same_way(used) else "reads" if same_way(read) else "waiting"


def _times(result: dict) -> str:
    ratio, ci = result["ratio"], result.get("ratio_ci")
    interval = f" (95% CI {ci[0]:.2f}-{ci[1]:.2f}x)" if ci else ""
    return f"{ratio:.2f}x{interval}"


def resource_sentence(
    metrics: dict, subject: str, baseline: str, side: str, label: str, baseline_side: str = ""
) -> str | None:
    """'{label}: {subject}'s recovery took 1.9x as long as {baseline}'s; the difference is in CPU
    work: its threads used 1.8x the CPU time (...) and read 1.00x as much from the disk.' Only for
    a significant difference in recovery, where both sides' recoveries were read."""
    recovery = (metrics.get("recovery_seconds") or {}).get("versus", {}).get(side)
    cpu = (metrics.get("recovery_cpu_seconds") or {}).get("versus", {}).get(side)
    reads = (metrics.get("recovery_disk_read_bytes") or {}).get("versus", {}).get(side)
    took, used = _moved(recovery), _moved(cpu)
    if took is None or used is None or not recovery.get("significant"):
        return None  # no difference to place
    slower, faster = (subject, baseline) if took >= 0 else (baseline, subject)
    ci = recovery.get("ratio_ci")
    if ci and took < 0:  # said from the slower side: the interval of the inverse ratio
        ci = [1 / ci[1], 1 / ci[0]]
    sure = (
        f" (a significant difference, 95% CI {ci[0]:.2f}-{ci[1]:.2f}x)"
        if ci
        else " (a significant difference)"
    )
    head = f"{label}: {slower}'s recovery took {math.exp(abs(took)):.2f}x as long as {faster}'s{sure}"
    read = _moved(reads)
    said_reads = f"; {subject} read {_times(reads)} as much from the disk" if read is not None else ""
    carrier = carried_by(took, used, read)
    if carrier == "nothing":
        return f"{head}; CPU time {_times(cpu)} of {baseline}'s{said_reads}: no resource moved to speak of."
    if carrier == "cpu":
        where = f"in CPU work: {subject}'s threads used {_times(cpu)} the CPU time of {baseline}'s"
    elif carrier == "reads":
        where = f"in reads from the disk: {subject} read {_times(reads)} as much as {baseline}"
        said_reads = f"; CPU time {_times(cpu)}"
    else:
        waits = metrics.get("recovery_core_wait_share") or {}
        mine = (waits.get(side) or {}).get("median")
        theirs = (waits.get(baseline_side) or {}).get("median")
        slow_wait, fast_wait = (mine, theirs) if took >= 0 else (theirs, mine)
        if held_back(slow_wait, fast_wait):
            waited = core_wait_text(slower, slow_wait, fast_wait, faster)
            where = f"neither in CPU time ({_times(cpu)}) nor in reads from the disk: {waited}"
        else:
            where = (
                f"neither in CPU time ({_times(cpu)}) nor in reads from the disk, nor in a wait for a "
                "core: the slower side waited (on fsync, locks or sleeps)"
            )
        said_reads = ""
    return f"{head}; the difference is {where}{said_reads}."
