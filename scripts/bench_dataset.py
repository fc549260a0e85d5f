"""`make bench`, method part: what a run costs before its workload starts, with and without the
dataset cache.

The host runner (runner, run as the transports run it) carries out the same InnoDB run
several times on the demo's dataset (4 tables x 20,000 rows, oltp_write_only, kill -9 after the
workload): first with `reuse_dataset` off (every run installs a server, loads with sysbench
prepare and shuts down slowly), then with it on (the first run loads and keeps the dataset, the
next ones copy it). "Setup" is the runner's own measure of getting the loaded, cleanly shut down
datadir; "run" is the whole run, start-up of the runner included. Its own work directory, on the
disk, in a folder made fresh (benchlib.fresh_folder), removed at the end.
"""

import statistics
import time
from pathlib import Path

from benchlib import fresh_folder, run_runner  # noqa: E402

RUNS = 4


def spec(work: Path, reuse: bool) -> dict:
    return {
        "run_id": 1,
        "engine": "innodb",
        "parameters": {"buffer_pool_size": "128M", "redo_log_size": "64M", "insert_rate": 0},
        "workload": {
            "name": "oltp_write_only",
            "tables": 4,
            "table_size": 20000,
            "threads": 4,
            "events": 8000,
        },
        "crash": {"method": "sigkill", "when": "after_workload"},
        "work_dir": str(work / "host"),
        "start_timeout_s": 600,
        "reuse_dataset": reuse,
    }


def one_run(work: Path, reuse: bool, index: int) -> tuple[float, dict]:
    started = time.perf_counter()
    result = run_runner(spec(work, reuse), work / f"{'cached' if reuse else 'fresh'}-{index}")
    return time.perf_counter() - started, result


def main() -> None:
    print(f"\nDataset cache: {RUNS} runs each way, 4 x 20,000 rows, InnoDB (runner only, no worker)")
    with fresh_folder("dataset", runner=True) as work:
        fresh = [one_run(work, False, i) for i in range(RUNS)]
        cached = [one_run(work, True, i) for i in range(RUNS)]
        loaded, reused = cached[0], cached[1:]
        rows = [
            ("without the cache (install, load, slow shutdown)", fresh),
            ("with the cache, first run (loads and keeps it)", [loaded]),
            ("with the cache, next runs (copy the datadir)", reused),
        ]
        for label, runs in rows:
            setup = statistics.median(r["dataset"]["seconds"] for _, r in runs)
            whole = statistics.median(took for took, _ in runs)
            print(f"  {label:<52} setup {setup:6.2f} s   whole run {whole:6.2f} s   (median of {len(runs)})")
        redo = [r["counters"]["log_bytes_written"] for _, r in fresh + cached]
        print(
            f"  redo written by the workload: {min(redo) / 1e6:.1f} to {max(redo) / 1e6:.1f} MB in every run"
        )


if __name__ == "__main__":
    main()
