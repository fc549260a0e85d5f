"""Plotly figure dicts built from plain rows. Pages embed them with json_script."""

from .metrics import LABELS

ENGINE_COLOURS = {"innodb": "#1f77b4", "rocksdb": "#d62728", "tokudb": "#2ca02c"}
ENGINE_NAMES = {"innodb": "InnoDB", "rocksdb": "MyRocks", "tokudb": "TokuDB"}
SERIES = (
    ("recovery_seconds", "circle", "crash recovery"),
    ("downtime_seconds", "diamond-open", "kill to first query"),
)


def recovery_vs_redo(rows: list[dict]) -> dict:
    """recovery_seconds and downtime_seconds against redo replayed (MB), one colour per engine;
    imported runs (done elsewhere) get square markers of the same colour.

    rows: dicts with run_id, engine, imported, redo_bytes, recovery_seconds, downtime_seconds and
    a label. Runs without redo_bytes are left out (they have no x); the caller says how many.
    """
    traces = []
    groups = sorted({(r["engine"], bool(r.get("imported"))) for r in rows})
    for engine, imported in groups:
        for metric, symbol, what in SERIES:
            points = [
                r
                for r in rows
                if (r["engine"], bool(r.get("imported"))) == (engine, imported)
                and r.get("redo_bytes") is not None
                and r.get(metric) is not None
            ]
            if not points:
                continue
            if imported:
                symbol = symbol.replace("circle", "square")
            traces.append(
                {
                    "type": "scatter",
                    "mode": "markers",
                    "cliponaxis": False,
                    "name": f"{ENGINE_NAMES.get(engine, engine)}{' imported' if imported else ''}: {what}",
                    "legendgroup": engine,
                    "x": [round(p["redo_bytes"] / 1e6, 3) for p in points],
                    "y": [p[metric] for p in points],
                    "customdata": [p["run_id"] for p in points],
                    "text": [p.get("label", "") for p in points],
                    "hovertemplate": "%{text}<br>redo %{x} MB<br>" + what + " %{y:.3f} s<extra></extra>",
                    "marker": {
                        "color": ENGINE_COLOURS.get(engine, "#7f7f7f"),
                        "symbol": symbol,
                        "size": 11,
                        "line": {"width": 2, "color": ENGINE_COLOURS.get(engine, "#7f7f7f")},
                    },
                }
            )
    return {
        "data": traces,
        "layout": {
            "title": {"text": "Recovery time against redo to replay"},
            "xaxis": {"title": {"text": "redo to replay (MB)"}, "rangemode": "tozero"},
            "yaxis": {"title": {"text": "seconds"}, "rangemode": "tozero"},
            "legend": {"orientation": "h", "y": -0.2},
            "margin": {"t": 50, "r": 20, "b": 40, "l": 60},
            "height": 460,
        },
    }


def chart_rows(runs) -> list[dict]:
    return [
        {
            "run_id": run.id,
            "engine": run.engine,
            "imported": run.imported,
            "redo_bytes": run.redo_bytes,
            "recovery_seconds": run.recovery_seconds,
            "downtime_seconds": run.downtime_seconds,
            "label": f"run {run.id}: {run.get_engine_display()}, "
            f"log {run.parameters.get('redo_log_size', '?')}, "
            f"pool {run.parameters.get('buffer_pool_size', '?')}"
            + (
                f"<br>imported from {run.host_label}, {run.server_version or 'version unknown'}"
                if run.imported
                else ""
            ),
        }
        for run in runs
    ]


__all__ = ["LABELS", "chart_rows", "recovery_vs_redo"]
