"""Many hosts, for real: the local host and an SSH host (a real sshd on loopback, the tests' own),
driven in parallel by a real Celery worker with two processes, each host one run at a time; and a
host whose sshd dies in the middle of a run."""

import pytest
from django.conf import settings
from django.template.defaultfilters import floatformat

from experiments.models import Run, RunAttempt, RunStatus

from .conftest import runner_processes, wait_for
from .test_ssh import confirm_host_key, probe, register

pytestmark = [pytest.mark.mariadb, pytest.mark.django_db(transaction=True)]

WORKLOAD = {"name": "oltp_write_only", "tables": 2, "table_size": 10000, "threads": 2, "events": 3000}


def register_and_probe(staff_api, sshd, name="bench1") -> dict:
    """Through the API, as a user would: register, confirm the host key, probe."""
    created = register(staff_api, sshd, name, work_dir=f"{settings.RUNNER_WORK_DIR}/{name}")
    probed = confirm_host_key(staff_api, created["id"], sshd.fingerprint)
    assert probed["status"] == "idle" and probed["host_key_fingerprint"] == sshd.fingerprint, probed
    return created


def finished(experiment_id: int):
    def check():
        runs = Run.objects.filter(experiment_id=experiment_id)
        return runs.exists() and all(r.is_finished for r in runs)

    return check


def test_an_experiment_on_the_local_host_and_an_ssh_host_runs_on_both_in_parallel(
    staff_api, sshd, local_host, celery_worker_process
):
    register_and_probe(staff_api, sshd)
    body = {
        "name": "Two hosts",
        "hosts": ["local", "bench1"],
        "engines": ["innodb"],
        "parameters": {"redo_log_size": ["64M", "256M"]},
        "workload": WORKLOAD,
        "crash": {"method": "sigkill", "when": "after_workload"},
        "repetitions": 1,
    }
    created = staff_api.post("/api/experiments/", body, format="json")
    assert created.status_code == 201, created.content
    experiment_id = created.json()["id"]

    wait_for(finished(experiment_id), timeout_s=900, what="4 runs on two hosts", interval_s=1)
    runs = staff_api.get(f"/api/experiments/{experiment_id}/").json()["runs"]
    assert [r["status"] for r in runs] == ["done"] * 4, [r["error"] for r in runs]
    assert sorted(r["host"] for r in runs) == ["bench1", "bench1", "local", "local"]
    for run in runs:
        assert run["metrics"]["recovery_seconds"] > 0 and run["metrics"]["verified"] is True, run
        detail = staff_api.get(f"/api/runs/{run['id']}/").json()
        assert [(a["number"], a["host"], a["outcome"]) for a in detail["attempts"]] == [
            (1, run["host"], "done")
        ]
        assert detail["attempts"][0]["worker"].startswith("celery@")
    bench_facts = Run.objects.filter(experiment_id=experiment_id, host_label="bench1").first().host_facts
    assert bench_facts["disk"]["path"].endswith("/bench1") and bench_facts["cpu_count"] >= 1

    attempts = list(RunAttempt.objects.filter(run__experiment_id=experiment_id).select_related("host"))
    by_host: dict[str, list[RunAttempt]] = {}
    for attempt in attempts:
        by_host.setdefault(attempt.host.name, []).append(attempt)
    for host, rows in by_host.items():  # one run at a time on each host
        rows.sort(key=lambda a: a.started_at)
        assert rows[0].ended_at <= rows[1].started_at, f"{host} ran two runs at once"
    overlap = any(
        a.started_at < b.ended_at and b.started_at < a.ended_at
        for a in by_host["local"]
        for b in by_host["bench1"]
    )
    assert overlap, "the two hosts were not driven in parallel"
    assert runner_processes() == []


def test_sshd_killed_mid_run_leaves_an_attempt_on_record_a_failed_run_and_no_process(
    staff_api, sshd, celery_worker_process
):
    host = register_and_probe(staff_api, sshd)
    body = {
        "name": "Host lost mid-run",
        "hosts": ["bench1"],
        "engines": ["innodb"],
        "parameters": {"redo_log_size": ["64M"]},
        "workload": {**WORKLOAD, "events": 0, "time_seconds": 300},
        "crash": {"method": "sigkill", "when": "after_workload"},
        "repetitions": 1,
    }
    created = staff_api.post("/api/experiments/", body, format="json")
    assert created.status_code == 201, created.content
    run_id = created.json()["runs"][0]["id"]
    bench_dir = f"{settings.RUNNER_WORK_DIR}/bench1/"

    def ours() -> list[str]:
        return [line for line in runner_processes() if bench_dir in line]

    wait_for(
        lambda: Run.objects.get(id=run_id).progress.startswith("running oltp") and ours(),
        timeout_s=300,
        what="the workload to run on the SSH host",
    )
    sshd.stop()  # the listener and every session it serves: the host is gone

    wait_for(lambda: Run.objects.get(id=run_id).is_finished, timeout_s=120, what="the run to give up")
    run = Run.objects.get(id=run_id)
    attempts = list(run.attempt_rows.order_by("number"))
    assert run.status == RunStatus.FAILED and "gave up after 3 attempts" in run.error, run.error
    assert [a.outcome for a in attempts] == ["retry", "retry", "failed"]
    assert all(a.transient and a.ended_at for a in attempts)
    assert attempts[0].seconds > 1 and "127.0.0.1" in attempts[0].error  # dropped mid-run
    assert "ConnectionRefused" in attempts[1].error  # and then not answering at all
    assert run.attempt_rows.filter(host_id=host["id"]).count() == 3
    wait_for(lambda: ours() == [], timeout_s=30, what="the runner to stop its mariadbd and sysbench")


def test_an_ssh_hosts_disk_is_measured_over_ssh_and_the_hosts_page_shows_it(
    staff_api, sshd, client, admin_user
):
    """Issue 45: one call measures the disk under an SSH host's work folder with fio (here on the
    disk, not the suite's in-memory folder); later probes keep reporting it; the hosts page shows
    the measured figures."""
    created = register(
        staff_api, sshd, "bench-floor", work_dir=f"{settings.RUNNER_DISK_WORK_DIR}/bench-floor"
    )
    confirm_host_key(staff_api, created["id"], sshd.fingerprint)
    measured = probe(staff_api, created["id"], measure_disk=True)
    floor = measured["facts"]["disk"]["floor"]
    assert floor["seq_read_mb_s"] > 0 and floor["rand_read_qd32_iops"] >= floor["rand_read_qd1_iops"] > 0, (
        floor
    )
    assert measured["facts"]["disk"]["file_system"] != "tmpfs"
    again = probe(staff_api, created["id"])  # no fio this time
    assert again["facts"]["disk"]["floor"] == floor
    client.force_login(admin_user)
    page = client.get("/hosts/").content.decode()
    # as the page rounds it (Django's floatformat rounds half up, Python's format half to even)
    reads = floatformat(floor["seq_read_mb_s"], "0g")
    assert f"its disk, measured: {reads} MB/s sequential read" in page
    # probed over SSH as root: the kernel's blkio throttle is there to cap a storage class's restarts
    assert again["facts"]["io_control"] == {"ready": True, "how": "cgroup v1 blkio throttle"}
    assert "storage classes: its restarts can be capped (cgroup v1 blkio throttle)" in page
