"""Input a user types or imports never makes the site fail: numbers that only look like ids,
text that a spreadsheet would run, stored values of the wrong shape."""

import pytest

from .factories import ExperimentFactory

ODD_IDS = ["²", "٣", "99999999999999999999", "-1", " 7 "]


@pytest.mark.parametrize("text", ODD_IDS)
@pytest.mark.parametrize("url", ["/api/experiments/?q=", "/experiments/?q="])
def test_a_search_for_something_that_only_looks_like_an_id_answers(text, url, api, client, user):
    experiment = ExperimentFactory(name="seven", created_by=user)
    client.force_login(user)
    answer = (api if url.startswith("/api/") else client).get(url + text)
    assert answer.status_code == 200
    if text == " 7 " and experiment.pk == 7:
        assert "seven" in answer.content.decode()


@pytest.mark.parametrize("text", ["²,3", "1,99999999999999999999"])
def test_a_comparison_of_odd_ids_says_what_it_takes(text, api):
    answer = api.get(f"/api/compare/?experiments={text}")
    assert answer.status_code == 400 and "experiment ids" in str(answer.json())
