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

The lab's runs work in a folder of their own made fresh (benchlib.fresh_folder), removed after
each family. MySQL is the build `make setup` installed in the runner's work directory
(RUNNER_WORK_DIR, as the local host's runs take it), for the lab and for "production" alike.
"""

import os
import shutil
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
import django  # noqa: E402
from benchlib import fresh_folder, run_runner  # noqa: E402

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
django.setup()  # the ingest and the fit read Django's settings; no database is used
from django.conf import settings  # noqa: E402

from experiments.analysis.predict import fit_points  # noqa: E402
from experiments.ingest.bundle import analyse_run  # noqa: E402
from recovery_lab_cli.live import read_server  # noqa: E402
from recovery_lab_cli.server_url import parse_server_url  # noqa: E402
from runner.files import UnsafeFolder, own_folder, untrusted_in  # noqa: E402
from tests.live_mariadb import LiveMariaDB  # noqa: E402
from tests.live_mysql import LiveMySQL  # noqa: E402

TARGETS = ("4M", "8M", "16M", "24M", "32M")
REPEATS = 2
LEVELS = (400, 800, 1600, 3200, 6400)  # rows per second on 2 threads
TRIALS = 10
LOADED_S = (2.0, 30.0)  # the redo to replay grows for at least this, at most that, per trial


# family: the lab runs' server_build (None: the system's MariaDB)
FAMILIES = {"MariaDB 10.11": None, "MySQL 9.7": "mysql-9.7"}


def installed_build(build: str) -> Path:
    """Where `make setup` installed `build`: the local host's work directory (RUNNER_WORK_DIR)."""
    return settings.RUNNER_WORK_DIR / "builds" / build


def live_server(build: str | None) -> LiveMariaDB:
    """The "production" server: the system's MariaDB, or the MySQL build the lab's runs use."""
    if build is None:
        return LiveMariaDB(log_file_size="128M")
    return LiveMySQL(build=installed_build(build), log_file_size="128M")


def lab_spec(work: Path, target: str, run_id: int, build: str | None) -> dict:
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
        "work_dir": str(work / "work"),
        "start_timeout_s": 600,
    }  # fmt: skip


def lab_fit(work: Path, build: str | None):
    points = []
    for index, target in enumerate(t for t in TARGETS for _ in range(REPEATS)):
        folder = work / f"lab-{index}"
        result = run_runner(lab_spec(work, target, 900 + index, build), folder, f"the lab run at {target}")
        files = {p.name: p.read_bytes() for p in (folder / "bundle").iterdir() if p.is_file()}
        metrics = analyse_run(result, files, "innodb", 128 << 20).metrics
        points.append((metrics["redo_bytes"], metrics["downtime_seconds"]))
        print(
            f"lab {target:>4}: {metrics['redo_bytes'] / 2**20:6.1f} MiB  {metrics['downtime_seconds']:.3f} s"
        )
    fit, r2 = fit_points([p[0] for p in points], [p[1] for p in points])
    print(f"fit: {fit.n} runs, R² {r2:.2f}, scatter {fit.residual:.3f} s about the line")
    return fit


def trials(fit, build: str | None) -> list[tuple]:
    live = live_server(build)
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


def copy_build(build: str, work: Path) -> None:
    """The installed build copied into the lab's work directory, where the runner takes it
    from; refused when another user could have changed it or the folders it lies in (the copy
    would be root's, and run by root), as the runner refuses its own builds."""
    source = installed_build(build)
    if not source.is_dir():
        raise SystemExit(f"no build {build} in {source}: run make setup (it installs one)")
    try:
        own_folder(source.parent.parent, "work directory", "RUNNER_WORK_DIR")
        own_folder(source.parent, "builds folder", "RUNNER_WORK_DIR")
    except UnsafeFolder as refused:
        raise SystemExit(str(refused)) from None
    if unsafe := untrusted_in(source):
        raise SystemExit(f"refusing the build {source}: {unsafe}. Install it again (manage.py installbuild).")
    (work / "work" / "builds").mkdir(parents=True)
    shutil.copytree(source, work / "work" / "builds" / build, symlinks=True)


def calibrate(family: str, build: str | None) -> str:
    with fresh_folder("calibration", runner=True) as work:
        if build:  # the runner takes a build from its work dir's builds/, root's alone
            copy_build(build, work)
        print(f"== {family}")
        fit = lab_fit(work, build)
        found = trials(fit, build)
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
    said = [calibrate(family, build) for family, build in FAMILIES.items()]
    print("\n".join(said))


if __name__ == "__main__":
    main()
