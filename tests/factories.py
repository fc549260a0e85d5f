import factory
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.utils import timezone

from experiments.models import ChangePoint, Experiment, Host, Run, Transport
from experiments.roles import EXPERIMENTER, EXPERIMENTER_GROUP


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)
        skip_postgeneration_save = True  # the role hook saves nothing on the user row

    username = factory.Sequence(lambda n: f"dba{n}")
    password = factory.django.Password("correct horse battery")

    @factory.post_generation
    def role(user, create, extracted, **kwargs):
        """Most tests act as an experimenter; `role="viewer"` leaves the user without one (staff
        users are admins whatever this says)."""
        if create and (extracted or EXPERIMENTER) == EXPERIMENTER:
            group, _ = Group.objects.get_or_create(name=EXPERIMENTER_GROUP)
            user.groups.add(group)


class HostFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Host
        django_get_or_create = ("name",)

    name = "local"
    transport = Transport.LOCAL


class ExperimentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Experiment

    name = factory.Sequence(lambda n: f"experiment {n}")
    definition = factory.LazyFunction(
        lambda: {
            "workload": {
                "name": "oltp_write_only",
                "tables": 1,
                "table_size": 1000,
                "threads": 1,
                "events": 500,
                "time_seconds": 0,
            },
            "crash": {"method": "sigkill", "when": "after_workload"},
        }
    )


class ChangePointFactory(factory.django.DjangoModelFactory):
    """A change point of `series` (required): recovery three times slower from firing 7, found in
    a firing of its own unless `experiment` is given."""

    class Meta:
        model = ChangePoint

    metric = "recovery_seconds"
    experiment = factory.LazyAttribute(lambda o: ExperimentFactory(series=o.series, fired_for=timezone.now()))
    firing_index = 7
    before_median = 10.0
    after_median = 30.0
    ratio = 3.0
    worse = True


class RunFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Run

    experiment = factory.SubFactory(ExperimentFactory)
    matrix_index = factory.Sequence(lambda n: n)
    host = factory.SubFactory(HostFactory)
    host_label = "local"
    engine = "innodb"
    parameters = factory.LazyFunction(
        lambda: {"buffer_pool_size": "128M", "redo_log_size": "64M", "insert_rate": 0}
    )


def experiment_form(name: str, **changes) -> dict:
    """What the new-experiment page's form posts for one small InnoDB run on the local host."""
    return {
        "name": name,
        "hosts": ["local"],
        "engines": ["innodb"],
        "buffer_pool_size": "128M",
        "redo_log_size": "64M",
        "insert_rate": "0",
        "workload": "oltp_write_only",
        "tables": 1,
        "table_size": 1000,
        "threads": 1,
        "events": 100,
        "crash_when": "after_workload",
        "repetitions": 1,
        **changes,
    }


def full_definition(name: str, **changes) -> dict:
    """A definition as the service stores one (validated, every default filled in): what an
    export carries and an import checks again."""
    from experiments.definition import validate_definition

    raw = {"name": name, "hosts": ["local"], "engines": ["innodb"], **changes}
    return validate_definition(raw, raw["hosts"]).as_dict()
