"""`make bench`, profiling part: what a CPU profile (`parameters.profile: true`) costs a recovery.

The host runner (as the transports run it, no worker) carries out one InnoDB cell again and again,
with and without the profile, interleaved (off, on, off, on, ...) so a slow minute of the machine
falls on both alike: the system's MariaDB, 1G buffer pool and redo log, oltp_write_only on 4
tables of 20,000 rows, 4 threads, `kill -9` once 128M of redo is to replay. Each run's crash
recovery (the error log's, as the dashboard reads it) and its downtime (kill to first query) are
compared: the medians with and without, their ratio. perf's own work after the first query
(folding its samples) is printed apart: it lengthens the run, not the recovery. Its own work
directory, on the disk as users' runs are, in a folder made fresh (benchlib.fresh_folder), removed
at the end.
"""

import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchlib import fresh_folder, run_runner  # noqa: E402

from experiments.ingest.bundle import analyse_run  # noqa: E402

PAIRS = 3


def spec(work: Path, profile: bool) -> dict:
    return {
        "run_id": 1,
        "engine": "innodb",
        "parameters": {"buffer_pool_size": "1G", "redo_log_size": "1G", "insert_rate": 0, "profile": profile},
        "workload": {
            "name": "oltp_write_only",
            "tables": 4,
            "table_size": 20000,
            "threads": 4,
            "events": 0,
            "time_seconds": 300,
        },
        "crash": {"method": "sigkill", "when": "at_redo_bytes", "redo_bytes": "128M"},
        "work_dir": str(work / "host"),
        "start_timeout_s": 600,
        "reuse_dataset": True,
    }


def one_run(work: Path, profile: bool, index: int) -> dict:
    folder = work / f"{'on' if profile else 'off'}-{index}"
    result = run_runner(spec(work, profile), folder)
    bundle = folder / "bundle"
    files = {path.name: path.read_bytes() for path in bundle.iterdir()}
    metrics = analyse_run(result, files, "innodb", 1 << 30).metrics
    return {
        "recovery": metrics["recovery_seconds"],
        "downtime": metrics["downtime_seconds"],
        "redo": metrics["redo_bytes"],
        "profile": result.get("profile") or {},
    }


def main() -> None:
    print(f"\nWhat a CPU profile costs a recovery: {PAIRS} pairs, interleaved, InnoDB at 128M of redo")
    started = time.monotonic()
    with fresh_folder("profile", runner=True) as work:
        runs = {False: [], True: []}
        for index in range(PAIRS):
            for profile in (False, True):
                runs[profile].append(one_run(work, profile, index))
        for name, label in (("recovery", "crash recovery"), ("downtime", "kill to first query")):
            off = statistics.median(r[name] for r in runs[False])
            on = statistics.median(r[name] for r in runs[True])
            each = ", ".join(
                f"{r[name]:.3f}/{s[name]:.3f}" for r, s in zip(runs[False], runs[True], strict=True)
            )
            print(
                f"  {label:<22} without {off:6.3f} s   with {on:6.3f} s   "
                f"{on / off:5.2f}x ({(on - off) * 1000:+.0f} ms; pairs without/with: {each})"
            )
        redo = statistics.median(r["redo"] for r in runs[True] + runs[False]) / (1 << 20)
        samples = statistics.median(r["profile"].get("samples", 0) for r in runs[True])
        fold = statistics.median(r["profile"].get("fold_s", 0) for r in runs[True])
        print(f"  redo replayed {redo:.0f} MiB (median); samples kept {samples:.0f} at 999 Hz")
        print(f"  folding the samples after the first query: {fold:.2f} s a run (not in the recovery)")
        print(f"  ({time.monotonic() - started:.0f} s for the {2 * PAIRS} runs)")


if __name__ == "__main__":
    main()
