"""Cancel: queued runs never start, a running run is stopped on its host (local, or over SSH)
with every process of ours killed, and the runs end cancelled."""

import pytest
from django.conf import settings

from experiments import services
from experiments.models import AttemptOutcome, ExperimentStatus, Run, RunStatus

from .conftest import runner_processes, wait_for
from .factories import ExperimentFactory, RunFactory, UserFactory
from .test_hosts_end_to_end import register_and_probe

pytestmark = pytest.mark.django_db(transaction=True)

LONG_WORKLOAD = {
    "name": "oltp_write_only",
    "tables": 1,
    "table_size": 5000,
    "threads": 2,
    "events": 0,
    "time_seconds": 600,
}


def test_cancel_stops_queued_and_running_runs_and_leaves_finished_ones(local_host):
    author = UserFactory(username="author")
    experiment = ExperimentFactory(created_by=author)
    done = RunFactory(experiment=experiment, host=local_host, status=RunStatus.DONE, recovery_seconds=1.0)
    running = RunFactory(experiment=experiment, host=local_host)
    queued = RunFactory(experiment=experiment, host=local_host)
    services.claim_next_run(local_host.id, "w")  # `running` is the oldest queued: it is claimed

    assert services.cancel_experiment(experiment.id, user=author) == 2
    assert services.cancel_experiment(experiment.id, user=author) == 0
    for run in (running, queued):
        run.refresh_from_db()
        assert run.status == RunStatus.CANCELLED and run.error.startswith("cancelled by author at ")
    assert Run.objects.get(id=done.id).status == RunStatus.DONE
    experiment.refresh_from_db()
    assert experiment.status == ExperimentStatus.CANCELLED
    assert services.claim_next_run(local_host.id, "w") is None
    assert services.retry_run(running.id, "late connection error") is None  # no retry of a cancelled run
    services.mark_run_failed(running.id, "late failure")
    assert Run.objects.get(id=running.id).status == RunStatus.CANCELLED


def test_one_run_cancelled_alone_and_the_restarts_of_the_crash_it_was_to_keep_fail_saying_so(local_host):
    """A run page's cancel: that run only. The restarts waiting for the crash it was to keep
    (crash.one_crash) fail at once, naming it; the experiment's other runs go on."""
    author = UserFactory(username="author")
    experiment = ExperimentFactory(created_by=author)
    keeper = RunFactory(experiment=experiment, host=local_host)
    restart = RunFactory(experiment=experiment, host=local_host, image_of=keeper)
    other = RunFactory(experiment=experiment, host=local_host)
    services.claim_next_run(local_host.id, "w")  # the keeper is claimed: running

    assert services.cancel_experiment(experiment.id, user=author, run_id=keeper.id) == 1
    assert services.cancel_experiment(experiment.id, user=author, run_id=keeper.id) == 0
    keeper.refresh_from_db(), restart.refresh_from_db(), other.refresh_from_db()
    assert keeper.status == RunStatus.CANCELLED and keeper.error.startswith("cancelled by author at ")
    assert restart.status == RunStatus.FAILED
    assert (
        restart.error == f"its crash image was never kept: run {keeper.id}, which makes the crash, cancelled"
    )
    assert other.status == RunStatus.QUEUED and services.claim_next_run(local_host.id, "w")[0].id == other.id
    experiment.refresh_from_db()
    assert experiment.status == ExperimentStatus.RUNNING


def test_a_run_page_cancels_its_run_for_the_experiment_s_author(client, local_host):
    author = UserFactory(username="author")
    run = RunFactory(experiment=ExperimentFactory(created_by=author), host=local_host)
    client.force_login(UserFactory(username="bystander"))
    assert f'action="/runs/{run.id}/cancel/"' not in client.get(f"/runs/{run.id}/").content.decode()
    assert client.post(f"/runs/{run.id}/cancel/").status_code == 403
    client.force_login(author)
    assert f'action="/runs/{run.id}/cancel/"' in client.get(f"/runs/{run.id}/").content.decode()
    assert "Cancelled this run." in client.post(f"/runs/{run.id}/cancel/", follow=True).content.decode()
    assert Run.objects.get(id=run.id).status == RunStatus.CANCELLED
    page = client.get(f"/runs/{run.id}/").content.decode()
    assert "/cancel/" not in page and "cancelled by author at " in page


def test_only_the_author_or_staff_cancel(api, staff_api, local_host):
    experiment = ExperimentFactory(created_by=UserFactory(username="someone-else"))
    RunFactory(experiment=experiment, host=local_host)
    assert api.post(f"/api/experiments/{experiment.id}/cancel/").status_code == 403
    assert Run.objects.get(experiment=experiment).status == RunStatus.QUEUED
    response = staff_api.post(f"/api/experiments/{experiment.id}/cancel/")
    assert response.status_code == 200 and response.json()["status"] == "cancelled"
    assert response.json()["runs"][0]["status"] == "cancelled"


@pytest.mark.mariadb
@pytest.mark.parametrize("where", ["local", "ssh"])
def test_cancelling_a_running_run_kills_its_processes_and_the_next_run_never_starts(
    where, request, staff_api, local_host, celery_worker_process
):
    host = "local"
    if where == "ssh":
        host = register_and_probe(staff_api, request.getfixturevalue("sshd"))["name"]
    body = {
        "name": f"cancel on {where}",
        "hosts": [host],
        "engines": ["innodb"],
        "parameters": {"redo_log_size": ["64M"]},
        "workload": LONG_WORKLOAD,
        "crash": {"method": "sigkill", "when": "after_workload"},
        "repetitions": 2,
    }
    created = staff_api.post("/api/experiments/", body, format="json")
    assert created.status_code == 201, created.content
    first_id, second_id = [r["id"] for r in created.json()["runs"]]
    folder = f"{settings.RUNNER_WORK_DIR}/{host}/" if where == "ssh" else str(settings.RUNNER_WORK_DIR)

    def ours() -> list[str]:
        return [line for line in runner_processes() if folder in line]

    wait_for(
        lambda: Run.objects.get(id=first_id).progress.startswith("running oltp") and ours(),
        timeout_s=300,
        what="the first run's workload",
    )
    if where == "local":  # run by run, from the runs' own cancel: the queued one, then the running one
        queued = staff_api.post(f"/api/runs/{second_id}/cancel/").json()
        assert queued["status"] == "cancelled" and Run.objects.get(id=first_id).status == RunStatus.RUNNING
        assert staff_api.post(f"/api/runs/{first_id}/cancel/").json()["status"] == "cancelled"
        experiment = staff_api.get(f"/api/experiments/{created.json()['id']}/").json()
        assert experiment["status"] == "cancelled", experiment["status"]
    else:
        response = staff_api.post(f"/api/experiments/{created.json()['id']}/cancel/")
        assert response.status_code == 200 and response.json()["status"] == "cancelled"

    first = Run.objects.get(id=first_id)
    attempt = wait_for(
        lambda: first.attempt_rows.filter(ended_at__isnull=False).first(),
        timeout_s=60,
        what="the attempt to end",
    )
    assert attempt.outcome == AttemptOutcome.CANCELLED and "stopped every process" in attempt.error
    wait_for(lambda: ours() == [], timeout_s=30, what="no mariadbd or sysbench of ours")
    first.refresh_from_db()
    second = Run.objects.get(id=second_id)
    assert first.status == second.status == RunStatus.CANCELLED
    assert second.attempts == 0 and not second.attempt_rows.exists()


def test_the_experiment_page_cancels_for_its_author(client, local_host):
    author = UserFactory(username="author")
    experiment = ExperimentFactory(created_by=author)
    RunFactory(experiment=experiment, host=local_host)
    client.force_login(UserFactory(username="bystander"))
    assert client.post(f"/experiments/{experiment.id}/cancel/").status_code == 403
    client.force_login(author)
    page = client.get(f"/experiments/{experiment.id}/").content.decode()
    assert f'action="/experiments/{experiment.id}/cancel/"' in page
    response = client.post(f"/experiments/{experiment.id}/cancel/", follow=True)
    assert "Cancelled 1 run." in response.content.decode()
    assert Run.objects.get(experiment=experiment).status == RunStatus.CANCELLED
    assert (
        "/cancel/" not in client.get(f"/experiments/{experiment.id}/").content.decode()
    )  # nothing left to cancel
