"""`make bench`: parse a 1 GiB error log and compare with grep on the same file.

The log is what a busy server leaves: repeated warnings (aborted connections, page cleaner
notes, denied logins), with the stamped error log of a real MariaDB run (tests/data/bundles: its
start, its crash recovery and its clean restart) 162 times, each copy an hour after the last,
evenly spread through the file. The parser must find every one of them: the bench prints the
crash recoveries found against those written, and fails when they differ. It is built once
into the bench's cache and reused: BENCH_DIR, by default .cache/bench in the checkout, root's and
writable by nobody else (checked as the runner checks its work directory, refused by name
otherwise). What else it writes goes in a folder made fresh (benchlib.fresh_folder).

Each command runs three times from a warm page cache; the best time counts. The parser runs in
a child process so its peak memory (max RSS) can be reported.
"""

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchlib import fresh_folder, new_file  # noqa: E402

from experiments.parsers.errorlog import TRIGGERS  # noqa: E402
from runner.files import UnsafeFolder, own_folder  # noqa: E402

BENCH_DIR = Path(os.environ.get("BENCH_DIR", ROOT / ".cache" / "bench"))
LOG_NAME = "mostly-warnings-1GiB-v3.log"  # v3: 162 stamped runs, an hour apart
SAMPLE_BYTES = 64 << 20
SIZE = 1 << 30
COPIES = 162
RUN_LOG = ROOT / "tests/data/bundles/innodb_during_workload/error.log.stamped"
WARNINGS = (
    "{ts} {tid} [Warning] Aborted connection {tid} to db: 'sbtest' user: 'sbtest' host: 'localhost' "
    "(Got an error reading communication packets)\n",
    "{ts} 0 [Note] InnoDB: page_cleaner: 1000ms intended loop took {ms}ms. The settings might not be "
    "optimal. (flushed=200, during the time.)\n",
    "{ts} {tid} [Warning] Access denied for user 'app'@'10.0.{tid3}.7' (using password: YES)\n",
)
RUNS = 3


def warning_lines(count: int):
    for i in range(count):
        stamp = f"2026-11-20 {(i // 3600) % 24:2d}:{(i // 60) % 60:02d}:{i % 60:02d}"
        template = WARNINGS[i % len(WARNINGS)]
        yield template.format(ts=stamp, tid=1000 + i, tid3=i % 250, ms=4000 + i % 900).encode()


def run_log_later(hours: int) -> bytes:
    """The real run's stamped log moved `hours` later, the runner's stamps and the server's own
    times alike: each copy is a run of its own (the same lines at the same moments would be one
    run pasted twice, and counted once)."""
    seconds = hours * 3600
    text = re.sub(
        r"\[runner ([0-9.]+)\]", lambda m: f"[runner {float(m.group(1)) + seconds:.6f}]", RUN_LOG.read_text()
    )
    return re.sub(
        r"\d{4}-\d{2}-\d{2} [ \d]\d:\d{2}:\d{2}",
        lambda m: (datetime.strptime(m.group(0).replace("  ", " "), "%Y-%m-%d %H:%M:%S")
                   + timedelta(seconds=seconds)).strftime("%Y-%m-%d %H:%M:%S"),
        text,
    ).encode()  # fmt: skip


def write_log(out, size: int, copies: int) -> None:
    chunk = b"".join(warning_lines(2000))
    every = size // copies
    written, copy = 0, 0
    while written < size or copy < copies:
        if copy < copies and written >= every * copy + every // 2:
            run = run_log_later(copy)
            out.write(run)
            written += len(run)
            copy += 1
        out.write(chunk)
        written += len(chunk)


def regular_size(path: Path) -> int:
    """The size of the regular file at `path`; 0 when it is missing, a link or anything else."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return 0
    return info.st_size if stat.S_ISREG(info.st_mode) else 0


def cached_log(cache: Path, size: int = SIZE, copies: int = COPIES) -> Path:
    """The generated log in `cache`, built once and reused while it is whole. The cache must be
    root's and writable by nobody else (the runner's own check), so nothing in it changes
    between a look and a use; a link found at the log's name is replaced, never followed."""
    try:
        cache = own_folder(cache, "bench's cache", "BENCH_DIR")
    except UnsafeFolder as refused:
        raise SystemExit(str(refused)) from None
    log = cache / LOG_NAME
    if regular_size(log) >= size:
        return log
    print(f"building {log} (once)...", flush=True)
    fd, building = tempfile.mkstemp(prefix=".building-", dir=cache)  # O_EXCL: a name of its own
    try:
        with os.fdopen(fd, "wb") as out:
            write_log(out, size, copies)
        os.replace(building, log)  # a rename replaces a link at that name, never follows it
    except BaseException:
        os.unlink(building)
        raise
    return log


def write_triggers(folder: Path) -> Path:
    """The parser's words, one a line, for grep -f."""
    path = folder / "triggers.txt"
    with new_file(path) as out:
        out.write(("\n".join(TRIGGERS) + "\n").encode())
    return path


def write_sample(log: Path, folder: Path) -> Path:
    """The log's first 64 MiB, for the parser to read every line of."""
    path = folder / "first-64MiB.log"
    with (
        os.fdopen(os.open(log, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC), "rb") as source,
        new_file(path) as out,
    ):
        out.write(source.read(SAMPLE_BYTES))
    return path


def best_time(command: list[str]) -> tuple[float, str]:
    times, output = [], ""
    for _ in range(RUNS):
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "LC_ALL": "C"})
        times.append(time.perf_counter() - start)
        output = done.stdout.strip()
    return min(times), output


PARSE = """
import json, resource, sys, time
from experiments.parsers import parse_path
start = time.perf_counter()
parsed = parse_path(sys.argv[1], scan=sys.argv[2] == "scan")
elapsed = time.perf_counter() - start
print(json.dumps({"seconds": elapsed, "episodes": len(parsed.episodes),
                  "crashes": len(parsed.crash_episodes),
                  "max_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def parse_run(path: Path, mode: str) -> dict:
    results = []
    for _ in range(RUNS if mode == "scan" else 1):
        done = subprocess.run(
            [sys.executable, "-c", PARSE, str(path), mode],
            capture_output=True,
            text=True,
            cwd=ROOT,
            check=True,
        )
        results.append(json.loads(done.stdout))
    return min(results, key=lambda r: r["seconds"])


def main() -> None:
    log = cached_log(BENCH_DIR)
    with fresh_folder("parse") as folder:
        measure(log, folder)


def measure(log: Path, folder: Path) -> None:
    size_mib = log.stat().st_size / (1 << 20)
    expected_recoveries = COPIES
    subprocess.run(["cat", str(log)], stdout=subprocess.DEVNULL, check=True)  # warm the page cache
    triggers = write_triggers(folder)

    grep = shutil.which("grep")
    grep_ready, count = best_time([grep, "-c", "ready for connections", str(log)])
    grep_words, _ = best_time([grep, "-c", "-F", "-f", str(triggers), str(log)])
    parsed = parse_run(log, "scan")
    every_line = parse_run(write_sample(log, folder), "full")

    # The commands as a DBA runs them: start-up, reading, JSON out (to /dev/null), all counted.
    command = [str(ROOT / ".venv" / "bin" / "recovery-lab-parse"), "--json", str(log)]
    whole, _ = best_time(command)
    startup, _ = best_time([command[0], "--help"])
    django_whole, _ = best_time([sys.executable, str(ROOT / "manage.py"), "parselog", "--json", str(log)])
    django_startup, _ = best_time([sys.executable, str(ROOT / "manage.py"), "parselog", "--help"])

    ok = parsed["crashes"] == expected_recoveries and parsed["episodes"] == 3 * expected_recoveries
    print(
        f"\n{size_mib:.0f} MiB error log, {expected_recoveries} runs written (a start, a crash recovery "
        f"and a clean restart each), best of {RUNS}, LC_ALL=C"
    )
    print(f"  grep -c 'ready for connections'        {grep_ready:6.2f} s   ({count} lines)")
    print(f"  grep -c -F -f <the parser's {len(TRIGGERS)} words> {grep_words:6.2f} s")
    print(
        f"  parselog (keyword scan)                {parsed['seconds']:6.2f} s   "
        f"{parsed['seconds'] / grep_ready:.1f}x the first grep; peak memory {parsed['max_rss_mib']:.0f} MiB"
    )
    print(
        f"  crash recoveries found {parsed['crashes']} of {expected_recoveries} written; starts found "
        f"{parsed['episodes']} of {3 * expected_recoveries}: {'all' if ok else 'NOT all'}"
    )
    print(
        f"  every line through the parser, 64 MiB  {every_line['seconds']:6.2f} s   "
        f"(~{every_line['seconds'] * size_mib / 64:.0f} s for the whole file)"
    )
    print(
        f"  recovery-lab-parse --json (the command) {whole:6.2f} s   {whole / grep_ready:.1f}x grep -c, "
        f"start-up included ({startup * 1000:.0f} ms of it); target within 3x: "
        f"{'met' if whole <= 3 * grep_ready else 'NOT met'}"
    )
    print(
        f"  manage.py parselog --json               {django_whole:6.2f} s   "
        f"{django_whole / grep_ready:.1f}x grep -c (Django's start-up: {django_startup * 1000:.0f} ms)"
    )
    if not ok:
        sys.exit(f"FAILED: expected {expected_recoveries} crash recoveries, found {parsed['crashes']}")


if __name__ == "__main__":
    main()
