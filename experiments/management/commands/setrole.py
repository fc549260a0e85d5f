"""python manage.py setrole USER viewer|experimenter|admin"""

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError

from experiments.roles import ADMIN, EXPERIMENTER, EXPERIMENTER_GROUP, ROLES, role_of


class Command(BaseCommand):
    help = "Give a user a role: viewer (reads), experimenter (defines and imports), admin (everything)."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("role", choices=ROLES)

    def handle(self, username, role, **options):
        try:
            user = get_user_model().objects.get(username=username)
        except get_user_model().DoesNotExist:
            raise CommandError(f"there is no user {username!r}") from None
        group, _ = Group.objects.get_or_create(name=EXPERIMENTER_GROUP)
        if role == EXPERIMENTER:
            user.groups.add(group)
        else:
            user.groups.remove(group)
        user.is_staff = role == ADMIN
        if role != ADMIN:
            user.is_superuser = False
        user.save(update_fields=["is_staff", "is_superuser"])
        self.stdout.write(f"{username} is now {role_of(user)}")
