"""Comparisons know what differs between the definitions (issue 31, item 4): every key that
differs is listed by the API, the page, the report and the client's table; cells whose crash
plans differ are not compared as equals; sentences about experiments with other workloads say
so; and how far apart the experiments ran is said."""

from datetime import timedelta

import pytest
from django.utils import timezone

from experiments.analysis.differences import definition_differences
from recovery_lab_cli.client import ClientError, comparison_rows, differences_text, refuse_to_pass

from .factories import ExperimentFactory, full_definition
from .test_analysis import done_run, noisy

pytestmark = pytest.mark.django_db

WORKLOAD = {"name": "oltp_insert", "tables": 1, "table_size": 1000, "threads": 1}


def pair(first: dict, second: dict, slower: float = 1.0, hours_apart: float = 0) -> tuple:
    """Two experiments of the given definitions, three runs a side, the second's `slower` times
    the first's."""
    start = timezone.now() - timedelta(days=2)
    experiments = []
    for index, (definition, factor) in enumerate(((first, 1.0), (second, slower))):
        experiment = ExperimentFactory(name=definition["name"], definition=definition)
        begun = start + timedelta(hours=hours_apart * index)
        for n, seconds in enumerate(noisy(index, 3, 2.0 * factor)):
            done_run(
                experiment,
                recovery_seconds=seconds,
                downtime_seconds=seconds + 0.5,
                started_at=begun + timedelta(minutes=n),
                finished_at=begun + timedelta(minutes=n + 1),
            )
        experiments.append(experiment)
    return experiments


def test_the_events_of_a_workload_five_times_longer_are_listed_among_the_differences(api):
    a, b = pair(
        full_definition("six thousand", workload={**WORKLOAD, "events": 6000}, repetitions=3),
        full_definition("thirty thousand", workload={**WORKLOAD, "events": 30000}, repetitions=3),
        slower=3.0,
    )
    answer = api.get("/api/compare/", {"experiments": f"{a.id},{b.id}"}).json()
    assert [d["key"] for d in answer["differences"]] == ["workload.events"]
    (events,) = answer["differences"]
    assert events["values"] == {str(a.id): "6000", str(b.id): "30000"} and events["kind"] == "workload"
    # the same cell still compares, and each sentence says it is not like for like
    (cell,) = answer["cells"]
    assert cell["comparable"] and cell["sentences"]
    assert all("not like for like: workload.events: 6000 in" in line for line in cell["sentences"])
    assert all("not like for like" in line for line in cell["regressions"]) and cell["regressions"]
    # the gate's and compare's table say it, where they said "changed: -"
    assert "workload.events: 6000 in #" in differences_text(answer)


def crashed_at(redo: str) -> dict:
    crash = {"when": "at_redo_bytes", "redo_bytes": redo}
    return full_definition(f"at {redo}", crash=crash, parameters={"redo_log_size": ["1G"]})


def test_experiments_crashed_at_other_redo_targets_are_not_compared_as_equals(api, client, user):
    a, b = pair(
        crashed_at("16M"),
        crashed_at("160M"),
        slower=7.0,
        hours_apart=30,
    )
    answer = api.get("/api/compare/", {"experiments": f"{a.id},{b.id}"}).json()
    assert [d["key"] for d in answer["differences"]] == ["crash.redo_bytes"]
    (cell,) = answer["cells"]
    assert cell["comparable"] is False and cell["regressions"] == []
    (sentence,) = cell["sentences"]
    assert "not compared, the crash plans differ (crash.redo_bytes: 16M in" in sentence
    assert "significant" not in sentence and "slower" not in sentence
    assert answer["apart"].startswith("ran 1.2 days apart")  # 30 h less the first's 3 min
    # the client's table: no verdict on such a cell, and it is not a pass
    rows, regressions, undecided = comparison_rows(answer, ["recovery_seconds"], 0.0)
    assert regressions == 0 and undecided == 1 and rows[0][-1] == "not compared: the crash plans differ"
    # the page and the report say why
    client.force_login(user)
    for url in ("/compare/", "/compare/report/"):
        page = client.get(url, {"experiments": f"{a.id},{b.id}"}).content.decode()
        assert "crash.redo_bytes" in page and "The crash plans differ" in page, url
        assert "ran 1.2 days apart" in page


def test_the_same_definitions_differ_in_nothing_and_a_build_named_on_one_side_differs():
    same = full_definition("x", workload=WORKLOAD)
    assert definition_differences({"1": same, "2": {**same, "name": "y", "tags": ["t"]}}) == []
    built = full_definition("x", workload=WORKLOAD, parameters={"server_build": ["11.8.3"]})
    (build,) = definition_differences({"1": same, "2": built})
    assert build["key"] == "parameters.server_build" and build["values"] == {"1": "system", "2": "11.8.3"}
    # an imported experiment states nothing: every key of the other is listed, as not stated
    imported = definition_differences({"1": same, "2": {"imported": True}})
    assert {d["values"]["2"] for d in imported} == {"-"} and "crash.when" in [d["key"] for d in imported]


def test_the_gate_decides_nothing_on_runs_of_a_disturbed_host_unless_asked(api):
    """Issue 42: a slowdown measured while other work used the host is not a regression to fail a
    build on: the gate's row is 'undecided' (exit 2); compare, and a gate asked to decide anyway,
    keep the verdict with the disturbance said beside it."""
    before, after = full_definition("before", workload=WORKLOAD), full_definition("after", workload=WORKLOAD)
    a, b = pair(before, after, 3.0)
    b.runs.update(disturbed=True, disturbed_reason="other processes used 40% of the CPUs")
    answer = api.get("/api/compare/", {"experiments": f"{a.id},{b.id}"}).json()
    assert answer["cells"][0]["disturbed_runs"] == 3
    rows, regressions, undecided = comparison_rows(answer, ["recovery_seconds"], 0.25, decide_disturbed=False)
    assert (regressions, undecided) == (0, 1)
    assert rows[0][-1].startswith("undecided: host disturbed in 3 runs; measured B 3.")
    assert "REGRESSION" not in rows[0][-1]
    with pytest.raises(ClientError, match="nothing decided: 1 comparison.* --decide-on-disturbed-host"):
        refuse_to_pass(
            answer, *comparison_rows(answer, ["recovery_seconds"], 0.25, decide_disturbed=False)[::2]
        )
    rows, regressions, undecided = comparison_rows(answer, ["recovery_seconds"], 0.25)
    assert (regressions, undecided) == (1, 0)
    assert (
        rows[0][-1].startswith("REGRESSION: B slower beyond 25%")
        and "(host disturbed in 3 runs)" in rows[0][-1]
    )
