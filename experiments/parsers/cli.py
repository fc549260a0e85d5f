"""`recovery-lab-parse` (or `python -m experiments.parsers`): the log parsers as a command a DBA
runs on the database host. Standard library and the parsers only: no Django, database or broker,
so it starts in a fraction of a second. `manage.py parselog` prints exactly the same.

Output: a summary for a ticket, or with --json one document per file (schemas/parsed_file.schema.json).
"""

import argparse
import json
import os
import sys
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ..summary import summarize
from . import ParsedFile, parse_path

DESCRIPTION = "Parse server error logs, RocksDB LOGs, status snapshots and sysbench reports."
TZ_HELP = "IANA zone of timestamps the log writes without one (MySQL 5.5/5.6, MariaDB, TokuFT); default UTC"
JSON_HELP = "a JSON array, one document per file (parsed_file.schema.json)"


def time_zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"--tz {name!r}: not a time zone name (e.g. UTC, Europe/Paris)") from None


def render(files: list[str], as_json: bool, tz: str) -> str:
    """What the command prints for these files. ValueError for a bad --tz; an unreadable file is
    a warning in its own document, and the others are still parsed."""
    zone = time_zone(tz)
    parsed: list[ParsedFile] = [parse_path(path, local_tz=zone) for path in files]
    if as_json:
        return json.dumps([p.to_dict() for p in parsed], indent=2)
    return "\n\n".join(summarize(p) for p in parsed)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="recovery-lab-parse", description=DESCRIPTION)
    parser.add_argument("files", nargs="+", metavar="FILE")
    parser.add_argument("--json", action="store_true", help=JSON_HELP)
    parser.add_argument("--tz", default="UTC", help=TZ_HELP)
    args = parser.parse_args(argv)
    try:
        output = render(args.files, args.json, args.tz)
    except ValueError as exc:
        parser.error(str(exc))
    unreadable = [path for path in args.files if not os.access(path, os.R_OK)]
    try:
        sys.stdout.write(output + "\n")
        sys.stdout.flush()
    except BrokenPipeError:  # `| head` closed the pipe: not an error
        sys.stderr.close()
    if unreadable:
        print(f"recovery-lab-parse: could not read {', '.join(unreadable)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
