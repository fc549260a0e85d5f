"""`make bench`, dispatch part: how long a host sits idle between two consecutive runs.

A real Celery worker (two processes) drives the local host through six small real runs (private
mariadbd, sysbench, kill -9, restart) queued by one experiment. The gap is measured from the
database's own record: one attempt's end (its bundle ingested) to the next attempt's start (the
next run claimed). Before dispatch by host it was 8 to 21 s (tasks retrying on the host lock).

It works in a database (`recovery_lab_bench_dispatch`), a broker queue and a runner directory of
its own, made anew each time, so a developer's running worker or test session is not disturbed;
the runner directory and the worker's log in a folder made fresh (benchlib.fresh_folder).
"""

import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from benchlib import carry_out, fresh_folder, own_environment, start_worker, stop, wait_until  # noqa: E402

BENCH_DB = "recovery_lab_bench_dispatch"
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


def main() -> None:
    count = DEFINITION["repetitions"]
    print(f"\nDispatch: consecutive runs on one host ({count} real runs, database {BENCH_DB})")
    with fresh_folder("dispatch", runner=True) as folder:
        measure(folder)


def measure(folder: Path) -> None:
    os.environ.update(own_environment(BENCH_DB, folder / "work"))
    log = folder / "worker.log"
    worker = start_worker(2, log)
    try:
        import django

        django.setup()
        from experiments import services
        from experiments.models import RunAttempt, Transport

        services.register_host("local", Transport.LOCAL)
        from celery import current_app

        wait_until(lambda: current_app.control.ping(timeout=0.5), 120, "the worker", worker, logs=str(log))
        experiment = carry_out(DEFINITION, worker, log)
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
        stop(worker)


if __name__ == "__main__":
    main()
