"""CPU profiles: a run's flame graph (Plotly's icicle, the process at the top and each callee
below its caller, as wide as its share of the samples) and, for two cells, which functions grew.
From the folded stacks and function shares of experiments/ingest/profile.py; no Django."""

from experiments.charts.layout import base_layout
from experiments.ingest.profile import KERNEL, NOT_EXPORTED, stacks_of

# Frames under this share of the samples are left out (their samples stay in their caller's
# width): a restart's few thousand samples spread over thousands of stacks otherwise.
MIN_SHARE = 0.002
MAX_DEPTH = 40
DIFF_SHOWN = 15


def flame_chart(folded: bytes, title: str = "Where the restart's CPU time went (perf, cpu-clock)") -> dict:
    """An icicle of the stacks: ids are the paths from the process, values the samples through
    each frame (branchvalues "total": a frame is as wide as all it called and itself)."""
    stacks = stacks_of(folded)
    total = sum(count for _, count in stacks)
    if not total:
        return {"data": [], "layout": {}}
    values: dict[str, int] = {}
    labels: dict[str, str] = {}
    parents: dict[str, str] = {}
    for frames, count in stacks:
        path = ""
        for frame in frames[:MAX_DEPTH]:
            child = f"{path};{frame}" if path else frame
            values[child] = values.get(child, 0) + count
            labels[child], parents[child] = frame, path
            path = child
    kept = [node for node, value in values.items() if value / total >= MIN_SHARE]
    kept_set = set(kept)
    kept = [node for node in kept if not parents[node] or parents[node] in kept_set]
    roots = [node for node in kept if not parents[node]]
    if len(roots) > 1:  # several processes (PostgreSQL's) or named threads (MySQL's): one root above
        for node in kept:
            if not parents[node]:
                parents[node] = "all"
        kept.insert(0, "all")
        labels["all"], parents["all"], values["all"] = "the server: every process and thread", "", total
    return {
        "data": [
            {
                "type": "icicle",
                "ids": kept,
                "labels": [labels[node] for node in kept],
                "parents": [parents[node] for node in kept],
                "values": [values[node] for node in kept],
                "branchvalues": "total",
                "tiling": {"orientation": "v"},
                "maxdepth": 12,
                "marker": {"colors": [_colour(labels[node]) for node in kept]},
                "hovertemplate": "%{label}<br>%{value} samples, %{percentRoot:.1%} of all<extra></extra>",
                "textinfo": "label+percent root",
            }
        ],
        "layout": base_layout(title, height=620, margin={"t": 60, "l": 10, "r": 10, "b": 10}),
    }


def _colour(frame: str) -> str:
    """Warm for the server's code, grey where the binary does not name it, blue for the kernel
    (perf marks its functions; profiles folded before it did are told by their names)."""
    if frame == NOT_EXPORTED:
        return "#bdbdbd"
    if (
        frame.endswith(KERNEL)
        or frame.startswith(("entry_", "do_syscall", "asm_", "exc_", "__x64_sys", "ksys_", "vfs_"))
        or (frame.startswith("__") and frame.endswith("_fault"))
    ):
        return "#6baed6"
    return "#fd8d3c"


def diff_chart(functions_a: dict, functions_b: dict, label_a: str, label_b: str) -> dict:
    """The functions whose share of the samples moved most between two cells, in percentage points,
    B minus A: grew right, shrank left. A function's own share (it was on the CPU), not its share
    with its callees: a call chain perf could not follow would move the callers' shares by
    artefact (a build through its release's loader loses them at its libc)."""
    names = (set(functions_a) | set(functions_b)) - {NOT_EXPORTED}
    moved = sorted(
        ((_own(functions_b, name) - _own(functions_a, name), name) for name in names),
        key=lambda item: -abs(item[0]),
    )[:DIFF_SHOWN]
    moved = [(delta, name) for delta, name in moved if abs(delta) >= 0.001]
    if not moved:
        return {"data": [], "layout": {}}
    moved.reverse()  # the largest at the top
    return {
        "data": [
            {
                "type": "bar",
                "orientation": "h",
                "y": [name for _, name in moved],
                "x": [round(delta * 100, 2) for delta, _ in moved],
                "marker": {"color": ["#d62728" if delta > 0 else "#2ca02c" for delta, _ in moved]},
                "customdata": [
                    [_own(functions_a, name) * 100, _own(functions_b, name) * 100] for _, name in moved
                ],
                "hovertemplate": (
                    "%{y}<br>"
                    + label_a
                    + ": %{customdata[0]:.1f}% of samples<br>"
                    + label_b
                    + ": %{customdata[1]:.1f}%<extra></extra>"
                ),
                "name": "share moved",
            }
        ],
        "layout": base_layout(
            f"Where the CPU was: {label_b} (B) against {label_a} (A)",
            height=max(300, 26 * len(moved) + 140),
            xaxis={
                "title": {
                    "text": "samples with the function itself on the CPU, percentage points (B - A)"
                    + unseen_text(functions_a, functions_b)
                },
                "automargin": True,
            },
            yaxis={"automargin": True},
            showlegend=False,
        ),
    }


def unseen_text(functions_a: dict, functions_b: dict) -> str:
    """What the difference could not see, under its axis: the samples in code the binary does not
    name ([not exported]: 77-84% of InnoDB's on Debian's builds), which no bar can show."""
    unseen = [_own(functions_a, NOT_EXPORTED), _own(functions_b, NOT_EXPORTED)]
    if max(unseen) < 0.005:
        return ""
    return (
        f"<br>not seen: {unseen[0]:.0%} of A's samples and {unseen[1]:.0%} of B's, in code the binary "
        "does not name ([not exported]); its debug symbols would show them"
    )


def _own(functions: dict, name: str) -> float:
    """The share of the samples in which the function itself was on the CPU (the stack's leaf):
    where the call chain could not be followed (a build's libraries without frame pointers), the
    leaf is still named, the callers above it are not."""
    shares = functions.get(name)
    return shares[0] if shares else 0.0
