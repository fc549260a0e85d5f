"""Noise on record (issue 31, item 1): each run records what else used the host while it was
measured; a run on a disturbed host is marked with the reason and kept; comparisons say so in
the same sentence as any difference they find."""

import pytest

from experiments.analysis.cells import ROW_FIELDS
from experiments.analysis.compare import compare_experiments
from experiments.analysis.noise import disturbance
from experiments.models import Run

from .factories import ExperimentFactory
from .test_analysis import done_run, noisy

QUIET = {"seconds": 3.0, "others_cpu_share": 0.02, "steal_share": 0.0, "memory_stall_share": 0.0}


def test_a_window_where_other_processes_held_the_cpu_is_a_reason_and_a_short_one_is_not_judged():
    busy = {**QUIET, "others_cpu_share": 0.61}
    assert disturbance({"workload": QUIET, "restart": QUIET}, []) == []
    assert disturbance({"workload": busy}, []) == [
        "other processes used 61% of the host's CPU during the workload"
    ]
    # 0.1 s on one CPU is ten ticks of /proc/stat, three of them 30%: a share over it must pass
    # the limit by that much (two CPU-bound neighbours on 2 CPUs take 50-60%)
    assert disturbance({"restart": {**busy, "seconds": 0.1, "cpus": 1, "others_cpu_share": 0.45}}, []) == []
    assert disturbance({"restart": {**busy, "seconds": 0.1, "cpus": 1}}, []) == [
        "other processes used 61% of the host's CPU during the restart after the crash"
    ]
    # the workload of a small test on a fast host: 0.13 s on 2 CPUs, 26 ticks
    short = {**QUIET, "seconds": 0.13, "cpus": 2}
    assert disturbance({"workload": {**short, "others_cpu_share": 0.15}}, []) == []  # seen quiet
    assert disturbance({"workload": {**short, "others_cpu_share": 0.58}}, [])  # seen beside 2 loops
    assert disturbance({"restart": {**busy, "seconds": 0.04, "cpus": 2}}, []) == []  # 8 ticks: not judged
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


# On real runs: tests/test_aa.py runs an experiment beside two CPU-bound processes.
