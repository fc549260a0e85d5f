"""Names an installation derives from its own settings, so two of them never mix by default."""

import re


def queue_name(database: dict) -> str:
    """The Celery queue of an installation: named after its database (host, port, name), so two
    dashboards sharing one Redis never take each other's tasks unless told to
    (CELERY_TASK_DEFAULT_QUEUE)."""
    parts = [
        str(database.get("HOST") or "local"),
        str(database.get("PORT") or 5432),
        str(database.get("NAME")),
    ]
    return "recovery-lab." + ".".join(re.sub(r"[^A-Za-z0-9_-]", "_", part) for part in parts)
