"""The engines' two registries (experiments/engines.py for the dashboard, workers/runner/engines.py
for the runner) agree, everything that lists engines takes them from there, and no code outside
the registries and the parsers compares an engine's name."""

import ast

import pytest

from experiments import engines as dashboard
from experiments.definition import definition_json_schema
from experiments.models import Engine as EngineChoices
from experiments.pages.forms import ExperimentForm, ImportForm
from workers.runner import contract
from workers.runner import engines as runner

from .test_architecture import ROOT, project_modules

NAMES = set(dashboard.ENGINES)
# Where an engine's name may be compared: the registries, and the parsers (one format each).
ALLOWED = {
    "experiments/engines.py",
    "workers/runner/engine.py",
    "workers/runner/engines.py",
    "workers/runner/postgres_engine.py",
}


def test_the_runner_drives_exactly_the_engines_the_dashboard_calls_runnable():
    assert set(runner.ENGINES) == set(dashboard.RUNNABLE_ENGINES) == set(contract.ENGINES)
    assert contract.ENGINES == tuple(runner.ENGINES)
    for name, engine in runner.ENGINES.items():
        assert engine.name == name and engine.storage and engine.counters and engine.sampled_status
    # an import-only engine says why a definition may not name it
    assert all(engine.runnable or engine.not_runnable for engine in dashboard.ENGINES.values())


def test_every_list_of_engines_is_the_registry_s():
    assert set(EngineChoices.values) == NAMES  # the model's choices: stored runs, the import API
    form = ExperimentForm()
    assert {value for value, _ in form.fields["engines"].choices} == set(dashboard.RUNNABLE_ENGINES)
    assert {value for value, _ in ImportForm().fields["engine"].choices} == NAMES
    schema = definition_json_schema()
    assert set(schema["properties"]["engines"]["items"]["enum"]) == set(dashboard.RUNNABLE_ENGINES)


def _compared_names(tree: ast.AST) -> list[tuple[int, str]]:
    """Engine names used as a comparison's operand (==, !=, in, not in) or as a branch's key."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for operand in (node.left, *node.comparators):
                values = operand.elts if isinstance(operand, ast.Tuple | ast.List | ast.Set) else [operand]
                found += [
                    (node.lineno, value.value)
                    for value in values
                    if isinstance(value, ast.Constant) and value.value in NAMES
                ]
        elif isinstance(node, ast.MatchValue) and isinstance(node.value, ast.Constant):
            if node.value.value in NAMES:
                found.append((node.lineno, node.value.value))
    return found


def test_no_code_outside_the_registries_and_the_parsers_compares_an_engine_s_name():
    compared = []
    for path in project_modules():
        relative = str(path.relative_to(ROOT))
        if relative in ALLOWED or relative.startswith("experiments/parsers/"):
            continue
        compared += [
            f"{relative}:{line} {name!r}" for line, name in _compared_names(ast.parse(path.read_text()))
        ]
    assert compared == [], "branch through the engine registries instead: " + ", ".join(compared)


@pytest.mark.parametrize("source", ['if engine == "rocksdb":\n    pass', 'x = e in ("innodb", "x")'])
def test_the_scan_finds_a_comparison_with_an_engine_s_name(source):
    assert _compared_names(ast.parse(source))
