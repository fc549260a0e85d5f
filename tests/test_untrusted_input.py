"""What a user types or uploads is data, bounded: YAML with anchors and aliases (a few hundred
bytes that expanded into gigabytes) is refused before anything is built, and no message repeats
a whole value."""

import time

import pytest

from recovery_lab_cli.client import ClientError, load_definition
from recovery_lab_cli.yaml_input import YamlRefused, load_plain_yaml

from .test_series import DEFINITION

# 456 bytes of nested aliases: each level holds nine of the level before; the last is 9^9 values.
ALIAS_BOMB = "\n".join(
    ["a: &a [x, x, x, x, x, x, x, x, x]"]
    + [f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]" for i in range(8)]
    + ["name: *i", "hosts: [local]", "engines: [innodb]"]
)


def test_anchors_and_aliases_are_refused_before_anything_is_expanded():
    started = time.monotonic()
    with pytest.raises(YamlRefused, match=r"line 1: anchors \(&\) and aliases \(\*\) are not taken"):
        load_plain_yaml(ALIAS_BOMB)
    assert time.monotonic() - started < 1  # nothing was built: 9^9 values would take minutes


def test_a_definition_over_the_limit_is_refused_and_a_plain_one_is_read():
    with pytest.raises(YamlRefused, match=r"it is 300 KiB: a definition may have 256 KiB at most"):
        load_plain_yaml("name: " + "x" * (300 * 1024 - 6))
    assert load_plain_yaml("name: nightly\nengines: [innodb]\n") == {"name": "nightly", "engines": ["innodb"]}


def test_the_command_line_refuses_a_definition_file_with_aliases(tmp_path):
    path = tmp_path / "bomb.yaml"
    path.write_text(ALIAS_BOMB)
    with pytest.raises(ClientError, match=r"bomb.yaml is not taken: line 1: anchors"):
        load_definition(str(path))


@pytest.mark.django_db
def test_a_series_edited_as_yaml_with_nested_aliases_answers_at_once_with_a_short_message(
    client, user, local_host
):
    from experiments.services import series as series_service

    client.force_login(user)  # an experimenter, the series' owner
    series = series_service.create_series(
        {"name": "nightly InnoDB", "definition": DEFINITION, "schedule": "@nightly"}, user=user
    )
    response = client.post(
        f"/series/{series.pk}/edit/",
        {"name": "nightly InnoDB", "schedule": "@nightly", "enabled": "on", "alert_threshold_percent": "10",
         "alert_emails": "", "alert_webhooks": "", "definition": ALIAS_BOMB},
    )  # fmt: skip
    assert response.status_code == 200
    assert len(response.content) < 100_000
    assert "anchors (&amp;) and aliases (*) are not taken" in response.content.decode()


def test_a_long_bad_value_is_quoted_in_a_few_words():
    from experiments.definition import DefinitionError, validate_definition

    with pytest.raises(DefinitionError) as refused:
        validate_definition({**DEFINITION, "engines": ["x" * 5000]}, ["local"])
    said = str(refused.value.errors)
    assert "xxxx ..." in said and len(said) < 1000


def test_a_series_alert_threshold_is_in_percent_where_it_is_made_and_where_it_is_edited(
    client, user, local_host
):
    """Issue 42: it was '10 (%)' when made and '0.1 (a share)' when edited."""
    from experiments.services import series as series_service

    client.force_login(user)
    series = series_service.create_series(
        {"name": "nightly", "definition": DEFINITION, "schedule": "@nightly", "alert_threshold": 0.1},
        user=user,
    )
    page = client.get(f"/series/{series.pk}/edit/").content.decode()
    assert 'name="alert_threshold_percent"' in page and 'value="10.0"' in page
    assert "worse by more than (%)" in page
    client.post(
        f"/series/{series.pk}/edit/",
        {"name": "nightly", "schedule": "@nightly", "enabled": "on", "alert_threshold_percent": "25",
         "alert_emails": "", "alert_webhooks": "",
         "definition": "name: nightly\nhosts: [local]\nengines: [innodb]\n"},
    )  # fmt: skip
    series.refresh_from_db()
    assert series.alert_threshold == 0.25
