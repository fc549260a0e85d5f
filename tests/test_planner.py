"""The recovery-time planner: its answer on runs with a known line, its refusals, and its API."""

import re

import numpy as np
import pytest

from experiments.analysis.planner import MIB, PlanRefused, Point, plan, round_log_size
from experiments.models import RunStatus

from .factories import ExperimentFactory, RunFactory

# The truth the runs are drawn from: 1.5 s to restart, 4 s more per GB of redo.
INTERCEPT, SLOPE = 1.5, 4e-9


def points(seed: int, n: int = 12, noise: float = 0.2) -> list[Point]:
    rng = np.random.default_rng(seed)
    redo = rng.uniform(0.1e9, 2e9, n)
    downtime = INTERCEPT + SLOPE * redo + rng.normal(0, noise, n)
    return [
        Point(i, float(x), float(y), 4 << 30) for i, (x, y) in enumerate(zip(redo, downtime, strict=True))
    ]


@pytest.mark.parametrize("seed", range(20))
def test_answer_and_interval_hold_the_true_redo_for_the_target(seed):
    target = 6.0
    truth = (target - INTERCEPT) / SLOPE  # 1.125 GB
    answer = plan(points(seed), target)
    low, high = answer.interval
    assert low < truth < high
    assert low <= answer.max_redo_bytes <= high
    assert answer.max_redo_bytes == pytest.approx(truth, rel=0.15)
    assert answer.based_on_runs == 12 and not answer.extrapolated
    # a redo log no larger than the low end keeps the checkpoint age, the redo to replay, under it
    assert answer.log_size_suggestion <= low and answer.log_size_suggestion % (64 * MIB) == 0


def test_more_noise_widens_the_interval_around_the_same_answer():
    calm, noisy = plan(points(1, noise=0.05), 6.0), plan(points(1, noise=0.8), 6.0)
    assert np.ptp(noisy.interval) > 3 * np.ptp(calm.interval)


def test_a_target_beyond_the_measured_redo_is_flagged_as_extrapolated():
    answer = plan(points(3), 30.0)  # (30 - 1.5) / 4 = 7.1 GB; runs replayed at most 2 GB
    assert answer.extrapolated
    assert any("outside the redo these runs replayed" in w for w in answer.warnings)


def test_write_rate_and_page_writes():
    written = 100 * MIB
    samples = [(256 * MIB, 5000.0, written), (256 * MIB, 7000.0, written), (1024 * MIB, 1000.0, written)]
    answer = plan(points(2), 6.0, write_mb_per_s=20, page_samples=samples)
    assert answer.seconds_of_writes == pytest.approx(answer.log_size_suggestion / 20e6, abs=0.1)
    small, large = answer.page_writes
    assert (small.redo_log_bytes, small.pages_per_mib, small.runs) == (256 * MIB, 60.0, 2)
    # pages per MiB at the rate typed in MB/s (10^6 bytes): 10 x 20e6 / 2^20 = 190.7 pages/s
    assert large.pages_per_mib == 10.0 and large.pages_per_second == pytest.approx(190.7, abs=0.05)


@pytest.mark.parametrize(
    ("make", "target", "reason"),
    [
        (lambda: points(0, n=4), 6.0, "needs at least 5"),
        (lambda: [Point(i, 1e9, 2.0 + i / 10) for i in range(6)], 6.0, "the same redo"),
        (lambda: [Point(i, i * 1e8, 2.0 + (-1) ** i) for i in range(8)], 6.0, "does not grow measurably"),
        (lambda: points(0), 1.0, "below what this host takes to restart"),
        (lambda: points(0), 0.0, "positive number of seconds"),
    ],
)
def test_refuses_with_a_reason(make, target, reason):
    with pytest.raises(PlanRefused) as refused:
        plan(make(), target)
    assert reason in refused.value.reason


def test_log_sizes_round_down_to_what_a_dba_types():
    assert round_log_size(1000 * MIB) == 960 * MIB
    assert round_log_size(100.7 * MIB) == 100 * MIB
    assert round_log_size(0.5 * MIB) == 0


TARGET = "target_downtime_seconds"


# --- GET /api/planner/ ------------------------------------------------------------------------


def make_runs(host: str = "db7", count: int = 8, **fields):
    for point in points(5, n=count):
        RunFactory(
            status=RunStatus.DONE,
            host_label=host,
            engine="innodb",
            redo_bytes=int(point.redo_bytes),
            downtime_seconds=point.downtime_seconds,
            redo_log_bytes=4 << 30,
            **fields,
        )


@pytest.mark.django_db
def test_api_answers_with_the_contract_fields(api):
    make_runs()
    make_runs(host="other")  # another host's runs do not count
    RunFactory(status=RunStatus.DONE, host_label="db7", engine="innodb", redo_bytes=9e9, downtime_seconds=1,
               suspect=True, suspect_reason="test")  # fmt: skip
    response = api.get("/api/planner/", {"host": "db7", "engine": "innodb", "target_downtime_seconds": 6})
    assert response.status_code == 200, response.content
    body = response.json()
    assert {"max_redo_bytes", "interval", "based_on_runs", "extrapolated", "log_size_suggestion"} <= set(body)
    assert body["based_on_runs"] == 8  # not the suspect run, not the other host's
    assert body["interval"][0] < (6 - INTERCEPT) / SLOPE < body["interval"][1]


@pytest.mark.django_db
def test_api_takes_the_write_rate_from_a_run(api):
    make_runs()
    source = RunFactory(log_bytes_written=600_000_000, rows_inserted=30_000, achieved_insert_rate=1000)
    response = api.get(
        "/api/planner/",
        {"host": "db7", "engine": "innodb", "target_downtime_seconds": 6, "rate_run": source.id},
    )
    assert response.status_code == 200, response.content
    assert response.json()["write_mb_per_s"] == 20.0  # 600 MB over 30,000 rows at 1000 rows/s


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"engine": "innodb", "target_downtime_seconds": 6}, "host"),
        ({"host": "db7", "engine": "falcon", "target_downtime_seconds": 6}, "engine"),
        ({"host": "db7", "engine": "innodb", "target_downtime_seconds": "-1"}, "target_downtime_seconds"),
        (
            {"host": "db7", "engine": "innodb", "target_downtime_seconds": "6;reboot"},
            "target_downtime_seconds",
        ),
        ({"host": "db7", "engine": "innodb", "target_downtime_seconds": 6, "rate_run": 999999}, "rate_run"),
    ],
)
def test_api_bad_parameters_get_400_on_the_field(api, query, field):
    make_runs()
    response = api.get("/api/planner/", query)
    assert response.status_code == 400
    assert field in response.json()


@pytest.mark.django_db
def test_api_refuses_with_422_and_the_reason(api):
    make_runs(count=3)
    response = api.get("/api/planner/", {"host": "db7", "engine": "innodb", "target_downtime_seconds": 6})
    assert response.status_code == 422
    assert response.json()["based_on_runs"] == 3 and "needs at least 5" in response.json()["detail"]
    none = api.get("/api/planner/", {"host": "db7", "engine": "rocksdb", "target_downtime_seconds": 6})
    assert none.status_code == 422 and "no finished run of rocksdb on db7" in none.json()["detail"]


def test_a_host_with_no_runs_is_not_found_and_a_malformed_target_is_a_bad_request(api):
    """Well formed but nothing measured there: 404 saying so; a target out of range: 400."""
    query = {"host": "db-nowhere", "engine": "innodb", "target_downtime_seconds": 6}
    unknown = api.get("/api/planner/", query)
    assert unknown.status_code == 404 and "no run was measured on 'db-nowhere'" in unknown.json()["host"][0]
    bad = api.get("/api/planner/", {**query, "target_downtime_seconds": -1})
    assert bad.status_code == 400 and "target_downtime_seconds" in bad.json()


@pytest.mark.django_db
def test_the_answer_names_what_it_stands_on_can_be_limited_and_says_when_workloads_are_pooled(api):
    from experiments.reports.planner import plan_sentences

    inserts = ExperimentFactory()  # oltp_write_only 1x1000 by the factory's definition
    other = ExperimentFactory(
        definition={
            **inserts.definition,
            "workload": {**inserts.definition["workload"], "name": "oltp_insert"},
        }
    )
    make_runs(experiment=inserts, buffer_pool_bytes=1 << 30)
    make_runs(experiment=other, buffer_pool_bytes=128 << 20, pages_written=0, log_bytes_written=10**6)
    query = {"host": "db7", "engine": "innodb", "target_downtime_seconds": 6}
    pooled = api.get("/api/planner/", query).json()
    assert pooled["based_on_runs"] == 16 and pooled["experiment_ids"] == sorted([inserts.id, other.id])
    assert len(pooled["workloads"]) == 2 and any("2 workload shapes" in w for w in pooled["warnings"])
    assert pooled["page_writes"] == []  # runs that counted no page writes say nothing of them
    for limit in ({"workload": "oltp_insert"}, {"experiments": str(other.id)}, {"buffer_pool_size": "128M"}):
        limited = api.get("/api/planner/", {**query, **limit}).json()
        assert limited["based_on_runs"] == 8 and limited["experiment_ids"] == [other.id], limit
        assert not any("workload shapes" in w for w in limited["warnings"])
    sentences = " ".join(plan_sentences(pooled, query))
    assert f"from 16 runs of experiments #{min(inserts.id, other.id)}, #" in sentences
    assert re.search(r"up to [0-9.,]+ (MiB|GiB) of redo to replay", sentences), sentences
    assert " MB " not in sentences and "GB" not in sentences
    assert api.get("/api/planner/", {**query, "buffer_pool_size": "lots"}).status_code == 400


@pytest.mark.django_db
def test_the_answer_holds_the_worst_case_against_systemd_and_a_startup_probe(client, user):
    """Issue 35: the suggested log keeps a crash under the target, so the target is the worst
    case; a target of 120 s outlasts systemd's default start timeout and a 60 s startupProbe."""
    make_runs()
    client.force_login(user)
    query = {"host": "db7", "engine": "innodb", "target_downtime_seconds": 120, "startup_probe_seconds": 60}
    page = client.get("/planner/", query).content.decode()
    assert (
        "With that log, systemd&#x27;s default start timeout would kill this server during recovery at the "
        "worst case (up to 120 s, over 90 s)." in page
    )
    assert "With that log, a startupProbe of 60 s would kill this server during recovery" in page
    calm = client.get("/planner/", {**query, "target_downtime_seconds": 6, "startup_probe_seconds": ""})
    assert "With that log, systemd&#x27;s default start timeout leaves 84 s to spare" in calm.content.decode()


@pytest.mark.django_db
def test_the_planner_plans_without_disturbed_runs_when_it_can_and_says_so_and_names_pooled_versions(api):
    """Issue 42: it advised a log from nine disturbed runs without a word, and pooled 10.11 and
    11.8 runs warning only about workloads."""
    make_runs(server_version="10.11.19-MariaDB")
    make_runs(count=5, disturbed=True, disturbed_reason="a backup", server_version="10.11.19-MariaDB")
    query = {"host": "db7", "engine": "innodb", "target_downtime_seconds": 6}
    answer = api.get("/api/planner/", query).json()
    assert answer["based_on_runs"] == 8 and answer["disturbed_runs"] == 5 and answer["disturbed_left_out"]
    assert "5 of the matching runs were measured on a disturbed host" in " ".join(answer["warnings"])
    make_runs(server_version="11.8.9-MariaDB")
    pooled = api.get("/api/planner/", query).json()
    assert pooled["server_versions"] == ["10.11.19-MariaDB", "11.8.9-MariaDB"]
    assert any(
        "2 server versions (10.11.19-MariaDB, 11.8.9-MariaDB): the line pools them" in w
        for w in pooled["warnings"]
    )
    only = api.get("/api/planner/", {**query, "server_version": "11.8.9-MariaDB"}).json()
    assert only["based_on_runs"] == 8 and not any("server versions" in w for w in only["warnings"])


@pytest.mark.django_db
def test_a_report_plans_for_the_teams_recovery_time_objective_when_one_is_set(settings):
    from experiments.reports.planner import sweep_plans

    experiment = ExperimentFactory()
    make_runs(experiment=experiment)
    settings.RTO_SECONDS = None
    (measured,) = sweep_plans(experiment.id)
    assert measured.sentences[0].startswith("No recovery time objective is set (RTO_SECONDS), so the target")
    settings.RTO_SECONDS = 6.0
    (team,) = sweep_plans(experiment.id)
    assert (
        team.sentences[0]
        == "The target is the team's recovery time objective: 6 s of downtime (RTO_SECONDS)."
    )
    assert "under 6 s" in " ".join(team.sentences)
