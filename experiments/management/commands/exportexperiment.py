"""manage.py exportexperiment ID [-o FILE]: an experiment as one .tar.gz for importexperiment."""

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from experiments.models import Experiment
from experiments.services.archive import ArchiveRejected, export_experiment


class Command(BaseCommand):
    help = "Export an experiment (definition, runs, metrics, attempts, raw files) as one .tar.gz."

    def add_arguments(self, parser):
        parser.add_argument("id", type=int)
        parser.add_argument("-o", "--output", help="the file to write (default: experiment-ID.tar.gz)")

    def handle(self, *args, **options):
        experiment = Experiment.objects.filter(pk=options["id"]).first()
        if experiment is None:
            raise CommandError(f"no experiment {options['id']}")
        path = Path(options["output"] or f"experiment-{experiment.pk}.tar.gz")
        try:
            with path.open("xb") as out:  # never overwrite a file
                try:
                    export_experiment(experiment, out, settings.INSTALLATION_NAME)
                except ArchiveRejected:
                    path.unlink()
                    raise
        except FileExistsError as exc:
            raise CommandError(f"{path} exists: choose another name with -o") from exc
        except ArchiveRejected as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"wrote {path} ({path.stat().st_size:,} bytes)")
