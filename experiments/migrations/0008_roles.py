"""Roles (experiments/roles.py): the experimenter group. Users who existed before roles could do
everything an experimenter does; they keep it. New users are viewers until given a role."""

from django.conf import settings
from django.db import migrations

GROUP = "experimenter"


def create_group(apps, schema_editor):
    group, _ = apps.get_model("auth", "Group").objects.get_or_create(name=GROUP)
    users = apps.get_model(*settings.AUTH_USER_MODEL.split("."))
    group.user_set.add(*users.objects.filter(is_staff=False, is_superuser=False))


def drop_group(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name=GROUP).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("experiments", "0007_warmup"),
        ("auth", "0012_alter_user_first_name_max_length"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [migrations.RunPython(create_group, drop_group)]
