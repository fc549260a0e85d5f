"""Everything before the restart of a run that makes its own crash: the dataset loaded (or copied
from the cache), the server started, the workload run to the crash plan's moment, the engine's
state snapshotted, the kill. Also a storage class's group and floor (storage_class), which
runner.py makes first, before this or a restore. runner.py is the whole sequence; image.py
replaces this part for a restart from a kept crash image."""

import subprocess
from pathlib import Path

from . import floor, noise
from .contract import RunFailed, RunSpec, size_bytes
from .crash import Ledger, PowerCutLayer, crash_server, hold_binlog_files, open_transaction, wait_for_redo
from .dataset import prepare_dataset
from .events import progress
from .profile import Profile
from .sampler import SAMPLES_FILE, Sampler, read_counters, snapshot
from .server import Server
from .throttle import Throttle
from .workload import Sysbench, workload_tables


def load_and_crash(
    spec: RunSpec, server: Server, sysbench: Sysbench, work: Path, result: dict, timeout: float
) -> tuple[dict | None, int | None, Profile | None]:
    """The run up to its kill, measured into `result` as it goes. Returns the tables' checksums
    before the kill (None: crashed mid-workload), the commits a power cut's ledger saw
    acknowledged, and the profiler started before the kill."""
    clock, engine, crash, times = server.clock, spec.engine, spec.crash, result["times"]
    result["dataset"] = prepare_dataset(spec, server, sysbench, Path(spec.work_dir), timeout)
    layer = None
    if crash.get("method") == "power_loss":
        progress("mounting the power-cut layer over the datadir", 21)
        layer = PowerCutLayer(server.datadir, work / "powercut.log", server.os_user)
    progress("starting the server on the loaded dataset", 22)
    times["server_spawned"] = server.start()
    times["server_ready"] = server.wait_until_ready(timeout)
    result["server_version"] = server.version()
    result["effective_settings"] = server.effective_settings()
    hold_binlog_files(server, spec.parameters.get("binlog_files", 0))
    snapshot(server, engine, "before_run", work)
    counters_before = read_counters(server, engine)

    workload = spec.workload["name"]
    progress(f"running {workload}", 25)

    said = {"percent": -1}

    def workload_progress(share: float) -> None:
        # Once per whole percent: the redo target is polled every few ms, and each event is
        # a row written by the dashboard (4,000 a run at 24 MB of redo, before this).
        percent = int(100 * min(share, 1.0))
        if percent != said["percent"]:
            said["percent"] = percent
            of_what = f"{percent}%"
            if crash["when"] == "at_redo_bytes":  # minutes of it, at 8 GiB: said in bytes
                of_what = f"{redo_said(share, size_bytes(crash['redo_bytes']))} ({percent}%)"
            progress(f"running {workload}: {of_what}", 25 + 0.45 * percent)

    ledger = Ledger(server, engine) if layer is not None else None
    sampler = Sampler(server, engine, clock, work / SAMPLES_FILE)
    result["noise"] = {"calibration": noise.calibrate(work)}
    workload_mark = noise.mark()
    times["workload_started"] = clock.now()
    sampler.start()
    sysbench.start_run()
    checksums = None
    if crash["when"] == "during_workload":
        exit_code = sysbench.follow(float(crash["after_seconds"]), workload_progress)
        if exit_code is not None:
            # the workload ended because its server did (a failed client: wait for its end)
            if server.exited_unasked(grace_s=2 if exit_code else 0):
                raise RunFailed("the workload ended before the planned crash")
            result["warning"] = "the workload ended before the planned crash"
    elif crash["when"] == "at_redo_bytes":
        result["crash_plan"] = wait_for_redo(server, sysbench, engine, crash["redo_bytes"], workload_progress)
    else:  # after_workload, during_transaction: the whole workload, then a consistent state
        exit_code = sysbench.follow(None, workload_progress)
        if exit_code != 0:
            tail = (work / "sysbench_report.txt").read_text(errors="replace")[-600:]
            raise RunFailed(f"sysbench run failed (exit {exit_code}): {tail}")
        checksums = server.checksums(workload_tables(spec.workload))
    times["workload_ended"] = clock.now()
    result["noise"]["workload"] = noise.window(workload_mark)
    if crash["when"] == "during_transaction":
        progress(f"opening a transaction that changes {crash['open_rows']:,} rows", 70)
        result["crash_plan"] = open_transaction(server, engine, crash["open_rows"], timeout)
    snapshot(server, engine, "at_crash", work)
    counters_after = read_counters(server, engine)
    result["counters"] = {k: counters_after[k] - counters_before.get(k, 0) for k in counters_after}

    # set up before the kill, so its start costs the downtime nothing; it keeps the samples of
    # the restarted server's processes only
    profile = start_profile(spec, work, clock)
    progress(f"crashing the server ({crash.get('method', 'sigkill')})", 72)
    times["killed"] = crash_server(server, crash.get("method", "sigkill"), layer)
    if layer is not None:
        times["power_restored"] = clock.now()  # what a disk holds is ready: downtime starts
    acknowledged = ledger.stop() if ledger is not None else None
    result["samples_taken"] = sampler.stop()
    if server.engine.binary_log:
        result["binlog_files_at_crash"] = len(list(server.binlog_dir.glob("binlog.[0-9]*")))
    sysbench.wait(60)
    sysbench.stop_if_running()
    result.update(server.engine.at_crash(server))

    return checksums, acknowledged, profile


def start_profile(spec: RunSpec, work: Path, clock) -> Profile | None:
    """The restart's CPU profile where the run asks for one, started before the kill or the
    restore, so its start costs the downtime nothing."""
    profile = Profile(work, clock) if spec.parameters.get("profile") else None
    if profile is not None:
        profile.start()
    return profile


def storage_class(spec: RunSpec, server: Server, result: dict) -> Throttle:
    """The storage class's group for the restart (throttle.py), its floor measured in it (kept
    per class), before the workload: neither noise to it nor downtime. What it applied goes in
    the result."""
    storage = spec.storage
    if floor.file_system(server.home) in floor.MEMORY_FILE_SYSTEMS:
        raise RunFailed(f"storage class {storage['name']}: the run's files are in memory, no disk to cap")
    progress(f"measuring storage class {storage['name']}, which the restart will read through", 21)
    throttle = Throttle(floor.device_of(server.home), storage, spec.run_id).make()
    result["storage"] = {"name": storage["name"], **throttle.applied()}
    try:
        result["storage"]["floor"] = floor.class_floor(Path(spec.work_dir), storage["name"], throttle)
    except (floor.NotMeasured, OSError, subprocess.SubprocessError) as exc:
        result["storage"]["floor_error"] = str(exc)[:300]
    return throttle


def redo_said(share: float, goal: int) -> str:
    """'1.8 of 8 GiB of redo to replay': the redo an at_redo_bytes crash waits for, so far."""
    unit, name = (2**30, "GiB") if goal >= 2**30 else (2**20, "MiB")
    return f"{share * goal / unit:.1f} of {goal / unit:g} {name} of redo to replay"
