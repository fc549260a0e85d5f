import json
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.core.management.base import BaseCommand, CommandError

from experiments.parsers import ParsedFile, parse_path
from experiments.summary import summarize


class Command(BaseCommand):
    help = "Parse server error logs, RocksDB LOGs, status snapshots and sysbench reports."

    def add_arguments(self, parser):
        parser.add_argument("files", nargs="+", metavar="FILE")
        parser.add_argument(
            "--json",
            action="store_true",
            help="a JSON array, one document per file (parsed_file.schema.json)",
        )
        parser.add_argument(
            "--tz",
            default="UTC",
            help="IANA zone of timestamps the log writes without one (MySQL 5.5/5.6, MariaDB, "
            "TokuFT); default UTC",
        )

    def handle(self, *args, files, **options):
        try:
            zone = ZoneInfo(options["tz"])
        except (ZoneInfoNotFoundError, ValueError):
            raise CommandError(
                f"--tz {options['tz']!r}: not a time zone name (e.g. UTC, Europe/Paris)"
            ) from None
        parsed: list[ParsedFile] = [parse_path(path, local_tz=zone) for path in files]
        if options["json"]:
            self.stdout.write(json.dumps([p.to_dict() for p in parsed], indent=2))
            return
        self.stdout.write("\n\n".join(summarize(p) for p in parsed))
