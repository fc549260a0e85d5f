"""`make bench`, calibration part: is `recovery-lab predict` right about a real crash?

What an SRE's trial did, for each family it can run here as "production": MariaDB 10.11 (the
system's server) and MySQL 9.7 (the build `make setup` installs; PostgreSQL has no live server
helper here yet):

1. The lab: runs through the host runner alone, crashed at redo targets of 4 to 32 MiB, two
   each (128M buffer pool, 128M redo log, oltp_insert on 2 x 5,000 rows, as the predict test's).
   The fit is the dashboard's own (experiments/analysis/predict.fit_points) through the runs'
   redo replayed and downtime (kill to first query).
2. "Production": a server of its own of that family with the same settings, loaded by sysbench at a level
   (rows per second), read as `predict` reads it (experiments/live.read_server), predicted at
   the redo it would replay, then killed with SIGKILL and started again: the real downtime is
   the kill to the first query it answers. TRIALS times, the levels in turn.

It prints each trial, then the coverage of the 95% prediction interval (how many real
downtimes fell inside it), the median ratio of the typical value to the real downtime, and the
interval's median half-width as a share of its typical value. Figures in docs/production.md.
"""

import os
import shutil
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
import django  # noqa: E402
from benchlib import run_runner  # noqa: E402

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
django.setup()  # the ingest and the fit read Django's settings; no database is used
from experiments.analysis.predict import fit_points  # noqa: E402
from experiments.ingest.bundle import analyse_run  # noqa: E402
from recovery_lab_cli.live import read_server  # noqa: E402
from recovery_lab_cli.server_url import parse_server_url  # noqa: E402
from tests.live_mariadb import LiveMariaDB  # noqa: E402
from tests.live_mysql import LiveMySQL  # noqa: E402

WORK = Path("/var/tmp/recovery-lab-bench-calibration")
TARGETS = ("4M", "8M", "16M", "24M", "32M")
REPEATS = 2
LEVELS = (400, 800, 1600, 3200, 6400)  # rows per second on 2 threads
TRIALS = 10
LOADED_S = (2.0, 30.0)  # the redo to replay grows for at least this, at most that, per trial


MYSQL_BUILD = Path("/var/lib/recovery-lab/work/builds/mysql-9.7")  # where make setup installs it
# family: (the lab runs' server_build, the live server's class)
FAMILIES = {"MariaDB 10.11": (None, LiveMariaDB), "MySQL 9.7": ("mysql-9.7", LiveMySQL)}


def lab_spec(target: str, run_id: int, build: str | None) -> dict:
    parameters = {"buffer_pool_size": "128M", "redo_log_size": "128M", "insert_rate": 0}
    parameters.update({"server_build": build} if build else {})
    return {
        "run_id": run_id,
        "engine": "innodb",
        "parameters": parameters,
        "server_options": {"innodb_flush_log_at_trx_commit": 2},
        "workload": {"name": "oltp_insert", "tables": 2, "table_size": 5000, "threads": 2, "events": 0,
                     "time_seconds": 300},
        "crash": {"method": "sigkill", "when": "at_redo_bytes", "redo_bytes": target},
        "work_dir": str(WORK / "work"),
        "start_timeout_s": 600,
    }  # fmt: skip


def lab_fit(build: str | None):
    points = []
    for index, target in enumerate(t for t in TARGETS for _ in range(REPEATS)):
        folder = WORK / f"lab-{index}"
        result = run_runner(lab_spec(target, 900 + index, build), folder, f"the lab run at {target}")
        files = {p.name: p.read_bytes() for p in (folder / "bundle").iterdir() if p.is_file()}
        metrics = analyse_run(result, files, "innodb", 128 << 20).metrics
        points.append((metrics["redo_bytes"], metrics["downtime_seconds"]))
        print(
            f"lab {target:>4}: {metrics['redo_bytes'] / 2**20:6.1f} MiB  {metrics['downtime_seconds']:.3f} s"
        )
    fit, r2 = fit_points([p[0] for p in points], [p[1] for p in points])
    print(f"fit: {fit.n} runs, R² {r2:.2f}, scatter {fit.residual:.3f} s about the line")
    return fit


def trials(fit, live_class) -> list[tuple]:
    live = live_class(log_file_size="128M")
    found = []
    try:
        live.start()
        live.start_load(rate=LEVELS[0], threads=2)
        for trial in range(TRIALS):
            level = LEVELS[trial % len(LEVELS)]
            if trial:
                live.start_load(rate=level, threads=2, prepare=False)
            target = (trial % len(TARGETS) + 1) * 6 << 20  # 6 to 30 MiB of redo to replay
            waited = live.wait_for_checkpoint_age(target, LOADED_S)
            state = read_server(parse_server_url(live.url()), "innodb", timeout_s=5)
            predicted = fit.at(state.redo_to_replay)
            real = live.crash_and_restart()
            inside = predicted.low_seconds <= real <= predicted.high_seconds
            found.append((state.redo_to_replay, predicted, real, inside))
            print(
                f"trial {trial + 1:2}: {level:5} rows/s for {waited:4.1f} s, "
                f"{state.redo_to_replay / 2**20:5.1f} MiB"
                f" -> predicted {predicted.typical_seconds:.3f} s ({predicted.low_seconds:.3f}-"
                f"{predicted.high_seconds:.3f}), real {real:.3f} s {'inside' if inside else 'OUTSIDE'}"
            )
    finally:
        live.stop()
    return found


def calibrate(family: str, build: str | None, live_class) -> str:
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    try:
        if build:  # the runner takes a build from its work dir's builds/, root's alone
            (WORK / "work" / "builds").mkdir(parents=True)
            shutil.copytree(MYSQL_BUILD, WORK / "work" / "builds" / build, symlinks=True)
        print(f"== {family}")
        fit = lab_fit(build)
        found = trials(fit, live_class)
    finally:
        shutil.rmtree(WORK, ignore_errors=True)
    inside = sum(trial[3] for trial in found)
    ratios = [p.typical_seconds / real for _, p, real, _ in found if real > 0]
    widths = [
        (p.high_seconds - p.low_seconds) / 2 / p.typical_seconds for _, p, _, _ in found if p.typical_seconds
    ]
    return (
        f"calibration, {family}: {inside} of {len(found)} real downtimes inside the 95% interval; "
        f"typical / real median {statistics.median(ratios):.2f}; half-width median "
        f"{statistics.median(widths):.0%} of the typical (targets: 9 of 10, at most 50%)"
    )


def main() -> None:
    said = [calibrate(family, build, live_class) for family, (build, live_class) in FAMILIES.items()]
    print("\n".join(said))


if __name__ == "__main__":
    main()
