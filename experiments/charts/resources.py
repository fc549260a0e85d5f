"""The restart's resources on its timeline: below the steps, the cores each busiest thread used and
the read rate, on the same seconds from the kill, with the recovery shaded and the disk's measured
sequential read as a line. From a run's `resources` (experiments/ingest/resources.py); no Django."""

from experiments.charts.layout import PALETTE

# The timeline's steps on top, then cores, then reads (fractions of the figure's height).
STEPS, CORES, READS = (0.47, 1.0), (0.25, 0.41), (0.0, 0.19)
EXTRA_HEIGHT = 300


def with_resources(figure: dict, resources: dict) -> dict:
    """The timeline figure with two panels under it; unchanged where the run has no readings."""
    series = resources.get("series") or {}
    if not figure.get("data") or len(series.get("t") or []) < 2:
        return figure
    layout = figure["layout"]
    layout["yaxis"]["domain"] = list(STEPS)
    layout["height"] = layout.get("height", 300) + EXTRA_HEIGHT
    layout["xaxis"]["anchor"] = "y3"
    layout["yaxis2"] = _axis("cores used", CORES)
    layout["yaxis3"] = _axis("read (MB/s)", READS)
    t = series["t"]
    for index, (name, cores) in enumerate(series.get("cores", {}).items()):
        figure["data"].append(_line(f"CPU: {name}", t, cores, "y2", PALETTE[(index + 2) % len(PALETTE)]))
    figure["data"].append(_line("read from the disk", t, series.get("read_mb_s"), "y3", "#08519c", width=2.2))
    figure["data"].append(
        _line(
            "read through system calls (page cache included)",
            t,
            series.get("rchar_mb_s"),
            "y3",
            "#6baed6",
            "dot",
        )
    )
    shapes = layout.setdefault("shapes", [])
    window = (resources.get("recovery") or {}).get("window")
    if window:
        shapes.append(
            {
                "type": "rect",
                "xref": "x",
                "yref": "paper",
                "x0": window[0],
                "x1": window[1],
                "y0": 0,
                "y1": CORES[1],
                "fillcolor": "#2171b5",
                "opacity": 0.08,
                "line": {"width": 0},
                "layer": "below",
            }
        )
    floor = (resources.get("floor") or {}).get("seq_read_mb_s")
    storage = (resources.get("floor") or {}).get("storage")
    whose = (
        f"storage class {storage}'s sequential read (fio in its cap)"
        if storage
        else "this disk's sequential read (fio)"
    )
    if floor:
        figure["data"].append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": f"{whose}: {floor:,.0f} MB/s",
                "x": [t[0], t[-1]],
                "y": [floor, floor],
                "yaxis": "y3",
                "line": {"color": "#e6550d", "dash": "dash", "width": 1.5},
                "hoverinfo": "name",
            }
        )
    cpus = resources.get("cpus")
    if cpus:
        layout["yaxis2"]["range"] = [0, cpus * 1.05]
    return figure


def _axis(title: str, domain: tuple) -> dict:
    return {
        "title": {"text": title, "font": {"size": 11}},
        "domain": list(domain),
        "rangemode": "tozero",
        "anchor": "x",
        "automargin": True,
    }


def _line(name: str, x: list, y, axis: str, colour: str, dash: str = "solid", width: float = 1.6) -> dict:
    return {
        "type": "scatter",
        "mode": "lines",
        "name": name,
        "x": x,
        "y": y or [],
        "yaxis": axis,
        "line": {"color": colour, "width": width, "dash": dash, "shape": "hvh"},
        "hovertemplate": name + ": %{y:.2f} at %{x:.2f} s<extra></extra>",
    }
