"""Storage classes (issue 55): named in a definition, resolved to the runner's caps, refused where
a host cannot cap, and the classes' file checked. The caps on real runs: test_postgresql_runs.py."""

import subprocess

import pytest

from experiments import storage
from experiments.definition import DefinitionError, validate_definition
from experiments.models import Experiment, Host, Run
from experiments.services.runs import run_spec
from runner.contract import RunFailed, RunSpec
from runner.throttle import BLKIO, JOIN, Throttle, io_control

from .conftest import wait_for
from .test_roles import DEFINITION


def test_this_host_can_cap_a_restart_and_its_probe_says_how():
    assert io_control() == {"ready": True, "how": "cgroup v1 blkio throttle"}


def test_a_released_process_leaves_the_class_and_a_later_start_joins_it_again():
    """The clean shutdown after a capped recovery runs outside the class (runner.execute): the
    kernel moves the process, and a process started with the group's file joins it again."""
    throttle = Throttle("254:0", {"read_iops": 320}, 4999).make()
    started = []
    try:
        for _ in range(2):
            started.append(subprocess.Popen([*JOIN, str(throttle.procs), "sleep", "60"]))
            pid = str(started[-1].pid)
            wait_for(
                lambda pid=pid: pid in throttle.procs.read_text().split(), 10, "the process to join", 0.01
            )
            throttle.release()
            assert throttle.procs.read_text().split() == []
            assert str(started[-1].pid) in (BLKIO / "cgroup.procs").read_text().split()
            throttle.join(started[-1].pid)  # and back, as for a measured warm-up
            assert throttle.procs.read_text().split() == [pid]
            throttle.release()
    finally:
        for process in started:
            process.kill()
            process.wait()
        throttle.remove()
    assert not throttle.group.exists()


def test_a_class_is_a_dimension_its_runs_carry_and_the_runner_gets_its_caps():
    """local (the default) is left unsaid on its runs, as runs made before it were; a class's run
    goes to the runner with the class's caps in bytes and requests a second."""
    raw = {**DEFINITION, "parameters": {**DEFINITION["parameters"], "storage": ["local", "hdd-raid10"]}}
    definition = validate_definition(raw, ["local"])
    runs = list(definition.expand())
    assert sorted(r.parameters.get("storage", "-") for r in runs) == ["-", "hdd-raid10"]
    experiment = Experiment(definition=definition.as_dict())
    specs = {
        r.parameters.get("storage", "local"): run_spec(
            Run(id=i + 1, experiment=experiment, engine=r.engine, parameters=r.parameters, server_options={})
        )
        for i, r in enumerate(runs)
    }
    assert specs["local"].storage == {}
    assert specs["hdd-raid10"].storage == {
        "name": "hdd-raid10",
        "read_bps": 300_000_000,
        "write_bps": 200_000_000,
        "read_iops": 320,
        "write_iops": 160,
    }
    with pytest.raises(DefinitionError) as refused:
        validate_definition({**raw, "parameters": {"storage": ["floppy"]}}, ["local"])
    assert refused.value.errors["parameters.storage"] == [
        "'floppy' is not one of local, hdd-raid10, hdd, sata-ssd"
    ]


def test_the_runner_takes_a_class_only_with_its_caps():
    base = {
        "run_id": 1,
        "engine": "innodb",
        "workload": {"name": "oltp_insert"},
        "crash": {"when": "after_workload"},
    }
    with pytest.raises(RunFailed, match="storage class hdd comes without its limits"):
        RunSpec.from_dict({**base, "parameters": {"storage": "hdd"}})
    with pytest.raises(RunFailed, match="storage.read_mbps is not a limit"):
        RunSpec.from_dict(
            {**base, "parameters": {"storage": "hdd"}, "storage": {"name": "hdd", "read_mbps": 1}}
        )
    with pytest.raises(RunFailed, match="storage 'a b' is not a storage class name"):
        RunSpec.from_dict({**base, "parameters": {"storage": "a b"}})
    RunSpec.from_dict({**base, "parameters": {"storage": "hdd"}, "storage": {"name": "hdd", "read_iops": 80}})


@pytest.mark.django_db
def test_a_host_that_cannot_cap_is_refused_a_class_with_why(api, local_host):
    body = {**DEFINITION, "parameters": {**DEFINITION["parameters"], "storage": ["hdd"]}}
    Host.objects.filter(id=local_host.id).update(
        facts={"io_control": {"ready": False, "missing": ["cgroup v1 blkio throttling (not mounted here)"]}}
    )
    refused = api.post("/api/experiments/", body, format="json")
    assert refused.status_code == 400
    assert refused.json()["parameters.storage"] == [
        "host local cannot cap a restart's I/O: missing cgroup v1 blkio throttling (not mounted here)"
    ]
    assert not Experiment.objects.exists()


def test_a_team_adds_a_class_and_a_bad_file_says_where(tmp_path):
    own = tmp_path / "classes.yaml"
    own.write_text(
        "nvme-gen4:\n  label: an NVMe drive\n  read_mb_s: 7000\n  write_mb_s: 5000\n"
        "  read_iops: 1000000\n  write_iops: 900000\n  source: a data sheet\n"
    )
    (found,) = storage.load(own).values()
    assert found.said() == (
        "nvme-gen4 (an NVMe drive: reads 7,000 MB/s, 1,000,000 requests/s; "
        "writes 5,000 MB/s, 900,000 requests/s)"
    )
    own.write_text("local:\n  label: x\n")
    with pytest.raises(
        storage.StorageClassesInvalid,
        match="class 'local': a name of lowercase letters, digits and -, not local",
    ):
        storage.load(own)
    own.write_text(own.read_text().replace("local", "slow") + "  source: s\n  read_mb_s: -1\n")
    with pytest.raises(storage.StorageClassesInvalid, match="label, source and read_mb_s, write_mb_s"):
        storage.load(own)
    every = {"label": "x", "source": "s", "read_mb_s": 0, "write_mb_s": 1, "read_iops": 1, "write_iops": 1}
    own.write_text("slow:\n" + "".join(f"  {k}: {v}\n" for k, v in every.items()))
    with pytest.raises(storage.StorageClassesInvalid, match="read_mb_s must be a number above 0"):
        storage.load(own)


@pytest.mark.django_db
def test_the_run_page_says_the_page_cache_and_the_class_its_restart_had(client, user):
    """As the run recorded them, the class named with its label from the lab's classes."""
    from .factories import ExperimentFactory, RunFactory

    capped = {"name": "hdd-raid10", "device": "254:0", "how": "cgroup v1 blkio throttle",
              "read_bps": 300_000_000, "read_iops": 320, "write_bps": 200_000_000, "write_iops": 160,
              "floor": {"seq_read_mb_s": 288.4, "rand_read_qd1_iops": 318}}  # fmt: skip
    cache = {"mode": "cold", "files": 12, "bytes": 5 << 20, "resident_bytes": 0}
    run = RunFactory(
        experiment=ExperimentFactory(created_by=user),
        parameters={"restart_cache": "cold", "storage": "hdd-raid10"},
        resources={"restart_cache": cache, "storage": capped},
    )
    client.force_login(user)
    page = client.get(f"/runs/{run.id}/").content.decode()
    assert "Restarted cold: every file of the server (5 MiB in 12 files)" in page
    assert (
        "Restarted through storage class hdd-raid10 (RAID10 of four 7,200 rpm disks): "
        "the server&#x27;s reads capped at 300 MB/s and 320 requests/s, "
        "its writes at 200 MB/s and 160 requests/s" in page
    )
    assert "fio in the cap read 288 MB/s in sequence, 318 random reads/s one at a time." in page
    assert "the disk, not the class" not in page


@pytest.mark.django_db
def test_the_redo_chart_draws_a_floor_per_disk_and_per_class_its_runs_read_through(user):
    """A class's runs are not set against the host's uncapped disk: each floor is what its runs
    read from, fio's figure on the disk, or in the class's cap."""
    from experiments.charts.experiment import redo_fit_chart
    from experiments.pages.context import disk_floors

    from .factories import ExperimentFactory, RunFactory

    experiment = ExperimentFactory(created_by=user)
    facts = {"disk": {"floor": {"seq_read_mb_s": 370.0}}}
    local = RunFactory(experiment=experiment, host_label="bench", host_facts=facts, redo_bytes=64 << 20)
    capped = RunFactory(
        experiment=experiment,
        host_label="bench",
        host_facts=facts,
        redo_bytes=64 << 20,
        parameters={"storage": "hdd-raid10"},
        resources={"storage": {"name": "hdd-raid10", "floor": {"seq_read_mb_s": 298.0}}},
    )
    floors = disk_floors([local.id, capped.id])
    assert floors == {"bench": 370.0, "bench as storage class hdd-raid10": 298.0}
    rows = [
        {
            "id": i,
            "engine": "innodb",
            "host_label": "bench",
            "redo_bytes": (64 + 32 * i) << 20,
            "recovery_seconds": 1.0 + i,
            "imported": False,
            "hover": "",
        }  # fmt: skip
        for i in range(2)
    ]
    names = [t["name"] for t in redo_fit_chart(rows, floors)["data"] if "the floor" in t["name"]]
    assert names == [
        "bench's disk reading the redo sequentially (370 MB/s, fio): the floor",
        "bench as storage class hdd-raid10 reading the redo sequentially (298 MB/s, fio): the floor",
    ]


def test_the_report_s_method_says_what_each_restart_read_from():
    """A power cut's runs restart cold without the definition listing it: the report's method
    table says so from the runs, with how many runs each."""
    from experiments.reports.findings import restart_conditions

    runs = [
        Run(parameters={"restart_cache": "cold"}),
        Run(parameters={"restart_cache": "cold", "storage": "hdd"}),
    ]
    assert restart_conditions(runs) == "page cache cold (2 runs); storage hdd (1 run), local (1 run)"
    assert restart_conditions([Run(parameters={})]) == "page cache warm (1 run); storage local (1 run)"


def test_a_run_that_names_no_class_or_cache_stands_on_their_axes_at_the_defaults():
    """A local, warm run names neither: the charts and findings put it at local and warm, beside
    the runs that name a class (a demo experiment's storage chart had drawn the class's run alone)."""
    from experiments.charts.layout import axis_value
    from experiments.reports.effects import _axis_value

    plain = {"parameters": {}, "server_options": {}}
    capped = {"parameters": {"storage": "hdd", "restart_cache": "cold"}, "server_options": {}}
    assert [axis_value(r, "storage") for r in (plain, capped)] == ["local", "hdd"]
    assert [axis_value(r, "restart_cache") for r in (plain, capped)] == ["warm", "cold"]
    assert [_axis_value(r, "storage") for r in (plain, capped)] == ["local", "hdd"]
