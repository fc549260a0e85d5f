"""`make bench`, load part: 20 concurrent API and page clients for a minute against the real web
process (gunicorn with 2 workers, as `make start` runs it) while a real Celery worker carries out
and ingests real runs on the local host (private mariadbd, sysbench, kill -9, restart), over the
team history of the analysis benchmark (100,000 runs).

The clients are Locust users (scripts/locustfile.py), on loopback, bounded in count (20) and time
(60 s), each acting every 0.5-1.5 s. Printed per endpoint: requests, failures, median, p95 and
worst latency as the clients saw them; and the runs ingested during the minute. Exit status 1 if
any request failed or any run did not end done.

It works in a database (`recovery_lab_bench_load`), broker queue and runner directory of its own,
made anew each time; the runner directory and the processes' logs in a folder made fresh
(benchlib.fresh_folder).
"""

import csv
import os
import socket
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from bench_analysis import FILL_SQL, RUNS  # noqa: E402
from benchlib import (  # noqa: E402
    BIN,
    database_url,
    fresh_database,
    fresh_folder,
    psql,
    start,
    start_worker,
    stop,
    wait_until,
)

BENCH_DB = "recovery_lab_bench_load"
BENCH_URL = database_url(BENCH_DB)
CLIENTS = 20
SECONDS = 60
DEFINITION = {
    "name": "bench: runs ingesting under load",
    "hosts": ["local"],
    "engines": ["innodb"],
    "parameters": {"redo_log_size": ["64M", "128M"]},
    "workload": {"name": "oltp_write_only", "tables": 1, "table_size": 2000, "threads": 2, "events": 2000},
    "crash": {"method": "sigkill", "when": "after_workload"},
    "repetitions": 15,
}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def answers(url: str) -> bool:
    import requests

    try:
        return requests.get(url, timeout=5).status_code < 500
    except requests.ConnectionError:
        return False


def main() -> None:
    print(f"\nLoad: {CLIENTS} clients for {SECONDS} s while runs ingest (database {BENCH_DB})")
    with fresh_folder("load", runner=True) as folder:
        measure(folder)


def measure(folder: Path) -> None:
    work_dir, logs = folder / "work", f"{folder}/*.log"
    env = {
        **os.environ,
        "DATABASE_URL": BENCH_URL,
        "DJANGO_SETTINGS_MODULE": "webapp.settings",
        "CELERY_TASK_DEFAULT_QUEUE": f"recovery-lab-bench-{uuid.uuid4().hex[:8]}",
        "RUNNER_WORK_DIR": str(work_dir),
        "ALLOWED_HOSTS": "127.0.0.1",
    }
    os.environ.update(env)
    fresh_database(BENCH_DB)
    subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "collectstatic", "--noinput", "-v", "0"], check=True
    )
    psql("-c", FILL_SQL, url=BENCH_URL)
    print(f"  history: {RUNS:,} runs in 500 experiments")

    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.test import Client

    from experiments import services
    from experiments.models import Experiment, Run, RunStatus, Transport
    from experiments.services.tokens import new_token

    user = get_user_model().objects.get(username="bench")
    browser = Client()
    browser.force_login(user)
    history = Experiment.objects.order_by("id")[:2]
    services.register_host("local", Transport.LOCAL)

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    work_dir.mkdir()
    web = start(
        [str(BIN / "gunicorn"), "-c", "webapp/gunicorn.conf.py", "-b", f"127.0.0.1:{port}", "-w", "2"],
        folder / "web.log",
        env,
    )
    worker = start_worker(2, folder / "worker.log", env)
    try:
        wait_until(lambda: answers(f"{base}/login/"), 120, "the web process", web, logs=logs)
        from celery import current_app

        wait_until(lambda: current_app.control.ping(timeout=0.5), 120, "the worker", worker, logs=logs)
        experiment, _ = services.create_experiment(DEFINITION)
        runs = Run.objects.filter(experiment=experiment)
        first = wait_until(
            lambda: runs.filter(status=RunStatus.DONE).first(), 300, "the first run", worker, logs=logs
        )
        done_before = runs.filter(status=RunStatus.DONE).count()
        load_env = {
            **env,
            "LOAD_TOKEN": new_token(user),
            "LOAD_SESSION": browser.cookies["sessionid"].value,
            "LOAD_LIVE_EXPERIMENT": str(experiment.id),
            "LOAD_HISTORY_EXPERIMENT": str(history[0].id),
            "LOAD_OTHER_EXPERIMENT": str(history[1].id),
            "LOAD_RUN": str(first.id),
        }
        with tempfile.TemporaryDirectory() as out:
            locust = subprocess.run(
                [
                    str(BIN / "locust"),
                    "-f",
                    str(ROOT / "scripts" / "locustfile.py"),
                    "--headless",
                    "--users",
                    str(CLIENTS),
                    "--spawn-rate",
                    str(CLIENTS),
                    "--run-time",
                    f"{SECONDS}s",
                    "--stop-timeout",
                    "30",
                    "--host",
                    base,
                    "--csv",
                    f"{out}/load",
                    "--only-summary",
                    "--loglevel",
                    "WARNING",
                ],
                env=load_env,
                capture_output=True,
                text=True,
            )
            with open(f"{out}/load_stats.csv") as stats:
                rows = list(csv.DictReader(stats))
            with open(f"{out}/load_failures.csv") as failures:
                failed = list(csv.DictReader(failures))
        ingested = runs.filter(status=RunStatus.DONE).count() - done_before
        not_done = list(runs.filter(status=RunStatus.FAILED).values_list("error", flat=True))
        services.cancel_experiment(experiment.id)
    finally:
        stop(worker)
        stop(web)
    print(f"  runs ingested during the minute: {ingested} (each load, workload, kill -9, restart, ingest)")
    print(f"  {'endpoint':<44} {'requests':>8} {'failed':>6} {'median':>8} {'p95':>8} {'worst':>8}")
    for row in rows:
        label = "all" if row["Name"] == "Aggregated" else row["Name"]
        print(
            f"  {label:<44} {row['Request Count']:>8} {row['Failure Count']:>6} "
            f"{row['50%']:>5} ms {row['95%']:>5} ms {float(row['Max Response Time']):>5.0f} ms"
        )
    for failure in failed:
        print(f"  FAILED {failure['Method']} {failure['Name']}: {failure['Error']} x{failure['Occurrences']}")
    if not_done:
        print(f"  runs failed: {not_done}")
    if failed or not_done or locust.returncode not in (0, 1):
        print(locust.stderr[-2000:])
        raise SystemExit(1)
    print("  no request failed, every run ingested done")


if __name__ == "__main__":
    main()
