"""Run again (issue 34, item 1): the experiment page offers its definition back in the form
(`/experiments/new/?from=ID`) and as the command line's YAML, and both give the same definition
back."""

import pytest
import yaml

from experiments.definition import validate_definition
from experiments.models import Experiment
from experiments.pages.forms import ExperimentForm

from .test_browser import log_in, screenshot

DEFINITIONS = {
    "the form's defaults": {
        "name": "plain",
        "hosts": ["local"],
        "engines": ["innodb"],
        "workload": {"name": "oltp_write_only", "events": 100},
    },
    "everything swept": {
        "name": "InnoDB and PostgreSQL, two crash plans",
        "description": "Does PostgreSQL's WAL replay keep up with InnoDB's redo apply?",
        "tags": ["baseline", "nvme"],
        "hosts": ["local"],
        "engines": ["innodb", "postgresql"],
        "parameters": {
            "buffer_pool_size": ["128M", "1G"],
            "redo_log_size": ["256M"],
            "insert_rate": [0, 2000],
            "server_build": ["system"],
        },
        "server_options": {"innodb_flush_log_at_trx_commit": [1, 2], "full_page_writes": ["on", "off"]},
        "workload": {"name": "oltp_insert", "tables": 2, "table_size": 5000, "threads": 2, "events": 0,
                     "time_seconds": 20, "warmup_max_seconds": 10},
        "crash": {"method": "sigkill", "when": ["after_workload", "during_workload"], "after_seconds": 5},
        "repetitions": 3,
    },
    "a swept redo target under power loss": {
        "name": "redo targets",
        "hosts": ["local"],
        "engines": ["rocksdb"],
        "parameters": {"redo_log_size": ["1G"]},
        "workload": {"name": "oltp_write_only", "events": 100000},
        "crash": {"method": "power_loss", "when": "at_redo_bytes", "redo_bytes": ["16M", "64M"]},
    },
    "long_transaction's rows": {
        "name": "rollback",
        "hosts": ["local"],
        "engines": ["innodb"],
        "workload": {"name": "long_transaction", "events": 1000, "open_rows": 50000},
        "crash": {"when": "during_workload", "after_seconds": [2, 4]},
    },
}  # fmt: skip


def _as_posted(initial: dict) -> dict:
    """What a browser sends for a form showing these values (numbers as text)."""
    return {key: value if isinstance(value, list) else str(value) for key, value in initial.items()}


@pytest.mark.parametrize("name", DEFINITIONS)
def test_a_definition_goes_into_the_form_and_comes_back_the_same(name):
    stored = validate_definition(DEFINITIONS[name], ["local"]).as_dict()
    initial = ExperimentForm.initial_from(stored)
    form = ExperimentForm(data=_as_posted(initial), host_names=["local"])
    assert form.is_valid(), form.errors
    again = validate_definition(form.definition(), ["local"]).as_dict()
    assert again.pop("name") == f"{stored.pop('name')} (again)"
    assert again == stored


@pytest.mark.django_db
@pytest.mark.parametrize("name", DEFINITIONS)
def test_the_yaml_download_is_the_definition_the_command_line_takes(client, name):
    from .factories import ExperimentFactory, UserFactory

    stored = validate_definition(DEFINITIONS[name], ["local"]).as_dict()
    experiment = ExperimentFactory(definition=stored, name=stored["name"])
    client.force_login(UserFactory(username="viewer"))
    answer = client.get(f"/experiments/{experiment.pk}/definition.yaml")
    assert answer.status_code == 200 and answer["Content-Type"] == "application/yaml"
    assert f'filename="experiment-{experiment.pk}.yaml"' in answer["Content-Disposition"]
    assert validate_definition(yaml.safe_load(answer.content), ["local"]).as_dict() == stored
    page = client.get(f"/experiments/{experiment.pk}/").content.decode()
    assert "engines: [" in page and "{'name'" not in page  # YAML on the page, not a Python repr


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_run_again_from_the_experiment_page_makes_the_same_experiment(page, live_server, local_host, broker):
    from .factories import ExperimentFactory

    stored = validate_definition(DEFINITIONS["everything swept"], ["local"]).as_dict()
    original = ExperimentFactory(definition=stored, name=stored["name"])
    log_in(page, live_server)  # alice, an experimenter
    page.goto(f"{live_server.url}/experiments/{original.pk}/")
    page.click("#run-again")
    page.wait_for_url(f"**/experiments/new/?from={original.pk}")
    assert page.locator("#run-again-of").inner_text().startswith(f"The definition of #{original.pk}")
    assert page.input_value("input[name=name]") == f"{stored['name']} (again)"
    assert page.input_value("input[name=buffer_pool_size]") == "128M, 1G"
    assert page.is_checked("input[name=engines][value=postgresql]")
    assert page.is_checked("input[name=crash_when][value=during_workload]")
    assert "full_page_writes=on, off" in page.input_value("textarea[name=server_options]")
    screenshot(page, "run-again-form.png")
    page.click("text=Create and run")
    page.wait_for_url("**/experiments/*/")
    again = Experiment.objects.exclude(pk=original.pk).get()
    assert page.url.endswith(f"/experiments/{again.pk}/")
    assert {**again.definition, "name": stored["name"]} == stored
    # 2 pools x 2 rates x 2 crash plans x 2 values of each engine's option x 2 engines x 3 repetitions
    assert again.runs.count() == 96
    page.click("#definition summary")
    assert "when: [after_workload, during_workload]" in page.locator("#definition pre").inner_text()
