from django.db import migrations, models


def regression_is_acknowledged(apps, schema_editor):
    """'regression' said a person saw a real regression: 'acknowledged' is that state now."""
    apps.get_model("experiments", "ChangePoint").objects.filter(triage="regression").update(
        triage="acknowledged"
    )


def acknowledged_is_regression(apps, schema_editor):
    apps.get_model("experiments", "ChangePoint").objects.filter(
        triage__in=["acknowledged", "fixed", "false_alarm"]
    ).update(triage="regression")


class Migration(migrations.Migration):
    dependencies = [
        ("experiments", "0021_experiment_aa_check"),
    ]

    operations = [
        migrations.AlterField(
            model_name="changepoint",
            name="triage",
            field=models.CharField(
                choices=[
                    ("new", "not looked at"),
                    ("acknowledged", "acknowledged: a regression being worked on"),
                    ("expected", "expected (a deliberate change)"),
                    ("false_alarm", "false alarm (noise, a bad night)"),
                    ("fixed", "fixed"),
                ],
                default="new",
                max_length=12,
            ),
        ),
        migrations.RunPython(regression_is_acknowledged, acknowledged_is_regression),
    ]
