"""A host's bundle is the host's word: whoever holds root there, or a broken runner, can send any
values in result.json, resources.jsonl and samples.jsonl. Rule: such a bundle is a run that is
done or failed with the reason said, its files kept; ingest never raises, and the run's page
still shows. Held with Hypothesis over a real profiled bundle with values replaced."""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from experiments import services
from experiments.models import RunStatus

from .conftest import DATA
from .factories import RunFactory

# busy: it renders a run page per example (CPU for seconds), never beside a quiet test's timing
pytestmark = [pytest.mark.django_db, pytest.mark.busy]

BUNDLE = DATA / "bundles" / "innodb_300M_profiled"
FILES = {path.name: path.read_bytes() for path in BUNDLE.iterdir()}
RESULT = json.loads(FILES["result.json"])

values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)
# the keys ingest reads, and some of the keys inside them
KEYS = sorted(RESULT)
INNER = {key: sorted(value) for key, value in RESULT.items() if isinstance(value, dict)}


@st.composite
def crafted(draw):
    result = json.loads(json.dumps(RESULT))
    for key in draw(st.lists(st.sampled_from(KEYS), max_size=3, unique=True)):
        result[key] = draw(values)
    for key in draw(st.lists(st.sampled_from(sorted(INNER)), max_size=2, unique=True)):
        if isinstance(result.get(key), dict) and INNER[key]:
            result[key][draw(st.sampled_from(INNER[key]))] = draw(values)
    files = dict(FILES)
    for name in ("resources.jsonl", "samples.jsonl"):
        lines = FILES[name].decode().splitlines()
        picked = draw(st.lists(st.integers(0, len(lines) - 1), max_size=3))
        for index in picked:
            row = json.loads(lines[index])
            if isinstance(row, dict) and row:
                row[draw(st.sampled_from(sorted(row)))] = draw(values)
            lines[index] = json.dumps(row)
        files[name] = ("\n".join(lines) + "\n").encode()
    if draw(st.booleans()):
        result = draw(values) if draw(st.integers(0, 9)) == 0 else result
    files["result.json"] = json.dumps(result).encode()
    return result, files


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(bundle=crafted())
def test_a_bundle_of_any_values_is_a_run_done_or_failed_with_the_reason(
    bundle, local_host, client, admin_user
):
    result, files = bundle
    run = RunFactory(host=local_host, status=RunStatus.RUNNING, engine="innodb")
    stored = services.ingest_bundle(run.id, services.Bundle(result=result, files=files))
    stored.refresh_from_db()
    assert stored.status in (RunStatus.DONE, RunStatus.FAILED)
    if stored.status == RunStatus.FAILED:
        assert stored.error
    assert stored.files.filter(name="result.json").exists()
    client.force_login(admin_user)
    page = client.get(stored.get_absolute_url())
    assert page.status_code == 200


def test_a_result_that_is_not_an_object_fails_the_run_saying_so(local_host):
    run = RunFactory(host=local_host, status=RunStatus.RUNNING, engine="innodb")
    stored = services.ingest_bundle(run.id, services.Bundle(result=[1, 2], files={"result.json": b"[1, 2]"}))
    assert stored.status == RunStatus.FAILED
    assert stored.error == (
        "the host's bundle could not be read: ValueError: result.json holds list, not an object"
    )
