"""The host runner: one crash-recovery run on a benchmark host. Standard library only.

The transports copy it to the host as one zip of this package and run it as
`python3 runner.pyz --spec SPEC.json --out BUNDLE_DIR`. It starts a private mariadbd (own datadir,
port and socket under its work directory; never the host's own server), loads data with sysbench,
snapshots engine status and counters, runs the workload, kills its server with SIGKILL as the
crash plan says, restarts it and times everything on the host's monotonic clock. Each error-log
line is stamped the moment it appears, so phases have millisecond resolution though MariaDB logs
whole seconds. Then a clean shutdown and a restart give the baseline; that server is then killed,
not shut down, since its files are removed (MySQL 9.7's clean shutdown takes 1.5 s; with --keep
they stay, and it is shut down). It writes `result.json` and the raw files into BUNDLE_DIR.

This module is the sequence; the parts are its neighbours: contract.py (the spec and the option
allow-list, shared with the dashboard), probe.py (the host's facts and builds), processes.py
(what it starts and holds), files.py (the run's folder, root's, and the server's folder in it:
what root reads from there and which folders it trusts), events.py (what it says), server.py
(the private server; each family's own in families/), dataset.py (the loaded data, cached),
workload.py (sysbench), sampler.py (the counters, every second), stamper.py (the stamped error
log), noise.py (what else used the host), crash.py (crash plans, the power cut and its ledger),
powercut.py (the power-cut file system) and bundle.py (the files it leaves).
"""

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

from . import floor, noise, page_cache
from . import image as crash_image
from .before_restart import load_and_crash, start_profile, storage_class
from .builds import SYSTEM_BUILD, folder_programs
from .bundle import collect
from .contract import CONTRACT_VERSION, DEFAULT_RESTART_CACHE, RunFailed, RunSpec
from .crash import (
    OPEN_TRX_TABLE,
    Ledger,
)
from .events import Clock, emit, progress
from .families import FAMILY_ENGINES, families_running, family_for, server_class, system_programs
from .files import REFUSED, UnsafeFolder, own_folder, runner_folder, server_home
from .probe import host_facts
from .processes import (
    KEPT_MARKER,
    disk_full,
    hold_work_dir,
    remove_stale_runs,
    stop_started,
    unmount_stale,
    watch_stdin,
)
from .resources import RESOURCES_FILE, Resources
from .room import check_room
from .sampler import snapshot
from .server import Server
from .stall import RecoveryStalled, StallWatch
from .stamper import LogStamper
from .throttle import remove_stale as remove_stale_groups
from .workload import Sysbench, workload_tables


def execute(spec: RunSpec, work: Path, out: Path, result: dict, keep: bool = False) -> dict:
    """The run, measured into `result` as it goes: a run that fails part way keeps what was
    measured before (the moments of the kill and the restart, the counters, the dataset).
    `keep`: the run's files stay for inspection, so its last server is shut down cleanly."""
    clock = Clock()
    timeout = float(spec.start_timeout_s)
    stamper = LogStamper(server_home(work) / "error.log", work / "error.log.stamped", clock)
    server = open_server(work, spec, clock, stamper)
    sysbench = Sysbench(server, spec, work)
    crash = spec.crash
    engine = spec.engine
    times: dict[str, float] = {}
    # the run carries its server: the family whose build it ran (families/)
    result.update(times=times, server_args=server.server_args(), server_family=server.engine.server)
    throttle = None
    oom_kills_before = oom_kills()
    stamper.start()
    try:
        base, image = Path(spec.work_dir), spec.image
        result["room"] = check_room(spec, base, server.build)  # before anything is written
        if spec.storage:  # its group made and its floor measured before the workload
            throttle = storage_class(spec, server, result)
        if image.get("restore"):  # one crash recovered many ways: this restart's copy of it
            progress(f"restoring crash image {image['restore']}: the kill's state, no workload of its own", 5)
            checksums = crash_image.restore(base, image["restore"], server, work, result, clock)
            acknowledged = None
            profile = start_profile(spec, work, clock)
        else:
            checksums, acknowledged, profile = load_and_crash(spec, server, sysbench, work, result, timeout)
            if image.get("keep"):
                progress(f"keeping crash image {image['keep']} for the restarts from it", 74)
                times["image_started"] = clock.now()  # the lab's own step: the downtime leaves it out
                result["image"] = crash_image.keep(base, image["keep"], server, work, result, checksums)
                times["image_kept"] = clock.now()
        if throttle is not None:  # from the restart on, the server reads and writes through its class
            server.cgroup = throttle.procs
        cache = spec.parameters.get("restart_cache", DEFAULT_RESTART_CACHE)
        progress(f"restarting after the crash ({cache} page cache)", 75)
        times["cache_started"] = clock.now()  # the lab's own step: the downtime leaves it out
        result["restart_cache"] = page_cache.before_restart(server.home, cache)
        stamper.settle()  # a crash image's log lines stamped now, before the restart's moment
        times["cache_settled"] = clock.now()
        restart_mark = noise.mark()
        times["recovery_spawned"] = server.start()
        group = throttle.served if throttle is not None else None  # the class's counts, each reading
        watcher = Resources(server.process.pid, clock, work / RESOURCES_FILE, group)
        watcher.start()
        signs, after_s = server.engine.stall_signs, spec.stall_after_s
        stall = StallWatch(lambda: watcher.io_total, stamper, signs, after_s, on_disk=lambda: watcher.on_disk)
        try:
            times["recovery_first_query"] = server.wait_until_ready(timeout, stall)
        finally:
            result["resource_readings"] = watcher.stop()
            if profile is not None:
                result["profile"] = profile.stop(watcher.pids, watcher.program)
        if image.get("restore"):  # its server was first started now, on the image
            result.update(server_version=server.version(), effective_settings=server.effective_settings())
        direct = server.engine.redo_read_direct(result.get("effective_settings") or {})
        result["restart_cache"]["redo_direct"] = direct  # a warm restart's redo: from memory or not
        result["noise"]["restart"] = noise.window(restart_mark)
        snapshot(server, engine, "after_recovery", work)
        server.engine.keep_recovery_log(server.datadir, work)
        if acknowledged is not None:
            result["durability"] = {
                "acknowledged_commits": acknowledged,
                "lost_commits": Ledger.lost(server, acknowledged),
            }
        progress("recovered: checking the tables", 80)
        if throttle is not None:  # the lab's check is not measured: seed 000's took 5 minutes in its class
            throttle.release()
        if checksums is None:  # crashed mid-workload: no state to compare, the server's own checks
            problems = server.integrity(workload_tables(spec.workload))
            result.update(verified=not problems, verification="integrity check")
            if problems:
                result["integrity_problems"] = problems[:20]
        else:
            result["verification"] = "checksums"
            result["verified"] = server.checksums(workload_tables(spec.workload)) == checksums
            if crash["when"] == "during_transaction":  # and none of the open transaction's rows
                left = int(server.query(f"SELECT COUNT(*) FROM {OPEN_TRX_TABLE}", timeout=3600).strip())
                result["crash_plan"]["rows_left_after_recovery"] = left
                result["verified"] = result["verified"] and left == 0

        warmup_max = spec.workload.get("warmup_max_seconds", 0)
        before = sysbench.pre_crash_tps() if warmup_max else None
        if warmup_max and before:
            if throttle is not None:  # the way back to throughput is measured, on the class's storage
                throttle.join(server.process.pid)
            progress("the workload again, until throughput is back", 82)
            result["warmup"] = sysbench.measure_warmup(warmup_max, before)

        progress("clean shutdown and restart for the baseline", 88)
        if throttle is not None:  # the shutdown is not measured; the clean start is, in the class
            throttle.release()
        server.shutdown(timeout)
        times["clean_spawned"] = server.start()
        times["clean_first_query"] = server.wait_until_ready(timeout)
        if keep:
            server.shutdown(timeout)
        server.stop_if_running()  # the baseline is measured: a kill, as its files go with the run's
        if image.get("remove"):  # the last restart from it (a failed one leaves it for its retry)
            crash_image.remove(base, image["restore"])
    except (RunFailed, subprocess.SubprocessError, OSError) as exc:
        gone = server.exited_unasked(grace_s=2) if "killed" not in times else None
        if gone:  # a server that died before the planned crash explains what failed after it
            stamper.settle()  # its last lines, read before they are quoted
            raise RunFailed(early_exit(gone, oom_kills_before, stamper.tail(), exc), permanent=False) from exc
        raise
    finally:
        sysbench.stop_if_running()
        server.stop_if_running()
        if throttle is not None:
            throttle.remove()
        stamper.stop()
        collect(work, out)
    return result


def open_server(work: Path, spec: RunSpec, clock: Clock, stamper: LogStamper) -> Server:
    """The private server the run's engine runs on: its family's (families/). Where families
    share the engine's name (InnoDB: MariaDB's and MySQL's), the build's server says which."""
    name = spec.engine
    family = families_running(name)[0]
    if len(families_running(name)) > 1:
        build = spec.parameters.get("server_build", SYSTEM_BUILD)
        family = family_for(name, build, build_programs_named(Path(spec.work_dir), build))
    return server_class(family)(work, spec, clock, stamper, FAMILY_ENGINES[family][name])


def build_programs_named(work_dir: Path, build: str) -> dict:
    """The programs of the build a run names: the system's installed servers, or the build in
    WORK_DIR/builds/NAME/ (the host probe lists them)."""
    return system_programs() if build == SYSTEM_BUILD else folder_programs(work_dir, build)


def oom_kills() -> int | None:
    """How many processes the kernel's out-of-memory killer has killed since boot."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/vmstat").read_text().splitlines():
            if line.startswith("oom_kill "):
                return int(line.split()[1])
    return None


def early_exit(how: str, oom_before: int | None, log_tail: str, failure: Exception) -> str:
    """The server ended before the planned crash: how, whether the out-of-memory killer did it,
    its last error-log lines, and what failed because of it. Another process killed it, or the
    host ran short of memory: a passing cause, so the run is tried again."""
    oom_after = oom_kills()
    cause = ""
    if oom_before is not None and oom_after is not None and oom_after > oom_before:
        cause = f"; the kernel's out-of-memory killer killed {oom_after - oom_before} process(es) meanwhile"
    elif how == "was killed by SIGKILL":
        cause = "; not by the runner: another process or user killed it"
    return (
        f"the server {how} before the planned crash{cause} (then: {str(failure)[:200]}). "
        f"Last lines of its error log:\n{log_tail}"
    )


def measure_disk(work_dir: Path) -> str | None:
    """Measure the disk's floor, which the probe then reports; why it was not measured, if not.
    Never while a run goes there: fio would be its noise (the work directory's lock says)."""
    try:
        base = own_folder(work_dir, "work directory", "the host's work_dir")
        hold_work_dir(base)
        floor.measure(base)
    except (floor.NotMeasured, UnsafeFolder, RunFailed, OSError, subprocess.SubprocessError) as exc:
        return str(exc)
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", help="the run's JSON spec")
    parser.add_argument("--out", help="where to write the bundle")
    parser.add_argument("--keep", action="store_true", help="keep the datadir for inspection")
    parser.add_argument("--probe", metavar="WORK_DIR", help="print this host's facts as JSON and exit")
    parser.add_argument(
        "--measure-disk",
        action="store_true",
        help="with --probe: first measure the work directory's disk (fio)",
    )
    parser.add_argument(
        "--watch-stdin", action="store_true", help="stop everything when stdin closes (transports set it)"
    )
    args = parser.parse_args(argv)
    # what root writes is root's alone (a run's stamped log, samples, reports, profile): the few
    # files the server's user reads are opened to it by name
    os.umask(0o077)
    if args.probe:
        not_measured = measure_disk(Path(args.probe)) if args.measure_disk else None
        facts = host_facts(args.probe)
        if not_measured:
            facts["disk"]["floor_error"] = not_measured
        print(json.dumps(facts), flush=True)
        return 0
    if not args.spec or not args.out:
        parser.error("--spec and --out are required to run")
    if args.watch_stdin:
        watch_stdin()
    out = Path(args.out)
    result: dict = {"contract_version": CONTRACT_VERSION}
    status, error, permanent, work = "failed", None, True, None
    try:
        spec = RunSpec.from_dict(json.loads(Path(args.spec).read_text()))
        result["spec"] = asdict(spec)
        base = own_folder(Path(spec.work_dir), "work directory", "the host's work_dir")
        hold_work_dir(base)
        unmount_stale(base)
        remove_stale_groups()
        stale = remove_stale_runs(base) + [f"crash image {name}" for name in crash_image.remove_stale(base)]
        if stale:
            result["stale_runs_removed"] = stale
            progress(f"removed what a stopped runner had left: {', '.join(stale)}", 0)
        work = runner_folder(Path(tempfile.mkdtemp(prefix=f"run-{spec.run_id}-", dir=base)))
        result["facts"] = host_facts(str(base))
        execute(spec, work, out, result, keep=args.keep)
        status = "done"
    except RecoveryStalled as exc:  # a result: the run is not tried again
        status, error, result["stall"] = "stalled", str(exc), exc.evidence
    except RunFailed as exc:
        error, permanent = str(exc), exc.permanent
    except UnsafeFolder as exc:
        error = str(exc)
    except (OSError, ValueError) as exc:
        error = f"bad run spec or work directory: {exc}"
    except subprocess.TimeoutExpired as exc:
        error = f"timed out: {' '.join(map(str, exc.cmd[:2]))}"
    except Exception as exc:  # reported to the worker with context, never swallowed
        error = f"runner error: {exc.__class__.__name__}: {exc}"
    finally:
        stop_started()
        if status != "done" and work is not None:  # measured before the run's files are removed
            full = disk_full(work.parent)
            error = f"{full}; {error}" if full else error
        if work is not None and not args.keep:
            with contextlib.suppress(OSError):
                shutil.rmtree(work)
        elif work is not None:
            (work / KEPT_MARKER).touch()
    result.update(status=status, error=error, permanent=permanent if status != "done" else None)
    if REFUSED:  # what the server's OS user had put where the runner reads
        result["refused_files"] = REFUSED
    out.mkdir(parents=True, exist_ok=True)
    (out / "result.json").write_text(json.dumps(result, indent=2))
    if status == "done":
        emit("done")
        return 0
    emit(status, error=error, permanent=permanent)
    return 1


if __name__ == "__main__":
    sys.exit(main())
