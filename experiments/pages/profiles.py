"""The compare page's CPU profiles: for each matched cell whose runs on two sides were profiled,
which functions grew (charts/profile.py's diff of their function shares, each side's runs
averaged)."""

from experiments.analysis.cells import settings_text
from experiments.charts.profile import diff_chart
from experiments.ingest.profile import function_name
from experiments.models import Run
from runner.contract import SYSTEM_BUILD

# The cells drawn, at most: one chart each.
CELLS_DRAWN = 6


def side_functions(run_ids: list[int]) -> dict:
    """A side's function shares, the mean over its profiled runs ({} where none was)."""
    profiles = [
        functions
        for functions in Run.objects.filter(id__in=run_ids).values_list(
            "resources__profile__functions", flat=True
        )
        if isinstance(functions, dict) and functions
    ]
    summed: dict[str, list[float]] = {}
    for functions in profiles:
        # runs kept before names were made one (ingest/profile.function_name) are read as one too
        for name, shares in functions.items():
            if isinstance(shares, list) and len(shares) == 2:
                one = summed.setdefault(function_name(name), [0.0, 0.0])
                one[0] += shares[0] / len(profiles)
                one[1] = min(1.0, one[1] + shares[1] / len(profiles))
    return summed


def _differing(a, b) -> tuple[str, str]:
    """Two cells named by the settings in which they differ (their whole labels where none do)."""
    names = [
        (part, key)
        for part in ("parameters", "server_options")
        for key in sorted(set(getattr(a, part)) | set(getattr(b, part)))
        if getattr(a, part).get(key) != getattr(b, part).get(key)
    ]
    if not names:
        return a.label, b.label

    def said(cell) -> str:
        return settings_text(
            {part: {k: getattr(cell, part).get(k) for p, k in names if p == part} for part in SETTINGS}
        )

    return said(a), said(b)


SETTINGS = ("parameters", "server_options")


def profile_diffs(result: dict) -> list[dict]:
    """[{"id", "figure"}] per matched cell profiled on its baseline and a later side."""
    drawn = []
    names = result.get("names", {})
    for cell in result.get("cells", []):
        sides = [str(side) for side in result["experiments"] if str(side) in cell.get("run_ids", {})]
        if len(sides) < 2 or not cell.get("parameters", {}).get("profile"):
            continue
        baseline = side_functions(cell["run_ids"][sides[0]])
        for side in sides[1:]:
            other = side_functions(cell["run_ids"][side])
            if not baseline or not other:
                continue
            label_a, label_b = f"#{sides[0]} {names.get(sides[0], '')}", f"#{side} {names.get(side, '')}"
            figure = diff_chart(baseline, other, label_a.strip(), label_b.strip())
            if figure["data"]:
                drawn.append({"id": f"profile-diff-figure-{len(drawn) + 1}", "figure": figure})
        if len(drawn) >= CELLS_DRAWN:
            break
    return drawn


def cell_profile_diffs(cells: list) -> list[dict]:
    """The experiment page's: per engine and host, each profiled cell against the first profiled
    one, the system's build first (as the findings set each build against it): [{"id", "figure"}].
    Each side is named by the settings in which the two differ ("build mysql-9.7")."""
    profiled = sorted(
        (cell for cell in cells if cell.parameters.get("profile") and cell.run_ids),
        key=lambda cell: cell.parameters.get("server_build", SYSTEM_BUILD) != SYSTEM_BUILD,
    )
    drawn, baselines = [], {}
    for cell in profiled:
        key = (cell.engine, cell.host)
        if key not in baselines:
            baselines[key] = (cell, side_functions(cell.run_ids))
            continue
        first, functions = baselines[key]
        label_a, label_b = _differing(first, cell)
        figure = diff_chart(functions, side_functions(cell.run_ids), label_a, label_b) if functions else {}
        if figure.get("data"):
            drawn.append({"id": f"profile-diff-figure-{len(drawn) + 1}", "figure": figure})
        if len(drawn) >= CELLS_DRAWN:
            break
    return drawn
