"""`make bench`, load part: 20 concurrent API and page clients for a minute against the real web
process (gunicorn with 2 workers, as `make start` runs it) while a real Celery worker carries out
and ingests real runs on the local host (private mariadbd, sysbench, kill -9, restart), over the
team history of the analysis benchmark (100,000 runs).

The clients are Locust users (scripts/locustfile.py), on loopback, bounded in count (20) and time
(60 s), each acting every 0.5-1.5 s. Printed per endpoint: requests, failures, median, p95 and
worst latency as the clients saw them; and the runs ingested during the minute. Exit status 1 if
any request failed or any run did not end done.

It works in a database (`recovery_lab_bench_load`), broker queue and runner directory of its own,
made anew each time.
"""

import csv
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from bench_analysis import FILL_SQL, RUNS, psql  # noqa: E402

BENCH_DB = "recovery_lab_bench_load"
ADMIN_URL = os.environ.get("BENCH_ADMIN_URL", "postgres://postgres@127.0.0.1:5432/postgres")
BENCH_URL = ADMIN_URL.rsplit("/", 1)[0] + f"/{BENCH_DB}"
WORK_DIR = "/var/tmp/recovery-lab-bench-load"
CLIENTS = 20
SECONDS = 60
BIN = ROOT / ".venv" / "bin"
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


def start(args: list[str], log: Path, env: dict) -> subprocess.Popen:
    with log.open("wb") as out:
        return subprocess.Popen(
            args, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def wait_until(condition, timeout_s: float, what: str, *processes: subprocess.Popen):
    deadline = time.monotonic() + timeout_s
    while not (found := condition()):
        if time.monotonic() > deadline:
            raise SystemExit(f"gave up waiting for {what}")
        if any(p.poll() is not None for p in processes):
            raise SystemExit(f"a process stopped while waiting for {what}; see {WORK_DIR}.*.log")
        time.sleep(0.5)
    return found


def answers(url: str) -> bool:
    import requests

    try:
        return requests.get(url, timeout=5).status_code < 500
    except requests.ConnectionError:
        return False


def main() -> None:
    print(f"\nLoad: {CLIENTS} clients for {SECONDS} s while runs ingest (database {BENCH_DB})")
    psql("-c", f'DROP DATABASE IF EXISTS "{BENCH_DB}" WITH (FORCE)')
    psql("-c", f'CREATE DATABASE "{BENCH_DB}"')
    env = {
        **os.environ,
        "DATABASE_URL": BENCH_URL,
        "DJANGO_SETTINGS_MODULE": "webapp.settings",
        "CELERY_TASK_DEFAULT_QUEUE": f"recovery-lab-bench-{uuid.uuid4().hex[:8]}",
        "RUNNER_WORK_DIR": WORK_DIR,
        "ALLOWED_HOSTS": "127.0.0.1",
    }
    os.environ.update(env)
    subprocess.run([sys.executable, str(ROOT / "manage.py"), "migrate", "-v", "0"], check=True)
    subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "collectstatic", "--noinput", "-v", "0"], check=True
    )
    psql("-c", FILL_SQL, url=BENCH_URL)
    print(f"  history: {RUNS:,} runs in 500 experiments")

    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.test import Client
    from rest_framework.authtoken.models import Token

    from experiments import services
    from experiments.models import Experiment, Run, RunStatus, Transport

    user = get_user_model().objects.get(username="bench")
    browser = Client()
    browser.force_login(user)
    history = Experiment.objects.order_by("id")[:2]
    services.register_host("local", Transport.LOCAL)

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    Path(WORK_DIR).mkdir(parents=True, exist_ok=True)
    web = start(
        [str(BIN / "gunicorn"), "-c", "webapp/gunicorn.conf.py", "-b", f"127.0.0.1:{port}", "-w", "2"],
        Path(f"{WORK_DIR}.web.log"),
        env,
    )
    worker = start(
        [
            str(BIN / "celery"),
            "-A",
            "webapp",
            "worker",
            "-c",
            "2",
            "-l",
            "warning",
            "--without-mingle",
            "--without-gossip",
        ],
        Path(f"{WORK_DIR}.worker.log"),
        env,
    )
    try:
        wait_until(lambda: answers(f"{base}/login/"), 120, "the web process", web)
        from celery import current_app

        wait_until(lambda: current_app.control.ping(timeout=0.5), 120, "the worker", worker)
        experiment, _ = services.create_experiment(DEFINITION)
        runs = Run.objects.filter(experiment=experiment)
        first = wait_until(lambda: runs.filter(status=RunStatus.DONE).first(), 300, "the first run", worker)
        done_before = runs.filter(status=RunStatus.DONE).count()
        load_env = {
            **env,
            "LOAD_TOKEN": Token.objects.get_or_create(user=user)[0].key,
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
