"""The planner's figure: downtime against redo replayed, with the runs, the fitted line and its band."""

from experiments.charts.layout import axis_layout, base_layout
from recovery_lab_cli.units import MIB, binary_bytes


def planner_chart(plan: dict, points: list) -> dict:
    """Downtime against redo replayed on one host: the runs, the fitted line with its 95%
    prediction band (where one more crash lands), the target, and the answer with its interval."""
    band = plan["band"]
    mb = [x / MIB for x in band["redo_bytes"]]  # binary, as the servers' settings and the sentences
    target = plan["target_downtime_seconds"]
    edge = {"type": "scatter", "mode": "lines", "x": mb, "line": {"width": 0}, "hoverinfo": "skip"}
    low, best = plan["interval"][0] / MIB, plan["max_redo_bytes"] / MIB
    ys = [p.downtime_seconds for p in points] + band["upper"] + [target]
    return {
        "data": [
            {**edge, "y": band["upper"], "showlegend": False},
            {
                **edge,
                "y": [max(value, 0.0) for value in band["lower"]],  # no downtime is negative
                "fill": "tonexty",
                "fillcolor": "rgba(31,119,180,0.15)",
                "name": "95% prediction band (one more crash)",
            },
            {
                "type": "scatter",
                "mode": "lines",
                "x": mb,
                "y": band["line"],
                "name": f"fitted: {plan['slope_seconds_per_gib']:.3g} s per GiB, R² {plan['r2']:.2f}",
                "line": {"color": "#1f77b4", "dash": "dash"},
            },
            {
                "type": "scatter",
                "mode": "markers",
                "x": [p.redo_bytes / MIB for p in points],
                "y": [p.downtime_seconds for p in points],
                "customdata": [p.run_id for p in points],
                "name": f"runs ({len(points)})",
                "marker": {"color": "#333", "size": 7},
                "hovertemplate": "run %{customdata}: %{x:.1f} MiB, %{y:.2f} s<extra></extra>",
            },
            {
                "type": "scatter",
                "mode": "lines",
                "x": [0, mb[-1]],
                "y": [target, target],
                "name": f"target {target:g} s",
                "line": {"color": "#d62728"},
            },
            {
                "type": "scatter",
                "mode": "lines",
                "x": [low, low, None, best, best],
                "y": [0, target, None, 0, target],
                # as the sentences say them: "49.7 MiB", the interval's low end the size to plan for
                "name": f"answer {binary_bytes(best * MIB)} (size for {binary_bytes(low * MIB)})",
                "line": {"color": "#2ca02c", "dash": "dot"},
            },
        ],
        "layout": base_layout(
            "Downtime against redo replayed",
            xaxis={"title": {"text": "redo replayed (MiB)"}, "rangemode": "tozero", "automargin": True},
            yaxis=axis_layout("kill to first query (s)", "s", ys),
        ),
    }
