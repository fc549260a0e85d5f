"""The trade-off of a bigger redo log: what it buys while running (TPS, fewer writes) against
what it costs at recovery, a point per cell labelled with its log size."""

import numpy as np

from experiments.analysis.cells import ENGINE_NAMES, Cell
from experiments.charts.layout import axis_layout, base_layout, colour
from experiments.units import MIB


def label_positions(values: list) -> list[str]:
    """Where each point's label goes: above the points in the upper half of their series, below
    those in the lower half, so two close points push their labels apart (in turn where equal)."""
    known = sorted(v for v in values if v is not None)
    if not known:
        return ["top center"] * len(values)
    middle = float(np.median(known))
    positions, ties = [], 0
    for value in values:
        if value is None or value != middle:
            positions.append("top center" if value is not None and value > middle else "bottom center")
        else:
            positions.append("top center" if ties % 2 == 0 else "bottom center")
            ties += 1
    return positions


def tradeoff_chart(cells: list[Cell]) -> dict:
    """The throughput side of a bigger log: workload TPS (left) and log / page writes (right)
    against recovery time, a point per cell labelled with its redo log size."""
    traces, with_pages = [], False
    # Only cells whose running side was measured (an imported production crash of 86 s, with no
    # workload, stretched the axis and pressed every live cell against zero: issue 34).
    measured = [
        c
        for c in cells
        if c.median("recovery_seconds") is not None
        and (c.median("workload_tps") is not None or c.median("log_bytes_written") is not None)
    ]
    for index, engine in enumerate(sorted({c.engine for c in measured})):
        mine = sorted((c for c in measured if c.engine == engine), key=lambda c: c.median("recovery_seconds"))
        recovery = [c.median("recovery_seconds") for c in mine]
        text = [f"log {c.parameters.get('redo_log_size', '?')}" for c in mine]
        name = ENGINE_NAMES.get(engine, engine)
        tps = [c.median("workload_tps") for c in mine]
        common = {
            "mode": "markers+text",
            "type": "scatter",
            "x": recovery,
            "text": text,
            "legendgroup": name,
            "marker": {"color": colour(engine, index), "size": 10, "opacity": 0.8},
        }
        traces.append(
            {
                **common,
                "name": f"{name}: TPS",
                "y": tps,
                "textposition": label_positions(tps),
                "hovertemplate": "%{text}<br>recovery %{x:.3f} s<br>%{y:.0f} TPS<extra></extra>",
            }
        )
        writes = [c.median("log_bytes_written") for c in mine]
        writes = [w / MIB if w is not None else None for w in writes]
        traces.append(
            {
                **common,
                "name": f"{name}: log bytes written",
                "xaxis": "x2",
                "yaxis": "y2",
                "y": writes,
                "textposition": label_positions(writes),
                "marker": {**common["marker"], "symbol": "diamond"},
                "hovertemplate": "%{text}<br>recovery %{x:.3f} s<br>%{y:,.1f} MiB written<extra></extra>",
            }
        )
        pages = [c.median("pages_written") for c in mine]
        # Pages counted and all zero (the checkpoint held back through the workload) say nothing
        # a point at zero on an axis of its own would add.
        if any(p for p in pages):
            with_pages = True
            traces.append(
                {
                    **common,
                    "name": f"{name}: pages written",
                    "xaxis": "x2",
                    "yaxis": "y3",
                    "y": pages,
                    "textposition": label_positions(pages),
                    "marker": {**common["marker"], "symbol": "x"},
                    "hovertemplate": "%{text}<br>recovery %{x:.3f} s<br>%{y:,} pages<extra></extra>",
                }
            )
    all_recovery = [c.median("recovery_seconds") for c in measured]
    xaxis = axis_layout("crash recovery (s)", "s", all_recovery)
    if all_recovery and xaxis.get("type") != "log":
        # room on the right for the last points' labels (the PDF's narrower page cut them)
        xaxis["range"] = [0, max(all_recovery) * 1.15]
    figure = {
        "data": traces,
        "layout": base_layout(
            "What a bigger log buys while running, and costs at recovery",
            xaxis={"domain": [0, 0.42], **xaxis},
            yaxis={"title": {"text": "workload TPS"}, "rangemode": "tozero"},
            xaxis2={"domain": [0.55, 0.93], **xaxis},
            yaxis2={
                "anchor": "x2",
                "title": {"text": "log written (MiB)"},
                "rangemode": "tozero",
            },
        ),
    }
    if with_pages:
        figure["layout"]["yaxis3"] = {
            "anchor": "x2",
            "overlaying": "y2",
            "side": "right",
            "title": {"text": "pages written"},
            "rangemode": "tozero",
            "showgrid": False,
        }
    return figure
