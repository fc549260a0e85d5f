"""Figures from plain rows, without a database: what each chart draws and how it reads."""

import datetime
import decimal
import json
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


def test_a_significant_slope_is_no_apply_rate_where_redo_hardly_differs_or_the_line_goes_below_zero():
    """The demo's six MyRocks runs, all at 5.6 MiB: a slope of R² 0.83 read "apply rate 0.2 MiB/s",
    28 s for what took 0.08 s. A steep line whose intercept is far below zero says as little."""
    from experiments.analysis import fits

    xs = [5.60, 5.61, 5.62, 5.63, 5.64, 5.66]
    ys = [0.078, 0.081, 0.084, 0.085, 0.088, 0.132]
    fit = fits.fit_line(xs, ys)
    assert fit.slope_ci[0] > 0  # significant...
    assert "nearly the same redo" in fits.why_no_rate(fit, xs, ys)  # ...and still no rate
    figure = redo_fit_chart(
        [
            row(i, redo_bytes=int(x * 2**20), recovery_seconds=y)
            for i, (x, y) in enumerate(zip(xs, ys, strict=True))
        ]
    )
    assert [t["name"] for t in figure["data"]] == [
        "InnoDB (no apply rate: the runs replayed nearly the same redo (within 20%): too narrow a range)"
    ]
    steep = [10, 12, 14, 16, 18, 20]
    below = [-1 + 0.1 * x + d for x, d in zip(steep, [0.01, -0.01, 0.0, 0.02, -0.02, 0.0], strict=True)]
    assert fits.why_no_rate(fits.fit_line(steep, below), steep, below).startswith(
        "the line would put a recovery of no redo at -0.99 s"
    )
    wide = [10, 50, 100, 200, 300, 400]
    fine = [0.1 + x / 150 for x in wide]
    fine[0] += 0.005
    assert fits.why_no_rate(fits.fit_line(wide, fine), wide, fine) == ""


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
    # a legend entry per series (its colour), and a key of the two symbols: 2 engines x 2 rates + 2
    assert names == {
        "InnoDB · rate 0", "InnoDB · rate 2000", "MyRocks · rate 0", "MyRocks · rate 2000",
        "crash recovery", "kill to first query",
    }  # fmt: skip
    grouped = [t["name"] for t in figure["data"] if t.get("legendgroup") == "MyRocks · rate 2000"]
    assert grouped == [
        "MyRocks · rate 2000",
        "MyRocks · rate 2000: crash recovery, median and 95% CI",
        "MyRocks · rate 2000: kill to first query",
        "MyRocks · rate 2000: kill to first query, median and 95% CI",
    ]  # one click on the entry hides or shows the series' both metrics
    xaxis = figure["layout"]["xaxis"]
    # binary units, as the servers' settings count (Plotly's own byte ticks are SI: "268M")
    assert xaxis["ticktext"][1:] and all(t.endswith(" GiB") for t in xaxis["ticktext"][1:]), xaxis["ticktext"]
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
    before_ready = ("redo scan", "redo apply", "rest of start-up (to the first query; imports: to ready)")
    assert sum(by_name[name]["x"][0] for name in before_ready) == 0.4
    # a legend entry only for the phases some cell had (no PostgreSQL phase, no binlog recovery)
    assert "binlog / XA recovery" not in by_name and not any("PostgreSQL" in name for name in by_name)
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


def test_the_trade_off_keeps_cells_whose_running_side_was_measured_and_says_why_a_panel_is_missing():
    """Issue 34: an imported crash of 86 s (no workload measured) stretched the trade-off's axis
    and pressed the live cells against zero. Issue 42: the log sizes are its axis, sorted by size
    (not as text), each point with its interval; pages written all zero (flushing held back) is
    no panel, said with what to change."""
    from experiments.charts.tradeoff import tradeoff_chart

    rows = [
        row(i, recovery_seconds=0.1 + 0.01 * i, workload_tps=2000.0 + i, log_bytes_written=(10 << 20) + i,
            parameters={"buffer_pool_size": "128M", "redo_log_size": log, "insert_rate": 0})
        for i, log in enumerate(["512M", "512M", "512M", "64M", "64M", "64M", "1G", "1G", "1G"], start=1)
    ] + [
        row(19, recovery_seconds=86.0, imported=True, host_label="db7.prod",
            parameters={"buffer_pool_size": "8G", "redo_log_size": "2G", "insert_rate": 0})
    ]  # fmt: skip
    figure = tradeoff_chart(build_cells(rows))
    layout = figure["layout"]
    assert layout["xaxis"]["categoryarray"] == ["64M", "512M", "1G"]  # by size; the import is not on it
    titles = [layout[axis]["title"]["text"] for axis in ("yaxis", "yaxis2", "yaxis3")]
    assert titles == ["crash recovery (s)", "log written while running (MiB)", "workload TPS"]
    (note,) = layout["meta"]["notes"]
    assert "every cell wrote 0 pages while running: flushing was held back" in note
    assert "parameters.flushing: [natural]" in note
    recovery = next(trace for trace in figure["data"] if trace["yaxis"] == "y")
    assert recovery["x"] == ["64M", "512M", "1G"] and all(v > 0 for v in recovery["error_y"]["array"])
    assert recovery["y"][0] == pytest.approx(0.15)  # the median of 64M's three
    # one log size trades nothing: no chart (seed 000's 12G drew three lone points)
    assert (
        tradeoff_chart(build_cells([r for r in rows if r["parameters"]["redo_log_size"] == "1G"]))["data"]
        == []
    )


def test_byte_ticks_are_in_one_unit_and_never_count_past_1000_of_it():
    """Issue 34: the series page's redo axis read "500 KiB ... 2500 KiB" beside "2.38 MiB" in its
    table; 900 MiB read "1000 MiB"."""
    from recovery_lab_cli.units import binary_ticks

    assert binary_ticks([0, 2.44 * 2**20])[1] == ["0", "0.5 MiB", "1 MiB", "1.5 MiB", "2 MiB", "2.5 MiB"]
    assert binary_ticks([0, 900 * 2**20])[1][-1] == "1 GiB"
    assert binary_ticks([0, 48 * 2**20])[1][-1] == "50 MiB"
    for high in (300, 5000, 3 * 2**20, 700 * 2**20, 5 * 2**30, 700 * 2**40):
        ticks, labels = binary_ticks([0, high])
        units = {label.split()[1] for label in labels[1:]}
        assert len(units) == 1 and all(float(label.split()[0]) < 1000 for label in labels[1:]), labels
        assert ticks[-1] >= high


def test_the_series_charts_say_bytes_by_their_ticks_and_the_apply_rate_in_mib_per_second():
    from experiments.charts.series import series_chart

    firings = [
        {"index": i, "scheduled": f"2026-11-0{i} 02:00", "experiment": i, "builds": ["system"],
         "server_versions": ["10.11"], "values": {"redo_bytes": [v], "redo_apply_mb_per_s": [100.0]},
         "medians": {"redo_bytes": v, "redo_apply_mb_per_s": 100.0}}
        for i, v in ((1, 942 * 1024), (2, 2.38 * 2**20))
    ]  # fmt: skip
    redo = series_chart("redo_bytes", firings, [])
    assert redo["layout"]["title"]["text"] == "redo to replay"
    assert redo["layout"]["yaxis"]["ticktext"][-1].endswith(" MiB")
    rate = series_chart("redo_apply_mb_per_s", firings, [])
    assert rate["layout"]["title"]["text"] == "redo apply (MiB/s)"
    assert rate["data"][0]["y"] == [pytest.approx(95.367, abs=0.001)] * 2  # 100 MB/s


@pytest.mark.parametrize(
    "value",
    [
        {"name": "</script><script>alert(1)</script>", "x": [1, 2.5, None], "note": "a & b <c> 'd' \"e\""},
        ["naïve ☃", "\u2028\u2029", {"nested": ["<!--", "-->", "]]>"]}],
        {"when": datetime.datetime(2026, 11, 27, 11, 0, tzinfo=datetime.UTC), "n": decimal.Decimal("1.5")},
    ],
)
def test_figure_json_writes_what_djangos_json_script_writes(value):
    from django.utils.html import json_script

    from experiments.templatetags.figures import figure_json

    assert figure_json(value, "figures") == json_script(value, "figures")


@pytest.mark.django_db
@pytest.mark.parametrize("x", ["redo_bytes", "buffer_pool_size", "engine"])
def test_the_explore_page_draws_the_figure_of_the_whole_answer(x):
    """explore_page_json puts PostgreSQL's arrays into a figure drawn from their ranges: the same
    figure explore_figure draws from every point (axes, ticks, fitted curves, names)."""
    from experiments.analysis.explore import Query, explore
    from experiments.charts.explore import explore_page_json
    from experiments.models import Run

    from .factories import ExperimentFactory, RunFactory

    experiment = ExperimentFactory(name='a "quoted" <name>')
    for index in range(30):
        RunFactory(
            experiment=experiment,
            status="done",
            engine=("innodb", "rocksdb")[index % 2],
            buffer_pool_bytes=2 ** (24 + index % 7),
            redo_bytes=37 * 10 ** (3 + index % 5) + index,
            recovery_seconds=0.01 * (index + 1) ** 1.5,
            crash_method="power_loss" if index % 7 == 0 else "kill",
        )
    answer = explore(Run.objects.all(), Query(x=x, y="recovery_seconds", group="experiment"))
    assert json.loads(explore_page_json(answer)) == explore_figure(answer.to_dict())
