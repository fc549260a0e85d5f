"""`make bench`, power-loss part: what the power-cut layer costs.

1. The layer alone: 64 MiB written in 16 KiB pages (InnoDB's page size), an fsync every 1 MiB,
   then read back, into a plain directory and into the same directory under the layer
   (runner/powercut.py, mounted for real with FUSE as a run mounts it: by root, served as the
   server's OS user).
2. The same InnoDB run (the demo's dataset, oltp_write_only, 8,000 transactions) crashed with
   sigkill and with power_loss: the workload's throughput (under the layer, with the commit
   ledger beside it), the time the cut and unmount take, and the downtime from the moment the
   power is back to the first query (the restart is on the plain directory).
3. Each durability setting (InnoDB innodb_flush_log_at_trx_commit 1, 2, 0; MyRocks
   rocksdb_flush_log_at_trx_commit 1, 2) crashed by power_loss: the commits the ledger saw
   acknowledged, and how many of them recovery lost.

Its own folder, made fresh (benchlib.fresh_folder), removed at the end; the folder handed to the
server's user is made inside it, where nobody else may put a link.
"""

import os
import pwd
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
from benchlib import fresh_folder, run_runner  # noqa: E402

sys.path.insert(0, str(ROOT))
from runner.crash import PowerCutLayer  # noqa: E402
from runner.server import server_os_user  # noqa: E402

PAGE = 16 * 1024
TOTAL = 64 * 1024 * 1024
SYNC_EVERY = 1024 * 1024
RUNS = 3


def write_and_read(directory: Path) -> tuple[float, float]:
    page = os.urandom(PAGE)
    path = directory / "pages.bin"
    started = time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for offset in range(0, TOTAL, PAGE):
        os.pwrite(fd, page, offset)
        if (offset + PAGE) % SYNC_EVERY == 0:
            os.fsync(fd)
    os.close(fd)
    wrote = time.perf_counter() - started
    started = time.perf_counter()
    fd = os.open(path, os.O_RDONLY)
    for offset in range(0, TOTAL, PAGE):
        os.pread(fd, PAGE, offset)
    os.close(fd)
    path.unlink()
    return wrote, time.perf_counter() - started


def hand_over(folder: Path, user: str) -> None:
    """`folder` made the server's user's. It lies in the bench's fresh folder, root's, so nobody
    can have put a link at its name since it was made; and a link is not followed anyway."""
    os.chown(folder, pwd.getpwnam(user).pw_uid, -1, follow_symlinks=False)


def layer_alone(work: Path) -> None:
    directory = work / "layer"
    directory.mkdir()
    plain = [write_and_read(directory) for _ in range(RUNS)]
    # mounted as a run mounts it: by root, served by a process of the server's OS user
    user = server_os_user(("mysql", "nobody"))
    if user:
        hand_over(directory, user)
    layer = PowerCutLayer(directory, work / "powercut.log", user)
    try:
        under = [write_and_read(directory) for _ in range(RUNS)]
    finally:
        layer.unmount()
    mib = TOTAL / 1024 / 1024
    for label, times in (("plain directory", plain), ("under the layer", under)):
        write = statistics.median(t[0] for t in times)
        read = statistics.median(t[1] for t in times)
        print(f"  {label:<16} write {mib / write:7.1f} MiB/s (fsync per MiB)   read {mib / read:8.1f} MiB/s")
    ratio = statistics.median(t[0] for t in under) / statistics.median(t[0] for t in plain)
    print(f"  writes under the layer take {ratio:.1f}x as long")


def spec(
    work: Path, method: str, engine: str = "innodb", options: dict | None = None, events: int = 8000
) -> dict:
    return {
        "run_id": 1,
        "engine": engine,
        "parameters": {"buffer_pool_size": "128M", "redo_log_size": "64M", "insert_rate": 0},
        "server_options": options or {"innodb_flush_log_at_trx_commit": 1},
        "workload": {
            "name": "oltp_write_only",
            "tables": 4,
            "table_size": 20000,
            "threads": 4,
            "events": events,
        },
        "crash": {"method": method, "when": "after_workload"},
        "work_dir": str(work / "host"),
        "start_timeout_s": 600,
    }


def one_run(work: Path, method: str, index: int | str, run_spec: dict | None = None) -> dict:
    return run_runner(run_spec or spec(work, method), work / f"{method}-{index}", f"the {method} run")


def runs_compared(work: Path) -> None:
    for method in ("sigkill", "power_loss"):
        results = [one_run(work, method, i) for i in range(RUNS)]
        tps = [8000 / (r["times"]["workload_ended"] - r["times"]["workload_started"]) for r in results]
        # from the moment the power is back (power_loss: after the layer's cut and unmount)
        down = [
            r["times"]["recovery_first_query"] - r["times"].get("power_restored", r["times"]["killed"])
            for r in results
        ]
        cut = [r["times"].get("power_restored", r["times"]["killed"]) - r["times"]["killed"] for r in results]
        lost = [r.get("durability", {}).get("lost_commits") for r in results]
        print(
            f"  {method:<11} workload {statistics.median(tps):7.0f} TPS   cut and unmount "
            f"{statistics.median(cut):5.2f} s   to first query {statistics.median(down):5.2f} s   "
            f"lost commits {lost}"
        )


# Each durability setting under a power cut: docs/method.md's table is this output.
SETTINGS = (
    ("innodb", {"innodb_flush_log_at_trx_commit": 1}),
    ("innodb", {"innodb_flush_log_at_trx_commit": 2}),
    ("innodb", {"innodb_flush_log_at_trx_commit": 0}),
    ("rocksdb", {"rocksdb_flush_log_at_trx_commit": 1}),
    ("rocksdb", {"rocksdb_flush_log_at_trx_commit": 2}),
)
LEDGER_EVENTS = 4000


def lost_commits_per_setting(work: Path) -> None:
    print("  setting                                   acknowledged       lost   workload s")
    for n, (engine, options) in enumerate(SETTINGS):
        setting = spec(work, "power_loss", engine, options, LEDGER_EVENTS)
        result = one_run(work, "power_loss", f"setting-{n}", setting)
        durability = result["durability"]
        ((name, value),) = options.items()
        label = f"{'InnoDB' if engine == 'innodb' else 'MyRocks'} {name}={value}"
        seconds = result["times"]["workload_ended"] - result["times"]["workload_started"]
        print(
            f"  {label:<41} {durability['acknowledged_commits']:>12,} {durability['lost_commits']:>10,}"
            f"   {seconds:10.1f}"
        )


def main() -> None:
    with fresh_folder("power-loss", runner=True) as work:
        print(f"\nPower-cut layer: 64 MiB in 16 KiB pages, median of {RUNS}")
        layer_alone(work)
        print(f"\nThe same InnoDB run crashed by sigkill and by power_loss, median of {RUNS}")
        runs_compared(work)
        print(
            f"\nCommits acknowledged before a power cut and lost after recovery, per setting: "
            f"{LEDGER_EVENTS:,} oltp_write_only transactions, the commit ledger beside them"
        )
        lost_commits_per_setting(work)


if __name__ == "__main__":
    main()
