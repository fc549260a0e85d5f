"""`make bench`, dispatch part: how long a host sits idle between two consecutive runs.

A real Celery worker (two processes) drives the local host through six small real runs (private
mariadbd, sysbench, kill -9, restart) queued by one experiment. The gap is measured from the
database's own record: one attempt's end (its bundle ingested) to the next attempt's start (the
next run claimed). Before dispatch by host it was 8 to 21 s (tasks retrying on the host lock).

It works in a database (`recovery_lab_bench_dispatch`), a broker queue and a runner directory of
its own, made anew each time, so a developer's running worker or test session is not disturbed.
"""

import os
import signal
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

BENCH_DB = "recovery_lab_bench_dispatch"
ADMIN_URL = os.environ.get("BENCH_ADMIN_URL", "postgres://postgres@127.0.0.1:5432/postgres")
BENCH_URL = ADMIN_URL.rsplit("/", 1)[0] + f"/{BENCH_DB}"
WORK_DIR = "/var/tmp/recovery-lab-bench-dispatch"
DEFINITION = {
    "name": "bench: consecutive runs on one host",
    "hosts": ["local"],
    "engines": ["innodb"],
    "parameters": {"redo_log_size": ["64M"]},
    "workload": {"name": "oltp_write_only", "tables": 1, "table_size": 2000, "threads": 2, "events": 500},
    "crash": {"method": "sigkill", "when": "after_workload"},
    "repetitions": 6,
}
TARGET_S = 1.0


def psql(*args: str) -> None:
    subprocess.run(
        ["psql", ADMIN_URL, "-v", "ON_ERROR_STOP=1", "-qtA", *args], check=True, capture_output=True
    )


def main() -> None:
    count = DEFINITION["repetitions"]
    print(f"\nDispatch: consecutive runs on one host ({count} real runs, database {BENCH_DB})")
    psql("-c", f'DROP DATABASE IF EXISTS "{BENCH_DB}" WITH (FORCE)')
    psql("-c", f'CREATE DATABASE "{BENCH_DB}"')
    os.environ.update(
        DATABASE_URL=BENCH_URL,
        DJANGO_SETTINGS_MODULE="webapp.settings",
        CELERY_TASK_DEFAULT_QUEUE=f"recovery-lab-bench-{uuid.uuid4().hex[:8]}",
        RUNNER_WORK_DIR=WORK_DIR,
    )
    subprocess.run([sys.executable, str(ROOT / "manage.py"), "migrate", "-v", "0"], check=True)
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "webapp",
            "worker",
            "-c",
            "2",
            "-l",
            "warning",
            "--without-heartbeat",
            "--without-mingle",
            "--without-gossip",
        ],
        cwd=ROOT,
        start_new_session=True,
        stdout=(log := open(Path(WORK_DIR + ".worker.log"), "wb")),  # noqa: SIM115
        stderr=subprocess.STDOUT,
    )
    try:
        import django

        django.setup()
        from experiments import services
        from experiments.models import Run, RunAttempt, Transport

        services.register_host("local", Transport.LOCAL)
        from celery import current_app

        while not current_app.control.ping(timeout=0.5):  # the worker is up and listening
            if worker.poll() is not None:
                raise SystemExit(f"the worker stopped: see {log.name}")
        experiment, _ = services.create_experiment(DEFINITION)
        deadline = time.monotonic() + 1800
        runs = Run.objects.filter(experiment=experiment)
        while not all(run.is_finished for run in runs.all()):
            if time.monotonic() > deadline or worker.poll() is not None:
                raise SystemExit(f"the runs did not finish: see {log.name}")
            time.sleep(1)
        failed = [run.error for run in runs.all() if run.status != "done"]
        if failed:
            raise SystemExit(f"runs failed: {failed}")
        attempts = list(RunAttempt.objects.filter(run__experiment=experiment).order_by("started_at"))
        gaps = [
            (b.started_at - a.ended_at).total_seconds() for a, b in zip(attempts, attempts[1:], strict=False)
        ]
        took = [a.seconds for a in attempts]
        first = (attempts[0].started_at - experiment.created_at).total_seconds()
        print(f"  each run (load, workload, kill -9, restarts): median {statistics.median(took):.1f} s")
        print(f"  experiment saved -> first run started:      {first * 1000:7.1f} ms")
        print(
            f"  one run ingested -> the next one started:  median {statistics.median(gaps) * 1000:7.1f} ms"
            f"   worst {max(gaps) * 1000:7.1f} ms   ({len(gaps)} gaps)"
        )
        print(f"  target (next run within {TARGET_S:g} s): {'met' if max(gaps) < TARGET_S else 'NOT met'}")
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        worker.wait(timeout=60)
        log.close()
        subprocess.run(["rm", "-rf", WORK_DIR], check=False)


if __name__ == "__main__":
    main()
