"""A run's verdict: which resource held its recovery back, from what its threads used over it
(resources.py's readings), in one sentence whose word is checked against the shares said beside
it (docs/resources.md, docs/sentences.md). No Django."""

from experiments.parsers import Episode
from runner.contract import LIMIT_FILES

# Below this the readings are too few to say what bound a recovery.
MIN_READINGS = 4
# A thread that wanted a core (on it, or ready and waiting) this share of the recovery, on one more
# than anything else, is bound by one core; the process over this share of
# the host's cores is CPU-bound across them; reads at this share of the disk's measured rate are
# the disk's, where the thread's largest share was neither a core nor the disk.
ONE_CORE_SHARE = 0.8
ALL_CORES_SHARE = 0.8
# Said beside "one core": its thread waited for a core this share of the recovery or more.
CONTENDED_SHARE = 0.1
DISK_SHARE = 0.5
# A storage class's cap is said to be reached where the restart asked this share of it or more.
CAP_SHARE = 0.9
CAP_NAMES = tuple(LIMIT_FILES)  # read_bps, write_bps, read_iops, write_iops
# A cap is named where the recovery spent this share of its whole seconds at it, whatever its
# average; the class bounds the recovery where it spent HELD_SHARE at one cap or another.
AT_CAP_SHARE = 0.25
HELD_SHARE = 0.5
# A second counts as at a cap from this share of it: the kernel's throttle gave seed 000's RAID10
# restarts 133 of the class's 160 write requests/s in the seconds they wrote and nothing else.
SECOND_AT_CAP = 0.75
# each cap: what the restart's counts divide into, over its seconds, and how the rate is said
CAP_WORDS = {
    "read_iops": ("read_requests", "read requests", "{:,.0f}/s"),
    "write_iops": ("write_requests", "write requests", "{:,.0f}/s"),
    "read_bps": ("read_bytes", "reads", "{:,.1f} MB/s"),
    "write_bps": ("write_bytes", "writes", "{:,.1f} MB/s"),
}
CAP_COUNTS = {cap: count for cap, (count, _words, _unit) in CAP_WORDS.items()}


def _percent(share: float) -> str:
    """0.8162 -> '82%'; under 1% one decimal, so a little is not said as nothing."""
    return f"{share:.1%}" if 0 < share < 0.01 else f"{share:.0%}"


def _mib(n: float) -> str:
    return f"{n / (1 << 20):,.1f} MiB" if n < 10 << 30 else f"{n / (1 << 30):,.2f} GiB"


def verdict(found: dict, crash: Episode | None) -> dict:
    """{"bound": one of cpu_one_core, cpu_all_cores, host_busy, disk, waiting, mixed, unknown;
    "sentence"}: which resource held the recovery back, from what its threads used over it. The
    word is the busiest thread's largest share (on a core, waiting for one, on the disk, the rest),
    and every share is said beside it (docs/sentences.md); "one core" needs it on a core more than
    anything else and wanting one 80% of the time."""
    recovery = found.get("recovery")
    if recovery is None:
        return {"bound": "unknown", "sentence": "no recovery was logged: nothing to say what bound it"}
    seconds = recovery["seconds"]
    interval = found.get("interval_s") or 0.1
    if seconds < MIN_READINGS * interval:
        return {
            "bound": "unknown",
            "sentence": (
                f"recovery took {seconds:.3f} s, too short to say what bound it "
                f"(the threads were read every {interval:g} s)"
            ),
        }
    busiest = recovery["threads"][0] if recovery["threads"] else None
    floor = found.get("floor") or {}
    cpus = found.get("cpus") or 1
    read, rchar = recovery["read_bytes"], recovery["rchar"]
    parts = [f"recovery {seconds:.2f} s"]
    in_memory = found.get("in_memory")
    if in_memory:
        parts.append(f"its files were in memory ({in_memory}): no disk took part")
    elif rchar or read:
        disk = f"read {_mib(read)} from the disk at {recovery['read_mb_s']:,.1f} MB/s"
        if floor.get("seq_read_mb_s"):
            share = _percent(recovery["read_mb_s"] / floor["seq_read_mb_s"])
            whose = f"storage class {floor['storage']}'s" if floor.get("storage") else "this disk's"
            fio = "fio in its cap" if floor.get("storage") else "fio"
            disk += f", {share} of {whose} sequential read ({fio}: {floor['seq_read_mb_s']:,.0f} MB/s)"

        if rchar > 2 * max(read, 1):
            disk += f", and {_mib(rchar - read)} more from the page cache"
        parts.append(disk)
    parts.append(f"{recovery['cores']:.2f} of {cpus} cores busy")
    disk_share = recovery["read_mb_s"] / floor["seq_read_mb_s"] if floor.get("seq_read_mb_s") else None
    phase = _longest_phase(crash)
    during = f" ({phase})" if phase else ""
    shares = thread_shares(busiest)
    spent = shares_text(shares)
    # the server's own threads over the host's cores: the CPU across them, whatever one thread did
    if (recovery["cores"] or 0) >= ALL_CORES_SHARE * cpus:
        bound, said = "cpu_all_cores", f"bound by the CPU, all {cpus} cores{during}"
    elif shares is None:
        bound, said = "unknown", "no thread was read over the recovery"
    else:
        largest = max(shares, key=lambda kind: shares[kind])
        thread = busiest["name"]
        if largest == "queue":
            # ready to run, no core free: other work on the host had them (the run is disturbed)
            bound = "host_busy"
            said = f"held back by other work on the host, not by one core{during}: {thread} {spent}"
        elif largest == "cpu" and shares["cpu"] + shares["queue"] >= ONE_CORE_SHARE:
            # on a core more than anything else, and wanting one (on it or waiting) most of the time
            bound, said = "cpu_one_core", f"bound by one core{during}: {thread} {spent}"
            if shares["queue"] >= CONTENDED_SHARE:
                said += f"; other work on the host kept it off a core {_percent(shares['queue'])} of the time"
        elif largest == "disk" or (
            not in_memory and largest == "other" and disk_share is not None and disk_share >= DISK_SHARE
        ):
            bound, said = "disk", f"bound by the disk{during}: {thread} {spent}"
        elif largest == "other":
            bound = "waiting"
            said = (
                f"its largest share went to neither a core nor the disk (locks, fsync, sleeps){during}: "
                f"{thread} {spent}"
            )
        else:  # on a core more than anything else, but not most of the time
            bound = "mixed"
            said = f"no one resource held it back{during}: {thread} {spent}"
    held = held_by_class(floor)
    if (
        held is not None
        and held >= HELD_SHARE
        and busiest is not None
        and bound in ("disk", "waiting", "mixed")
    ):
        # the class's throttle: a wait for asynchronous I/O it holds back reads "waiting otherwise"
        bound = "disk"
        said = (
            f"bound by storage class {floor.get('storage')}'s caps{during}: at one of them "
            f"{_percent(held)} of the recovery; {busiest['name']} {spent}"
        )
    if reached := caps_reached(floor):
        said += f"; the recovery reached storage class {floor.get('storage')}'s cap on " + ", ".join(reached)
    if not floor.get("seq_read_mb_s") and not in_memory:
        what = f"storage class {floor['storage']}" if floor.get("storage") else "this host's disk"
        said += f"; {what} was not measured, so its reads are not set against its floor"
    return {"bound": bound, "sentence": "; ".join(parts) + ": " + said}


# A thread's time over the recovery: on a core, ready but waiting for one, waiting on the disk,
# and the rest (locks, fsync, sleeps); said in this order.
SHARE_WORDS = {
    "cpu": "on a core",
    "queue": "waiting for a core",
    "disk": "waiting on the disk",
    "other": "waiting otherwise",
}


def thread_shares(thread: dict | None) -> dict[str, float] | None:
    """The shares of the recovery a thread spent on a core (schedstat), ready but waiting for one
    (schedstat), on the disk (its readings in state D) and otherwise (the rest); None without a
    reading. Readings are snapshots: the three measured may sum a little over 1, the rest is then 0."""
    if thread is None or thread.get("cpu_share") is None:
        return None
    cpu = min(1.0, thread["cpu_share"] or 0.0)
    queue = min(1.0 - cpu, thread.get("runqueue_share") or 0.0)
    disk = min(1.0 - cpu - queue, thread.get("disk_wait_share") or 0.0)
    return {"cpu": cpu, "queue": queue, "disk": disk, "other": max(0.0, 1.0 - cpu - queue - disk)}


def shares_text(shares: dict[str, float] | None) -> str:
    """'was on a core 15%, waiting for a core 73%, waiting on the disk 2%, waiting otherwise 10% of
    the recovery': every share, so the verdict's word can be checked against them."""
    if shares is None:
        return ""
    return (
        "was "
        + ", ".join(f"{SHARE_WORDS[kind]} {_percent(share)}" for kind, share in shares.items())
        + " of the recovery"
    )


PHASE_WORDS = {
    "redo_scan": "redo scan",
    "redo_apply": "redo apply",
    "wal_replay": "WAL replay",
    "data_directory_sync": "data directory fsync",
    "recovery_checkpoint": "end-of-recovery checkpoint",
    "binlog_recovery": "binlog / XA recovery",
    "tokudb_recovery": "TokuDB recovery",
}


def _longest_phase(crash: Episode | None) -> str | None:
    if crash is None:
        return None
    timed = [
        (phase.seconds, PHASE_WORDS[phase.name])
        for phase in crash.phases
        if phase.name in PHASE_WORDS and phase.seconds is not None
    ]
    return f"mostly {max(timed)[1]}" if timed else None


def caps_reached(floor: dict) -> list[str]:
    """Each cap of a storage class the recovery's own requests or bytes per second reached (90% of
    it or more, counted by the kernel in the class's group between the readings around the
    recovery), with the rate and the cap: ["read requests (318/s over the recovery; its cap
    320/s)"]. None where the run had no class, or no counts."""
    caps, io = floor.get("caps") or {}, floor.get("recovery_io") or {}
    seconds, whole = io.get("seconds") or 0, io.get("whole_s") or 0
    reached = []
    for cap, (count, words, unit) in CAP_WORDS.items():
        if seconds <= 0 or not caps.get(cap) or count not in io:
            continue
        rate, limit = io[count] / seconds, caps[cap]
        # over the recovery's seconds: its last part second is not judged, so this errs low
        at_cap = (io.get("at_cap_s") or {}).get(cap, 0) / seconds if whole else 0.0
        if rate >= CAP_SHARE * limit or at_cap >= AT_CAP_SHARE:
            scale = 1e6 if cap.endswith("_bps") else 1
            said = unit.format(rate / scale), unit.format(limit / scale)
            at_it = f"; at it {_percent(at_cap)} of the recovery" if whole else ""
            reached.append(f"{words} ({said[0]} over the recovery; its cap {said[1]}{at_it})")
    return reached


def held_by_class(floor: dict) -> float | None:
    """The share of the recovery a storage class's group spent at one of its caps or another (its
    whole seconds judged, over all its seconds); None without a class's counts by the second."""
    io = floor.get("recovery_io") or {}
    return io["held_s"] / io["seconds"] if io.get("whole_s") and "held_s" in io else None
