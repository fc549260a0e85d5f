import pytest

from experiments.models import Experiment, Run

from .conftest import queued_messages
from .test_definition import definition

pytestmark = pytest.mark.django_db(transaction=True)

BAD_DEFINITIONS = {
    "shell metacharacters in the name": {"name": "demo; rm -rf ~"},
    "shell metacharacters in a size": {"parameters": {"redo_log_size": ["64M`reboot`"]}},
    "shell metacharacters in a server option": {"server_options": {"innodb_flush_method": ["fsync$(id)"]}},
    "negative size": {"parameters": {"buffer_pool_size": ["-256M"]}},
    "unit-less size": {"parameters": {"redo_log_size": [536870912]}},
    "unknown engine": {"engines": ["innodb", "falcon"]},
    "server option outside the allow-list": {"server_options": {"plugin_load": ["evil.so"]}},
    "unknown host": {"hosts": ["db-prod-7"]},
    "absurd repetitions": {"repetitions": 10**9},
}


@pytest.mark.parametrize("label", BAD_DEFINITIONS)
def test_bad_definition_gets_400_creates_nothing_queues_nothing(api, local_host, broker, label):
    response = api.post("/api/experiments/", definition(**BAD_DEFINITIONS[label]), format="json")
    assert response.status_code == 400, response.content
    assert response.json()  # a message per field
    assert Experiment.objects.count() == 0 and Run.objects.count() == 0
    assert queued_messages(broker) == 0


# Issue 68: three bad fields, one of them wrong only against the host (its builds): all three at once.
THREE_BAD = {"parameters": {"redo_log_size": ["64Q"], "server_build": ["nosuch"]}, "repetitions": 0}
ON_THE_HOST = {"server_builds": [{"name": "system", "path": "/usr/sbin/mariadbd", "version": "x"}]}


def test_every_bad_field_is_answered_at_once_those_the_host_refuses_too(api, local_host, broker):
    local_host.facts = ON_THE_HOST
    local_host.save()
    response = api.post("/api/experiments/", definition(**THREE_BAD), format="json")
    assert response.status_code == 400, response.content
    said = response.json()
    assert set(said) == {"parameters.redo_log_size", "repetitions", "parameters.server_build"}, said
    assert "is not a size" in said["parameters.redo_log_size"][0]
    assert "has no server build nosuch (its last probe listed: system)" in said["parameters.server_build"][0]
    assert Experiment.objects.count() == 0 and queued_messages(broker) == 0


def test_body_that_is_not_json_gets_400(api, local_host, broker):
    response = api.post("/api/experiments/", "{name: oops", content_type="application/json")
    assert response.status_code == 400
    assert "JSON" in response.json()["detail"]
    assert Run.objects.count() == 0 and queued_messages(broker) == 0


def test_valid_definition_creates_runs_and_wakes_their_host_once(api, local_host, broker):
    body = definition(parameters={"redo_log_size": ["64M", "512M"]}, server_options={}, repetitions=1)
    response = api.post("/api/experiments/", body, format="json")
    assert response.status_code == 201, response.content
    data = response.json()
    assert len(data["runs"]) == 4
    assert {r["engine"] for r in data["runs"]} == {"innodb", "rocksdb"}
    assert set(data["runs"][0]["metrics"]) >= {"recovery_seconds", "downtime_seconds", "redo_bytes"}
    assert queued_messages(broker) == 1  # one driver for the host, not one message per run


def test_api_needs_authentication(client, local_host):
    assert client.get("/api/experiments/").status_code in (401, 403)


def test_runs_filter_by_engine(api, local_host, broker):
    api.post("/api/experiments/", definition(server_options={}, repetitions=1), format="json")
    rocks = api.get("/api/runs/?engine=rocksdb").json()
    assert rocks["count"] == 8 and {r["engine"] for r in rocks["results"]} == {"rocksdb"}


def test_hosts_can_be_registered_by_staff_and_listed_by_anyone(staff_api, api):
    created = staff_api.post("/api/hosts/", {"name": "bench-2", "transport": "local"}, format="json")
    assert created.status_code == 201, created.content
    assert [h["name"] for h in api.get("/api/hosts/").json()["results"]] == ["bench-2"]
    bad = staff_api.post("/api/hosts/", {"name": "bad name;", "transport": "local"}, format="json")
    assert bad.status_code == 400


def test_openapi_schema_is_served(api):
    response = api.get("/api/schema/")
    assert response.status_code == 200
    assert b"/api/experiments/" in response.content


def test_a_host_registration_names_the_field_at_fault(staff_api):
    """Each of a host's fields is refused under its own name (all were reported as 'name')."""
    good = {"name": "db9", "transport": "ssh", "ssh_user": "bench", "ssh_host": "db9.lan", "ssh_port": 22}
    for change, field in [
        ({"ssh_port": 70000}, "ssh_port"),
        ({"ssh_user": "Bench!"}, "ssh_user"),
        ({"ssh_host": "-db9"}, "ssh_host"),
        ({"work_dir": "/var/tmp/../etc"}, "work_dir"),
        ({"ssh_host": ""}, "ssh_host"),  # an ssh host needs an address: the service's rule
    ]:
        answer = staff_api.post("/api/hosts/", {**good, **change}, format="json")
        assert answer.status_code == 400 and list(answer.json()) == [field], (change, answer.json())
