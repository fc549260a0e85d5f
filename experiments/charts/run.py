"""The run page's own charts: the seconds before the crash (the runner's per-second samples) and
the restart after it, as a timeline beside the clean start. Plotly figure dicts from the run's
`samples` and `timeline` (experiments/ingest/seconds.py); no Django."""

from experiments.charts.layout import LEGEND_ABOVE, PALETTE, base_layout
from experiments.ingest.seconds import AFTER_CRASH, CLEAN_START, START_TO_READY, is_sample, series_of
from recovery_lab_cli import units

IN_MIB = 1 / units.MIB  # bytes -> MiB, as the servers' settings count
# Panels from top to bottom: (axis title, [(series, legend name, scale)]), by the names every
# engine's samples share (runner/engine.py). A panel no series of the run fills is left out (an
# engine without memtables, or without a checkpoint age).
SAMPLE_PANELS = (
    (
        "redo to replay (MiB)",
        (
            ("checkpoint_age_bytes", "checkpoint age: redo since the last checkpoint", IN_MIB),
            ("wal_on_disk_bytes", "WAL files on disk", IN_MIB),
            ("wal_to_replay_bytes", "WAL since the last checkpoint's redo point", IN_MIB),
        ),
    ),
    (
        "pages",
        (
            ("dirty_pages", "dirty pages in the buffer pool", 1),
            ("pages_written_per_s", "pages written /s", 1),
        ),
    ),
    (
        "memtables (MiB)",
        (
            ("memtable_bytes", "memtables", IN_MIB),
            ("memtable_unflushed_bytes", "memtables not flushed", IN_MIB),
        ),
    ),
    (
        "written (MiB/s)",
        (
            ("log_bytes_written_per_s", "redo log written", IN_MIB),
            ("data_bytes_written_per_s", "data files written", IN_MIB),
            ("wal_bytes_per_s", "WAL written", IN_MIB),
            ("engine_bytes_written_per_s", "bytes given to the engine to write", IN_MIB),
        ),
    ),
    (
        "throughput (/s)",
        (("rows_changed_per_s", "rows changed", 1), ("commits_per_s", "commits", 1)),
    ),
)
PANEL_GAP = 0.04


def samples_chart(samples: dict, crash_method: str = "") -> dict:
    """Every second of the workload up to the crash, in stacked panels on one time axis; the
    crash is a red line across them all, the end of the workload a dotted one."""
    series = samples.get("series") or {}
    panels = [
        (title, [(name, label, scale) for name, label, scale in lines if name in series])
        for title, lines in SAMPLE_PANELS
    ]
    panels = [(title, lines) for title, lines in panels if lines]
    if not panels:
        return {"data": [], "layout": {}}
    t = samples["t"]
    height = (1 - PANEL_GAP * (len(panels) - 1)) / len(panels)
    traces, layout_axes, colour_index = [], {}, 0
    for position, (title, lines) in enumerate(panels):
        axis = "y" if position == 0 else f"y{position + 1}"
        top = 1 - position * (height + PANEL_GAP)
        layout_axes["yaxis" if position == 0 else f"yaxis{position + 1}"] = {
            "title": {"text": title, "font": {"size": 11}},
            "domain": [max(top - height, 0), top],
            "rangemode": "tozero",
            "automargin": True,
        }
        for name, label, scale in lines:
            traces.append(_line(label, t, [_scaled(v, scale) for v in series[name]], axis, colour_index))
            colour_index += 1
        if position == len(panels) - 1 and samples.get("sysbench"):
            bench = samples["sysbench"]
            traces.append(_line("sysbench transactions", bench["t"], bench["tps"], axis, colour_index, "dot"))
    crash = samples.get("crash_at")
    shapes, notes = [], []
    if crash is not None:
        what = "power cut" if crash_method == "power_loss" else "crash (kill -9)"
        shapes.append(_vertical(crash, "#d62728", "solid"))
        notes.append(_note(crash, what, "#d62728"))
    ended = samples.get("workload_ended_at")
    if ended is not None and (crash is None or crash - ended > 0.5):
        shapes.append(_vertical(ended, "#636363", "dot"))
        notes.append(_note(ended, "workload ended", "#636363", "right"))
    return {
        "data": traces,
        "layout": base_layout(
            "The seconds before the crash",
            height=max(300, 170 * len(panels)),
            hovermode="x unified",
            xaxis={"title": {"text": "seconds since the workload started"}, "anchor": f"y{len(panels)}"},
            shapes=shapes,
            annotations=notes,
            legend=LEGEND_ABOVE,
            **layout_axes,
        ),
    }


def live_samples_chart(live_samples: list) -> dict:
    """While the run goes: its latest seconds as the runner sent them, charted like the final
    ones (no crash yet to mark)."""
    samples = series_of([sample for sample in live_samples if is_sample(sample)], {})
    figure = samples_chart(samples) if samples else {"data": [], "layout": {}}
    if not figure["data"]:
        return figure
    figure["layout"]["title"]["text"] = "The workload so far (every second, live)"
    figure["layout"]["xaxis"]["title"]["text"] = "seconds since the first sample shown"
    return figure


def _scaled(value, scale: float):
    return None if value is None else round(value * scale, 6)


def _line(name: str, x: list, y: list, axis: str, index: int, dash: str = "solid") -> dict:
    return {
        "type": "scatter",
        "mode": "lines",
        "name": name,
        "x": x,
        "y": y,
        "yaxis": axis,
        "line": {"color": PALETTE[index % len(PALETTE)], "width": 1.8, "dash": dash},
        "connectgaps": False,
    }


def _vertical(at: float, colour: str, dash: str) -> dict:
    return {
        "type": "line",
        "xref": "x",
        "yref": "paper",
        "x0": at,
        "x1": at,
        "y0": 0,
        "y1": 1,
        "line": {"color": colour, "width": 2, "dash": dash},
    }


def _note(at: float, text: str, colour: str, side: str = "left") -> dict:
    return {
        "x": at,
        "y": 1.0,
        "xref": "x",
        "yref": "paper",
        "text": text,
        "showarrow": False,
        "xanchor": "right" if side == "left" else "left",
        "yanchor": "bottom",
        "font": {"color": colour, "size": 12},
    }


GROUP_COLOURS = {AFTER_CRASH: "#2171b5", CLEAN_START: "#41ab5d"}
MOMENT_SYMBOLS = {"ready for connections": "line-ns-open", "first query answered": "diamond"}


def timeline_chart(timeline: dict) -> dict:
    """The restart as a Gantt chart: a row per step (process start, redo scan, redo apply,
    rollback, binlog/XA, buffer pool load, start to ready, ready to first query), bars in seconds
    from the kill; below, the clean start's rows from its spawn. Ready and first query marked."""
    bars = timeline.get("bars") or []
    if not bars:
        return {"data": [], "layout": {}}
    rows = []
    for bar in bars:
        label = _row(bar)
        if label not in rows:
            rows.append(label)
    traces = []
    for group, colour in GROUP_COLOURS.items():
        mine = [bar for bar in bars if bar["group"] == group]
        if not mine:
            continue
        zero = timeline.get("zero", {}).get(group, "")
        traces.append(
            {
                "type": "bar",
                "orientation": "h",
                "name": f"{group} (0 = {zero})",
                "y": [_row(bar) for bar in mine],
                "base": [bar["start"] for bar in mine],
                "x": [max(bar["end"] - bar["start"], 0.002) for bar in mine],  # an instant stays visible
                "text": [f"{bar['end'] - bar['start']:.3f} s" for bar in mine],
                "textposition": "auto",
                "cliponaxis": False,
                "marker": {"color": colour},
                "customdata": [[bar["start"], bar["end"]] for bar in mine],
                "hovertemplate": "%{y}: %{customdata[0]:.3f} s to %{customdata[1]:.3f} s<extra></extra>",
            }
        )
    for name, symbol in MOMENT_SYMBOLS.items():
        moments = [m for m in timeline.get("moments", []) if m["name"] == name]
        if moments:
            traces.append(
                {
                    "type": "scatter",
                    "mode": "markers",
                    "name": name,
                    "y": [_row({"group": m["group"], "name": START_TO_READY}) for m in moments],
                    "x": [m["at"] for m in moments],
                    "marker": {"symbol": symbol, "size": 12, "color": "#000", "line": {"width": 2}},
                    "hovertemplate": name + " at %{x:.3f} s<extra></extra>",
                }
            )
    return {
        "data": traces,
        "layout": base_layout(
            "The restart, step by step",
            height=max(260, 34 * len(rows) + 130),
            barmode="overlay",
            xaxis={
                "title": {"text": "seconds (after the crash: from the kill; clean start: from its spawn)"},
                "rangemode": "tozero",
            },
            yaxis={
                "type": "category",
                "categoryorder": "array",
                "categoryarray": rows[::-1],
                "automargin": True,
            },
            legend=LEGEND_ABOVE,
        ),
    }


def _row(bar: dict) -> str:
    return bar["name"] if bar["group"] == AFTER_CRASH else f"clean start: {bar['name']}"


def progress_chart(timeline: dict) -> dict:
    """The recovery as its progress lines told it, on the timeline's seconds from the kill: the
    redo read so far (of the redo to replay) and each batch's pages, so a slow batch or a stall
    shows. Empty where the log had fewer than two progress lines."""
    progress = timeline.get("progress") or {}
    t = progress.get("t") or []
    if len(t) < 2:
        return {"data": [], "layout": {}}
    traces = []
    if progress.get("redo_read_bytes"):
        traces.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "line": {"color": PALETTE[0]},
                "name": "redo reached (MiB past the checkpoint)",
                "x": t,
                "y": [round(value * IN_MIB, 2) for value in progress["redo_read_bytes"]],
                "hovertemplate": "%{x:.3f} s: redo reached %{y:,.1f} MiB past the checkpoint<extra></extra>",
            }
        )
    if progress.get("batch_pages"):
        traces.append(
            {
                "type": "bar",
                "name": "pages of the batch (left, where it goes on)",
                "x": t,
                "y": progress["batch_pages"],
                "yaxis": "y2",
                "width": 0.05,
                "marker": {"color": PALETTE[1]},
                "hovertemplate": "%{x:.3f} s: %{y:,} pages<extra></extra>",
            }
        )
    batches = timeline.get("batches")
    title = "Crash recovery's progress" + (f": {batches} batches" if batches else "")
    shapes = []
    if progress.get("redo_bytes"):
        total = round(progress["redo_bytes"] * IN_MIB, 2)
        shapes.append(
            {
                "type": "line",
                "xref": "paper",
                "x0": 0,
                "x1": 1,
                "y0": total,
                "y1": total,
                "line": {"dash": "dot", "color": "#666"},
            }
        )
    return {
        "data": traces,
        "layout": base_layout(
            title,
            height=320,
            xaxis={"title": {"text": "seconds from the kill"}, "rangemode": "tozero"},
            yaxis={
                "title": {"text": "MiB past the checkpoint (dotted: all to replay)"},
                "rangemode": "tozero",
            },
            yaxis2={
                "title": {"text": "pages"},
                "overlaying": "y",
                "side": "right",
                "rangemode": "tozero",
                "automargin": True,
            },
            shapes=shapes,
        ),
    }
