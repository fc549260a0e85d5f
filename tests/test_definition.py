import re
from pathlib import Path

import pytest

from experiments.definition import SERVER_OPTIONS, DefinitionError, validate_definition
from recovery_lab_cli.units import format_size, parse_size

HOSTS = ["local"]


def definition(**overrides):
    base = {
        "name": "Redo log size vs recovery",
        "hosts": ["local"],
        "engines": ["innodb", "rocksdb"],
        "parameters": {
            "buffer_pool_size": ["256M", "1G"],
            "redo_log_size": ["64M", "512M"],
            "insert_rate": [0, 2000],
        },
        "server_options": {"innodb_flush_log_at_trx_commit": [1, 2]},
        "workload": {
            "name": "oltp_write_only",
            "tables": 4,
            "table_size": 50000,
            "threads": 4,
            "events": 20000,
        },
        "crash": {"method": "sigkill", "when": "after_workload"},
        "repetitions": 3,
    }
    base.update(overrides)
    return base


def errors_of(raw) -> dict:
    with pytest.raises(DefinitionError) as caught:
        validate_definition(raw, HOSTS)
    return caught.value.errors


def test_sizes_need_a_unit_and_round_trip():
    assert parse_size("256M") == 256 * 1024**2
    assert parse_size("1g") == 1024**3
    assert format_size(parse_size("512M")) == "512M"
    with pytest.raises(ValueError):
        parse_size("256")


def test_matrix_expands_to_every_combination_times_repetitions():
    checked = validate_definition(definition(), HOSTS)
    runs = list(checked.expand())
    # InnoDB: 2 pools x 2 logs x 2 rates x 2 innodb_flush_log_at_trx_commit x 3; MyRocks the same
    # without the InnoDB option, which is not one of its dimensions.
    assert checked.run_count == len(runs) == 2 * 2 * 2 * 2 * 3 + 2 * 2 * 2 * 3
    assert len({r.matrix_index for r in runs}) == len(runs)
    innodb = [r for r in runs if r.engine == "innodb"]
    assert {r.server_options["innodb_flush_log_at_trx_commit"] for r in innodb} == {1, 2}
    assert all(r.server_options == {} for r in runs if r.engine == "rocksdb")


def test_the_runs_go_round_robin_over_the_cells_so_a_slow_hour_falls_on_every_cell_alike():
    """matrix_index is the order the runs go in: every cell's first repetition, then every
    cell's second, ... (cell after cell, a busy hour would land on one cell's repetitions)."""
    raw = definition(parameters={"buffer_pool_size": ["64M", "1G"]}, server_options={}, repetitions=3)
    runs = sorted(validate_definition(raw, HOSTS).expand(), key=lambda r: r.matrix_index)
    cells = len(runs) // 3
    assert cells == 4  # 2 engines x 2 pools
    assert [r.repetition for r in runs] == [1] * cells + [2] * cells + [3] * cells
    first_round = [(r.engine, r.parameters["buffer_pool_size"]) for r in runs[:cells]]
    assert len(set(first_round)) == cells  # each cell once a round
    assert all(
        (r.engine, r.parameters["buffer_pool_size"]) == first_round[i % cells] for i, r in enumerate(runs)
    )


def test_each_engine_varies_only_its_own_options_and_the_shared_ones():
    raw = definition(
        parameters={},
        server_options={
            "innodb_flush_log_at_trx_commit": [1, 2],
            "rocksdb_flush_log_at_trx_commit": [1, 2],
            "sync_binlog": [0, 1],
        },
        repetitions=1,
    )
    runs = list(validate_definition(raw, HOSTS).expand())
    assert (
        sorted(tuple(sorted(r.server_options)) for r in runs if r.engine == "innodb")
        == [("innodb_flush_log_at_trx_commit", "sync_binlog")] * 4
    )
    assert (
        sorted(tuple(sorted(r.server_options)) for r in runs if r.engine == "rocksdb")
        == [("rocksdb_flush_log_at_trx_commit", "sync_binlog")] * 4
    )


def test_missing_parameters_take_defaults():
    checked = validate_definition(definition(parameters={}), HOSTS)
    assert checked.parameters == {
        "buffer_pool_size": ["128M"],
        "redo_log_size": ["96M"],
        "insert_rate": [0],
        "binlog_files": [0],
    }


def test_a_workload_of_a_time_replaces_its_events():
    """As the docs and the form say: time_seconds runs for a time instead of a number of events
    (the default 20,000 had ended a 300 s workload short of its redo target)."""
    timed = validate_definition(definition(workload={"name": "oltp_insert", "time_seconds": 300}), HOSTS)
    assert (timed.workload.time_seconds, timed.workload.events) == (300, 0)
    both = validate_definition(definition(workload={"events": 8000, "time_seconds": 60}), HOSTS)
    assert (both.workload.time_seconds, both.workload.events) == (60, 0)  # the form sends both
    assert validate_definition(definition(workload={"events": 8000}), HOSTS).workload.events == 8000


@pytest.mark.parametrize(
    "field, value, path",
    [
        ("name", "x; rm -rf /", "name"),
        ("name", "$(reboot)", "name"),
        ("engines", ["innodb; ls"], "engines"),
        ("engines", ["falcon"], "engines"),
        ("engines", ["tokudb"], "engines"),
        ("hosts", ["nowhere"], "hosts"),
        ("hosts", ["local`id`"], "hosts"),
        ("parameters", {"buffer_pool_size": ["-1G"]}, "parameters.buffer_pool_size"),
        ("parameters", {"buffer_pool_size": ["256"]}, "parameters.buffer_pool_size"),
        ("parameters", {"redo_log_size": ["64M && halt"]}, "parameters.redo_log_size"),
        ("parameters", {"insert_rate": [-5]}, "parameters.insert_rate"),
        ("parameters", {"innodb_log_file_size": ["64M"]}, "parameters.innodb_log_file_size"),
        ("server_options", {"init_file": ["/etc/shadow"]}, "server_options.init_file"),
        ("server_options", {"innodb_flush_method": ["O_DIRECT; id"]}, "server_options.innodb_flush_method"),
        ("workload", {"name": "oltp_write_only | nc"}, "workload.name"),
        ("workload", {"threads": 100000}, "workload.threads"),
        ("crash", {"when": "during_workload"}, "crash.after_seconds"),
        ("crash", {"method": "reboot"}, "crash.method"),
        ("repetitions", 1000, "repetitions"),
        ("repetitions", "3; id", "repetitions"),
    ],
)
def test_bad_values_are_refused_with_a_message_on_their_field(field, value, path):
    assert path in errors_of(definition(**{field: value}))


def test_a_matrix_too_large_is_refused_before_it_is_enumerated():
    many = [f"{n}M" for n in range(10, 20)]
    huge = definition(parameters={"buffer_pool_size": many, "redo_log_size": many}, repetitions=20)
    assert "non_field_errors" in errors_of(huge)


def test_a_definition_that_is_not_an_object_is_refused():
    assert errors_of(["not", "an", "object"]) == {
        "non_field_errors": ["the definition must be a JSON object"]
    }


def test_the_dashboard_offers_exactly_what_the_runner_runs_each_with_a_label():
    """The runner checks the spec again with its own allow-lists (it ships alone to the host);
    the dashboard reads them from there, and has a label for every one."""
    from experiments import definition, services, vocabulary
    from experiments.pages import forms
    from runner import contract

    assert set(vocabulary.RUNNABLE_ENGINES) == set(contract.ENGINES)
    assert set(vocabulary.WORKLOAD_NAMES) == set(contract.WORKLOADS)
    assert set(vocabulary.CRASH_WHEN_NAMES) == set(contract.CRASH_WHEN)
    form = forms.ExperimentForm(host_names=["local"])
    assert {value for value, _ in form.fields["engines"].choices} == set(contract.ENGINES)
    assert {value for value, _ in form.fields["workload"].choices} == set(contract.WORKLOADS)
    assert dict(form.fields["engines"].choices)["rocksdb"] == "MyRocks"
    bad = definition.validate_definition
    with pytest.raises(definition.DefinitionError) as refused:
        bad({"name": "x", "hosts": ["local"], "engines": ["tokudb"]}, ["local"])
    assert "engines" in refused.value.errors  # labelled for imports, but not runnable here
    assert services.WORK_DIR is contract.WORK_DIR  # a host's work directory


def runner_spec(**changes) -> dict:
    spec = {
        "run_id": 1,
        "engine": "innodb",
        "parameters": {"buffer_pool_size": "128M", "redo_log_size": "96M"},
        "server_options": {"innodb_flush_log_at_trx_commit": 2},
        "workload": {"name": "oltp_write_only"},
        "crash": {"when": "after_workload"},
    }
    return {**spec, **changes}


def test_the_runner_takes_the_server_options_the_dashboard_allows():
    from runner import contract

    spec = contract.RunSpec.from_dict(runner_spec())
    assert spec.server_options == {"innodb_flush_log_at_trx_commit": 2}
    # the dashboard's checks are the contract's list
    assert set(SERVER_OPTIONS) == set(contract.SERVER_OPTIONS)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"init_file": "x"}, "'init_file' is not one this runner sets"),
        ({"plugin_load_add": "ha_blackhole"}, "is not one this runner sets"),
        ({"innodb_io_capacity": 5}, "innodb_io_capacity=5 is not an allowed value"),
        ({"innodb_flush_method": "O_DIRECT; reboot"}, "is not an allowed value"),
        ({"log_bin": True}, "log_bin=True is not an allowed value"),
    ],
)
def test_the_runner_refuses_a_server_option_outside_the_allow_list(options, message):
    """The runner ships alone to a host: a spec that did not come through the dashboard's checks
    (or a dashboard of another version) is checked against the same list there."""
    from runner import contract

    with pytest.raises(contract.RunFailed, match=re.escape(message)) as refused:
        contract.RunSpec.from_dict(runner_spec(server_options=options))
    assert refused.value.permanent


@pytest.mark.parametrize(
    ("crash", "field", "message"),
    [
        ({"when": "at_redo_bytes"}, "crash.redo_bytes", "required with when: at_redo_bytes"),
        ({"when": "at_redo_bytes", "redo_bytes": "128M"}, "crash.redo_bytes", "at least 171M"),
        ({"when": "at_redo_bytes", "redo_bytes": "48M; reboot"}, "crash.redo_bytes", ""),
        ({"when": "during_transaction"}, "crash.open_rows", "required with when: during_transaction"),
        ({"when": "during_transaction", "open_rows": 0}, "crash.open_rows", "outside 1..10000000"),
        (
            {"when": "after_workload", "open_rows": 5},
            "crash.open_rows",
            "only used with when: during_transaction",
        ),
        (
            {"when": "at_redo_bytes", "redo_bytes": "32M", "after_seconds": 5},
            "crash.after_seconds",
            "only used",
        ),
    ],
)
def test_crash_plans_take_their_own_values_and_only_those(crash, field, message):
    raw = definition(parameters={"redo_log_size": ["64M", "512M"]}, crash={"method": "sigkill", **crash})
    with pytest.raises(DefinitionError) as refused:
        validate_definition(raw, ["local"])
    assert field in refused.value.errors and message in " ".join(refused.value.errors[field])


def test_every_crash_plan_with_its_value_is_accepted_and_kept():
    for crash in (
        {"when": "at_redo_bytes", "redo_bytes": "32M"},
        {"when": "during_transaction", "open_rows": 100_000},
        {"when": "during_workload", "after_seconds": 30},
    ):
        raw = definition(parameters={"redo_log_size": ["64M", "512M"]}, crash={"method": "sigkill", **crash})
        assert validate_definition(raw, ["local"]).as_dict()["crash"] == {"method": "sigkill", **crash}


def test_an_insert_rate_needs_a_workload_that_inserts():
    raw = definition(
        parameters={"insert_rate": [0, 500]}, workload={"name": "oltp_update_index", "events": 1000}
    )
    with pytest.raises(DefinitionError) as refused:
        validate_definition(raw, ["local"])
    assert "inserts no rows" in refused.value.errors["parameters.insert_rate"][0]
    raw["parameters"]["insert_rate"] = [0]
    assert validate_definition(raw, ["local"]).parameters["insert_rate"] == [0]


@pytest.mark.django_db
def test_a_redo_target_swept_is_a_dimension_of_the_matrix_and_each_run_crashes_at_its_own(local_host):
    from experiments import services
    from experiments.analysis.cells import settings_text
    from experiments.services.runs import run_spec

    raw = definition(
        engines=["innodb"],
        parameters={"redo_log_size": ["128M"]},
        server_options={},
        crash={"when": "at_redo_bytes", "redo_bytes": ["8M", "32M", "8m"]},  # a repeat is one value
        repetitions=2,
    )
    checked = validate_definition(raw, HOSTS)
    assert checked.crash.redo_bytes == ["8M", "32M"] and checked.run_count == 4
    experiment, _ = services.create_experiment(raw, user=None)
    runs = list(experiment.runs.order_by("matrix_index"))
    assert [r.parameters["crash_redo_bytes"] for r in runs] == ["8M", "32M", "8M", "32M"]
    assert settings_text(runs[1].__dict__) == "pool 128M · crash at redo 32M · rate 0 · log 128M"
    spec = run_spec(runs[1])
    assert spec.crash["redo_bytes"] == "32M" and "crash_redo_bytes" not in spec.parameters
    # the largest target must fit the smallest log; each value is checked
    assert "crash.redo_bytes" in errors_of(
        {**raw, "crash": {"when": "at_redo_bytes", "redo_bytes": ["8M", "100M"]}}
    )
    assert "crash.redo_bytes" in errors_of(
        {**raw, "crash": {"when": "at_redo_bytes", "redo_bytes": ["8M", "x"]}}
    )
    assert "crash.after_seconds" in errors_of(
        {**raw, "crash": {"when": "during_workload", "after_seconds": [5, 0]}}
    )


def test_flushing_is_a_dimension_whose_default_a_run_leaves_unsaid():
    """Issue 42: flushing held back (the method's) or natural (the server's own, as in production)
    is swept like any parameter; a run of the default names none, as runs made before it did, so
    the two still match in compare; the runner takes only the two words."""
    from runner.contract import RunFailed, RunSpec

    raw = definition(
        engines=["innodb"],
        repetitions=1,
        server_options={},
        parameters={"flushing": ["held_back", "natural"], "redo_log_size": ["1G"]},
    )
    runs = list(validate_definition(raw, HOSTS).expand())
    assert sorted(r.parameters.get("flushing", "-") for r in runs) == ["-", "natural"]
    errors = errors_of(definition(parameters={"flushing": ["lazy"]}))
    assert errors["parameters.flushing"] == ["'lazy' is not one of held_back, natural"]
    spec = {
        "run_id": 1,
        "engine": "innodb",
        "parameters": {"flushing": "lazy"},
        "workload": {"name": "oltp_insert"},
        "crash": {"when": "after_workload"},
    }
    with pytest.raises(RunFailed, match="flushing must be one of held_back, natural"):
        RunSpec.from_dict(spec)


def test_a_power_cut_restarts_cold_unless_the_definition_says_otherwise():
    """Issue 55: a cut loses the machine's memory, so its runs restart with an empty page cache
    and say so; a definition that asks for a warm restart after a cut gets it, and a kill stays
    warm by default, unsaid, as runs made before the parameter were."""
    cut = {"method": "power_loss", "when": "after_workload"}
    one = {"engines": ["innodb"], "repetitions": 1, "server_options": {}}
    runs = list(validate_definition(definition(**one, crash=cut, parameters={}), HOSTS).expand())
    assert [r.parameters.get("restart_cache") for r in runs] == ["cold"]
    asked = definition(**one, crash=cut, parameters={"restart_cache": ["warm", "cold"]})
    runs = list(validate_definition(asked, HOSTS).expand())
    assert sorted(r.parameters.get("restart_cache", "warm") for r in runs) == ["cold", "warm"]
    runs = list(validate_definition(definition(**one, parameters={}), HOSTS).expand())
    assert "restart_cache" not in runs[0].parameters


@pytest.mark.parametrize(
    "path", sorted((Path(__file__).resolve().parent.parent / "docs" / "examples").glob("*.yaml")), ids=str
)
def test_every_example_definition_in_the_docs_is_valid(path):
    """What the docs tell a user to run passes the checks a run's definition meets."""
    from recovery_lab_cli.yaml_input import load_plain_yaml

    raw = load_plain_yaml(path.read_text())
    runs = list(validate_definition(raw, known_hosts=raw["hosts"]).expand())
    cells = len(raw["engines"])
    for values in [*raw["parameters"].values(), *raw.get("server_options", {}).values()]:
        cells *= len(values)
    assert len(runs) == raw.get("repetitions", 1) * cells
