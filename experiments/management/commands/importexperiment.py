"""manage.py importexperiment FILE [--user NAME]: store an exported experiment here."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from experiments.services.archive import ArchiveRejected, import_experiment


class Command(BaseCommand):
    help = "Import an experiment exported by another installation (refused if it is here already)."

    def add_arguments(self, parser):
        parser.add_argument("file")
        parser.add_argument("--user", help="who imports it (becomes its author here)")

    def handle(self, *args, **options):
        user = None
        if options["user"]:
            user = get_user_model().objects.filter(username=options["user"]).first()
            if user is None:
                raise CommandError(f"no user {options['user']}")
        try:
            with open(options["file"], "rb") as upload:
                experiment = import_experiment(upload, user=user)
        except OSError as exc:
            raise CommandError(f"cannot read {options['file']}: {exc.strerror}") from exc
        except ArchiveRejected as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(
            f"imported as experiment {experiment.pk}: {experiment.name} ({experiment.runs.count()} runs)"
        )
