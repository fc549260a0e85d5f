import json

from django.core.management.base import BaseCommand

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

    def handle(self, *args, files, **options):
        parsed: list[ParsedFile] = [parse_path(path) for path in files]
        if options["json"]:
            self.stdout.write(json.dumps([p.to_dict() for p in parsed], indent=2))
            return
        self.stdout.write("\n\n".join(summarize(p) for p in parsed))
