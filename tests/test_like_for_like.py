"""Issue 42, items 3 and 5: engines compared on the phase they share (their log replay) with what
each recovery holds said, and a downtime that moved with the clean start named a start-up change,
not a recovery regression, in compare's sentences and the gate's table (which still exits by the
metric it gates on)."""

import re

import pytest

from experiments.analysis.cells import ROW_FIELDS
from experiments.analysis.compare import compare_engines
from experiments.models import Run
from recovery_lab_cli.client import comparison_rows

from .factories import ExperimentFactory, full_definition
from .test_analysis import done_run, noisy

pytestmark = pytest.mark.django_db


def test_engines_at_equal_work_are_compared_on_their_log_replay_and_say_what_each_recovery_holds():
    """The issue's case: PostgreSQL's whole recovery is longer (its data directory's fsync and its
    end-of-recovery checkpoint), while its WAL replay is shorter than InnoDB's redo apply."""
    experiment = ExperimentFactory()
    for n, (innodb, postgres) in enumerate(zip(noisy(1, 3, 1.0), noisy(2, 3, 1.0), strict=True)):
        done_run(
            experiment,
            engine="innodb",
            recovery_seconds=0.25 * innodb,
            phases={"redo_scan": 0.05 * innodb, "redo_apply": 0.2 * innodb},
            repetition=n + 1,
        )
        done_run(
            experiment,
            engine="postgresql",
            recovery_seconds=0.45 * postgres,
            phases={"data_directory_sync": 0.25 * postgres, "wal_replay": 0.05 * postgres,
                    "recovery_checkpoint": 0.15 * postgres},
            repetition=n + 1,
        )  # fmt: skip
    rows = list(Run.objects.values(*ROW_FIELDS))
    compared = compare_engines(rows)
    (cell,) = compared["cells"]
    replay, recovery, *_ = cell["sentences"]
    holds = compared["holds"]
    assert re.match(r"PostgreSQL: log replay [4-6]\.[0-9]x faster than InnoDB", replay), replay
    assert re.match(r"PostgreSQL: crash recovery 1\.[5-9]x slower than InnoDB", recovery), recovery
    assert "InnoDB, the redo scan and apply" in holds
    assert "PostgreSQL, the data directory's fsync, the WAL replay" in holds
    assert cell["metrics"]["replay_seconds"]["ratio"] == pytest.approx(0.2, rel=0.3)


def test_a_downtime_that_the_clean_start_shows_too_is_a_start_up_change_not_a_recovery_one(api):
    """10.11 against 11.8 as the issue measured it: 11.8's clean start 0.5 s slower, its downtime as
    much, its crash recovery not significantly different."""
    sides = []
    for index, (startup, name) in enumerate(((0.1, "10.11"), (0.6, "11.8"))):
        experiment = ExperimentFactory(name=name, definition=full_definition(name))
        for n, (recovery, clean) in enumerate(
            zip(noisy(index, 4, 0.3), noisy(10 + index, 4, startup), strict=True)
        ):
            done_run(
                experiment,
                recovery_seconds=recovery,
                downtime_seconds=recovery + clean + 0.05,
                clean_start_seconds=clean,
                repetition=n + 1,
            )
        sides.append(experiment)
    a, b = sides
    answer = api.get("/api/compare/", {"experiments": f"{a.id},{b.id}"}).json()
    (cell,) = answer["cells"]
    change = cell["startup_change"][str(b.id)]
    assert change.startswith("a start-up change, not a recovery one: the clean start grew by 0.5")
    (regression,) = cell["regressions"]  # the downtime, named for what moved
    assert "downtime" in regression and "a start-up change" in regression
    downtime = next(s for s in cell["sentences"] if "in downtime" in s or ": downtime" in s)
    assert "a start-up change" in downtime
    recovery = next(s for s in cell["sentences"] if "crash recovery" in s)
    assert "start-up" not in recovery
    assert {"clean_start_seconds", "startup_rest_seconds"} <= set(cell["metrics"])
    # the gate on downtime: its verdict by the metric, its text naming the part that moved
    rows, regressions, _ = comparison_rows(answer, ["recovery_seconds", "downtime_seconds"], 0.25)
    by_metric = {row[3]: row[-1] for row in rows}
    assert not by_metric["recovery_seconds"].startswith("REGRESSION")
    assert (
        by_metric["downtime_seconds"].startswith("REGRESSION")
        and "a start-up change" in by_metric["downtime_seconds"]
    )
    assert regressions == 1
