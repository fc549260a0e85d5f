"""A uid per experiment, unique across installations; existing rows get one each."""

import uuid

from django.db import migrations, models


def give_each_a_uid(apps, schema_editor):
    Experiment = apps.get_model("experiments", "Experiment")
    for experiment in Experiment.objects.only("pk").iterator():
        Experiment.objects.filter(pk=experiment.pk).update(uid=uuid.uuid4())


class Migration(migrations.Migration):
    dependencies = [("experiments", "0009_history")]

    operations = [
        migrations.AddField(
            model_name="experiment", name="uid", field=models.UUIDField(null=True, editable=False)
        ),
        migrations.RunPython(give_each_a_uid, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="experiment",
            name="uid",
            field=models.UUIDField(default=uuid.uuid4, unique=True, editable=False),
        ),
        migrations.AddField(
            model_name="experiment", name="origin", field=models.JSONField(blank=True, default=dict)
        ),
    ]
