"""The series page's figures: each metric over the firings (every run a point, the firing's median
a line), with the change points found drawn where they fall and the medians before and after."""

from experiments.charts.layout import PALETTE, axis_layout, base_layout, shown_title
from experiments.metrics import LABELS, UNITS
from recovery_lab_cli.units import MB_PER_MIB

# Stored in the API's decimal unit, shown as every page shows it (MiB/s, as the servers count).
SHOWN_AS = {"redo_apply_mb_per_s": (MB_PER_MIB, "redo apply (MiB/s)")}

WORSE, BETTER = "#d62728", "#2ca02c"


def _when(firing: dict) -> str:
    return firing["scheduled"] or f"firing {firing['index']}"


def series_chart(metric: str, firings: list[dict], change_points: list[dict]) -> dict:
    """`firings`: Firing.as_dict() with their 1-based `index`; `change_points`: rows of one metric."""
    unit = UNITS.get(metric, "")
    scale, label = SHOWN_AS.get(metric, (1, shown_title(LABELS.get(metric, metric), unit)))
    xs, ys, texts, median_x, median_y = [], [], [], [], []
    for firing in firings:
        facts = f"build {', '.join(firing['builds']) or '-'} · {', '.join(firing['server_versions']) or '-'}"
        for value in firing["values"].get(metric, []):
            xs.append(_when(firing))
            ys.append(value * scale if value is not None else None)
            texts.append(f"firing {firing['index']} · experiment {firing['experiment']}<br>{facts}")
        if firing["medians"].get(metric) is not None:
            median_x.append(_when(firing))
            median_y.append(firing["medians"][metric] * scale)
    by_index = {f["index"]: f for f in firings}
    shapes, annotations, traces = [], [], []
    for point in change_points:
        at = by_index.get(point["firing_index"])
        if at is None:
            continue
        colour = WORSE if point["worse"] else BETTER
        shapes.append(
            {
                "type": "line",
                "xref": "x",
                "yref": "paper",
                "x0": _when(at),
                "x1": _when(at),
                "y0": 0,
                "y1": 1,
                "line": {"color": colour, "dash": "dash", "width": 2},
            }
        )
        annotations.append(
            {
                "x": _when(at),
                "y": 1,
                "yref": "paper",
                "yanchor": "bottom",
                "showarrow": False,
                "text": f"×{point['ratio']:.2f}",
                "font": {"color": colour},
            }
        )
    traces.append(
        {
            "type": "scatter",
            "mode": "markers",
            "name": "runs",
            "x": xs,
            "y": ys,
            "text": texts,
            "hovertemplate": "%{y:.4g}<br>%{text}<extra></extra>",
            "marker": {"color": PALETTE[0], "size": 7, "opacity": 0.6},
        }
    )
    traces.append(
        {
            "type": "scatter",
            "mode": "lines",
            "name": "median per firing",
            "x": median_x,
            "y": median_y,
            "line": {"color": PALETTE[0], "width": 2},
            "hoverinfo": "skip",
        }
    )
    return {
        "data": traces,
        "layout": base_layout(
            label,
            xaxis={"title": {"text": "firing (scheduled for, UTC)"}, "type": "category", "automargin": True},
            # the label says its unit already ("crash recovery (s)"); bytes' ticks say theirs
            yaxis=axis_layout(label, unit, ys),
            shapes=shapes,
            annotations=annotations,
            showlegend=True,
        ),
    }
