"""A calibrated test (issue 31, item 3): identical experiments are not called different, on a quiet
host or beside other work; A/A checks measure a host's own noise and raise the floor a difference
on it must clear."""

import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from experiments import services
from experiments.analysis import aa
from experiments.analysis.cells import ROW_FIELDS
from experiments.analysis.compare import comparison
from experiments.models import Experiment, Run, RunStatus

from .conftest import wait_for
from .factories import ExperimentFactory, HostFactory, RunFactory, UserFactory
from .test_analysis import done_run, noisy

ROOT = Path(__file__).resolve().parent.parent
# Other processes' share of the host's CPU (the median of each experiment's runs) that differs
# this much between two experiments: they ran on a host loaded differently.
LOAD_MOVED = 0.15


def definition(name: str) -> dict:
    return {
        "name": name,
        "hosts": ["local"],
        "engines": ["innodb", "rocksdb"],
        "parameters": {"buffer_pool_size": ["256M"], "redo_log_size": ["256M"]},
        "workload": {"name": "oltp_insert", "tables": 2, "table_size": 20000, "threads": 2, "events": 12000},
        "crash": {"method": "sigkill", "when": "after_workload"},
        "repetitions": 3,
    }


def significant_sentences(result: dict) -> list[str]:
    """Every sentence of the comparison that calls a difference significant."""
    return [
        line for cell in result["cells"] for line in cell["sentences"] if "faster" in line or "slower" in line
    ]


@pytest.mark.mariadb
@pytest.mark.quiet  # its first two experiments must be measured on a quiet host
@pytest.mark.django_db(transaction=True)
def test_identical_experiments_are_not_called_different_quiet_or_beside_two_cpu_bound_processes(
    local_host, celery_worker_process
):
    def run(name: str) -> Experiment:
        experiment, _ = services.create_experiment(definition(name))
        runs = Run.objects.filter(experiment=experiment)
        wait_for(lambda: not runs.exclude(status__in=RunStatus.finished()).exists(), 900, f"{name}: 6 runs")
        assert list(runs.values_list("status", flat=True)) == [RunStatus.DONE] * 6, list(runs.values("error"))
        return experiment

    first, second = run("A/A: first"), run("A/A: second")
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        busy = run("A/A: beside two CPU-bound processes")
    finally:
        for hog in hogs:  # ours, by pid
            hog.kill()
            hog.wait()

    quiet = comparison([first.id, second.id])
    beside = comparison([first.id, busy.id])
    measured = {
        label: {
            cell["engine"]: {m: cell["metrics"][m] for m in aa.AA_METRICS if m in cell["metrics"]}
            for cell in result["cells"]
        }
        for label, result in (("quiet", quiet), ("beside two CPU-bound processes", beside))
    }
    (ROOT / "test-artifacts").mkdir(exist_ok=True)
    (ROOT / "test-artifacts" / "aa-identical-experiments.json").write_text(json.dumps(measured, indent=1))
    # the same definition, each engine a cell, every metric compared
    assert quiet["differences"] == [] and {c["engine"] for c in quiet["cells"]} == {"innodb", "rocksdb"}
    assert "no A/A check of local on record" in quiet["noise_floor"]["local"]
    # beside two CPU-bound loops on this 2-CPU host the runs say so, and so does any sentence that
    # calls a difference significant
    disturbed = Run.objects.filter(experiment=busy, disturbed=True)
    assert disturbed.count() >= 3, list(Run.objects.filter(experiment=busy).values("noise"))
    assert all(
        "of the host's CPU" in reason for reason in disturbed.values_list("disturbed_reason", flat=True)
    )
    # what each run recorded: a calibration, and what other processes took in each window (light
    # tests may run beside this one; two CPU-bound loops on this 2-CPU host are most of it)
    for noise in Run.objects.filter(experiment=busy).values_list("noise", flat=True):
        assert set(noise) == {"calibration", "workload", "restart"}, noise
        assert noise["calibration"]["cpu_loop_s"] > 0 and noise["calibration"]["fsync_loop_s"] > 0
        assert noise["workload"]["cpus"] >= 1
    shares = [n["workload"]["others_cpu_share"] for n in disturbed.values_list("noise", flat=True)]
    assert max(shares) > 0.3, shares
    # kept, not excluded: a person decides
    assert not disturbed.filter(excluded=True).exists()
    for line in significant_sentences(beside):
        assert "(on a disturbed host:" in line, line
    for cell in beside["cells"]:
        assert cell["disturbed_runs"] >= 1
    # Issue 31's requirement: on a quiet host nothing is called different. Each of the 18 tests
    # at 5% called one in 3 of 4 runs of this test (a 0.55x or 0.76x recovery, p ~0.02, past the
    # 1.25x floor); adjusted over the page (Benjamini-Hochberg) such a p is not enough, and the
    # sentence says what it was alone.
    # The wait for a core is left out: it measures the host, not the server, and the light tests
    # the other pytest process runs beside this one move it (a CI run: 41% of A's recovery against
    # 1.7% of B's, p 0.017, tested alone as every resource metric is; no sentence called it).
    called = [
        (cell["engine"], metric, result["ratio"], result["p_value"], result["p_adjusted"])
        for cell in quiet["cells"]
        for metric, block in cell["metrics"].items()
        for result in block["versus"].values()
        if result["significant"] and metric != "recovery_core_wait_share"
    ]
    # Identical experiments are measured alike where the host was loaded alike: beside the light
    # tests both are (each run records what other processes took, about 45% of the CPU). Where
    # the load moved between them (work outside this suite: a CI run beside a CPU-bound process
    # ran the first with twice the second's, and called InnoDB 0.69x), they were not measured
    # alike; then the product's own rule holds, as beside the two loops above: every sentence
    # that calls a difference says the host was disturbed.
    shares = {
        experiment.name: statistics.median(
            noise["workload"]["others_cpu_share"]
            for noise in Run.objects.filter(experiment=experiment).values_list("noise", flat=True)
        )
        for experiment in (first, second)
    }
    if abs(shares[first.name] - shares[second.name]) > LOAD_MOVED:
        for line in significant_sentences(quiet):
            assert "(on a disturbed host:" in line, (line, shares)
        return
    assert not called and not significant_sentences(quiet), (called, significant_sentences(quiet), shares)


def aa_rows(check: Experiment) -> list[dict]:
    return list(Run.objects.filter(experiment=check).values(*ROW_FIELDS))


@pytest.mark.django_db
def test_an_a_a_check_runs_each_repetition_twice_interleaved_and_its_copies_are_compared():
    HostFactory(name="local")
    source = ExperimentFactory(
        definition={**definition("source"), "engines": ["innodb"], "repetitions": 2}, name="source"
    )
    check = services.start_aa_check("local", source.id, UserFactory())
    assert check.aa_check and check.name == "A/A check of local: source" and check.tags == ["aa-check"]
    runs = list(check.runs.order_by("matrix_index"))
    # the round-robin order: A, B, A, B
    assert [aa.copy_of({"repetition": r.repetition}) for r in runs] == ["A", "B", "A", "B"]
    for run, seconds in zip(runs, [1.0, 1.5, 1.02, 1.55], strict=True):  # copy B 1.5x slower
        Run.objects.filter(pk=run.pk).update(
            status=RunStatus.DONE, recovery_seconds=seconds, downtime_seconds=seconds
        )
    (cell,) = aa.aa_cells(aa_rows(check))
    recovery = cell["metrics"]["recovery_seconds"]
    assert recovery["n"] == [2, 2] and 1.45 < recovery["ratio"] < 1.55
    spread = aa.host_spreads({"local", "other"})
    assert set(spread) == {"local"} and spread["local"]["recovery_seconds"]["checks"] == 1
    # the floor on local is now the largest difference its identical copies showed
    assert aa.floor({"local"}, "recovery_seconds", spread) == pytest.approx(recovery["ratio"], rel=1e-3)
    assert aa.floor({"other"}, "recovery_seconds", spread) == aa.DEFAULT_MIN_EFFECT


@pytest.mark.django_db
def test_an_a_a_check_too_large_to_double_is_refused_and_stores_nothing():
    HostFactory(name="local")
    source = ExperimentFactory(definition={**definition("source"), "repetitions": 11})
    with pytest.raises(services.DefinitionError, match="at most 10 repetitions"):
        services.start_aa_check("local", source.id)
    assert not Experiment.objects.filter(aa_check=True).exists()


@pytest.mark.django_db
def test_a_difference_within_the_host_s_a_a_spread_is_noise_and_the_sentence_says_so():
    first, second = ExperimentFactory(), ExperimentFactory()
    for seconds in noisy(1, 5, 1.0):
        done_run(first, recovery_seconds=seconds)
    for seconds in noisy(2, 5, 1.4):
        done_run(second, recovery_seconds=seconds)
    # a t-test calls 1.4x with 10% noise significant, and so does the default floor
    (cell,) = comparison([first.id, second.id])["cells"]
    assert cell["metrics"]["recovery_seconds"]["significant"]
    # an A/A check on this host whose identical copies came out 1.5x apart: 1.4x is noise here
    check = ExperimentFactory(aa_check=True)
    for repetition, seconds in enumerate([1.0, 1.5, 1.0, 1.5], start=1):
        RunFactory(experiment=check, repetition=repetition, status=RunStatus.DONE, recovery_seconds=seconds)
    result = comparison([first.id, second.id])
    recovery = result["cells"][0]["metrics"]["recovery_seconds"]
    assert not recovery["significant"] and recovery["within_floor"] and recovery["min_effect"] == 1.5
    (line,) = [s for s in result["cells"][0]["sentences"] if "crash recovery" in s]
    assert line.endswith("within the noise floor of 1.50x)"), line
    assert result["noise_floor"]["local"].startswith("local's A/A spread 1.50x")


def test_the_hosts_page_shows_each_host_s_a_a_checks_and_starts_one(client, db):
    host = HostFactory(name="local")
    experimenter = UserFactory(username="tester")
    source = ExperimentFactory(definition={**definition("source"), "engines": ["innodb"]}, name="source")
    client.force_login(experimenter)
    page = client.get("/hosts/").content.decode()
    assert "no A/A check of local on record" in page and f'value="{source.id}"' in page
    answer = client.post(f"/hosts/{host.id}/aa-check/", {"experiment": str(source.id)}, follow=True)
    check = Experiment.objects.get(aa_check=True)
    assert f"A/A check #{check.id} queued on local: 6 runs, interleaved" in answer.content.decode()
    refused = client.post(f"/hosts/{host.id}/aa-check/", {"experiment": "99999999999999999999"}, follow=True)
    assert "choose an experiment whose definition the A/A check runs" in refused.content.decode()
    assert Experiment.objects.filter(aa_check=True).count() == 1


def test_the_hosts_page_says_why_an_a_a_cell_has_no_interval(client, db):
    """A copy whose recovery was shorter than its log resolves (0 s) leaves no interval: the
    page says so, beside the ratio, instead of a ratio that looks as sure as the others."""
    host = HostFactory(name="local")
    check = ExperimentFactory(aa_check=True, definition={**definition("nightly"), "hosts": ["local"]})
    for repetition, seconds in enumerate([1.0, 0.0, 1.1, 1.2], start=1):
        RunFactory(
            experiment=check,
            host=host,
            repetition=repetition,
            status=RunStatus.DONE,
            recovery_seconds=seconds,
            downtime_seconds=seconds + 2,
        )
    client.force_login(UserFactory(username="viewer"))
    page = client.get("/hosts/").content.decode()
    assert "(no interval: 1 run measured 0 or less (shorter than the log resolves))" in page, page
    assert "95% CI" in page  # the downtime's copies each measured two values


def test_the_api_starts_an_a_a_check_and_answers_the_host_s_floor(api, db):
    host = HostFactory(name="local")
    source = ExperimentFactory(definition={**definition("source"), "engines": ["innodb"]})
    started = api.post(f"/api/hosts/{host.id}/aa-checks/", {"experiment": source.id}, format="json")
    assert started.status_code == 201, started.content
    floor = aa.DEFAULT_MIN_EFFECT  # no A/A check done yet
    assert started.json()["min_effect"] == {"recovery_seconds": floor, "downtime_seconds": floor}
    assert [c["status"] for c in started.json()["checks"]] == ["queued"]
    missing = api.post(f"/api/hosts/{host.id}/aa-checks/", {"experiment": source.id + 1000}, format="json")
    assert missing.status_code == 400 and missing.json() == {"experiment": ["no such experiment"]}


@pytest.mark.django_db
def test_experiments_of_one_definition_run_apart_teach_the_floor_but_not_about_themselves():
    """Pairs of identical experiments (a nightly series, a gate's baselines) differ by what the
    host did between them: with five pairs their floor is where 95% of such differences fall, a
    real regression among them moves it little, and the experiments compared are left out."""
    same = {**definition("nightly"), "engines": ["innodb"]}
    levels = [1.0, 1.1, 0.95, 1.05, 1.0, 3.0]  # six nights, the last one a real regression
    nights = [ExperimentFactory(definition={**same, "name": f"night {i}"}) for i in range(len(levels))]
    for night, level in zip(nights, levels, strict=True):
        for seconds in (level, level * 1.02, level * 0.98):
            done_run(night, recovery_seconds=seconds, downtime_seconds=seconds + 0.5)
    other = ExperimentFactory(definition={**same, "repetitions": 5})  # another definition: no pair
    done_run(other, recovery_seconds=9.0)
    spread = aa.host_spreads({"local"})["local"]["recovery_seconds"]
    assert spread["checks"] == 0 and spread["apart_pairs"] == 5
    # ratios 1.1, 1.16, 1.11, 1.05, 3.0: the median |log| is log(1.1) -> e^(1.96 x 1.4826 x 0.095)
    assert 1.3 < spread["ratio"] == spread["apart_bound"] < 1.35, spread
    assert aa.floor({"local"}, "recovery_seconds", {"local": {"recovery_seconds": spread}}) == spread["ratio"]
    # compared, the last two nights teach nothing about themselves: four pairs, the largest seen
    without = aa.host_spreads({"local"}, exclude={nights[-1].id})["local"]["recovery_seconds"]
    assert without["apart_pairs"] == 4 and without["ratio"] == pytest.approx(1.1 / 0.95, rel=1e-3)
    # a disturbed night is not the host's usual noise
    Run.objects.filter(experiment=nights[1]).update(disturbed=True)
    assert aa.host_spreads({"local"})["local"]["recovery_seconds"]["apart_pairs"] == 3
