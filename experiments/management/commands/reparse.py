from django.core.management.base import BaseCommand

from experiments import services
from experiments.models import Run


class Command(BaseCommand):
    help = "Recompute runs' metrics from their stored raw files (after a parser improved)."

    def add_arguments(self, parser):
        parser.add_argument("--experiment", type=int, help="only this experiment's runs")
        parser.add_argument("--run", type=int, action="append", help="only this run (repeatable)")

    def handle(self, *args, experiment=None, run=None, **options):
        runs = Run.objects.filter(files__isnull=False).distinct()
        if experiment:
            runs = runs.filter(experiment_id=experiment)
        if run:
            runs = runs.filter(id__in=run)
        count = 0
        for run_id in runs.values_list("id", flat=True):
            services.reparse_run(run_id)
            count += 1
        self.stdout.write(f"re-parsed {count} run(s)")
