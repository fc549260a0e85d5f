"""Faults injected for real, with a real Celery worker, private mariadbd servers and sysbench:
after each, no run is lost, none stays `running`, no process of ours is left on the host, and the
next run starts."""

import json
import os
import signal
import socket
import subprocess

import pytest
import requests
from django.db import connection

from experiments import services
from experiments.models import Run, RunStatus
from experiments.services.tokens import new_token
from workers import tasks

from .conftest import (
    MANAGE,
    ROOT,
    celery_broker,
    manage_env,
    runner_processes,
    start_celery_worker,
    stop_celery_worker,
    wait_for,
)
from .postgres import create_cluster, remove_cluster
from .redis_server import PrivateRedis

pytestmark = [pytest.mark.mariadb, pytest.mark.django_db(transaction=True)]

# Two runs on one host; the workload lasts long enough to be caught under way.
DEFINITION = {
    "name": "fault: worker killed",
    "hosts": ["local"],
    "engines": ["innodb"],
    "parameters": {"buffer_pool_size": ["64M"], "redo_log_size": ["64M"], "insert_rate": [0]},
    "workload": {"name": "oltp_write_only", "tables": 2, "table_size": 4000, "threads": 2, "events": 20000},
    # no fsync per commit: a workload of about 4 s (15 s with one), still seen under way; a kill
    # of the server loses nothing the OS holds, so the data is verified as with one
    "server_options": {"innodb_flush_log_at_trx_commit": [2]},
    "crash": {"method": "sigkill", "when": "after_workload"},
    "repetitions": 2,
}


def all_done(experiment_id: int) -> None:
    wait_for(
        lambda: not Run.objects.filter(experiment_id=experiment_id).exclude(status=RunStatus.DONE).exists(),
        900,
        "every run of the experiment done",
        interval_s=1,
    )


def beat_wakes_the_host() -> list[int]:
    """Beat's passes (every 30 s in service), until one wakes the host: a killed client's
    connection, and the host's advisory lock on it, go once PostgreSQL notices, not at once."""
    return wait_for(tasks.wake_hosts_task.run, 60, "beat's pass to wake the host")


def under_way(experiment_id: int) -> Run | None:
    """The run whose server and sysbench are both up."""
    run = Run.objects.filter(experiment_id=experiment_id, status=RunStatus.RUNNING).first()
    found = runner_processes()
    if run and any("mariadbd" in p for p in found) and any("sysbench" in p and " run" in p for p in found):
        return run
    return None


def test_the_worker_killed_with_sigkill_mid_run_loses_nothing_and_leaves_no_process(local_host, broker):
    worker = start_celery_worker()
    try:
        experiment, _ = services.create_experiment(DEFINITION)
        victim = wait_for(lambda: under_way(experiment.id), 300, "a run with its server and workload up")
        os.killpg(worker.pid, signal.SIGKILL)  # the worker and its pool, at once: no handler runs
        worker.wait()
        # the runner went with its worker (killed with the group, or its stdin closed), and its
        # server and sysbench with it
        wait_for(lambda: not runner_processes(), 30, "the killed run's mariadbd and sysbench to go")
        victim.refresh_from_db()
        assert victim.status == RunStatus.RUNNING  # nobody has said otherwise yet

        worker = start_celery_worker()
        beat_wakes_the_host()
        all_done(experiment.id)
    finally:
        stop_celery_worker(worker)
    victim.refresh_from_db()
    outcomes = list(victim.attempt_rows.order_by("number").values_list("outcome", "error"))
    assert outcomes[0] == ("lost", "its worker stopped during the run") and outcomes[-1][0] == "done"
    assert victim.recovery_seconds > 0 and victim.verified is True
    assert runner_processes() == []


@pytest.fixture
def private_redis():
    """A redis-server of this test's own (tests/redis_server.py), to kill and start for real."""
    server = PrivateRedis()
    server.start()
    wait_for(server.answering, 30, "the test's redis-server to answer")
    yield server
    server.remove()


def test_redis_killed_and_restarted_twice_loses_no_run_and_runs_none_twice(
    local_host, private_redis, settings
):
    """The broker (a redis-server of the test's own, keeping nothing on disk) is killed and
    started again twice: once while the host's wake-up waits in it (the message is lost), once
    mid-run with the worker connected. The runs are rows in PostgreSQL: beat's pass wakes the
    host again, the worker reconnects, and each run is carried out once."""
    queue = settings.CELERY_TASK_DEFAULT_QUEUE
    settings.WAKE_RESEND_S = 0  # beat's pass resends at once: the test does not wait five minutes

    def restart() -> None:
        private_redis.kill()
        assert not private_redis.answering()
        private_redis.start()
        wait_for(private_redis.answering, 30, "redis-server to answer again")

    with celery_broker(private_redis.url):
        experiment, _ = services.create_experiment({**DEFINITION, "name": "fault: Redis restarted"})
        assert private_redis.messages(queue) == 1  # the host's wake-up, waiting for a worker
        restart()
        assert private_redis.messages(queue) == 0  # gone with the server
        worker = start_celery_worker(broker=private_redis.url)
        try:
            assert tasks.wake_hosts_task.run() == [local_host.id]  # beat's pass
            victim = wait_for(lambda: under_way(experiment.id), 300, "a run with its server and workload up")
            restart()  # mid-run: the worker's connection to the broker breaks

            def beat_until_done() -> bool:
                assert worker.poll() is None, "the worker exited when Redis went away: see worker.log"
                tasks.wake_hosts_task.run()  # beat, every 30 s in service
                return not Run.objects.filter(experiment=experiment).exclude(status=RunStatus.DONE).exists()

            wait_for(beat_until_done, 900, "every run of the experiment done", interval_s=5)
        finally:
            stop_celery_worker(worker)
    for run in Run.objects.filter(experiment=experiment):
        assert list(run.attempt_rows.values_list("outcome", flat=True)) == ["done"]  # once each
    other = Run.objects.filter(experiment=experiment).exclude(id=victim.id).get()
    victim.refresh_from_db()
    assert other.started_at >= victim.finished_at
    assert runner_processes() == []


def test_postgresql_dropping_the_worker_s_connections_mid_run_stores_the_result_once(local_host, broker):
    """To a client, a PostgreSQL restart is its connections dropped: the worker's, and with them
    the host's advisory lock. The run goes on and is stored once; the other run waits its turn."""
    from django.db import connection

    worker = start_celery_worker()
    try:
        experiment, _ = services.create_experiment({**DEFINITION, "name": "fault: connections dropped"})
        victim = wait_for(lambda: under_way(experiment.id), 300, "a run with its server and workload up")
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            assert cursor.fetchone()[0] >= 1
        beat_wakes_the_host()  # the host looks free now: its lock went with the connections
        all_done(experiment.id)
    finally:
        stop_celery_worker(worker)
    victim.refresh_from_db()
    assert list(victim.attempt_rows.values_list("outcome", flat=True)) == ["done"], list(
        victim.attempt_rows.values_list("outcome", "error")
    )
    other = Run.objects.filter(experiment=experiment).exclude(id=victim.id).get()
    assert other.started_at >= victim.finished_at  # never two runs at once on the host
    assert runner_processes() == []


@pytest.fixture
def private_postgres():
    """A PostgreSQL cluster of this test's own (tests/postgres.py), to stop and start for real."""
    cluster = create_cluster()
    yield cluster
    remove_cluster(cluster)


def manage_on(database_url: str, code: str) -> str:
    """Python run by `manage.py shell` of ours on that database; returns what it printed."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "DATABASE_URL": database_url}
    done = subprocess.run(
        [*MANAGE, "shell", "--no-imports", "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_postgresql_restarted_mid_run_the_worker_reconnects_and_stores_the_result_once(
    private_postgres, broker
):
    """The worker's database (a cluster of the test's own) is shut down while a run's workload is
    under way, and started again once the worker has found it gone. The driver reconnects, the run
    finishes and is stored once; beat's pass right after the restart (the host's lock went with
    the server) sends a second driver, which starts nothing beside the run."""
    with private_postgres.connect("postgres") as db:
        db.execute("CREATE DATABASE recovery_lab")
    url = private_postgres.url("recovery_lab")
    manage_on(url, "from django.core.management import call_command; call_command('migrate', verbosity=0)")
    # A workload of about 12 s: the run must outlive the outage (stopped, found gone, started,
    # then beat's pass from a fresh process: about 5 s). With 4 s it could end, be stored and
    # wake its next run first, and beat then rightly found the host's lock held.
    definition = {
        **DEFINITION,
        "name": "fault: PostgreSQL restarted",
        "workload": {**DEFINITION["workload"], "events": 60000},
    }
    experiment_id = int(
        manage_on(
            url,
            "import json; from experiments import services; "
            "services.register_host('local', 'local'); "
            f"print(services.create_experiment(json.loads({json.dumps(json.dumps(definition))}))[0].id)",
        )
    )
    worker_log = ROOT / "test-artifacts" / "worker.log"
    worker = start_celery_worker(database=url)
    try:

        def run_under_way() -> int | None:
            with private_postgres.connect("recovery_lab") as db:
                row = db.execute(
                    "SELECT id FROM experiments_run WHERE experiment_id = %s AND status = 'running'",
                    [experiment_id],
                ).fetchone()
            found = runner_processes()
            workload = any("sysbench" in p and " run" in p for p in found)
            return row[0] if row and workload and any("mariadbd" in p for p in found) else None

        victim = wait_for(run_under_way, 300, "a run with its server and workload up")
        seen = worker_log.stat().st_size
        private_postgres.stop()
        wait_for(
            lambda: b"database unreachable" in worker_log.read_bytes()[seen:],
            60,
            "the worker to find the database gone",
        )
        private_postgres.start()
        woken = manage_on(url, "from workers import tasks; print(tasks.wake_hosts_task.run())")
        assert woken.strip() not in ("", "[]"), "beat sent no driver: the host's lock outlived the server"

        def finished() -> bool:
            with private_postgres.connect("recovery_lab") as db:
                return not db.execute(
                    "SELECT 1 FROM experiments_run WHERE experiment_id = %s AND status <> 'done'",
                    [experiment_id],
                ).fetchone()

        wait_for(finished, 900, "every run of the experiment done", interval_s=1)
    finally:
        stop_celery_worker(worker)
    with private_postgres.connect("recovery_lab") as db:
        runs = db.execute(
            "SELECT id, started_at, finished_at, "
            "(SELECT array_agg(outcome ORDER BY number) FROM experiments_runattempt a "
            "WHERE a.run_id = r.id), "
            "(SELECT count(*) FROM experiments_runfile f WHERE f.run_id = r.id AND f.name = 'error.log') "
            "FROM experiments_run r WHERE experiment_id = %s ORDER BY started_at",
            [experiment_id],
        ).fetchall()
    assert [(outcomes, error_logs) for _, _, _, outcomes, error_logs in runs] == [(["done"], 1)] * 2, runs
    assert runs[0][0] == victim
    assert runs[1][1] >= runs[0][2]  # never two runs at once on the host
    assert runner_processes() == []


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_web(port: int) -> subprocess.Popen:
    """The real web process (gunicorn, as `make start` runs it) on the test database."""
    env = {**manage_env(connection.settings_dict["NAME"]), "ALLOWED_HOSTS": "127.0.0.1"}
    return subprocess.Popen(
        [
            str(ROOT / ".venv" / "bin" / "gunicorn"),
            "-c",
            "webapp/gunicorn.conf.py",
            "-b",
            f"127.0.0.1:{port}",
            "-w",
            "1",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def stop_web(web: subprocess.Popen) -> None:
    if web.poll() is None:
        os.killpg(web.pid, signal.SIGTERM)
        web.wait(timeout=60)


def answering(url: str, token: str):
    """The API's answer, or None while nothing listens (the first request also loads the app)."""
    try:
        return requests.get(url, headers={"Authorization": f"Token {token}"}, timeout=30)
    except requests.ConnectionError:
        return None


def test_the_web_process_restarted_during_an_experiment_changes_nothing_for_its_runs(
    local_host, broker, user
):
    """The experiment is made through the real web process, which is stopped and started again
    while the runs go: they finish as if nothing happened, and the API answers again."""
    port = free_port()
    token = new_token(user)
    api = f"http://127.0.0.1:{port}/api"
    web, worker = start_web(port), start_celery_worker()
    try:
        wait_for(lambda: answering(f"{api}/hosts/", token), 60, "the web process to answer")
        created = requests.post(
            f"{api}/experiments/",
            json={**DEFINITION, "name": "fault: web restarted"},
            headers={"Authorization": f"Token {token}"},
            timeout=30,
        )
        assert created.status_code == 201, created.text
        experiment_id = created.json()["id"]
        wait_for(lambda: under_way(experiment_id), 300, "a run with its server and workload up")
        os.killpg(web.pid, signal.SIGTERM)
        web.wait(timeout=60)
        assert answering(f"{api}/hosts/", token) is None  # down
        web = start_web(port)
        all_done(experiment_id)
        body = wait_for(
            lambda: answering(f"{api}/experiments/{experiment_id}/", token), 60, "the API again"
        ).json()
    finally:
        stop_celery_worker(worker)
        stop_web(web)
    assert [run["status"] for run in body["runs"]] == ["done", "done"]
    for run in Run.objects.filter(experiment_id=experiment_id):
        assert list(run.attempt_rows.values_list("outcome", flat=True)) == ["done"]
    assert runner_processes() == []
