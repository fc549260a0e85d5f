"""The trade-off of a bigger redo log (seed 004's question): against the log size, what it
costs at recovery and what it buys while running (fewer page writes, more TPS), each a median
with its 95% interval; a series per engine and per other setting that differs. No chart for one
log size; a panel that cannot say anything (pages written all zero: flushing held back) is left
out with the reason and what to change said under the chart."""

from experiments.analysis.cells import ENGINE_NAMES, Cell, log_bytes, settings_text
from experiments.analysis.stats import MIN_REPETITIONS
from experiments.charts.layout import base_layout, colour
from recovery_lab_cli.units import MIB, parse_size
from runner.contract import DEFAULT_FLUSHING

# (metric, panel title, scale): top to bottom
PANELS = (
    ("recovery_seconds", "crash recovery (s)", 1.0),
    ("pages_written", "pages written while running", 1.0),
    ("log_bytes_written", "log written while running (MiB)", 1 / MIB),
    ("workload_tps", "workload TPS", 1.0),
)
GAP = 0.05
FLUSHING_WORDS = {"held_back": "held back", "natural": "natural"}


def _series(cells: list[Cell]) -> dict[tuple, list[Cell]]:
    """The cells by engine and by every other setting that differs among them (the log size
    is the axis), each series' cells by log size."""

    def others(cell: Cell) -> dict:
        parameters = {k: v for k, v in cell.parameters.items() if k != "redo_log_size"}
        return {"parameters": parameters, "server_options": cell.server_options}

    groups: dict[tuple, list[Cell]] = {}
    for cell in cells:
        groups.setdefault((cell.engine, settings_text(others(cell))), []).append(cell)
    return {key: sorted(mine, key=log_bytes) for key, mine in sorted(groups.items())}


def flushing_of(cells: list[Cell]) -> list[str]:
    return sorted({c.parameters.get("flushing", DEFAULT_FLUSHING) for c in cells})


def no_pages_note(flushing: list[str]) -> str:
    """Why no cell wrote a page while running, from the flushing its runs had: held back by the
    method (so natural is what to run), or the server's own, where no log filled (so a bigger log
    could save nothing: the workload is what to change). Seed 004, natural, had been told to run
    with natural flushing."""
    said = "No pages-written panel: every cell wrote 0 pages while running"
    if "held_back" in flushing and "natural" not in flushing:
        return (
            f"{said}: flushing was held back (the method's default, so that recovery replays the redo "
            "the workload wrote). To see what a bigger log saves in page writes, run with "
            "parameters.flushing: [natural]."
        )
    held = " (and held back in the others)" if "held_back" in flushing else ""
    return (
        f"{said}, with the server's own flushing{held}: no log filled, so a bigger log could save "
        "nothing here. To see what it saves, fill the smallest log: a longer workload or a higher rate."
    )


def tradeoff_chart(cells: list[Cell]) -> dict:
    """A panel per PANELS metric against the redo log size, a point per cell with its interval.
    `layout.meta.notes`: why a panel was left out, and what to change."""
    # Only cells whose running side was measured (an imported production crash of 86 s, with no
    # workload, stretched the axis and pressed every live cell against zero: issue 34).
    measured = [
        c
        for c in cells
        if c.median("recovery_seconds") is not None
        and (c.median("workload_tps") is not None or c.median("log_bytes_written") is not None)
    ]
    if not measured:
        return {"data": [], "layout": {}}
    sizes = sorted({str(c.parameters.get("redo_log_size", "?")) for c in measured}, key=_sized)
    if len(sizes) < 2:  # one log size trades nothing (seed 000's 12G drew three lone points)
        return {"data": [], "layout": {}}
    notes, shown = [], []
    for metric, title, scale in PANELS:
        values = [c.median(metric) for c in measured]
        if metric == "pages_written" and not any(values):
            notes.append(no_pages_note(flushing_of(measured)))
            continue
        if not any(v is not None for v in values):
            continue
        shown.append((metric, title, scale))
    height = 1 / len(shown)
    layout = base_layout(
        "What a bigger log costs at recovery and buys while running (medians; bars: 95% intervals, "
        f"the runs' range under {MIN_REPETITIONS} runs; flushing "
        + " and ".join(FLUSHING_WORDS.get(f, f) for f in flushing_of(measured))
        + ")",
        height=190 * len(shown) + 120,
        meta={"notes": notes, "flushing": flushing_of(measured)},
    )
    traces = []
    for index, ((engine, others), mine) in enumerate(_series(measured).items()):
        name = ENGINE_NAMES.get(engine, engine) + (f" · {others}" if others else "")
        for position, (metric, title, scale) in enumerate(shown):
            axis = "" if position == 0 else str(position + 1)
            top = 1 - position * height
            layout[f"yaxis{axis}"] = {
                "title": {"text": title},
                "domain": [max(top - height + GAP, 0), top],
                "rangemode": "tozero",
                "automargin": True,
                "anchor": f"x{axis}",
            }
            # each panel its own x axis (its sizes under it), all alike; the title under the last
            layout[f"xaxis{axis}"] = {
                "type": "category",
                "categoryorder": "array",
                "categoryarray": sizes,
                "anchor": f"y{axis}",
                **({"matches": "x"} if axis else {}),
                **({"title": {"text": "redo log size"}} if position == len(shown) - 1 else {}),
            }
            summaries = [c.summaries.get(metric) for c in mine]
            y = [_scaled(s.median, scale) if s else None for s in summaries]
            traces.append(
                {
                    "type": "scatter",
                    "mode": "lines+markers",
                    "name": name,
                    "legendgroup": name,
                    "showlegend": position == 0,
                    "x": [str(c.parameters.get("redo_log_size", "?")) for c in mine],
                    "y": y,
                    "xaxis": f"x{axis}",
                    "yaxis": f"y{axis}",
                    "marker": {"color": colour(engine, index), "size": 9},
                    "line": {"color": colour(engine, index)},
                    "error_y": _interval(summaries, scale),
                    # (not customdata: a whole number there is a run a click opens)
                    "text": [f"n={s.n}" if s else "" for s in summaries],
                    "hovertemplate": f"log %{{x}}: %{{y:,.3~f}} ({title}; %{{text}})<extra>{name}</extra>",
                }
            )
    return {"data": traces, "layout": layout}


def _sized(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError:
        return 0


def _scaled(value, scale: float):
    return None if value is None else value * scale


def _interval(summaries: list, scale: float) -> dict:
    """Error bars from each median to its 95% interval; for a cell of fewer than
    MIN_REPETITIONS runs, whose interval would say little but its width, to its runs' range."""
    above, below = [], []
    for summary in summaries:
        if summary is None or summary.median is None:
            above.append(0)
            below.append(0)
            continue
        low, high = summary.ci if summary.ci and summary.n >= MIN_REPETITIONS else (summary.min, summary.max)
        above.append(max(high - summary.median, 0) * scale)
        below.append(max(summary.median - low, 0) * scale)
    return {"type": "data", "symmetric": False, "array": above, "arrayminus": below, "thickness": 1.5}


def pages_chart(cells: list[Cell]) -> dict:
    """Seed 004's answer as one picture: crash recovery against the pages written while running,
    a point per redo log size (its median and intervals both ways), a line per engine and other
    setting. Drawn where two or more cells of a series wrote pages or differ in them."""
    measured = [
        c
        for c in cells
        if "redo_log_size" in c.parameters
        and c.median("recovery_seconds") is not None
        and c.median("pages_written") is not None
    ]
    series = {key: mine for key, mine in _series(measured).items() if len(mine) >= 2}
    if not series or not any(c.median("pages_written") for mine in series.values() for c in mine):
        return {"data": [], "layout": {}}
    traces = []
    for index, ((engine, others), mine) in enumerate(series.items()):
        name = ENGINE_NAMES.get(engine, engine) + (f" · {others}" if others else "")
        recovery = [c.summaries["recovery_seconds"] for c in mine]
        pages = [c.summaries["pages_written"] for c in mine]
        traces.append(
            {
                "type": "scatter",
                "mode": "lines+markers+text",
                "name": name,
                "x": [s.median for s in pages],
                "y": [s.median for s in recovery],
                "text": [f"log {c.parameters['redo_log_size']}" for c in mine],
                "textposition": "top center",
                "marker": {"color": colour(engine, index), "size": 9},
                "line": {"color": colour(engine, index), "dash": "dot"},
                "error_x": _interval(pages, 1.0),
                "error_y": _interval(recovery, 1.0),
                "hovertemplate": "%{text}: %{x:,.0f} pages written, %{y:.3f} s of crash recovery"
                f"<extra>{name}</extra>",
            }
        )
    layout = base_layout(
        "Pages written while running against crash recovery, per redo log size (medians; bars: 95% "
        f"intervals, the runs' range under {MIN_REPETITIONS} runs)",
        xaxis={"title": {"text": "pages written while running"}, "rangemode": "tozero", "automargin": True},
        yaxis={"title": {"text": "crash recovery (s)"}, "rangemode": "tozero", "automargin": True},
    )
    return {"data": traces, "layout": layout}
