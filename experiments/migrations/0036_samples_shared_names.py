"""A run's samples take the names every engine shares (runner/engine.py): the one series that was
named after its engine, RocksDB's bytes written per second, is renamed in the runs already stored."""

from django.db import migrations

OLD, NEW = "rocksdb_bytes_written_per_s", "engine_bytes_written_per_s"


def renamed(apps, before: str, after: str) -> None:
    Run = apps.get_model("experiments", "Run")
    for run in Run.objects.filter(samples__series__has_key=before).only("id", "samples").iterator():
        series = run.samples["series"]
        series[after] = series.pop(before)
        Run.objects.filter(id=run.id).update(samples=run.samples)


class Migration(migrations.Migration):
    dependencies = [
        ("experiments", "0035_run_server_family"),
    ]

    operations = [
        migrations.RunPython(
            lambda apps, schema_editor: renamed(apps, OLD, NEW),
            lambda apps, schema_editor: renamed(apps, NEW, OLD),
        ),
    ]
