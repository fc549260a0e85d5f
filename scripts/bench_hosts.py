"""`make bench`, several-hosts part: 9 real runs on one benchmark machine, then the same 9 over
three, with one Celery worker of three processes; the wall time of each, from the experiment
saved to its last run ingested.

The machines are the tests' own (tests/machines.py): each a network namespace with a real sshd
on port 22 (a loopback address where namespaces cannot be made), registered with `registerhost
--ssh ... --trust-host-key ... --probe` as an admin would. They all share this machine's cores:
three machines here is three servers on 2 cores, not three times the hardware, so the speed-up
printed is what dispatch gives when the CPUs are not the limit less what sharing them costs.
A first untimed run on each machine builds its dataset, so neither timed experiment pays for it.

It works in a database (`recovery_lab_bench_hosts`), a broker queue and a runner directory of
its own, made anew each time, so a developer's running worker or test session is not disturbed;
the runner directories (the local one, each machine's) and the worker's log in a folder made fresh
(benchlib.fresh_folder).
"""

import logging
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from benchlib import carry_out, fresh_folder, own_environment, start_worker, stop, wait_until  # noqa: E402

BENCH_DB = "recovery_lab_bench_hosts"
NAMES = ["bench1", "bench2", "bench3"]
RUNS = 9
WORKLOAD = {"name": "oltp_write_only", "tables": 1, "table_size": 10000, "threads": 2, "events": 2000}


def definition(name: str, hosts: list[str], repetitions: int) -> dict:
    return {
        "name": name,
        "hosts": hosts,
        "engines": ["innodb"],
        "parameters": {"redo_log_size": ["64M"]},
        "workload": WORKLOAD,
        "crash": {"method": "sigkill", "when": "after_workload"},
        "repetitions": repetitions,
    }


def timed(body: dict, worker: subprocess.Popen, log: Path) -> tuple[float, list[float]]:
    """The experiment's wall time (saved to its last run ingested) and its runs' own times."""
    from experiments.models import RunAttempt

    experiment = carry_out(body, worker, log)
    wall = (max(run.finished_at for run in experiment.runs.all()) - experiment.created_at).total_seconds()
    return wall, [a.seconds for a in RunAttempt.objects.filter(run__experiment=experiment)]


def main() -> None:
    from tests.machines import namespaces_allowed

    isolated = namespaces_allowed()
    kind = "network namespaces" if isolated else "loopback addresses (no network namespaces here)"
    print(f"\nSeveral hosts: {RUNS} real runs on one machine, then over {len(NAMES)} ({kind})")
    with fresh_folder("hosts", runner=True) as work:
        measure(work, isolated)


def measure(work: Path, isolated: bool) -> None:
    from tests.machines import start_machine

    os.environ.update(own_environment(BENCH_DB, work / "local"))
    log = work / "worker.log"
    worker = start_worker(len(NAMES), log)
    folder = Path(tempfile.mkdtemp(prefix="recovery-lab-bench-hosts-"))  # the machines' sshd files
    machines = []
    try:
        import django

        django.setup()
        logging.getLogger("asyncssh").setLevel(logging.WARNING)  # a line per SSH channel otherwise
        from celery import current_app
        from django.core.management import call_command

        from experiments.services.ssh_keys import dashboard_public_key

        for index, name in enumerate(NAMES):
            machine = start_machine(folder / name, name, dashboard_public_key(), index, isolated)
            machines.append(machine)
            call_command(
                "registerhost",
                name,
                ssh=f"root@{machine.address}:{machine.port}",
                work_dir=str(work / name),
                trust_host_key=machine.sshd.fingerprint,
                probe=True,
                stdout=open(os.devnull, "w"),  # noqa: SIM115
            )
        wait_until(lambda: current_app.control.ping(timeout=0.5), 120, "the worker", worker, logs=str(log))

        timed(definition("bench: warm-up, one run per machine", NAMES, 1), worker, log)
        one_wall, one_took = timed(definition("bench: 9 runs, one machine", NAMES[:1], RUNS), worker, log)
        three_wall, three_took = timed(
            definition("bench: 9 runs, three machines", NAMES, RUNS // len(NAMES)), worker, log
        )
        cores = os.cpu_count()
        print(f"  workload: {WORKLOAD['name']}, {WORKLOAD['events']} events; {cores} CPU cores shared by all")
        for label, wall, took in (
            ("one machine   ", one_wall, one_took),
            ("three machines", three_wall, three_took),
        ):
            print(
                f"  {label}: {len(took)} runs in {wall:6.1f} s wall"
                f"   (each run: median {statistics.median(took):5.1f} s, longest {max(took):5.1f} s)"
            )
        print(
            f"  three machines took {three_wall / one_wall:.2f}x the wall time of one"
            f" (1/3 = 0.33 if the machines shared nothing)"
        )
    finally:
        stop(worker)
        for machine in machines:
            machine.power_off()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
