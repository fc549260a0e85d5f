"""The compare page's CPU profiles: for each matched cell whose runs on two sides were profiled,
which functions grew (charts/profile.py's diff of their function shares, each side's runs
averaged)."""

from experiments.charts.profile import diff_chart
from experiments.models import Run

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
    names = {name for functions in profiles for name in functions}
    return {
        name: [
            sum((functions.get(name) or [0, 0])[i] for functions in profiles) / len(profiles) for i in (0, 1)
        ]
        for name in names
    }


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
    one (two builds, two settings): [{"id", "figure"}]."""
    profiled = [cell for cell in cells if cell.parameters.get("profile") and cell.run_ids]
    drawn, baselines = [], {}
    for cell in profiled:
        key = (cell.engine, cell.host)
        if key not in baselines:
            baselines[key] = (cell, side_functions(cell.run_ids))
            continue
        first, functions = baselines[key]
        figure = (
            diff_chart(functions, side_functions(cell.run_ids), first.label, cell.label) if functions else {}
        )
        if figure.get("data"):
            drawn.append({"id": f"profile-diff-figure-{len(drawn) + 1}", "figure": figure})
        if len(drawn) >= CELLS_DRAWN:
            break
    return drawn
