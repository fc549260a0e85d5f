"""What every figure shares: colours, axes and layout. Figures are Plotly figure dicts built from
plain rows and cells. Pages embed them with json_script or receive them from a JSON endpoint; no
chart logic lives in templates or scripts."""

from experiments.analysis import stats
from experiments.analysis.cells import ENGINE_NAMES
from experiments.parameters import NUMBER, SIZE, TABLE
from experiments.vocabulary import ENGINE_COLOURS
from recovery_lab_cli.units import SizeError, binary_ticks, parse_size
from runner.contract import UNSAID_DEFAULTS

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")
SERIES = (
    ("recovery_seconds", "circle", "crash recovery"),
    ("downtime_seconds", "diamond-open", "kill to first query"),
)
# Parameter axes (experiments/parameters.py): the Run column behind a number, a number or a size
# kept only in a run's parameters (a size, "96M", drawn by its bytes), or a category.
NUMERIC_AXES = {p.name: p.column for p in TABLE if p.column}
NUMERIC_PARAMETERS = tuple(p.name for p in TABLE if p.kind == NUMBER and not p.column)
SIZE_PARAMETERS = tuple(p.name for p in TABLE if p.kind == SIZE and not p.column)
WEBGL_FROM_POINTS = 2000
MAX_SERIES = 8
# Charts drawn across the whole page width (long labels, many legend entries).
WIDE_FIGURES = ("phases", "tradeoff")


def colour(name: str, index: int) -> str:
    return ENGINE_COLOURS.get(name) or PALETTE[index % len(PALETTE)]


def shown_title(title: str, unit: str) -> str:
    """An axis' name as a chart says it: bytes are drawn in binary units by their ticks ("32 MiB"),
    so "(bytes)" is dropped, on the axis and in the chart's title alike."""
    return title.replace(" (bytes)", "") if unit == "B" else title


def axis_layout(title: str, unit: str, values: list, categorical: bool = False) -> dict:
    """Title, binary ticks for bytes ("32 MiB", as the servers' settings count), and a log scale
    where values span over two decades."""
    axis: dict = {"title": {"text": title}, "automargin": True}
    if categorical:
        axis["type"] = "category"
        return axis
    log = stats.spans_decades(values)
    if log:
        axis["type"] = "log"
    else:
        axis["rangemode"] = "tozero"
    if unit == "B":  # the ticks say the unit
        axis["title"]["text"] = shown_title(title, unit)
        ticks, labels = binary_ticks(values, log=log)
        if ticks:  # no values: Plotly's own (an empty axis)
            axis.update(tickmode="array", tickvals=ticks, ticktext=labels)
        axis["hoverformat"] = ",.0f"
    return axis


def fit_grid(values: list, points: int = 41) -> list[float]:
    """Where to draw a fitted line across `values`: evenly spaced, or evenly on a logarithmic
    scale where the axis is one (axis_layout's rule), so a straight fit drawn on log axes is the
    curve it is there, not a segment between its ends."""
    numeric = [v for v in values if v is not None]
    low, high = min(numeric), max(numeric)
    if stats.spans_decades(numeric) and low > 0:
        ratio = (high / low) ** (1 / (points - 1))
        return [low * ratio**i for i in range(points)]
    return [low + (high - low) * i / (points - 1) for i in range(points)]


# The legend above the plot, under the title: the figure's top margin grows to hold it, so it
# never meets the x axis' ticks and title (below the plot it did, when they were long or the plot
# short: issue 34).
LEGEND_ABOVE = {"orientation": "h", "yref": "paper", "y": 1.02, "yanchor": "bottom", "x": 0}


def chart_title(text: str) -> dict:
    """The title at the top of the figure, above the legend whatever the legend's height."""
    return {"text": text, "font": {"size": 15}, "yref": "container", "y": 0.99, "yanchor": "top"}


# Room for an x axis' ticks and title: where automargin has to grow a margin, plotly.js draws the
# chart again (a parameter chart took 75 ms instead of 30: docs/benchmarks.md).
MARGIN = {"t": 45, "r": 20, "b": 50, "l": 60}


def base_layout(title: str, **extra) -> dict:
    return {
        "title": chart_title(title),
        "legend": LEGEND_ABOVE,
        "margin": dict(MARGIN),
        "height": 430,
        "uirevision": "keep",  # live updates keep the user's zoom and hidden traces
        **extra,
    }


def axis_value(row: dict, axis: str):
    if axis in NUMERIC_AXES:
        return row[NUMERIC_AXES[axis]]
    if axis in SIZE_PARAMETERS:  # a swept redo target, "96M": its bytes
        try:
            return parse_size(str(row["parameters"][axis]))
        except (KeyError, SizeError):
            return None
    if axis in NUMERIC_PARAMETERS:
        value = row["parameters"].get(axis, 0)
        # a stored value of another shape is no point on a numeric axis (never a failed page)
        return value if isinstance(value, int | float) and not isinstance(value, bool) else None
    if axis == "engine":
        return ENGINE_NAMES.get(row["engine"], row["engine"])
    if axis == "host":
        return row["host_label"]
    if axis == "server_version":
        return row["server_version"] or "unknown"
    if axis in UNSAID_DEFAULTS:  # a run that names none has the default (local storage, warm cache)
        value = row["parameters"].get(axis, UNSAID_DEFAULTS[axis])
        return str(value) if isinstance(value, bool) else value
    if axis in row["server_options"]:
        return str(row["server_options"][axis])
    if axis in row["parameters"]:
        return str(row["parameters"][axis])
    return None  # an option this run's engine does not take: not on this axis
