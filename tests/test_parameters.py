"""The one table of parameters (experiments/parameters.py): every parameter reaches the form, the
runs CSV, explore's axes and compare, and each of those reads it from the table."""

import csv
import io

import pytest

from experiments import definition
from experiments.analysis.compare import parse_ignored
from experiments.analysis.explore import GROUPS, X_AXES, Query, explore
from experiments.api.csv import CSV_COLUMNS
from experiments.models import Run
from experiments.pages.forms import ExperimentForm
from experiments.parameters import AXIS_TITLES, BY_NAME, CHOICE, DEFINED, FLAG, SWEPT, TABLE
from runner.contract import UNSAID_DEFAULTS

from .factories import ExperimentFactory, RunFactory

# A value of each parameter other than the one a run naming none has, as a run keeps it.
OTHER = {
    "buffer_pool_size": "256M",
    "redo_log_size": "48M",
    "insert_rate": 500,
    "binlog_files": 3,
    "server_build": "mariadb-11.8",
    "flushing": "natural",
    "restart_cache": "cold",
    "storage": "hdd",
    "profile": True,
    "crash_when": "during_workload",
    "crash_redo_bytes": "64M",
    "crash_after_seconds": 7,
}


def test_the_table_names_each_parameter_once_and_every_value_here_keeps_its_rule():
    assert len(BY_NAME) == len(TABLE) and set(OTHER) == set(BY_NAME)
    assert len({p.short for p in TABLE}) == len(TABLE) and len({p.title for p in TABLE}) == len(TABLE)
    for parameter in TABLE:
        assert parameter.check(OTHER[parameter.name]) == OTHER[parameter.name], parameter.name
        assert AXIS_TITLES[parameter.name] == parameter.title
        if parameter.kind == CHOICE:
            assert {value for value, _ in parameter.choices} >= {OTHER[parameter.name]}
    # what "absent" means is the contract's one table (the command line reads it there too)
    assert {p.name: p.absent for p in TABLE if p.absent is not None} == UNSAID_DEFAULTS
    assert definition.PARAMETERS == {p.name: (p.check, p.default) for p in DEFINED}
    assert set(definition.RUN_PARAMETER_CHECKS) == set(BY_NAME)
    assert {definition.CRASH_SWEEPS[p.crash] for p in SWEPT} == {p.name for p in SWEPT}


def test_every_parameter_has_a_field_on_the_experiment_form():
    form = ExperimentForm(host_names=["local"])
    for parameter in DEFINED:
        assert (
            parameter.name in form.fields and form.FIELD_FOR[f"parameters.{parameter.name}"] == parameter.name
        )
    for parameter in SWEPT:  # the crash plan's own fields
        assert form.FIELD_FOR[f"crash.{parameter.crash}"] in form.fields
    assert [field.name for field in form.parameter_fields] == [p.name for p in DEFINED]


def test_the_form_gives_every_parameter_back_as_it_was_asked():
    """Every parameter at a value that is not its default, through the form and back."""
    data = {
        "name": "every parameter",
        "hosts": ["local"],
        "engines": ["innodb"],
        "workload": "oltp_write_only",
        "tables": 1,
        "table_size": 1000,
        "threads": 1,
        "events": 100,
        "crash_when": ["after_workload"],
        "repetitions": 1,
    }
    for parameter in DEFINED:
        value = OTHER[parameter.name]
        data[parameter.name] = (
            [value] if parameter.kind == CHOICE else value if parameter.kind == FLAG else str(value)
        )
    form = ExperimentForm(data=data, host_names=["local"])
    assert form.is_valid(), form.errors
    asked = definition.validate_definition(form.definition(), ["local"]).as_dict()
    assert asked["parameters"] == {p.name: [OTHER[p.name]] for p in DEFINED}
    again = ExperimentForm.initial_from(asked)
    assert all(parameter.name in again for parameter in DEFINED)


@pytest.mark.django_db
def test_every_parameter_is_a_column_of_the_runs_csv_and_an_unsaid_one_reads_as_what_it_meant(api):
    experiment = ExperimentFactory()
    RunFactory(experiment=experiment, status="done", parameters={})
    RunFactory(experiment=experiment, status="done", parameters=dict(OTHER))
    answer = api.get("/api/runs/", {"experiment": experiment.id, "format": "csv"})
    rows = list(csv.DictReader(io.StringIO(b"".join(answer.streaming_content).decode())))
    assert {p.name for p in TABLE} <= set(CSV_COLUMNS) and len(rows) == 2
    unsaid, named = rows
    for parameter in TABLE:
        assert unsaid[parameter.name] == (parameter.absent_text or ""), parameter.name
        expected = OTHER[parameter.name]
        assert named[parameter.name] == (
            str(expected).lower() if isinstance(expected, bool) else str(expected)
        )


@pytest.mark.django_db
@pytest.mark.parametrize("name", [p.name for p in TABLE])
def test_every_parameter_is_an_axis_and_a_group_of_explore(name):
    """Drawn against recovery, and grouped by, with the run that names none at what that meant."""
    assert name in X_AXES and name in GROUPS
    experiment = ExperimentFactory()
    RunFactory(experiment=experiment, status="done", parameters={}, recovery_seconds=1.0, buffer_pool_bytes=1)
    RunFactory(
        experiment=experiment,
        status="done",
        parameters=dict(OTHER),
        recovery_seconds=2.0,
        buffer_pool_bytes=256 << 20,
        redo_log_bytes=48 << 20,
        insert_rate=500,
    )
    runs = Run.objects.filter(experiment=experiment)
    drawn = explore(runs, Query(x=name, y="recovery_seconds", group="engine"))
    grouped = explore(runs, Query(x="recovery_seconds", y="recovery_seconds", group=name))
    points = sum(len(series["x"]) for series in drawn.to_dict()["series"])
    if BY_NAME[name].column:  # the run's own column: a number wherever the run has one
        assert points >= 1
    else:  # from its parameters: the run that names none is drawn where that means something
        assert points == (2 if BY_NAME[name].absent is not None else 1), drawn.to_dict()
    assert len(grouped.to_dict()["series"]) == 2


def test_compare_leaves_out_any_parameter_and_refuses_a_name_that_is_none():
    assert parse_ignored(",".join(p.name for p in TABLE)) == {p.name for p in TABLE}
    assert parse_ignored("innodb_flush_log_at_trx_commit") == {"innodb_flush_log_at_trx_commit"}
    with pytest.raises(ValueError, match="not a parameter or server option: 'bufer_pool_size'"):
        parse_ignored("bufer_pool_size")
