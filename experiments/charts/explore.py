"""The explore page's figure: any metric against any parameter or metric, grouped, with fits."""

import json
import secrets

from experiments.analysis.cells import ENGINE_NAMES
from experiments.analysis.explore import ExploreResult
from experiments.charts.layout import (
    WEBGL_FROM_POINTS,
    axis_layout,
    base_layout,
    colour,
    fit_grid,
    shown_title,
)


def drawn_with_webgl(count: int) -> bool:
    """Large sets are drawn with WebGL (scattergl): SVG slows past a few thousand points."""
    return count > WEBGL_FROM_POINTS


def explore_figure(result: dict) -> dict:
    """The /explore/ chart from GET /api/explore/'s answer; WebGL for large sets."""
    count = result["count"]
    categorical = result["x_kind"] == "category"
    traces = []
    large = drawn_with_webgl(count)
    for index, series in enumerate(result["series"]):
        xs = series["x"]
        if result["x"] == "engine":
            xs = [ENGINE_NAMES.get(x, x) for x in xs]
        trace = {
            "type": "scattergl" if large else "scatter",
            "mode": "markers",
            "name": f"{series['name']} ({series.get('n', len(series['run_ids']))})",
            "x": xs,
            "y": series["y"],
            "customdata": series["run_ids"],
            "hovertemplate": "run %{customdata}<br>x %{x}<br>y %{y}<extra>" + series["name"] + "</extra>",
            "marker": {"color": colour(series["key"], index), "size": 7 if large else 9, "opacity": 0.7},
        }
        if categorical and not large:
            # Runs of one category would sit on one another: a box with every run beside it.
            trace.update(
                type="box",
                boxpoints="all",
                jitter=0.5,
                pointpos=0,
                line={"width": 1},
                fillcolor="rgba(0,0,0,0)",
                offsetgroup=str(index),
            )
            trace.pop("mode")
        traces.append(trace)
    for fit in result["fits"]:
        series = next(s for s in result["series"] if s["name"] == fit["series"])
        numeric = [x for x in series["x"] if x is not None]
        if len(numeric) < 2:
            continue
        ends = fit_grid(numeric)  # the fitted curve, as log axes show it
        traces.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": f"{fit['series']}: fit, "
                + (fit["reads_as"] or f"slope {fit['slope']:.4g}")
                + f", R² {fit['r2']:.2f}",
                "x": ends,
                "y": [fit["slope"] * x + fit["intercept"] for x in ends],
                "line": {"dash": "dash", "color": colour(series["key"], result["series"].index(series))},
                "hoverinfo": "skip",
            }
        )
    all_x = [x for s in result["series"] for x in s["x"]]
    all_y = [y for s in result["series"] for y in s["y"]]
    return {
        "data": traces,
        "layout": base_layout(
            f"{shown_title(result['y_title'], result['y_unit'])} against "
            f"{shown_title(result['x_title'], result['x_unit'])}",
            height=560,
            boxmode="group",
            xaxis=axis_layout(result["x_title"], result["x_unit"], [] if categorical else all_x, categorical),
            yaxis=axis_layout(result["y_title"], result["y_unit"], all_y),
        ),
    }


def explore_page_json(result: ExploreResult) -> str:
    """explore_figure() of the answer as JSON text, for the page. Against a numeric x the points go
    from PostgreSQL's JSON into the text as they are: the figure is drawn from the series' ranges
    (to_outline) and each series' arrays are put in its trace's place. 99,500 points had been
    parsed into Python and written out again, 0.3 s of the page (docs/benchmarks.md)."""
    if not result.numeric:  # categories are renamed and boxed in Python: explore_figure's own way
        return json.dumps(explore_figure(result.to_dict()))
    figure = explore_figure(result.to_outline())
    arrays = {}
    token = secrets.token_hex(8)  # no name a user gave can be a stand-in
    for index, series in enumerate(result.series):  # the first traces are the series', in order
        for field, text in (("x", series["x"]), ("y", series["y"]), ("customdata", series["run_ids"])):
            stand_in = f"{token} {index} {field}"
            figure["data"][index][field] = stand_in
            arrays[json.dumps(stand_in)] = text
    page = json.dumps(figure)
    for stand_in, text in arrays.items():
        page = page.replace(stand_in, text, 1)
    return page
