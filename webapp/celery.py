import os

from celery import Celery, signals

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")

app = Celery("recovery_lab")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["workers"])

# Tasks that talk to the outside world (mail servers, webhooks) and their own worker's queue.
ALERT_TASKS = {"workers.tasks.send_notification_task", "workers.tasks.send_pending_notifications_task"}


def route_task(name, args, kwargs, options, task=None, **kw):
    """Alerts on their queue (settings.CELERY_ALERTS_QUEUE); everything else on the default."""
    from django.conf import settings

    if name in ALERT_TASKS:
        return {"queue": settings.CELERY_ALERTS_QUEUE}
    return None


@signals.task_prerun.connect
def forget_content_types(**_):
    """Each task reads content types afresh: a worker that outlives its database (restored from a
    backup, a test session's next database) had kept the old ids, and the audit entry a host's
    probe writes then failed on them ("the probe stopped before it ended"). One cache clear, no
    query until one is needed."""
    from django.contrib.contenttypes.models import ContentType

    ContentType.objects.clear_cache()
