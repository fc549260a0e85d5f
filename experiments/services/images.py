"""crash.one_crash: the runs that restart copies of one crash (runner/image.py) and the run that
makes it. What the runner is told of the image, and the restarts whose image will never be kept.

An image is named for its run on this dashboard and no other: run ids are each dashboard's own,
and dashboards may share a host, whose images folder is one. The experiment's uid (uuid4, the
same on another installation only for an imported experiment, whose runs never go to a host)
makes the name the host's alone."""

import json

from django.utils import timezone

from experiments.models import Run, RunFile, RunStatus
from runner.contract import IMAGE_NAME


def crash_image(run: Run) -> dict:
    """crash.one_crash (runner/image.py): the run that makes the crash keeps it for the runs that
    restart from it; each of those restores it, and the last one left removes it."""
    if not run.experiment.definition.get("crash", {}).get("one_crash"):
        return {}
    if run.image_of_id is None:
        keeps = Run.objects.filter(image_of=run).exists()
        return {"keep": image_name(run)} if keeps else {}
    others = Run.objects.filter(image_of_id=run.image_of_id, status__in=(RunStatus.QUEUED, RunStatus.RUNNING))
    return {"restore": _kept_name(run.image_of), "remove": not others.exclude(id=run.id).exists()}


def image_name(run: Run) -> str:
    """The name the run keeps its crash under: `run-<id>-<experiment's uid>`."""
    return f"run-{run.id}-{run.experiment.uid}"


def _kept_name(lead: Run) -> str:
    """The name the lead's runner said it kept its image under (an image kept before names
    carried the uid is `run-<id>`), else the one it is told."""
    said = RunFile.objects.filter(run=lead, name="result.json").values_list("content", flat=True).first()
    try:
        kept = (json.loads(bytes(said)).get("image") or {}).get("kept") if said else None
    except (ValueError, AttributeError):  # a result that is not an object: the host's word, unread
        kept = None
    return kept if isinstance(kept, str) and IMAGE_NAME.match(kept) else image_name(lead)


def fail_orphaned_restarts(experiment_id: int) -> None:
    """Runs waiting for a crash image that will never be kept (its run failed or was cancelled)
    fail, saying which run's."""
    orphans = Run.objects.filter(
        experiment_id=experiment_id,
        status=RunStatus.QUEUED,
        image_of__status__in=(RunStatus.FAILED, RunStatus.CANCELLED),
    )
    for lead_id, lead_status in orphans.values_list("image_of_id", "image_of__status").distinct():
        orphans.filter(image_of_id=lead_id).update(
            status=RunStatus.FAILED,
            error=f"its crash image was never kept: run {lead_id}, which makes the crash, {lead_status}",
            finished_at=timezone.now(),
        )
