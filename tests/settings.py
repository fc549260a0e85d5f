"""Test settings: the project's settings with a broker queue, a test database and a work directory
of this test session's own, so a developer's running worker never picks up a test's tasks (or the
other way round) and two test sessions on one machine do not clobber each other. The session's
id is put in the environment, so the Celery worker the tests start uses the same ones."""

import os
import uuid
from pathlib import Path

# Under pytest-xdist each worker process is a session of its own (gw0, gw1...): the processes a
# worker starts (its Celery worker, manage.py) inherit both variables and find the same names.
SESSION = os.environ.setdefault("RECOVERY_LAB_TEST_SESSION", uuid.uuid4().hex[:8]) + os.environ.get(
    "PYTEST_XDIST_WORKER", ""
)
os.environ.setdefault("CELERY_BROKER_URL", "redis://127.0.0.1:6379/15")
os.environ.setdefault("RUNNER_START_TIMEOUT_S", "120")
# a frozen restart is found in 30 s (test_stall.py); a restart on a busy host still reads
os.environ.setdefault("RUNNER_STALL_AFTER_S", "30")
os.environ.setdefault("SSH_KEY_SECRET", "dGVzdHMtb25seS1zc2gta2V5LXNlY3JldC0zMmJ5dGU=")
os.environ.setdefault("SSH_CONNECT_TIMEOUT_S", "5")
os.environ.setdefault("RUN_RETRY_BACKOFF_S", "0.5")
os.environ.setdefault("RUN_LOST_AFTER_S", "8")
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
WHITENOISE_USE_FINDERS = True  # the tests' pages get static/ as it is, without collectstatic

CELERY_TASK_DEFAULT_QUEUE = f"recovery-lab-test-{SESSION}"
CELERY_ALERTS_QUEUE = f"{CELERY_TASK_DEFAULT_QUEUE}-alerts"
# The tests' webhooks listen on loopback: allowed here as an admin allows an internal host.
ALERT_INTERNAL_HOSTS = ["127.0.0.1"]


def _work_root() -> Path:
    """Where the tests' runs keep their servers' files: in memory (tmpfs /dev/shm) where it has
    room, so that a run's fsyncs cost nothing and the suite's hundred-odd runs take half the time
    (what the tests check does not depend on the disk: kill -9 leaves the page cache as it was,
    and power cuts go through the runner's own layer, which drops what was not synced whatever is
    under it). RECOVERY_LAB_TEST_WORK_ROOT=/var/tmp runs them on the disk, as users' runs are."""
    chosen = os.environ.get("RECOVERY_LAB_TEST_WORK_ROOT")
    if chosen:
        return Path(chosen)
    memory = Path("/dev/shm")
    try:
        room = os.statvfs(memory)
    except OSError:
        return Path("/var/tmp")
    return memory if room.f_bavail * room.f_frsize >= 4 * 2**30 else Path("/var/tmp")


RUNNER_WORK_DIR = _work_root() / f"recovery-lab-test-{SESSION}"
# For the few tests about what a sync costs (the way back to full throughput, timed over a
# workload of fsyncs): on the disk.
RUNNER_DISK_WORK_DIR = Path("/var/tmp") / f"recovery-lab-test-{SESSION}"
DATABASES["default"]["TEST"] = {"NAME": f"test_recovery_lab_{SESSION}"}  # noqa: F405
