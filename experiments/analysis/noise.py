"""When a run was measured on a disturbed host, and why: from the runner's record of what else
used the host (runner/noise.py) and that host's own history of calibrations. A
disturbed run is kept (a person decides whether to exclude it), and every sentence that
compares runs says how many were disturbed."""

from statistics import median

# Other processes used this share of the host's CPU capacity over a window (all its CPUs).
OTHERS_CPU_SHARE = 0.2
# Virtual machines lose some CPU to their neighbours at rest (3-11% measured on this kind of
# machine): a quarter is a host that is not itself.
STEAL_SHARE = 0.25
MEMORY_STALL_SHARE = 0.1
# Shares read from /proc/stat count 10 ms ticks per CPU, and "other processes" is the host's
# ticks less those of the run's own processes: a few ticks either way. Over a short window that
# is a wide share (a restart of 0.1 s on 2 CPUs is 20 ticks: 3 ticks are 15%), so a tick-counted
# share must pass its limit by TICK_MARGIN ticks of the window; windows under MIN_WINDOW_TICKS
# are not judged by them. (On a fast host the workload of a small test took 0.13 s: judged only
# from 0.25 s, two CPU-bound neighbours taking 60% of the CPU went unsaid.)
TICK_MARGIN = 3
MIN_WINDOW_TICKS = 10
TICKS_PER_S = 100
TICK_COUNTED = {"others_cpu_share", "steal_share"}
# A calibration loop this much slower than the host's typical one (its last undisturbed runs).
CPU_LOOP_SLOWER = 1.5
FSYNC_LOOP_SLOWER = 3.0
MIN_HISTORY = 5
WINDOWS = {"workload": "the workload", "restart": "the restart after the crash"}


def disturbance(noise: dict, history: list[dict]) -> list[str]:
    """The reasons a run's host was disturbed ([] when it was quiet or nothing was recorded).
    `history`: the calibrations of the same host's earlier undisturbed runs."""
    reasons = []
    for key, what in WINDOWS.items():
        window = noise.get(key) or {}
        ticks = window.get("seconds", 0) * TICKS_PER_S * window.get("cpus", 1)
        if ticks < MIN_WINDOW_TICKS:
            continue
        for share_key, limit, said in (
            ("others_cpu_share", OTHERS_CPU_SHARE, "other processes used {:.0%} of the host's CPU"),
            ("steal_share", STEAL_SHARE, "the hypervisor took {:.0%} of the CPU (steal)"),
            ("memory_stall_share", MEMORY_STALL_SHARE, "tasks stalled on memory {:.0%} of the time"),
        ):
            share = window.get(share_key)
            if share_key in TICK_COUNTED:
                limit += TICK_MARGIN / ticks
            if isinstance(share, int | float) and share > limit:
                reasons.append(f"{said.format(share)} during {what}")
    calibration = noise.get("calibration") or {}
    for key, slower, what in (
        ("cpu_loop_s", CPU_LOOP_SLOWER, "CPU"),
        ("fsync_loop_s", FSYNC_LOOP_SLOWER, "fsync"),
    ):
        earlier = [c[key] for c in history if isinstance(c.get(key), int | float)]
        value = calibration.get(key)
        if len(earlier) >= MIN_HISTORY and isinstance(value, int | float):
            typical = median(earlier)
            if typical > 0 and value > slower * typical:
                reasons.append(
                    f"the {what} calibration took {value / typical:.1f}x this host's typical time "
                    f"({value * 1000:.0f} ms against {typical * 1000:.0f} ms)"
                )
    return reasons


def disturbed_text(disturbed: int, total: int) -> str:
    """What a comparing sentence adds when some of its runs were disturbed."""
    return (
        f" (on a disturbed host: {disturbed} of {total} runs; other work on the host can make a difference "
        "look significant, see the runs' pages)"
    )
