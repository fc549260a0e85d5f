"""python manage.py firstadmin: the first way in. `make start` runs it."""

import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand


def make_first_admin() -> str | None:
    """Where the installation has no user yet: an admin `admin` with a fresh password, which is
    returned (shown once: only its hash is kept). None where any user exists. Twice: the second
    call makes nothing."""
    users = get_user_model()
    if users.objects.exists():
        return None
    password = secrets.token_urlsafe(12)
    users.objects.create_superuser("admin", "", password)
    return password


class Command(BaseCommand):
    help = "Make the first user, an admin, where there is none, and print its password once."

    def handle(self, *args, **options):
        password = make_first_admin()
        if password is not None:
            self.stdout.write(
                f"First login: admin / {password}  (shown this once; change it in /admin/ or with "
                "`manage.py changepassword admin`; more users: /admin/, roles: `manage.py setrole`)"
            )
