"""The public fixtures hold many samples per file, each under a "=== SAMPLE X: source" header."""

import re
from functools import cache
from pathlib import Path

PUBLIC = Path(__file__).parent / "data" / "public"
_HEADER = re.compile(r"^=== (?:SAMPLE )?(\w+)[:=]")


@cache
def samples(name: str) -> dict[str, bytes]:
    """Sample id -> its lines, without the "# ..." notes the collector added."""
    found: dict[str, list[str]] = {}
    key = None
    for line in (PUBLIC / name).read_text().splitlines():
        if match := _HEADER.match(line):
            key = match.group(1)
            found[key] = []
        elif key is not None and not (line.startswith("# ") or line == "#"):
            found[key].append(line)
    return {k: ("\n".join(v) + "\n").encode() for k, v in found.items()}


def sample(name: str, key: str) -> bytes:
    return samples(name)[key]
