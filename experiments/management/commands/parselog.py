from django.core.management.base import BaseCommand, CommandError

from experiments.parsers.cli import DESCRIPTION, JSON_HELP, TZ_HELP, parse_files, parser_failures, render


class Command(BaseCommand):
    help = DESCRIPTION + " The same as recovery-lab-parse, which needs no Django."

    def add_arguments(self, parser):
        parser.add_argument("files", nargs="+", metavar="FILE")
        parser.add_argument("--json", action="store_true", help=JSON_HELP)
        parser.add_argument("--tz", default="UTC", help=TZ_HELP)

    def handle(self, *args, files, **options):
        try:
            parsed = parse_files(files, options["tz"])
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(render(parsed, options["json"]))
        if failures := parser_failures(parsed):
            raise CommandError("\n".join(failures), returncode=3)
