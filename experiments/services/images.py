"""crash.one_crash: the runs that restart copies of one crash (runner/image.py) and the run that
makes it. What the runner is told of the image, and the restarts whose image will never be kept."""

from django.utils import timezone

from experiments.models import Run, RunStatus


def crash_image(run: Run) -> dict:
    """crash.one_crash (runner/image.py): the run that makes the crash keeps it for the runs that
    restart from it; each of those restores it, and the last one left removes it."""
    if not run.experiment.definition.get("crash", {}).get("one_crash"):
        return {}
    if run.image_of_id is None:
        keeps = Run.objects.filter(image_of=run).exists()
        return {"keep": f"run-{run.id}"} if keeps else {}
    others = Run.objects.filter(image_of_id=run.image_of_id, status__in=(RunStatus.QUEUED, RunStatus.RUNNING))
    return {"restore": f"run-{run.image_of_id}", "remove": not others.exclude(id=run.id).exists()}


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
