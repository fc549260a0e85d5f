"""Issue 64, item 5a: YAML nested deeper than a definition needs is refused while its events are
scanned, before anything is composed. 60 KB of "[" had crashed the web worker in libyaml's
recursive composer, and 200 KB had taken over 120 s of CPU; the deepest real definition is three
levels (parameters: {name: [values]})."""

import time

import pytest

from recovery_lab_cli.client import ClientError, load_definition
from recovery_lab_cli.yaml_input import MAX_NESTING, YamlRefused, load_plain_yaml

from .test_series import DEFINITION

FLOW_LISTS = "[" * 100_000 + "]" * 100_000  # 195 KiB, under the size limit
FLOW_MAPPINGS = "{a: " * 40_000 + "}" * 40_000
BLOCK_MAPPINGS = "".join("  " * level + "a:\n" for level in range(400))  # 157 KiB of indents


def nested_lists(levels: int) -> str:
    return "name: deep\nvalue: " + "[" * levels + "x" + "]" * levels + "\n"


@pytest.mark.parametrize("text", [FLOW_LISTS, FLOW_MAPPINGS, BLOCK_MAPPINGS], ids=["lists", "flow", "block"])
def test_a_deeply_nested_document_is_refused_at_once_with_the_depth_it_may_have(text):
    started = time.process_time()
    with pytest.raises(YamlRefused, match=rf"line \d+: nested more than {MAX_NESTING} levels deep"):
        load_plain_yaml(text)
    assert time.process_time() - started < 1  # the scan stops at the first level too deep


def test_nesting_up_to_the_bound_is_read_and_one_more_is_refused():
    deepest = load_plain_yaml(nested_lists(MAX_NESTING - 1))["value"]  # the mapping is one level
    for _ in range(MAX_NESTING - 1):
        (deepest,) = deepest
    assert deepest == "x"
    with pytest.raises(YamlRefused, match="nested more than"):
        load_plain_yaml(nested_lists(MAX_NESTING))


def test_the_command_line_refuses_a_deeply_nested_definition_file(tmp_path):
    path = tmp_path / "deep.yaml"
    path.write_text(FLOW_LISTS)
    with pytest.raises(ClientError, match=r"deep.yaml is not taken: line 1: nested more than"):
        load_definition(str(path))


@pytest.mark.django_db
def test_the_series_page_refuses_a_deeply_nested_definition_with_a_message(client, user, local_host):
    from experiments.services import series as series_service

    client.force_login(user)
    series = series_service.create_series(
        {"name": "nightly InnoDB", "definition": DEFINITION, "schedule": "@nightly"}, user=user
    )
    before = series.definition
    response = client.post(
        f"/series/{series.pk}/edit/",
        {"name": "nightly InnoDB", "schedule": "@nightly", "enabled": "on", "alert_threshold_percent": "10",
         "alert_emails": "", "alert_webhooks": "", "definition": "[" * 30_000 + "]" * 30_000},
    )  # fmt: skip
    assert response.status_code == 200
    assert f"nested more than {MAX_NESTING} levels deep" in response.content.decode()
    series.refresh_from_db()
    assert series.definition == before


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/api/experiments/", "/api/series/"])
def test_json_nested_past_the_decoder_is_a_400_that_says_so(api, path):
    """The API's JSON, as the YAML: 200 KB of "[" had raised RecursionError, a 500."""
    body = '{"name": ' + "[" * 100_000 + "]" * 100_000 + "}"
    answer = api.post(path, body, content_type="application/json")
    assert answer.status_code == 400, answer.content[:300]
    assert "nested too deep" in answer.json()["detail"]
