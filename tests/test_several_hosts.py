"""Several benchmark machines at once: three of the tests' own (tests/machines.py: each a network
namespace with a real sshd, or a loopback address where namespaces cannot be made), registered
through the API as a team would, one experiment of 9 real runs over the three, and a Celery
worker of three processes.

The host is a dimension of the experiment's matrix (a run measures its machine), so each machine
gets its 3 runs; what is checked is that the machines work side by side, each one run at a time,
each run on the machine it names. How much sooner 9 runs end on three machines than on one is
measured by `make bench` (scripts/bench_hosts.py) and written in docs/operations.md, not asserted."""

import os
from collections import Counter
from pathlib import Path

import pytest
from django.conf import settings

from experiments.models import Run, RunAttempt
from experiments.services.ssh_keys import dashboard_public_key

from .conftest import runner_processes, start_celery_worker, stop_celery_worker, wait_for
from .machines import namespaces_allowed, start_machine
from .test_ssh import confirm_host_key, register

pytestmark = [pytest.mark.mariadb, pytest.mark.django_db(transaction=True)]

WORKLOAD = {"name": "oltp_write_only", "tables": 1, "table_size": 2000, "threads": 2, "events": 500}
NAMES = ["bench1", "bench2", "bench3"]


@pytest.fixture
def machines(tmp_path, db):
    isolated = namespaces_allowed()
    started = []
    try:
        for index, name in enumerate(NAMES):
            started.append(start_machine(tmp_path / name, name, dashboard_public_key(), index, isolated))
        yield started
    finally:
        for machine in started:
            machine.power_off()


@pytest.fixture
def three_process_worker(session_celery_worker, transactional_db, broker):
    """A worker of its own with three processes (the session's has two), stopped after the
    test's runs have ended."""
    worker = start_celery_worker(processes=3)
    yield worker
    try:
        wait_for(lambda: not runner_processes(), 60, "the test's runs to end")
    finally:
        stop_celery_worker(worker)


def net_namespace(pid: int) -> str:
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return ""


def servers_running() -> dict[str, str]:
    """Each machine whose runner's mariadbd is up now, with that server's network namespace."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        line = " ".join(a.decode(errors="replace") for a in argv if a)
        if "mariadbd" not in line:
            continue
        for name in NAMES:
            if f"{settings.RUNNER_WORK_DIR}/{name}/" in line and (namespace := net_namespace(int(entry))):
                found[name] = namespace  # none ("") where it ended meanwhile
    return found


def test_nine_runs_over_three_machines_run_side_by_side_each_machine_one_run_at_a_time(
    staff_api, machines, three_process_worker
):
    for machine in machines:
        host = register(
            staff_api,
            machine.sshd,
            machine.name,
            ssh_host=machine.address,
            work_dir=f"{settings.RUNNER_WORK_DIR}/{machine.name}",
        )
        probed = confirm_host_key(staff_api, host["id"], machine.sshd.fingerprint)
        assert probed["status"] == "idle", probed
    body = {
        "name": "Three machines",
        "hosts": NAMES,
        "engines": ["innodb"],
        "parameters": {"redo_log_size": ["64M"]},
        "workload": WORKLOAD,
        "crash": {"method": "sigkill", "when": "after_workload"},
        "repetitions": 3,
    }
    created = staff_api.post("/api/experiments/", body, format="json")
    assert created.status_code == 201, created.content
    experiment_id = created.json()["id"]

    # Watched from outside while the runs go: which machines have a server up at once, and in
    # which network namespace each server lives.
    seen_together, namespaces = 0, {name: set() for name in NAMES}

    def finished() -> bool:
        nonlocal seen_together
        up = servers_running()
        seen_together = max(seen_together, len(up))
        for name, namespace in up.items():
            namespaces[name].add(namespace)
        runs = Run.objects.filter(experiment_id=experiment_id)
        return runs.exists() and all(run.is_finished for run in runs)

    wait_for(finished, timeout_s=900, what="9 runs on three machines", interval_s=0.5)

    runs = staff_api.get(f"/api/experiments/{experiment_id}/").json()["runs"]
    assert [r["status"] for r in runs] == ["done"] * 9, [r["error"] for r in runs]
    assert Counter(r["host"] for r in runs) == {name: 3 for name in NAMES}
    for run in runs:
        # measured; 0.0 where its first and last lines were stamped alike (below the 5 ms the
        # runner's stamps resolve, which the run page says as "< 5 ms")
        assert run["metrics"]["recovery_seconds"] >= 0 and run["metrics"]["verified"] is True, run
    for machine in machines:
        facts = Run.objects.filter(experiment_id=experiment_id, host_label=machine.name).first().host_facts
        assert facts["disk"]["path"] == f"{settings.RUNNER_WORK_DIR}/{machine.name}", facts["disk"]
        if machine.namespace:  # each machine's server lived in that machine's network, and only there
            assert namespaces[machine.name] == {net_namespace(machine.sshd.process.pid)}, namespaces
    if machines[0].namespace:
        assert len({net_namespace(os.getpid()), *(net_namespace(m.sshd.process.pid) for m in machines)}) == 4

    attempts = list(RunAttempt.objects.filter(run__experiment_id=experiment_id).select_related("host"))
    assert len(attempts) == 9 and all(a.outcome == "done" for a in attempts)
    for name in NAMES:  # one run at a time on each machine
        own = sorted((a for a in attempts if a.host.name == name), key=lambda a: a.started_at)
        assert len(own) == 3
        for earlier, later in zip(own, own[1:], strict=False):
            assert earlier.ended_at <= later.started_at, f"{name} ran two runs at once"
    # Side by side: at some moment all three machines had a run, by the attempts' own record...
    moments = sorted([(a.started_at, 1) for a in attempts] + [(a.ended_at, -1) for a in attempts])
    at_once = running = 0
    for _, step in moments:
        running += step
        at_once = max(at_once, running)
    assert at_once == 3, f"at most {at_once} machines worked at once"
    # ...and as seen from outside: three mariadbd servers up at the same moment.
    assert seen_together == 3, f"at most {seen_together} servers seen up at once"
    assert runner_processes() == []
