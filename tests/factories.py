import factory
from django.contrib.auth import get_user_model

from experiments.models import Experiment, Host, Run, Transport


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"dba{n}")
    password = factory.django.Password("correct horse battery")


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
