"""The planner's answer in sentences, for its page, its report and the report of an experiment
that swept redo. Binary units throughout (MiB, GiB), as the servers' own settings count them."""

import math
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from urllib.parse import urlencode

from django.conf import settings
from django.db.models import Max

from experiments.analysis.cells import ENGINE_NAMES, settings_text
from experiments.analysis.planner import PlanRefused, plan_from
from experiments.models import Run, RunStatus
from recovery_lab_cli.prediction import Prediction, orchestrator_verdicts
from recovery_lab_cli.units import binary_bytes


def plan_sentences(plan: dict, question: dict) -> list[str]:
    """The planner's answer as a designer reads it out, and what it stands on."""
    target, runs = plan["target_downtime_seconds"], plan["based_on_runs"]
    version = f" {question['server_version']}" if question.get("server_version") else ""
    where = f"{ENGINE_NAMES.get(question['engine'], question['engine'])}{version} on {question['host']}"
    low, high = plan["interval"]
    experiments = plan.get("experiment_ids") or []
    pooled = (
        f"{runs} runs of experiment{'s' if len(experiments) != 1 else ''} "
        + ", ".join(f"#{e}" for e in experiments)
        if experiments
        else f"{runs} runs"
    )
    imported = plan.get("imported_runs") or 0
    said = [f"defined by {', '.join(plan['made_by'])}"] if plan.get("made_by") else []
    said.append(
        f"{imported} of the runs imported, not measured by this lab"
        if imported
        else "all measured by this lab's runners"
    )
    pooled += f" ({'; '.join(said)})"
    sentences = [
        f"To keep the downtime after a crash under {target:g} s, {where} can have up to "
        f"{binary_bytes(plan['max_redo_bytes'])} of redo to replay (95% prediction interval "
        f"{binary_bytes(low)} to {binary_bytes(high)}), from {pooled}.",
        line_sentence(plan),
    ]
    if plan.get("workloads"):
        sentences.append(
            f"Workload{'s' if len(plan['workloads']) > 1 else ''}: {'; '.join(plan['workloads'])}."
        )
    if plan["log_size_suggestion"]:
        share = plan["filled_share"]
        filled = f"; these runs filled up to {share:.0%} of their redo log at the crash" if share else ""
        sentences.append(
            f"A redo log of at most {binary_bytes(plan['log_size_suggestion'])} keeps every crash under the "
            f"target with 95% confidence: the checkpoint age, which is the redo to replay, never exceeds "
            f"the log's capacity{filled}."
        )
    if plan["seconds_of_writes"] is not None:
        sentences.append(
            f"At {binary_bytes(plan['write_mb_per_s'] * 1e6)}/s of redo "
            f"({plan['write_mb_per_s']:g} MB/s as given) that log holds "
            f"{plan['seconds_of_writes']:g} s of writes: the page cleaner must keep the checkpoint "
            "within that."
        )
    if plan["log_size_suggestion"]:
        # The log keeps every crash under the target at 95%: the worst case is the target, held
        # against what restarts the server (recovery_lab_cli.prediction)
        worst = Prediction(plan["log_size_suggestion"], high_seconds=target)
        probe = question.get("startup_probe_seconds")
        sentences += [f"With that log, {line}." for line in orchestrator_verdicts(worst, probe)]
    for row in plan["page_writes"]:
        rate = f", {row['pages_per_second']:,.0f} pages/s at that rate" if row["pages_per_second"] else ""
        sentences.append(
            f"With a {binary_bytes(row['redo_log_bytes'])} redo log the runs wrote "
            f"{row['pages_per_mib']:.3g} pages per MiB of redo{rate} ({row['runs']} runs)."
        )
    return sentences


def line_sentence(plan: dict) -> str:
    """The fitted line in words, over the redo it was measured on. Never a negative time: a line
    that meets zero above no redo says where, and that it holds only over the redo measured."""
    slope, intercept, r2 = plan["slope_seconds_per_gib"], plan["intercept_seconds"], plan["r2"]
    low, high = plan["measured_redo"]
    measured = f"over the {binary_bytes(low)} to {binary_bytes(high)} these runs replayed"
    if intercept >= 0:
        intercept += 0.0  # -0.0 is 0 s, never printed "-0.00 s"
        return (
            f"Each GiB of redo adds {slope:.3g} s {measured} (R² {r2:.2f}); with none the restart "
            f"would take about {intercept:.2f} s."
        )
    zero = -intercept / slope * (1 << 30)
    return (
        f"Each GiB of redo adds {slope:.3g} s {measured} (R² {r2:.2f}); the line reaches 0 s at "
        f"{binary_bytes(zero)} of redo: it holds over the redo measured, not below it."
    )


def question_sentence(question: dict) -> str:
    """What was asked, limits included: the report's first line."""
    limits = []
    if question.get("server_version"):
        limits.append(f"server version {question['server_version']}")
    if question.get("experiments"):
        limits.append("experiments " + ", ".join(f"#{e}" for e in question["experiments"]))
    if question.get("workload"):
        limits.append(f"workload {question['workload']}")
    if question.get("buffer_pool_size"):
        limits.append(f"buffer pool {binary_bytes(question['buffer_pool_size'])}")
    if question.get("server_build"):
        limits.append(f"build {question['server_build']}")
    only = f", only runs of {', '.join(limits)}" if limits else ", every finished run"
    engine = ENGINE_NAMES.get(question["engine"], question["engine"])
    return (
        f"How much redo may {engine} on {question['host']} have to replay for the downtime after a crash "
        f"to stay under {question['target_downtime_seconds']:g} s{only}?"
    )


@dataclass
class SweepPlan:
    """The planner's answer from one host and engine of an experiment that swept redo."""

    title: str
    sentences: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    planner_query: str = ""


def target_above(seconds: float) -> float:
    """The longest downtime measured, rounded up to two significant digits: a target the runs
    reach, so the answer stays inside what they measured."""
    if seconds <= 0:
        return 0.01
    step = 10 ** (math.floor(math.log10(seconds)) - 1)
    return round(math.ceil(seconds / step) * step, 10)


def _whose_target(target: float, longest: float, carried: str = "") -> str:
    if settings.RTO_SECONDS:
        return f"The target is the team's recovery time objective: {target:g} s of downtime (RTO_SECONDS)."
    if carried:
        return (
            f"No recovery time objective is set (RTO_SECONDS), so the target is {target:g} s: {carried}, the "
            "shortest target these runs carry (the answer lies within the redo they replayed); the planner "
            "page answers any other."
        )
    return (
        f"No recovery time objective is set (RTO_SECONDS), so the target is the longest downtime these "
        f"runs measured, {longest:.2f} s, rounded up to {target:g} s."
    )


def carried_target(question: dict, runs) -> tuple[float, str, object] | None:
    """The shortest target, of the settings' median downtimes rounded up, whose plan the runs
    carry: an answer inside the redo they replayed, with a redo log size that keeps a crash under
    it. (The longest downtime, rounded up, put every answer at the edge of the data or past it.)
    (target, which setting's median it is, the plan) or None."""
    by_cell: dict[str, list[float]] = defaultdict(list)
    for parameters, downtime in runs.values_list("parameters", "downtime_seconds"):
        by_cell[settings_text({"parameters": parameters or {}, "server_options": {}})].append(downtime)
    tried = set()
    for median, cell in sorted((statistics.median(values), cell) for cell, values in by_cell.items()):
        target = target_above(median)
        if target in tried:
            continue
        tried.add(target)
        try:
            answer, _ = plan_from({**question, "target_downtime_seconds": target})
        except PlanRefused:
            continue
        if not answer.extrapolated and answer.log_size_suggestion:
            return (
                target,
                f"the median downtime at {cell or 'one setting'}, {median:.2f} s, rounded up",
                answer,
            )
    return None


def sweep_plans(experiment_id: int) -> list[SweepPlan]:
    """For each host and engine of the experiment: the planner's answer from its runs alone, for
    the team's recovery time objective (settings.RTO_SECONDS), or where none is set for the
    shortest target the runs carry (carried_target), else the longest downtime they measured,
    said so (the planner page answers any other)."""
    planned = Run.objects.filter(
        experiment_id=experiment_id,
        status=RunStatus.DONE,
        suspect=False,
        excluded=False,
        redo_bytes__isnull=False,
        downtime_seconds__isnull=False,
    )
    groups = (
        planned.order_by("host_label", "engine")
        .values_list("host_label", "engine")
        .annotate(longest=Max("downtime_seconds"))
    )
    plans = []
    for host, engine, longest in groups:
        target = settings.RTO_SECONDS or target_above(longest)
        question = {
            "host": host,
            "engine": engine,
            "experiments": [experiment_id],
            "target_downtime_seconds": target,
        }
        carried = None
        if not settings.RTO_SECONDS:
            carried = carried_target(question, planned.filter(host_label=host, engine=engine))
            if carried:
                target = question["target_downtime_seconds"] = carried[0]
        shown = SweepPlan(
            title=f"{ENGINE_NAMES.get(engine, engine)} on {host}",
            planner_query=urlencode(
                {"host": host, "engine": engine, "experiments": experiment_id, "target_downtime_seconds": ""}
            ),
        )
        try:
            answer, _ = plan_from(question)
        except PlanRefused as refused:
            shown.sentences = [f"No plan from these runs: {refused.reason}."]
        else:
            said = carried[1] if carried else ""
            shown.sentences = [
                _whose_target(target, longest, said),
                *plan_sentences(answer.as_dict(), question),
            ]
            shown.warnings = answer.warnings
        plans.append(shown)
    return plans
