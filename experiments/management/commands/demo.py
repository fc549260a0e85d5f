import secrets
import time

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.urls import reverse

from experiments import services
from experiments.models import ExperimentStatus, Transport
from workers.probing import probe_host

DEMO_DEFINITION = {
    "name": "Demo: redo log size vs recovery, InnoDB, MyRocks and PostgreSQL",
    "hosts": ["local"],
    "engines": ["innodb", "rocksdb", "postgresql"],
    "parameters": {"buffer_pool_size": ["128M"], "redo_log_size": ["64M", "512M"], "insert_rate": [0]},
    "workload": {"name": "oltp_write_only", "tables": 4, "table_size": 20000, "threads": 4, "events": 8000},
    "crash": {"method": "sigkill", "when": "after_workload"},
    "repetitions": 3,
}
# `demo --versions`: three real servers side by side on InnoDB, the host's own MariaDB 10.11, the
# 11.8 build `make setup` installs from Debian 13's packages and Oracle's MySQL 9.7 from Debian
# unstable's.
VERSIONS_BUILDS = ("mariadb-11.8", "mysql-9.7")
VERSIONS_DEFINITION = {
    "name": "Demo: InnoDB on MariaDB 10.11, MariaDB 11.8 and MySQL 9.7",
    "hosts": ["local"],
    "engines": ["innodb"],
    "parameters": {"buffer_pool_size": ["128M"], "redo_log_size": ["512M"], "insert_rate": [0],
                   "server_build": ["system", *VERSIONS_BUILDS], "profile": [True]},
    "workload": {"name": "oltp_write_only", "tables": 4, "table_size": 20000, "threads": 4, "events": 8000},
    "crash": {"method": "sigkill", "when": "after_workload"},
    "repetitions": 3,
}  # fmt: skip


class Command(BaseCommand):
    help = "Create an admin, register this machine, run a small real experiment, print its URL."

    def add_arguments(self, parser):
        parser.add_argument("--url", default="http://127.0.0.1:8000")
        parser.add_argument("--timeout", type=int, default=1800, help="seconds to wait for runs")
        parser.add_argument(
            "--versions",
            action="store_true",
            help=f"InnoDB on MariaDB 10.11, 11.8 and MySQL 9.7 (the builds {', '.join(VERSIONS_BUILDS)} "
            "that make setup installs)",
        )

    def handle(self, *args, url, timeout, versions, **options):
        users = get_user_model()
        if not users.objects.filter(username="admin").exists():
            password = secrets.token_urlsafe(12)
            users.objects.create_superuser("admin", "", password)
            self.stdout.write(f"Log in as admin / {password}  (change it in /admin/)")
        else:
            self.stdout.write("Log in as admin (the password make start or an earlier demo printed)")
        host = services.register_host("local", Transport.LOCAL)
        # its facts on the hosts page from the start (its servers, builds, engines, disk); its
        # disk's floor measured the first time (fio, about 12 s), which recoveries are set against
        measure = not ((host.facts or {}).get("disk") or {}).get("floor")
        if measure:
            self.stdout.write("Measuring this machine's disk with fio (about 12 s, once)")
        probed = probe_host(host.pk, measure_disk=measure)
        if probed.get("error"):
            self.stdout.write(f"The probe of this machine failed: {probed['error']}")
        definition = VERSIONS_DEFINITION if versions else DEMO_DEFINITION
        try:
            experiment, _ = services.create_experiment(definition, user=users.objects.get(username="admin"))
        except services.DefinitionError as exc:
            raise CommandError(f"the demo's definition was refused: {exc}") from None
        self.stdout.write(
            f"Experiment {experiment.id} queued: {experiment.runs.count()} runs (each loads, crashes "
            f"and restarts a private server); follow them live at {url}{experiment.get_absolute_url()}"
        )
        deadline = time.monotonic() + timeout
        finished = {
            ExperimentStatus.DONE,
            ExperimentStatus.PARTIAL,
            ExperimentStatus.FAILED,
            ExperimentStatus.CANCELLED,
        }
        while True:
            experiment.refresh_from_db()
            if experiment.status in finished:
                break
            if time.monotonic() > deadline:
                raise CommandError(
                    f"runs not finished after {timeout} s; is the worker running? (see .run/worker.log)"
                )
            time.sleep(2)  # waiting for the worker to finish real runs; nothing else to wait on
        done = experiment.runs.filter(status="done").count()
        self.stdout.write(f"{done} of {experiment.runs.count()} runs done ({experiment.status}).")
        self.stdout.write(f"Results: {url}{experiment.get_absolute_url()}")
        self.stdout.write(f"Report (and its PDF): {url}{reverse('experiment-report', args=[experiment.pk])}")
        if experiment.status == ExperimentStatus.FAILED:
            raise CommandError("every run failed; their errors are on the page above")
