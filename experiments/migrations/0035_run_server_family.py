from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("experiments", "0034_run_image_of"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="server_family",
            field=models.CharField(blank=True, db_default="", default="", max_length=40),
        ),
    ]
