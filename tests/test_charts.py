"""Figures from plain rows, without a database: what each chart draws and how it reads."""

import math

import numpy as np
import pytest

from experiments.analysis.cells import ROW_FIELDS, build_cells
from experiments.charts.experiment import parameter_chart, phase_chart, redo_fit_chart
from experiments.charts.explore import explore_figure


def row(run_id: int, **values) -> dict:
    base = dict.fromkeys(ROW_FIELDS)
    base.update(
        id=run_id,
        experiment_id=1,
        status="done",
        engine="innodb",
        host_label="local",
        parameters={"buffer_pool_size": "128M", "redo_log_size": "64M", "insert_rate": 0},
        server_options={},
        repetition=1,
        imported=False,
        server_version="10.11.19",
        phases={},
        suspect=False,
        excluded=False,
        buffer_pool_bytes=128 << 20,
        redo_log_bytes=64 << 20,
        insert_rate=0,
    )
    base.update(values)
    return base


def test_the_redo_chart_reads_its_slope_as_an_apply_rate_with_an_interval():
    rng = np.random.default_rng(3)
    rows = [
        row(i, redo_bytes=int(mib * 2**20), recovery_seconds=0.1 + mib / 150 + rng.normal(0, 0.01))
        for i, mib in enumerate([10, 50, 100, 200, 300, 400])
    ]
    figure = redo_fit_chart(rows)
    (line,) = [t for t in figure["data"] if "apply rate" in t.get("name", "")]
    low, high = (float(v) for v in line["name"].split("95% CI ")[1].split(")")[0].split("-"))
    assert "MiB/s" in line["name"] and low < 150 < high  # 150 MiB/s, in the servers' units
    band = [t for t in figure["data"] if t.get("fill") == "tonexty"]
    assert len(band) == 1


def test_no_apply_rate_is_claimed_where_redo_hardly_varies():
    rows = [
        row(i, redo_bytes=32_000_000 + i * 1000, recovery_seconds=s) for i, s in enumerate([0.22, 0.21, 0.23])
    ]
    figure = redo_fit_chart(rows)
    assert len(figure["data"]) == 1 and "no apply rate" in figure["data"][0]["name"]


def test_a_parameter_chart_has_a_series_per_engine_and_other_varied_setting():
    rows = []
    for i, (engine, rate, log) in enumerate(
        [(e, r, log) for e in ("innodb", "rocksdb") for r in (0, 2000) for log in ("64M", "1G")]
    ):
        parameters = {"buffer_pool_size": "128M", "redo_log_size": log, "insert_rate": rate}
        rows.append(
            row(
                i,
                engine=engine,
                parameters=parameters,
                insert_rate=rate,
                redo_log_bytes=64 << 20 if log == "64M" else 1 << 30,
                recovery_seconds=0.2,
                downtime_seconds=0.3,
            )
        )
    figure = parameter_chart(rows, "redo_log_size", ["redo_log_size", "insert_rate", "engine"])
    names = {t["name"] for t in figure["data"] if t.get("showlegend") is not False}
    assert "MyRocks · rate 2000: crash recovery" in names and len(names) == 8  # 2 engines x 2 rates x 2
    xaxis = figure["layout"]["xaxis"]
    # binary units, as the servers' settings count (Plotly's own byte ticks are SI: "268M")
    assert xaxis["ticktext"][1:] and all(t.endswith(" MiB") for t in xaxis["ticktext"][1:]), xaxis["ticktext"]
    assert max(xaxis["tickvals"]) >= 1 << 30 and "(bytes)" not in xaxis["title"]["text"]
    assert "type" not in figure["layout"]["xaxis"]  # 64M to 1G: not two decades


def test_values_over_two_decades_get_a_log_axis():
    rows = [row(i, recovery_seconds=s, downtime_seconds=s + 0.1) for i, s in enumerate([0.05, 0.5, 40.0])]
    figure = parameter_chart(rows, "engine", ["engine"])
    assert figure["layout"]["yaxis"]["type"] == "log"
    assert figure["layout"]["xaxis"]["type"] == "category"


def test_hover_text_names_every_parameter_and_the_repetition():
    figure = parameter_chart(
        [row(7, recovery_seconds=0.3, repetition=2, server_options={"log_bin": 1})], "engine", ["engine"]
    )
    text = figure["data"][0]["text"][0]
    assert all(
        part in text for part in ("run 7", "pool 128M", "log 64M", "rate 0", "log_bin=1", "repetition 2")
    )


def test_the_phase_chart_stacks_the_restart_up_to_the_downtime_beside_the_clean_start():
    rows = [
        row(
            i,
            phases={"redo_scan": 0.1, "redo_apply": 0.05, "rollback": 0.2},
            downtime_seconds=0.4,
            clean_start_seconds=0.12,
        )
        for i in range(3)
    ]
    figure = phase_chart(build_cells(rows))
    by_name = {t["name"]: t for t in figure["data"]}
    before_ready = ("redo scan", "redo apply", "binlog / XA recovery", "rest of start-up to first query")
    assert sum(by_name[name]["x"][0] for name in before_ready) == 0.4
    assert by_name["clean start (baseline)"]["x"] == [0.12]
    assert by_name["downtime ends (first query)"]["x"] == [0.4]


def test_large_explore_sets_are_drawn_with_webgl():
    result = {
        "x": "redo_bytes",
        "y": "recovery_seconds",
        "count": 5000,
        "x_kind": "number",
        "x_title": "x",
        "y_title": "y",
        "x_unit": "B",
        "y_unit": "s",
        "series": [
            {
                "name": "InnoDB",
                "key": "innodb",
                "x": list(range(5000)),
                "y": [1.0] * 5000,
                "run_ids": list(range(5000)),
            }
        ],
        "fits": [],
    }
    assert explore_figure(result)["data"][0]["type"] == "scattergl"


def test_explore_draws_categories_as_boxes_with_every_run_beside_them():
    result = {
        "x": "engine",
        "y": "recovery_seconds",
        "count": 4,
        "x_kind": "category",
        "x_title": "storage engine",
        "y_title": "crash recovery (s)",
        "x_unit": "",
        "y_unit": "s",
        "series": [
            {
                "name": "InnoDB",
                "key": "innodb",
                "x": ["innodb"] * 4,
                "y": [0.2, 0.21, 0.3, 0.25],
                "run_ids": [1, 2, 3, 4],
            }
        ],
        "fits": [],
    }
    (trace,) = explore_figure(result)["data"]
    assert (trace["type"], trace["boxpoints"], trace["x"][0]) == ("box", "all", "InnoDB")
    assert trace["customdata"] == [1, 2, 3, 4]


def test_an_experiment_with_no_finished_run_has_no_chart_yet():
    from experiments.charts.experiment import experiment_figures

    assert experiment_figures([], [], []) == {}  # the page says the charts fill in as runs finish


def test_a_series_chart_names_its_unit_once():
    """Issue 34: 'crash recovery (s) (s)' on the series page; the label carries the unit."""
    from experiments.charts.series import series_chart

    firings = [
        {"index": i, "scheduled": f"2026-11-0{i} 02:00", "experiment": i, "builds": ["system"],
         "server_versions": ["10.11.19"], "values": {"recovery_seconds": [0.1 * i]},
         "medians": {"recovery_seconds": 0.1 * i}}
        for i in (1, 2, 3)
    ]  # fmt: skip
    title = series_chart("recovery_seconds", firings, [])["layout"]["yaxis"]["title"]["text"]
    assert title == "crash recovery (s)"
    redo = series_chart(
        "redo_bytes", [{**f, "values": {"redo_bytes": [1 << 20]}, "medians": {}} for f in firings], []
    )
    assert redo["layout"]["yaxis"]["title"]["text"] == "redo to replay"  # the ticks say MiB


def test_the_runs_table_never_shows_a_small_replay_as_nothing():
    from experiments.templatetags.units import mib

    assert [mib(v) for v in (None, 0, 44_800, 700_000, 268_435_456)] == ["-", "0", "0.0427", "0.668", "256.0"]


def test_a_straight_fit_on_log_axes_is_drawn_as_the_curve_it_is_there():
    """Issue 34: the fit on log-log axes was a segment between its ends; now points evenly spaced
    on the log scale, each on the fitted line."""
    from experiments.charts.explore import explore_figure

    xs = [1e6, 1e7, 1e8, 1e9]
    result = {
        "count": 4, "x": "redo_bytes", "y": "recovery_seconds", "x_kind": "numeric", "x_title": "redo",
        "y_title": "recovery", "x_unit": "B",
        "y_unit": "s", "group": "engine",
        "series": [{"name": "InnoDB", "key": "innodb", "x": xs, "y": [0.11, 0.2, 1.1, 10.0],
                    "run_ids": [1, 2, 3, 4]}],
        "fits": [{"series": "InnoDB", "slope": 1e-8, "intercept": 0.1, "r2": 0.99, "n": 4, "reads_as": ""}],
    }  # fmt: skip
    figure = explore_figure(result)
    fit = next(trace for trace in figure["data"] if "fit" in trace.get("name", ""))
    assert figure["layout"]["xaxis"]["type"] == "log" and len(fit["x"]) == 41
    assert fit["x"][20] == pytest.approx(math.sqrt(1e6 * 1e9))  # evenly on the log scale
    assert fit["y"] == pytest.approx([1e-8 * x + 0.1 for x in fit["x"]])  # on the line


def test_the_trade_off_keeps_cells_whose_running_side_was_measured_and_spreads_their_labels():
    """Issue 34: an imported crash of 86 s (no workload measured) stretched the trade-off's axis
    and pressed the live cells against zero; close points' labels hid each other."""
    from experiments.charts.experiment import tradeoff_chart

    rows = [
        row(i, recovery_seconds=0.1 + 0.01 * i, workload_tps=2000.0, log_bytes_written=10 << 20,
            parameters={"buffer_pool_size": "128M", "redo_log_size": log, "insert_rate": 0})
        for i, log in enumerate(["64M", "64M", "64M", "512M", "512M", "512M"], start=1)
    ] + [
        row(9, recovery_seconds=86.0, imported=True, host_label="db7.prod",
            parameters={"buffer_pool_size": "8G", "redo_log_size": "2G", "insert_rate": 0})
    ]  # fmt: skip
    figure = tradeoff_chart(build_cells(rows))
    plotted = {x for trace in figure["data"] for x in trace["x"]}
    assert plotted and max(plotted) < 1  # the imported 86 s is not on it
    tps = next(trace for trace in figure["data"] if trace["name"] == "InnoDB: TPS")
    assert tps["textposition"] == ["top center", "bottom center"]  # neighbours' labels apart
