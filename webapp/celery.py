import os

from celery import Celery

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
