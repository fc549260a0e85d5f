"""What a comparison says in words, for a manager who reads only that: which side took longer, by
how much, how sure, and, for a downtime, whether the server's start moved rather than its crash
recovery. Plain dicts in (compare.py's metric blocks), sentences out."""

import math

from experiments.metrics import moved_beyond_a_record
from recovery_lab_cli.units import binary_bytes, counted, resolution_note

# metric -> (what it is in a sentence, less is better)
COMPARED_METRICS = {
    "recovery_seconds": ("crash recovery", True),
    "replay_seconds": ("log replay", True),
    "downtime_seconds": ("downtime", True),
    "startup_rest_seconds": ("rest of start-up", True),
    "clean_start_seconds": ("clean start", True),
    "ready_seconds": ("start to ready", True),
    "recovery_seconds_per_gib_redo": ("recovery per GiB of redo", True),
    "recovery_seconds_per_1000_rows": ("recovery per 1000 rows inserted", True),
    "redo_bytes": ("redo to replay", True),
    "redo_apply_mb_per_s": ("redo apply rate", False),
    "workload_tps": ("workload TPS", False),
    "achieved_insert_rate": ("insert rate reached", False),
}
# What the recovery used (experiments/ingest/resources.py), compared to say which resource a
# difference is in (where.py): shown with their own intervals, each test alone, outside the page's
# family of tests, which more comparisons would make harder to pass (Benjamini-Hochberg).
RESOURCE_METRICS = {
    "recovery_cpu_seconds": ("recovery's CPU time", True),
    "recovery_disk_read_bytes": ("recovery's reads from the disk", True),
    "recovery_core_wait_share": ("recovery's wait for a core (share)", True),
}
# An interval whose ends are this far apart says nothing of the ratio: said so (0.00-47,690x).
MEANINGLESS_SPAN = 1000.0
# Slower by a significant margin on these: a regression.
REGRESSION_METRICS = ("recovery_seconds", "downtime_seconds", "recovery_seconds_per_gib_redo")

# What a manager reads about two experiments, and about engines at equal work (their log replay
# first: it is the phase they share; the whole recovery holds other work, said beside it).
EXPERIMENT_METRICS = ("recovery_seconds", "downtime_seconds")
ENGINE_METRICS = ("replay_seconds", "recovery_seconds", "downtime_seconds")


def sentences(
    metrics: dict,
    side_names: dict,
    baseline: str,
    label: str,
    startup: dict | None = None,
    subject_first: bool = False,
    compared: tuple = EXPERIMENT_METRICS,
    noted: dict | None = None,
) -> list[str]:
    """Findings a manager reads; a downtime that moved with the clean start says it is start-up.
    `noted`: per side, what its sentences add (its runs and the baseline's, where disturbed)."""
    found = []
    for metric in compared:
        block = metrics.get(metric)
        if not block:
            continue
        what = COMPARED_METRICS[metric][0]
        for side, result in block["versus"].items():
            names = side_names[side], side_names[baseline]
            said = finding_sentence(what, *names, label, result, subject_first)
            if metric == "downtime_seconds" and (startup or {}).get(side):
                said += f": {startup[side]}"
            found.append(said + (noted or {}).get(side, ""))
    return found


def startup_change(metrics: dict, side: str, baseline: str) -> str | None:
    """Where the downtime grew and the clean start grew by at least half as much, the server's
    own start got slower, not its crash recovery: said in words with both, else None."""
    grew = {}
    for metric in ("downtime_seconds", "clean_start_seconds", "recovery_seconds"):
        block = metrics.get(metric) or {}
        now, before = (block.get(side) or {}).get("median"), (block.get(baseline) or {}).get("median")
        grew[metric] = None if now is None or before is None else now - before
    downtime, clean = grew["downtime_seconds"], grew["clean_start_seconds"]
    if downtime is None or clean is None or downtime <= 0 or clean < 0.5 * downtime:
        return None
    recovery = grew["recovery_seconds"]
    if recovery is None:
        recovered = ""
    elif abs(recovery) < 0.005:
        recovered = ", crash recovery unchanged"
    else:
        recovered = f", crash recovery {recovery:+.2f} s"
    return (
        f"a start-up change, not a recovery one: the clean start grew by {clean:.2f} s and the "
        f"downtime by {downtime:.2f} s{recovered} (medians)"
    )


def finding_sentence(
    what: str, subject: str, baseline: str, label: str, result: dict, subject_first: bool
) -> str:
    said = _finding(what, subject, baseline, label, result, subject_first)
    if result["ratio"] is None:
        return said
    return said + values_note(result, subject, baseline) + resolution_note(result)


def values_note(result: dict, subject: str, baseline: str) -> str:
    """Where the sides' medians point the other way from the ratio, or give one 10% apart from
    it: the values the ratio is of (geometric means) beside the medians ("#4 took 1.08x as long
    as #5" had stood beside medians of 0.327 and 0.414 s). '' otherwise."""
    typical, medians, ratio = result.get("typical"), result.get("medians"), result["ratio"]
    if not typical or not medians or not all(medians):
        return ""
    by_medians = medians[1] / medians[0]
    apart = (by_medians - 1) * (ratio - 1) < 0 or abs(math.log(by_medians / ratio)) > math.log(1.1)
    if not apart:
        return ""
    return (
        f" (the ratio is of geometric means, {subject} {typical[1]:.3g} and {baseline} {typical[0]:.3g}; "
        f"the medians are {subject} {medians[1]:.3g} and {baseline} {medians[0]:.3g})"
    )


def _finding(what: str, subject: str, baseline: str, label: str, result: dict, subject_first: bool) -> str:
    ratio, ci = result["ratio"], result["ratio_ci"]
    where = f"{label}: " if not subject_first else ""
    tail = f" {label}" if subject_first else ""
    if ratio is None:
        return f"{where}{what} of {subject} and {baseline} cannot be compared (no values on one side){tail}"
    if ci is None:
        longer, shorter, times = (subject, baseline, ratio) if ratio >= 1 else (baseline, subject, 1 / ratio)
        why = result.get("no_interval") or "fewer than 2 runs a side"
        if why.startswith("fewer than 2"):
            why += " (repeat the runs)"
        return (
            f"{where}{what}: {longer} took {times:.2f}x as long as {shorter}{tail}, with no interval: {why}"
        )
    if not result["significant"]:
        floor = result.get("min_effect") or 1.0
        within = f"; within the noise floor of {floor:.2f}x" if result.get("within_floor") else ""
        if result.get("within_family"):  # a small p alone, one of many tests on the page
            within += (
                f"; p {result['p_value']:.2g} alone, {result['p_adjusted']:.2g} over the "
                f"{result['family']} comparisons here"
            )
        # which side took longer, in words: a bare ratio follows the names' order, which a
        # reader cannot see ("(0.87x)" had meant the second side was 15% slower)
        if ratio >= 1:
            longer, shorter, times, low, high = subject, baseline, ratio, ci[0], ci[1]
        else:
            longer, shorter, times, low, high = baseline, subject, 1 / ratio, 1 / ci[1], 1 / ci[0]
        wide = "; too wide to mean anything" if high / low >= MEANINGLESS_SPAN else ""
        seen = f"{longer} took {times:.2f}x as long as {shorter} (95% CI {_x(low)}-{_x(high)}x{wide}{within})"
        could = "" if within else could_call(result)
        if result.get("too_few"):  # runs that could not have seen a doubling do not say nothing differs
            verdict = f"too few runs to tell whether {what} differs between {subject} and {baseline}"
        else:
            verdict = f"no significant difference in {what} between {subject} and {baseline}"
        return f"{where}{verdict}{tail}: {seen}{'; ' + could if could else ''}"
    if ratio < 1:
        return (
            f"{where}{subject}: {what} {1 / ratio:.1f}x faster than {baseline}{tail}, "
            f"95% CI {1 / ci[1]:.1f}-{1 / ci[0]:.1f}x"
        )
    return (
        f"{where}{subject}: {what} {ratio:.1f}x slower than {baseline}{tail}, 95% CI {ci[0]:.1f}-{ci[1]:.1f}x"
    )


def could_call(result: dict) -> str:
    """'with 2 runs a side and the spread they had, only a difference beyond 9.10x could have been
    called': the smallest ratio the comparison's runs could have called (stats.Comparison's
    `detectable`), with what it stands on; '' where it is not known."""
    detectable, runs = result.get("detectable"), result.get("runs") or (0, 0)
    if not detectable or not all(runs):
        return ""
    sides = (
        f"{counted(runs[0], 'run')} a side"
        if runs[0] == runs[1]
        else f"{runs[0]} and {counted(runs[1], 'run')}"
    )
    floor = result.get("min_effect") or 1.0
    if detectable <= floor:
        return (
            f"with {sides}, only a difference beyond the noise floor of {floor:.2f}x could have been called"
        )
    spread = (
        "the spread of the experiment's cells together" if result.get("pooled_df") else "the spread they had"
    )
    return f"with {sides} and {spread}, only a difference beyond {_x(detectable)}x could have been called"


def _x(ratio: float) -> str:
    """A ratio as a reader takes it in: 1.13, 47, 6,960; 0.012 (two figures below 0.1)."""
    if ratio >= 100:
        return f"{ratio:,.0f}"
    if ratio >= 10:
        return f"{ratio:.1f}"
    return f"{ratio:.2f}" if ratio >= 0.1 else f"{ratio:.2g}"


def regressions(
    metrics: dict, side_names: dict, baseline: str, label: str, startup: dict, noted: dict | None = None
) -> list[str]:
    """Slowdowns beyond the noise against the first experiment (the baseline version or build); a
    downtime that moved with the clean start is named a start-up change."""
    found = []
    for metric in REGRESSION_METRICS:
        block = metrics.get(metric)
        for side, result in (block or {}).get("versus", {}).items():
            if result["significant"] and result["ratio"] and result["ratio"] > 1:
                low, high = result["ratio_ci"]
                said = (
                    f"{label}: {COMPARED_METRICS[metric][0]} {result['ratio']:.2f}x slower in "
                    f"{side_names[side]} than in {side_names[baseline]} (95% CI {low:.2f}-{high:.2f}x)"
                )
                if metric == "downtime_seconds" and startup.get(side):
                    said += f": {startup[side]}"
                found.append(said + (noted or {}).get(side, ""))
    return found


def flushing_sentence(flushing: str, moved: int | None, written: int | None) -> str:
    """What the run's flushing did, from what it recorded (`checkpoint_moved_bytes`), not from
    what it asked: 'held back' and 'replays the redo the workload wrote' only where the
    checkpoint stayed (seed 001 on MySQL 9.7 had said so beside its warning that it moved)."""
    if flushing == "natural":
        said = "Flushing was the server's own (natural), as in production"
        if moved is None:
            return said + "."
        if moved_beyond_a_record(moved, written):
            return said + f": the checkpoint moved {binary_bytes(moved)} during the workload."
        return said + ": the checkpoint did not move during the workload (no log filled)."
    if moved is None:
        return (
            "Flushing was to be held back (the method's default); the run recorded no checkpoint to "
            "say whether it was."
        )
    if moved_beyond_a_record(moved, written):
        return (
            "Flushing was to be held back (the method's default), but the checkpoint moved "
            f"{binary_bytes(moved)} during the workload: recovery replayed less redo than the workload wrote."
        )
    return (
        "Flushing was held back (the method's default): the checkpoint did not move during the "
        "workload, so recovery replayed the redo the workload wrote."
    )


def restart_cache_sentence(cache: dict | None) -> str:
    """What the page cache held of the server's files when it restarted after the crash
    (runner/page_cache.py), in words: '' for a run that did not record it (older runs)."""
    if not cache or cache.get("mode") not in ("warm", "cold"):
        return ""
    held, total, files = cache.get("resident_bytes", 0), cache.get("bytes", 0), cache.get("files", 0)
    whole = f"{binary_bytes(total)} in {files:,} files"
    if cache["mode"] == "cold" and held == 0:
        return (
            f"Restarted cold: every file of the server ({whole}) was evicted from the page cache "
            "first, as after a machine lost its memory; what the recovery read came from the disk."
        )
    if cache["mode"] == "cold":
        return (
            f"Restarted cold, but {binary_bytes(held)} of the server's {whole} stayed in the page cache "
            "after the eviction: that much could be read from memory."
        )
    redo = {
        True: ", but not its redo log, which the engine read with O_DIRECT, from the disk either way",
        False: ", its redo log included (read through the cache)",
    }.get(cache.get("redo_direct"), "")
    return (
        f"Restarted warm: {binary_bytes(held)} of the server's {whole} were still in the page cache, "
        "as for a crashed process on a machine that keeps running; what the recovery read of them "
        f"through the cache could come from memory{redo}."
    )


# fio in a class's cap under this share of its byte cap: the sentence says what held the reads
DISK_BELOW_CLASS = 0.9


def _capped(bps: int, iops: int) -> str:
    return f"{bps / 1e6:,.0f} MB/s and {iops:,} requests/s" if bps else "no cap"


def storage_sentence(storage: dict | None, label: str = "", disk_mb_s: float | None = None) -> str:
    """The storage class a restart read and wrote through (runner/throttle.py), its caps, and what
    fio gave in them; where fio in the cap read under its byte cap, what held it: the host's disk
    (`disk_mb_s`, its sequential read uncapped, is under the cap) or the class's request cap.
    '' for a run on the host's disk as it is."""
    if not storage or not storage.get("name"):
        return ""
    named = f"storage class {storage['name']}" + (f" ({label})" if label else "")
    reads = _capped(storage.get("read_bps", 0), storage.get("read_iops", 0))
    writes = _capped(storage.get("write_bps", 0), storage.get("write_iops", 0))
    how = f"on disk {storage.get('device', '?')}, {storage.get('how', 'a throttle')}"
    said = (
        f"Restarted through {named}: the server's reads capped at {reads}, its writes at {writes} "
        f"({how}); the workload before the crash ran uncapped."
    )
    floor = storage.get("floor") or {}
    measured = floor.get("seq_read_mb_s")
    if not measured:
        why = f" ({storage['floor_error']})" if storage.get("floor_error") else ""
        return f"{said} fio did not measure the cap{why}."
    said += f" fio in the cap read {measured:,.0f} MB/s in sequence"
    said += f", {floor.get('rand_read_qd1_iops', 0):,} random reads/s one at a time."
    limit = storage.get("read_bps", 0) / 1e6
    if not limit or measured >= DISK_BELOW_CLASS * limit:
        return said
    if disk_mb_s and disk_mb_s < DISK_BELOW_CLASS * limit:
        return said + (
            f" This host's disk reads {disk_mb_s:,.0f} MB/s uncapped, less than the class's {limit:,.0f}:"
            " the disk, not the class, bounds these reads."
        )
    causes = [f"its cap of {storage['read_iops']:,} requests/s"] if storage.get("read_iops") else []
    causes += [] if disk_mb_s else ["this host's disk (not measured uncapped)"]
    held = " or ".join(causes) or "the throttle itself"
    return (
        said + f" Under the class's {limit:,.0f} MB/s: {held} held fio's 1 MiB reads to {measured:,.0f} MB/s."
    )


def _runs(count: int) -> str:
    return "1 run" if count == 1 else f"{count} runs"


def crash_image_sentence(
    lead: int | None, lead_pool: str, own_pool: str, state: str = "done", restarted: int = 0, to_come: int = 0
) -> str:
    """crash.one_crash on the run page, in the tense of what has happened: `state` is this run's,
    "to come" (queued or running), "done" (done or stalled) or "failed" (failed or cancelled).
    A restart from a crash image names the run that makes the crash, and says it has no workload
    of its own and the same redo; the two pools are said where they differ. The run that makes the
    crash says how many restarted copies of it (`restarted`) and how many are still to (`to_come`)."""
    if lead is None:
        total = restarted + to_come
        if not total:
            return ""
        if state == "to come":
            return (
                f"Its crash is to be kept as an image for {_runs(total)} to restart, "
                "each replaying the same redo."
            )
        if state == "failed":
            return (
                f"Its crash was to be kept as an image for {_runs(total)} to restart; this run failed, "
                "and their pages say whether they restarted it."
            )
        said = f"Its crash was kept as an image: {_runs(restarted)} restarted copies of it"
        return said + (f", {to_come} still to" if to_come else "") + ", each replaying the same redo."
    verb = {"to come": "Restarts", "done": "Restarted", "failed": "Was to restart"}[state]
    said = (
        f"{verb} from a copy of run {lead}'s crash (crash.one_crash): no workload of its own, "
        "the same redo to the byte, from the same checkpoint to the same crash LSN"
    )
    if lead_pool and lead_pool != own_pool:
        said += f"; the workload's buffer pool is {lead_pool}, this restart's {own_pool}"
    return said + "."
