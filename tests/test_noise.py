"""Noise on record (issue 31, item 1): each run records what else used the host while it was
measured; a run on a disturbed host is marked with the reason and kept; comparisons say so in
the same sentence as any difference they find."""

import json
import subprocess
import sys

import pytest
from django.conf import settings

from experiments.analysis.cells import ROW_FIELDS
from experiments.analysis.compare import compare_experiments
from experiments.analysis.noise import disturbance
from experiments.models import Run
from experiments.services.runs import apply_metrics

from .factories import ExperimentFactory, RunFactory
from .test_analysis import done_run, noisy
from .test_end_to_end import insert_spec, run_runner

QUIET = {"seconds": 3.0, "others_cpu_share": 0.02, "steal_share": 0.0, "memory_stall_share": 0.0}


def test_a_window_where_other_processes_held_the_cpu_is_a_reason_and_a_short_one_is_not_judged():
    busy = {**QUIET, "others_cpu_share": 0.61}
    assert disturbance({"workload": QUIET, "restart": QUIET}, []) == []
    assert disturbance({"workload": busy}, []) == [
        "other processes used 61% of the host's CPU during the workload"
    ]
    # 0.1 s is ten ticks of /proc/stat: a share over it says little
    assert disturbance({"restart": {**busy, "seconds": 0.1}}, []) == []
    # a virtual machine's usual steal (0.11 measured at rest here) is not a disturbance
    assert disturbance({"workload": {**QUIET, "steal_share": 0.11}}, []) == []
    stolen = disturbance({"restart": {**QUIET, "steal_share": 0.4, "memory_stall_share": 0.3}}, [])
    assert stolen == [
        "the hypervisor took 40% of the CPU (steal) during the restart after the crash",
        "tasks stalled on memory 30% of the time during the restart after the crash",
    ]


def test_a_calibration_slower_than_the_host_s_own_history_is_a_reason_once_there_is_a_history():
    history = [{"cpu_loop_s": 0.040, "fsync_loop_s": 0.05}] * 5
    slow = {"calibration": {"cpu_loop_s": 0.1, "fsync_loop_s": 0.06}}
    assert disturbance(slow, history) == [
        "the CPU calibration took 2.5x this host's typical time (100 ms against 40 ms)"
    ]
    assert disturbance(slow, history[:4]) == []  # four earlier runs are not a history yet
    assert disturbance({"calibration": {"cpu_loop_s": 0.05, "fsync_loop_s": 0.1}}, history) == []


@pytest.mark.django_db
def test_every_sentence_of_a_cell_with_disturbed_runs_says_so():
    first, second = ExperimentFactory(), ExperimentFactory()
    for seconds in noisy(1, 3, 1.0):
        done_run(first, recovery_seconds=seconds)
    for seconds in noisy(2, 3, 3.0):
        done_run(second, recovery_seconds=seconds, disturbed=True, disturbed_reason="other processes ...")
    rows = list(Run.objects.values(*ROW_FIELDS))
    result = compare_experiments(rows, [first.id, second.id], {}, definitions={})
    (cell,) = result["cells"]
    assert cell["disturbed_runs"] == 3
    significant = [line for line in cell["sentences"] if "slower" in line]
    assert significant and cell["regressions"]
    for line in cell["sentences"] + cell["regressions"]:
        assert "(on a disturbed host: 3 of 6 runs;" in line, line


@pytest.mark.mariadb
@pytest.mark.quiet  # it asserts what the rest of the host did: nothing may run beside it
@pytest.mark.django_db
def test_a_run_beside_two_cpu_bound_processes_is_disturbed_and_says_why(tmp_path):
    work = settings.RUNNER_WORK_DIR  # the dataset the session's runs cached
    spec = insert_spec("64M", work)
    spec["workload"].update(events=8000)
    (tmp_path / "quiet").mkdir()
    assert run_runner(tmp_path / "quiet", spec)[0] == 0
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        (tmp_path / "busy").mkdir()
        assert run_runner(tmp_path / "busy", spec)[0] == 0
    finally:
        for hog in hogs:  # ours, by pid
            hog.kill()
            hog.wait()
    results = {}
    for name in ("quiet", "busy"):
        result = json.loads((tmp_path / name / "bundle" / "result.json").read_text())
        noise = result["noise"]
        assert set(noise) == {"calibration", "workload", "restart"}
        assert noise["calibration"]["cpu_loop_s"] > 0 and noise["calibration"]["fsync_loop_s"] > 0
        assert noise["workload"]["seconds"] > 0.5 and noise["workload"]["cpus"] >= 1
        files = {p.name: p.read_bytes() for p in (tmp_path / name / "bundle").iterdir() if p.is_file()}
        run = RunFactory(engine="innodb", host_label="local", redo_log_bytes=64 << 20)
        apply_metrics(run, files, result)
        results[name] = (noise, run)
    quiet_noise, quiet_run = results["quiet"]
    busy_noise, busy_run = results["busy"]
    # light tests may run beside this one (they start no server): the busy run is measured
    # against the quiet one, and two CPU-bound loops on this 2-CPU host are most of it
    busy_share, quiet_share = (n["workload"]["others_cpu_share"] for n in (busy_noise, quiet_noise))
    assert busy_share > 0.3 and busy_share - quiet_share > 0.2, (quiet_noise, busy_noise)
    assert busy_noise["workload"]["others_cpu_seconds"] > busy_noise["workload"]["seconds"] * 0.5
    assert busy_run.disturbed
    assert "of the host's CPU during the workload" in busy_run.disturbed_reason
    # the same rule judged the quiet run by its own window
    assert quiet_run.disturbed == (quiet_share > 0.2 or bool(disturbance(quiet_noise, [])))
    # kept, not excluded: a person decides
    assert not busy_run.excluded and busy_run.recovery_seconds > 0
