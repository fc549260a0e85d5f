"""What a run's row says of how it was crashed: the runs of a sweep of the crash plan (4M and 32M
of redo) told apart before they finish."""

from django import template

register = template.Library()

# a run's swept crash values (definition.CRASH_SWEEPS), else its experiment's crash plan
_SWEPT = {"when": "crash_when", "redo_bytes": "crash_redo_bytes", "after_seconds": "crash_after_seconds"}


@register.filter
def crash_target(run) -> str:
    """'at 4M of redo', 'after 30 s of workload', 'after the workload', 'with 1000 rows open'."""
    if run.imported:  # its log says how it crashed; the plan is the lab's
        return "-"
    plan = dict((run.experiment.definition or {}).get("crash") or {})
    plan.update({key: run.parameters[name] for key, name in _SWEPT.items() if name in (run.parameters or {})})
    when = plan.get("when")
    if when == "at_redo_bytes" and plan.get("redo_bytes"):
        return f"at {plan['redo_bytes']} of redo"
    if when == "during_workload" and plan.get("after_seconds"):
        return f"after {plan['after_seconds']} s of workload"
    if when == "during_transaction":
        rows = plan.get("open_rows")
        return f"with {rows:,} rows open" if rows else "with a transaction open"
    if when == "after_workload":
        return "after the workload"
    return "-"
