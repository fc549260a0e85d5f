"""Test settings: the project's settings with a broker database and work directory of their own,
so a developer's running worker never picks up a test's tasks (or the other way round)."""

import os

os.environ.setdefault("CELERY_BROKER_URL", "redis://127.0.0.1:6379/15")
os.environ.setdefault("RUNNER_WORK_DIR", "/var/tmp/recovery-lab-test")
os.environ.setdefault("RUNNER_START_TIMEOUT_S", "120")
# Playwright's sync API runs an event loop in the test thread; Django's ORM calls made by the
# tests around it are still synchronous (Django documents this switch for such cases).
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

from webapp.settings import *  # noqa: E402,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast logins in tests
STORAGES["staticfiles"] = {  # noqa: F405
    "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
}
STATIC_ROOT = BASE_DIR / "test-artifacts" / "static"  # noqa: F405
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
