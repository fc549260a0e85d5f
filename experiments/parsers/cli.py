"""`recovery-lab-parse` (or `python -m experiments.parsers`): the log parsers as a command a DBA
runs on the database host. Standard library and the parsers only: no Django, database or broker,
so it starts in a fraction of a second. `manage.py parselog` prints exactly the same.

Output: a summary for a ticket, or with --json one document per file (schemas/parsed_file.schema.json).
Exit status: 0; 1 when a file could not be read; 3 when a parser failed on a file (its result is
printed as far as it got, and the failure on stderr).
"""

import argparse
import json
import os
import sys
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from experiments.parsers import ParsedFile, parse_path
from experiments.parsers.summary import summarize

DESCRIPTION = "Parse server error logs, RocksDB LOGs, status snapshots and sysbench reports."
TZ_HELP = "IANA zone of timestamps the log writes without one (MySQL 5.5/5.6, MariaDB, TokuFT); default UTC"
# A parser raised (a bug): the output is printed, but it is not the whole file's.
EXIT_PARSER_FAILED = 3
JSON_HELP = "a JSON array, one document per file (parsed_file.schema.json)"


def time_zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"--tz {name!r}: not a time zone name (e.g. UTC, Europe/Paris)") from None


def parse_files(files: list[str], tz: str) -> list[ParsedFile]:
    """ValueError for a bad --tz; an unreadable file is a warning in its own document, and the
    others are still parsed."""
    zone = time_zone(tz)
    return [parse_path(path, local_tz=zone) for path in files]


def render(parsed: list[ParsedFile], as_json: bool) -> str:
    """What the command prints for these files."""
    if as_json:
        return json.dumps([p.to_dict() for p in parsed], indent=2)
    return "\n\n".join(summarize(p) for p in parsed)


def parser_failures(parsed: list[ParsedFile]) -> list[str]:
    """A line per file a parser raised on: its result above stops where the parser did."""
    return [
        f"the parser failed on {p.file} ({p.parser_error}): its result is incomplete; please report it"
        for p in parsed
        if p.parser_error
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="recovery-lab-parse", description=DESCRIPTION)
    parser.add_argument("files", nargs="+", metavar="FILE")
    parser.add_argument("--json", action="store_true", help=JSON_HELP)
    parser.add_argument("--tz", default="UTC", help=TZ_HELP)
    args = parser.parse_args(argv)
    try:
        parsed = parse_files(args.files, args.tz)
    except ValueError as exc:
        parser.error(str(exc))
    unreadable = [path for path in args.files if not os.access(path, os.R_OK)]
    try:
        sys.stdout.write(render(parsed, args.json) + "\n")
        sys.stdout.flush()
    except BrokenPipeError:  # `| head` closed the pipe: not an error
        sys.stderr.close()
        return 0
    if unreadable:
        print(f"recovery-lab-parse: could not read {', '.join(unreadable)}", file=sys.stderr)
        return 1
    if failures := parser_failures(parsed):
        print("\n".join(f"recovery-lab-parse: {line}" for line in failures), file=sys.stderr)
        return EXIT_PARSER_FAILED
    return 0


if __name__ == "__main__":
    sys.exit(main())
