"""`make bench`: parse a 1 GiB error log and compare with grep on the same file.

The log is what a busy server leaves: repeated warnings (aborted connections, page cleaner
notes, denied logins), with the stamped error log of a real MariaDB run (tests/data/bundles: its
start, its crash recovery and its clean restart) 162 times, each copy an hour after the last,
evenly spread through the file. The parser must find every one of them: the bench prints the
crash recoveries found against those written, and fails when they differ. It is built once
under /var/tmp and reused.

Each command runs three times from a warm page cache; the best time counts. The parser runs in
a child process so its peak memory (max RSS) can be reported.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from experiments.parsers.errorlog import TRIGGERS  # noqa: E402

BENCH_DIR = Path(os.environ.get("BENCH_DIR", "/var/tmp/recovery-lab-bench"))
LOG = BENCH_DIR / "mostly-warnings-1GiB-v3.log"  # v3: 162 stamped runs, an hour apart
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


def build_log() -> None:
    if LOG.exists() and LOG.stat().st_size >= SIZE:
        return
    BENCH_DIR.mkdir(parents=True, exist_ok=True)
    print(f"building {LOG} (once)...", flush=True)
    chunk = b"".join(warning_lines(2000))
    every = SIZE // COPIES
    written, copy = 0, 0
    with LOG.open("wb") as out:
        while written < SIZE or copy < COPIES:
            if copy < COPIES and written >= every * copy + every // 2:
                run = run_log_later(copy)
                out.write(run)
                written += len(run)
                copy += 1
            out.write(chunk)
            written += len(chunk)


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
    build_log()
    size_mib = LOG.stat().st_size / (1 << 20)
    expected_recoveries = COPIES
    subprocess.run(["cat", str(LOG)], stdout=subprocess.DEVNULL, check=True)  # warm the page cache
    triggers = BENCH_DIR / "triggers.txt"
    triggers.write_text("\n".join(TRIGGERS) + "\n")

    grep = shutil.which("grep")
    grep_ready, count = best_time([grep, "-c", "ready for connections", str(LOG)])
    grep_words, _ = best_time([grep, "-c", "-F", "-f", str(triggers), str(LOG)])
    parsed = parse_run(LOG, "scan")
    sample = BENCH_DIR / "first-64MiB.log"
    with LOG.open("rb") as source, sample.open("wb") as out:
        out.write(source.read(64 << 20))
    every_line = parse_run(sample, "full")

    # The commands as a DBA runs them: start-up, reading, JSON out (to /dev/null), all counted.
    command = [str(ROOT / ".venv" / "bin" / "recovery-lab-parse"), "--json", str(LOG)]
    whole, _ = best_time(command)
    startup, _ = best_time([command[0], "--help"])
    django_whole, _ = best_time([sys.executable, str(ROOT / "manage.py"), "parselog", "--json", str(LOG)])
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
