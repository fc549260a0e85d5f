"""Fuzzing with fixed budgets (derandomized, so CI runs the same examples every time):
schemathesis sends what the OpenAPI schema allows and much it does not to every API operation of
a live server (its examples, coverage and fuzzing phases), and sequences of calls where ids flow
from one answer into the next request (its stateful phase), and no answer is a server error;
hypothesis feeds the definition and import validators any JSON and they answer with a value or
their own error, never an exception."""

import pytest
import schemathesis
from django.core.management import call_command
from drf_spectacular.generators import SchemaGenerator
from hypothesis import HealthCheck, given
from hypothesis import settings as budget
from hypothesis import strategies as st
from knox.crypto import hash_token
from knox.settings import CONSTANTS
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error

from experiments.definition import (
    PARAMETERS,
    SERVER_OPTIONS,
    DefinitionError,
    clean_tags,
    validate_definition,
)
from experiments.models import ApiToken
from experiments.services.imports import ImportRejected, validate_import

from .factories import ExperimentFactory, HostFactory, UserFactory
from .test_analysis import done_run

# Probing connects over SSH to whatever address it is given: not something to fuzz.
SCHEMA = schemathesis.openapi.from_dict(SchemaGenerator().get_schema(request=None, public=True)).exclude(
    path_regex=r"/probe/$"
)
# The coverage phase enumerates each field's boundaries: the valid ones (every one must be
# accepted or refused by a rule the operation names) are kept; its invalid ones (520 of the 764
# requests to POST /api/series/, 14 of its 22 s) re-test DRF's field validation, which the
# validators' own fuzzing below and the fuzzing phase's invalid requests cover. The suite's
# time is a budget (15 minutes for all of it).
SCHEMA.config.phases.coverage.generation.modes = [GenerationMode.POSITIVE]
API_BUDGET = budget(
    max_examples=20, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck), database=None
)


TOKEN = "f" * 64  # the fuzzer's token: the same after every reset of the rows


def seed() -> dict:
    """An admin with a token and a row of each kind for the ids to hit; the headers that log in."""
    admin = UserFactory(username="fuzzer", is_staff=True, is_superuser=True)
    HostFactory(name="local")
    done_run(ExperimentFactory(created_by=admin))
    ApiToken(digest=hash_token(TOKEN), token_key=TOKEN[: CONSTANTS.TOKEN_KEY_LENGTH], user=admin).save()
    return {"Authorization": f"Token {TOKEN}"}


@pytest.fixture
def served(live_server, transactional_db, broker):
    """A live server and the rows of seed(); the session's queue is emptied after (created
    experiments wake hosts through it)."""
    return live_server.url, seed()


def refused_only_by_rules_beyond_the_schema(ctx, response, case):
    """A request the schema allows is accepted, or refused (400) only by the rules its operation
    says a schema cannot state (`x-checked-beyond-schema`: hosts that must be registered, a
    cron expression's moments, what an uploaded log holds): every field the answer names is one
    of them. Any other field refused means the schema let through what validation refuses."""
    if case.meta is None or not case.meta.generation.mode.is_positive or response.status_code != 400:
        return None
    beyond = case.operation.definition.raw.get("x-checked-beyond-schema", [])
    named = list(response.json())
    outside = [name for name in named if not any(name == b or name.startswith(f"{b}.") for b in beyond)]
    assert not outside, (
        f"{case.method} {case.formatted_path}: the schema allowed what validation refused at {outside}: "
        f"{response.text[:600]}"
    )
    return None


# `busy`: the live server is a thread of this process, but each request is also a PostgreSQL
# backend's work: more than one core, never beside a test that measures time.
@pytest.mark.busy
@SCHEMA.parametrize()
@API_BUDGET
def test_no_request_fails_and_one_the_schema_allows_is_accepted_or_refused_by_a_rule_it_names(case, served):
    """Every operation, what its schema allows and much it does not: no server error; and a
    schema-valid request accepted, or refused only where the operation says why."""
    base_url, headers = served
    # the one registered host: a schema cannot list the rows there are
    for definition in (case.body, case.body.get("definition") if isinstance(case.body, dict) else None):
        if isinstance(definition, dict) and isinstance(definition.get("hosts"), list):
            definition["hosts"] = ["local"]
    response = case.call(base_url=base_url, headers=headers)
    case.validate_response(
        response, checks=[not_a_server_error], additional_checks=[refused_only_by_rules_beyond_the_schema]
    )
    if response.status_code == 400 and case.meta.generation.mode.is_positive:
        assert case.operation.definition.raw.get("x-checked-beyond-schema"), (
            f"{case.method} {case.formatted_path} refused a request its schema allows: {response.text[:600]}"
        )


@pytest.mark.busy
def test_sequences_of_calls_where_ids_flow_make_no_server_error(served):
    """Stateful: schemathesis chains operations by the links it infers from the schema (an
    experiment created, then read, annotated, cancelled, exported; a run excluded and included
    again; a series read, patched, its change points triaged), with bounded sequences."""
    base_url, headers = served
    machine = SCHEMA.as_state_machine()
    assert len(machine.bundles) >= 10  # the links it found: ids flow between these operations
    calls = []

    class Workflow(machine):
        def get_call_kwargs(self, case):
            return {"base_url": base_url, "headers": headers}

        def teardown(self):
            """Each sequence starts from the same rows, ids included: the links' ids come from
            answers (an explore's run ids), and hypothesis replays a sequence's prefix expecting
            the same answers (with the rows of the last sequence left, a run excluded or an
            import made, it drew other values there and stopped: FlakyStrategyDefinition)."""
            call_command("flush", interactive=False, verbosity=0)  # sequences reset too
            seed()

        def validate_response(self, response, case, **kwargs):
            calls.append(f"{case.method} {case.path}")
            assert response.status_code < 500, (
                f"{case.method} {case.formatted_path} answered {response.status_code}: {response.text[:800]}"
            )

    Workflow.run(
        settings=budget(
            max_examples=12,
            stateful_step_count=6,
            deadline=None,
            derandomize=True,
            suppress_health_check=list(HealthCheck),
            database=None,
        )
    )
    # sequences, not single calls: an operation reached through another's answer
    assert any("{id}" in call for call in calls), calls


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)
SIZES = st.sampled_from(["64M", "1G", "0M", "1T", "9999999G", "12", "abc", " 256m ", ""]) | JSON
DEFINITIONS = st.fixed_dictionaries(
    {},
    optional={
        "name": st.text(max_size=40) | JSON,
        "hosts": st.lists(st.sampled_from(["local", "LOCAL", "db2", "../x"]), max_size=3) | JSON,
        "engines": st.lists(st.sampled_from(["innodb", "rocksdb", "tokudb", "myisam"]), max_size=3) | JSON,
        "parameters": st.dictionaries(
            st.sampled_from([*PARAMETERS, "x"]), st.lists(SIZES, max_size=3) | JSON
        ),
        "server_options": st.dictionaries(
            st.sampled_from([*SERVER_OPTIONS, "init_file"]), st.lists(JSON) | JSON
        ),
        "workload": st.dictionaries(
            st.sampled_from(
                ["name", "tables", "table_size", "threads", "events", "time_seconds", "warmup_max_seconds"]
            ),
            st.sampled_from(["oltp_insert", "oltp_write_only"]) | st.integers(-5, 10**9) | JSON,
        ),
        "crash": st.dictionaries(
            st.sampled_from(["method", "when", "after_seconds", "redo_bytes", "open_rows"]),
            st.sampled_from(
                ["sigkill", "power_loss", "after_workload", "at_redo_bytes", "during_transaction"]
            )
            | SIZES,
        ),
        "repetitions": JSON,
        "description": JSON,
        "tags": JSON,
    },
)


@given(raw=DEFINITIONS | JSON)
@budget(max_examples=400, deadline=None, derandomize=True, database=None)
def test_the_definition_validator_answers_any_input_with_a_definition_or_its_errors(raw):
    try:
        definition = validate_definition(raw, ["local", "db2"])
    except DefinitionError as refused:
        assert refused.errors and all(isinstance(m, list) and m for m in refused.errors.values())
    else:
        assert 1 <= definition.run_count == len(list(definition.expand()))


@given(
    data=st.dictionaries(
        st.sampled_from(
            [
                "engine",
                "buffer_pool_size",
                "redo_log_size",
                "insert_rate",
                "host_label",
                "server_version",
                "timezone",
                "redo_bytes",
                "x",
            ]
        ),
        SIZES | st.sampled_from(["innodb", "rocksdb", "UTC", "Mars/Olympus", "prod-1"]),
    )
)
@budget(max_examples=300, deadline=None, derandomize=True, database=None)
def test_the_import_parameters_answer_any_input_with_values_or_their_errors(data):
    try:
        validate_import(data)
    except ImportRejected as refused:
        assert refused.errors


@given(raw=JSON)
@budget(max_examples=200, deadline=None, derandomize=True, database=None)
def test_tags_are_cleaned_or_refused_with_a_reason(raw):
    try:
        tags = clean_tags(raw)
    except ValueError as refused:
        assert str(refused)
    else:
        assert len(tags) == len(set(tags)) <= 12 and all(tag == tag.strip() and tag for tag in tags)
