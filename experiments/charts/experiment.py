"""The experiment page's figures: recovery against each varied parameter, redo against recovery
with its fitted apply rate, where the downtime went, and the trade-off between them."""

from collections import defaultdict

from experiments.analysis import fits, stats
from experiments.analysis.cells import ENGINE_NAMES, PARAMETER_LABELS, Cell, analysable, hover_text
from experiments.charts.floors import floor_lines
from experiments.charts.layout import (
    MARGIN,
    MAX_SERIES,
    NUMERIC_AXES,
    NUMERIC_PARAMETERS,
    SERIES,
    SIZE_PARAMETERS,
    axis_layout,
    axis_value,
    base_layout,
    colour,
    fit_grid,
)
from experiments.charts.stalled import add_stalled
from experiments.charts.tradeoff import pages_chart, tradeoff_chart
from experiments.parameters import AXIS_TITLES, PARAMETER_UNITS
from recovery_lab_cli.units import MIB

# Phase breakdown: what happens before the server is ready (downtime) and after (background).
PHASE_SEGMENTS = (
    ("redo_scan", "redo scan", "#6baed6"),
    ("redo_apply", "redo apply", "#2171b5"),
    ("data_directory_sync", "data directory fsync (PostgreSQL)", "#9e9ac8"),
    ("wal_replay", "WAL replay (MyRocks, PostgreSQL)", "#08519c"),
    ("recovery_checkpoint", "end-of-recovery checkpoint (PostgreSQL)", "#54278f"),
    ("binlog_recovery", "binlog / XA recovery", "#fd8d3c"),
)
BACKGROUND_SEGMENTS = (
    ("rollback", "rollback (background, after ready)", "#bdbdbd"),
    ("buffer_pool_load", "buffer pool load (background)", "#d9d9d9"),
)


def parameter_chart(rows: list[dict], axis: str, varied: list[str] = ()) -> dict:
    """Recovery and downtime against one parameter: a point per run, and the median per value
    with its 95% interval. A series per engine and per value of the other parameters that vary,
    so a median never pools runs done at different settings."""
    # a swept redo target ("96M") is drawn by its bytes, on a byte axis (it had ticked 134217728)
    categorical = axis not in NUMERIC_AXES and axis not in NUMERIC_PARAMETERS and axis not in SIZE_PARAMETERS
    # A build and its version go together: neither splits the other's chart.
    together = (
        ("server_version", "server_build")
        if axis in ("server_version", "server_build")
        else ("server_version",)
    )
    others = [a for a in varied if a not in (axis, "engine", "host", *together)]
    series = _split(rows, axis, others)
    pooled = len(series) > MAX_SERIES
    if pooled:  # too many combinations to read: one series per engine, medians pool the rest
        others, series = [], _split(rows, axis, [])
    traces, xs_all, ys_all = [], [], []
    for index, key in enumerate(sorted(series)):
        engine = key[0]
        setting = " · ".join(f"{_short(o)} {v}" for o, v in zip(others, key[1:], strict=True) if v != "")
        label = ENGINE_NAMES.get(engine, engine) + (f" · {setting}" if setting else "")
        colour_key = engine if not others else f"series-{index}"
        shown = False  # one legend entry per series (its colour); the symbols' key says which metric
        for metric, symbol, what in SERIES:
            points = [r for r in series[key] if r[metric] is not None]
            if not points:
                continue
            xs, ys = [axis_value(r, axis) for r in points], [r[metric] for r in points]
            xs_all += xs
            ys_all += ys
            name = f"{label}: {what}"
            trace = _points(name, colour_key, xs, ys, points, symbol, index, group_name=label)
            trace["showlegend"] = not shown
            if not shown:
                trace["name"] = label
            shown = True
            traces.append(trace)
            traces.append(_medians(name, colour_key, xs, ys, index, categorical, group_name=label))
    _summarise_medians([t for t in traces if "by_x" in t])
    return {
        "data": traces + _symbol_key() if traces else [],
        "layout": base_layout(
            f"Recovery and downtime against {AXIS_TITLES.get(axis, axis).split(' (')[0]}"
            + (" (medians pool the other settings)" if pooled else ""),
            xaxis=axis_layout(
                AXIS_TITLES.get(axis, axis), PARAMETER_UNITS.get(axis, ""), xs_all, categorical
            ),
            yaxis=axis_layout("seconds", "s", ys_all),
        ),
    }


def _split(rows: list[dict], axis: str, others: list[str]) -> dict[tuple, list[dict]]:
    series: dict[tuple, list[dict]] = defaultdict(list)
    for row in rows:
        if axis_value(row, axis) is not None:
            series[(row["engine"], *(_setting(row, o) for o in others))].append(row)
    return series


def _short(axis: str) -> str:
    return PARAMETER_LABELS.get(axis, axis)


def _setting(row: dict, axis: str) -> str:
    """A setting as the user wrote it ("2G", not 2147483648), for a series' name."""
    if axis in row["parameters"]:
        return str(row["parameters"][axis])
    value = axis_value(row, axis)
    return "" if value is None else str(value)


def _symbol_key() -> list[dict]:
    """Legend entries that only say what each symbol means (no data): every series is drawn with
    both, so its own entry needs only its colour, and the legend halves."""
    return [
        {
            "type": "scatter",
            "mode": "markers",
            "name": what,
            "x": [None],
            "y": [None],
            "hoverinfo": "skip",
            "marker": {"color": "#555", "size": 8, "symbol": symbol, "line": {"width": 1.5, "color": "#555"}},
        }
        for _, symbol, what in SERIES
    ]


def _points(name: str, group: str, xs, ys, rows, symbol: str, index: int, group_name: str = "") -> dict:
    colour_ = colour(group, index)
    return {
        "type": "scatter",
        "mode": "markers",
        "name": name,
        "legendgroup": group_name or name,
        "x": xs,
        "y": ys,
        "customdata": [r["id"] for r in rows],
        "text": [r["hover"] if "hover" in r else hover_text(r) for r in rows],
        "hovertemplate": "%{text}<br>%{y:.3f} s<extra></extra>",
        "cliponaxis": False,
        "marker": {
            "color": colour_,
            "size": 8,
            "opacity": 0.55,
            "symbol": [symbol.replace("circle", "square") if r["imported"] else symbol for r in rows],
            "line": {"width": 1.5, "color": colour_},
        },
    }


def _medians(name: str, group: str, xs, ys, index: int, categorical: bool, group_name: str = "") -> dict:
    """A series' medians per x with their 95% intervals; the values come in _summarise_medians,
    which takes a whole chart's at once (scipy computes intervals of one size in one call)."""
    by_x: dict = defaultdict(list)
    for x, y in zip(xs, ys, strict=True):
        by_x[x].append(y)
    return {
        "type": "scatter",
        "mode": "markers" if categorical else "lines+markers",  # no line between categories
        "name": f"{name}, median and 95% CI",
        "legendgroup": group_name or name,
        "showlegend": False,
        "x": sorted(by_x, key=lambda k: (isinstance(k, str), k)),
        "by_x": by_x,
        "hovertemplate": "%{text}<extra></extra>",
        "line": {"color": colour(group, index), "width": 1.5},
        "marker": {"color": colour(group, index), "size": 12, "symbol": "line-ew-open", "line": {"width": 3}},
    }


def _summarise_medians(traces: list[dict]) -> None:
    """Fills the median traces of one chart (_medians) with their medians and intervals."""
    samples = [trace["by_x"][x] for trace in traces for x in trace["x"]]
    summaries = iter(stats.summarize_many(samples))
    for trace in traces:
        trace.pop("by_x")
        mine = [next(summaries) for _ in trace["x"]]
        # With fewer than 3 runs the interval is too wide to draw (it would squash the chart); the
        # summary table still gives it, flagged.
        shown = [s.ci if s.ci and s.n >= stats.MIN_REPETITIONS else None for s in mine]
        trace["y"] = [s.median for s in mine]
        trace["text"] = [f"median of {s.n}, 95% CI {_ci_text(s)}" for s in mine]
        trace["error_y"] = {
            "type": "data",
            "symmetric": False,
            "array": [(ci[1] - s.median) if ci else 0 for s, ci in zip(mine, shown, strict=True)],
            "arrayminus": [(s.median - ci[0]) if ci else 0 for s, ci in zip(mine, shown, strict=True)],
            "width": 6,
        }


def _ci_text(summary: stats.Summary) -> str:
    if summary.ci is None:
        return "not known (n < 2)"
    return f"{summary.ci[0]:.3g} to {summary.ci[1]:.3g}"


def redo_fit_chart(rows: list[dict], floors: dict[str, float] | None = None) -> dict:
    """Recovery against redo to replay per engine, with a fitted line and its 95% band; the
    legend gives the apply rate (1 / slope) in MiB/s. `floors`: per host, its disk's measured
    sequential read (MB/s): the floor line, the redo read at that rate, what no recovery beats
    that must read its redo from the disk."""
    traces, xs_all, ys_all = [], [], []
    for index, engine in enumerate(sorted({r["engine"] for r in rows})):
        points = [
            r
            for r in rows
            if r["engine"] == engine and r["redo_bytes"] is not None and r["recovery_seconds"] is not None
        ]
        if not points:
            continue
        xs = [r["redo_bytes"] / MIB for r in points]
        ys = [r["recovery_seconds"] for r in points]
        xs_all += xs
        ys_all += ys
        name = ENGINE_NAMES.get(engine, engine)
        fit = fits.fit_line(xs, ys)
        refusal = fits.why_no_rate(fit, xs, ys)
        if not refusal:
            traces.append(_points(name, engine, xs, ys, points, "circle", index))
            traces += _fit_traces(name, engine, index, fit, xs, ys)
        else:
            # A line through points whose redo hardly differs would give an apply rate out of noise.
            note = f" (no apply rate: {refusal})" if fit else ""
            traces.append(_points(name + note, engine, xs, ys, points, "circle", index))
    hosts = {r["host_label"] for r in rows if r["redo_bytes"] is not None}
    traces += floor_lines(floors, hosts, max(xs_all, default=0))
    return {
        "data": traces,
        "layout": base_layout(
            "Recovery time against redo to replay",
            xaxis=axis_layout("redo to replay (MiB)", "", xs_all),
            yaxis=axis_layout("crash recovery (s)", "s", ys_all),
        ),
    }


def apply_rate_text(fit: fits.LineFit) -> str:
    """The slope of seconds per MiB (significantly above zero), read as MiB/s with its interval."""
    return (
        f"apply rate {1 / fit.slope:.1f} MiB/s (95% CI {1 / fit.slope_ci[1]:.1f}-{1 / fit.slope_ci[0]:.1f}),"
        f" R² {fit.r2:.2f}, n {fit.n}"
    )


def _fit_traces(name: str, engine: str, index: int, fit: fits.LineFit, xs, ys) -> list[dict]:
    grid = fit_grid(xs)
    lower, upper = fit.band(grid, xs, ys)
    colour_ = colour(engine, index)
    line = [fit.slope * x + fit.intercept for x in grid]
    edge = {
        "type": "scatter",
        "mode": "lines",
        "x": grid,
        "line": {"width": 0},
        "hoverinfo": "skip",
        "showlegend": False,
        "legendgroup": name,
    }
    return [
        {**edge, "y": upper},
        {**edge, "y": lower, "fill": "tonexty", "fillcolor": _translucent(colour_)},  # the band
        {
            "type": "scatter",
            "mode": "lines",
            "x": grid,
            "y": line,
            "name": f"{name}: {apply_rate_text(fit)}",
            "legendgroup": name,
            "line": {"color": colour_, "dash": "dash"},
            "hoverinfo": "skip",
        },
    ]


def _translucent(hex_colour: str) -> str:
    red, green, blue = (int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({red},{green},{blue},0.15)"


def phase_chart(cells: list[Cell]) -> dict:
    """Per cell, the median time of each phase of the restart after the crash, stacked, beside
    the clean-start baseline; a tick marks where the downtime ends (the first query)."""
    if not cells:  # no finished run yet: no chart (an empty frame would read as zero seconds)
        return {"data": [], "layout": {}}
    labels = [cell.label + (f" · {cell.host}" if len({c.host for c in cells}) > 1 else "") for cell in cells]
    crash_rows = [f"{label} · after crash" for label in labels]
    clean_rows = [f"{label} · clean start" for label in labels]
    traces = []
    before_ready = []
    for name, title, colour_ in PHASE_SEGMENTS:
        values = [cell.phases.get(name, 0.0) for cell in cells]
        before_ready.append(values)
        if any(name in cell.phases for cell in cells):  # no legend entry for a phase none had
            traces.append(_bar(title, crash_rows, values, colour_))
    downtimes = [c.median("downtime_seconds") for c in cells]
    # an imported crash has no kill timed, so no downtime: its start to ready is what it knows
    readies = [
        c.median("ready_seconds") if d is None else None for c, d in zip(cells, downtimes, strict=True)
    ]
    rest = []
    for i, downtime in enumerate(downtimes):
        known = sum(part[i] for part in before_ready)
        end = downtime if downtime is not None else readies[i]
        rest.append(max((end if end is not None else known) - known, 0.0))
    traces.append(
        _bar("rest of start-up (to the first query; imports: to ready)", crash_rows, rest, "#9ecae1")
    )
    for name, title, colour_ in BACKGROUND_SEGMENTS:
        if any(name in cell.phases for cell in cells):
            traces.append(_bar(title, crash_rows, [c.phases.get(name, 0.0) for c in cells], colour_, "/"))
    clean = [c.median("clean_start_seconds") or 0 for c in cells]
    traces.append(_bar("clean start (baseline)", clean_rows, clean, "#41ab5d"))
    traces.append(
        {
            "type": "scatter",
            "mode": "markers",
            "name": "downtime ends (first query)",
            "y": crash_rows,
            "x": downtimes,
            "marker": {"symbol": "line-ns-open", "size": 22, "color": "#b42318", "line": {"width": 3}},
            "hovertemplate": "downtime %{x:.3f} s<extra></extra>",
        }
    )
    if any(r is not None for r in readies):
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": "ready for connections (imported: no kill was timed)",
                "y": crash_rows,
                "x": readies,
                "marker": {"symbol": "line-ns-open", "size": 22, "color": "#555", "line": {"width": 3}},
                "hovertemplate": "start to ready %{x:.3f} s<extra></extra>",
            }
        )
    order = [row for pair in zip(crash_rows, clean_rows, strict=True) for row in pair]
    return {
        "data": traces,
        "layout": base_layout(
            "Where the restart's time goes (medians per cell)",
            barmode="stack",
            height=max(300, 80 + 40 * len(order)),
            legend={"orientation": "v", "x": 1.01, "xanchor": "left", "y": 1, "traceorder": "normal"},
            # automargin: in the PDF's narrower page the title sat on the ticks' labels
            xaxis={"title": {"text": "seconds"}, "rangemode": "tozero", "automargin": True},
            yaxis={
                "type": "category",
                "categoryorder": "array",
                "categoryarray": order[::-1],
                "automargin": True,
            },
            margin={**MARGIN, "l": 20},
        ),
    }


def _bar(name: str, rows: list[str], values: list[float], colour_: str, pattern: str = "") -> dict:
    bar = {
        "type": "bar",
        "orientation": "h",
        "name": name,
        "y": rows,
        "x": values,
        "marker": {"color": colour_},
        "hovertemplate": name + ": %{x:.3f} s<extra>%{y}</extra>",
    }
    bar["marker"].update({"pattern": {"shape": pattern}} if pattern else {})
    return bar


def experiment_figures(
    rows: list[dict], cells: list[Cell], axes: list[str], floors: dict[str, float] | None = None
) -> dict[str, dict]:
    """Every chart of the experiment page, by id; runs that are suspect or excluded are out, and
    stalled ones are lines on the redo chart. `floors`: each host's sequential read (MB/s)."""
    # each run's hover box written once, not once a chart it is drawn in
    charted = [{**r, "hover": hover_text(r)} for r in rows if analysable(r)]
    figures = {f"axis-{axis}": parameter_chart(charted, axis, axes) for axis in axes or ["engine"]}
    figures["redo"] = add_stalled(redo_fit_chart(charted, floors), rows)
    figures["phases"] = phase_chart(cells)
    figures["tradeoff"] = tradeoff_chart(cells)
    figures["pages"] = pages_chart(cells)  # seed 004's answer: page writes saved against recovery
    return {name: figure for name, figure in figures.items() if figure["data"]}
