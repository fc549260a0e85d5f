"""The compare page's figure: crash recovery per matched cell, a bar per experiment, with its interval."""

from experiments.analysis import stats
from experiments.analysis.cells import ENGINE_NAMES, settings_text
from experiments.charts.layout import PALETTE, base_layout


def compare_chart(result: dict) -> dict:
    """Median crash recovery per matched cell, a bar per experiment, with 95% intervals."""
    labels = [
        f"{ENGINE_NAMES.get(c['engine'], c['engine'])} · "
        + settings_text({"parameters": c["parameters"], "server_options": c["server_options"]})
        for c in result["cells"]
    ]
    traces = []
    for index, experiment in enumerate(result["experiments"]):
        key = str(experiment)
        blocks = [c["metrics"].get("recovery_seconds", {}).get(key) for c in result["cells"]]
        medians = [b["median"] if b else None for b in blocks]
        drawn = [b if b and b["ci"] and b["n"] >= stats.MIN_REPETITIONS else None for b in blocks]
        high = [(b["ci"][1] - b["median"]) if b else 0 for b in drawn]
        low = [(b["median"] - b["ci"][0]) if b else 0 for b in drawn]
        traces.append(
            {
                "type": "bar",
                "name": f"#{experiment} {result['names'][key]}",
                "x": labels,
                "y": medians,
                "text": [f"n {b['n']}" if b else "" for b in blocks],
                "error_y": {"type": "data", "symmetric": False, "array": high, "arrayminus": low},
                "marker": {"color": PALETTE[index % len(PALETTE)]},
                "hovertemplate": "%{x}<br>median %{y:.3f} s (%{text})<extra>%{fullData.name}</extra>",
            }
        )
    return {
        "data": traces,
        "layout": base_layout(
            "Crash recovery per matched cell (median, 95% CI)",
            barmode="group",
            xaxis={"type": "category", "automargin": True},
            yaxis={"title": {"text": "crash recovery (s)"}, "rangemode": "tozero"},
        ),
    }
