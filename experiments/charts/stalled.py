"""Runs whose recovery stalled, drawn on the redo chart as a failed result: a dotted line at the
redo each had to replay (the crash plan's reading at the kill), from the axis' floor to its top,
since such a run has no recovery time to place a point at. Its legend entry says so."""

from recovery_lab_cli.units import MIB, format_size

STALLED_COLOUR = "#d62728"


def add_stalled(figure: dict, rows: list[dict]) -> dict:
    """`figure` (the redo chart) with a line per stalled run of `rows` that knows its redo, and
    one legend entry for them all."""
    stalled = [r for r in rows if r["status"] == "stalled" and not r["excluded"] and r["redo_bytes"]]
    if not stalled:
        return figure
    shapes, notes = [], []
    for row in sorted(stalled, key=lambda r: r["redo_bytes"]):
        x = row["redo_bytes"] / MIB
        shapes.append(
            {
                "type": "line",
                "xref": "x",
                "yref": "paper",
                "x0": x,
                "x1": x,
                "y0": 0,
                "y1": 1,
                "line": {"color": STALLED_COLOUR, "dash": "dot", "width": 2},
            }
        )
        pool = format_size(row.get("buffer_pool_bytes")) or "unknown"
        notes.append(f"run #{row['id']}: {pool} pool, {x:,.1f} MiB")
    legend = {
        "type": "scatter",
        "mode": "lines",
        "x": [None],
        "y": [None],
        "name": f"recovery stalled, no time to draw ({'; '.join(notes)})",
        "line": {"color": STALLED_COLOUR, "dash": "dot", "width": 2},
        "hoverinfo": "skip",
    }
    layout = dict(figure.get("layout") or {})
    layout["shapes"] = [*layout.get("shapes", []), *shapes]
    return {**figure, "data": [*figure.get("data", []), legend], "layout": layout}
