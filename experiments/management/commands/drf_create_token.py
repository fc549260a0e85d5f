"""manage.py drf_create_token USER [--days N]: an API token for a script or CI (the key printed once;
only its digest is kept). The name is DRF's command's, which scripts call; the token replaces the
user's one."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from experiments.services.tokens import new_token


class Command(BaseCommand):
    help = "Make USER an API token (replacing theirs) and print its key, shown this once."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--days", type=int, help="days until it expires (default API_TOKEN_DAYS)")
        parser.add_argument("-r", "--reset", action="store_true", help="as DRF's: the token is always new")

    def handle(self, *args, username, days=None, **options):
        if days is not None and not 1 <= days <= 3650:
            raise CommandError("--days is 1 to 3650")
        try:
            user = get_user_model().objects.get(username=username)
        except get_user_model().DoesNotExist:
            raise CommandError(f"no user named {username!r}") from None
        key = new_token(user, days)
        self.stdout.write(f"Generated token {key} for user {username}")
