"""A series' controls beside its schedule (its fields change through series.update_series): a
firing now, by hand, and the series deleted, the experiments it fired kept."""

from django.db import transaction
from django.utils import timezone

from experiments.models import Experiment, Series
from experiments.services.audit import audited_by
from experiments.services.experiments import create_experiment


def fire_now(series_id: int, user=None) -> Experiment:
    """An experiment from the series' definition now, a firing like the scheduled ones (its
    history and change points count it), by `user`; the schedule is left as it is."""
    with transaction.atomic():
        series = Series.objects.select_for_update().get(pk=series_id)
        moment = timezone.now().replace(microsecond=0)
        definition = {
            **series.definition,
            "name": f"{series.name} {moment:%Y-%m-%d %H:%M:%S} (fired by hand)",
        }
        experiment, _ = create_experiment(definition, user=user, series=series, fired_for=moment)
    return experiment


def delete_series(series_id: int, user=None) -> int:
    """The series and its change points deleted; the experiments it fired stay (no longer a
    series'). Returns how many."""
    with transaction.atomic(), audited_by(user):
        series = Series.objects.select_for_update().get(pk=series_id)
        kept = series.firings.count()
        series.delete()
    return kept
