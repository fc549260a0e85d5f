"""The engines' two registries (experiments/engines.py for the dashboard, runner/families/ for the
runner, found from the families' folders) agree, everything that lists engines takes them from
there, no code outside the registries, the families and the parsers compares an engine's name,
and nothing outside a family's folder reaches into it but the registry."""

import ast
import re

import pytest

from experiments import engines as dashboard
from experiments.definition import definition_json_schema
from experiments.models import Engine as EngineChoices
from experiments.pages.forms import ExperimentForm, ImportForm
from recovery_lab_cli import live
from runner import contract
from runner import families as runner

from .test_architecture import ROOT, project_modules

NAMES = set(dashboard.ENGINES)
# Where an engine's name may be compared: the registries, each family's own folder, and the
# parsers (one format each).
ALLOWED = {"experiments/engines.py", "runner/engine.py"}
ALLOWED_UNDER = ("experiments/parsers/", "runner/families/")


def test_the_runner_drives_exactly_the_engines_the_dashboard_calls_runnable():
    assert set(runner.ENGINES) == set(dashboard.RUNNABLE_ENGINES) == set(contract.ENGINES)
    assert contract.ENGINES == tuple(runner.ENGINES)
    for name, engine in runner.ENGINES.items():
        assert engine.name == name and engine.storage and engine.counters and engine.samples
    # an import-only engine says why a definition may not name it
    assert all(engine.runnable or engine.not_runnable for engine in dashboard.ENGINES.values())


def test_every_list_of_engines_is_the_registry_s():
    assert set(EngineChoices.values) == NAMES  # the model's choices: stored runs, the import API
    form = ExperimentForm()
    assert {value for value, _ in form.fields["engines"].choices} == set(dashboard.RUNNABLE_ENGINES)
    assert {value for value, _ in ImportForm().fields["engine"].choices} == NAMES
    schema = definition_json_schema()
    assert set(schema["properties"]["engines"]["items"]["enum"]) == set(dashboard.RUNNABLE_ENGINES)


def _compared_names(tree: ast.AST, names: set[str] = NAMES) -> list[tuple[int, str]]:
    """Engine names (or `names`) used as a comparison's operand (==, !=, in, not in) or as a
    branch's key."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for operand in (node.left, *node.comparators):
                values = operand.elts if isinstance(operand, ast.Tuple | ast.List | ast.Set) else [operand]
                found += [
                    (node.lineno, value.value)
                    for value in values
                    if isinstance(value, ast.Constant) and value.value in names
                ]
        elif isinstance(node, ast.MatchValue) and isinstance(node.value, ast.Constant):
            if node.value.value in names:
                found.append((node.lineno, node.value.value))
    return found


def test_no_code_outside_the_registries_and_the_parsers_compares_an_engine_s_name():
    compared = []
    for path in project_modules():
        relative = str(path.relative_to(ROOT))
        if relative in ALLOWED or relative.startswith(ALLOWED_UNDER):
            continue
        compared += [
            f"{relative}:{line} {name!r}" for line, name in _compared_names(ast.parse(path.read_text()))
        ]
    assert compared == [], "branch through the engine registries instead: " + ", ".join(compared)


# Where a family's name may be compared: its own folder and the registry, the parsers, and the
# live readers, whose URL schemes are the families' live schemes (FAMILY.live).
FAMILY_ALLOWED_UNDER = ("experiments/parsers/", "runner/families/")
FAMILY_ALLOWED = {"recovery_lab_cli/live.py", "recovery_lab_cli/server_url.py"}


def test_no_code_outside_the_families_compares_a_family_s_name():
    """A server's facts are its family's declaration (runner/family.py): the dashboard asks it,
    never `family == "mysql"` (the hosts page had)."""
    compared = []
    for path in project_modules():
        relative = str(path.relative_to(ROOT))
        if relative in FAMILY_ALLOWED or relative.startswith(FAMILY_ALLOWED_UNDER):
            continue
        found = _compared_names(ast.parse(path.read_text()), set(runner.FAMILIES) - NAMES)
        compared += [f"{relative}:{line} {name!r}" for line, name in found]
    assert compared == [], "ask the family's declaration (runner.families.DECLARED) instead: " + ", ".join(
        compared
    )
    assert _compared_names(ast.parse('x = family == "mysql"'), set(runner.FAMILIES) - NAMES)


@pytest.mark.parametrize("source", ['if engine == "rocksdb":\n    pass', 'x = e in ("innodb", "x")'])
def test_the_scan_finds_a_comparison_with_an_engine_s_name(source):
    assert _compared_names(ast.parse(source))


def _imported(source: str, package: str) -> set[str]:
    """The modules a file of `package` imports, relative ones made whole (runner.families.x...)."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            parts = package.split(".")
            base = parts[: len(parts) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            names |= {module} | {f"{module}.{alias.name}" for alias in node.names}
    return names


def test_a_family_is_its_folder_and_only_the_registry_reaches_into_it():
    assert set(runner.FAMILIES) == {
        engine.server for engines in runner.FAMILY_ENGINES.values() for engine in engines.values()
    }
    assert runner.families_running("innodb") == ("mariadb", "mysql")  # one name, two servers
    # predict's live readers are the families' (keyed by family, one per engine's server)
    assert set(live.READERS) == set(runner.FAMILIES)
    assert all(live.reader_of(name)[1] is not None for name in runner.ENGINES)
    for family in runner.FAMILIES:
        assert runner.server_class(family).__module__ == f"runner.families.{family}.server"
    reaching = []
    for path in project_modules():
        parts = path.relative_to(ROOT).parts
        if parts[:2] == ("runner", "families"):  # the registry and the families themselves
            continue
        package = ".".join(parts[:-1])
        reaching += [
            f"{path.relative_to(ROOT)}: {name}"
            for name in _imported(path.read_text(), package)
            if name.startswith("runner.families.") and name.split(".")[2] in runner.FAMILIES
        ]
    assert reaching == [], "ask the registry (runner.families) instead: " + ", ".join(sorted(reaching))


@pytest.mark.parametrize(
    "source, package",
    [
        ("from .families.mariadb.engines import InnoDB", "runner"),
        ("from ..families.postgresql import server", "runner.sub"),
        ("import runner.families.mariadb.server", "experiments"),
    ],
)
def test_the_scan_finds_an_import_reaching_into_a_family(source, package):
    assert any(
        name.startswith("runner.families.") and len(name.split(".")) > 3
        for name in _imported(source, package)
    )


# A server's own names for its counters and views: only its family, the parsers (one format each)
# and the live readers use them. pg_ functions of the dashboard's own database are its own.
SERVER_NAME = re.compile(r"\b(?:Innodb|Rocksdb)_\w+|\bpg_\w+")
SERVER_NAMES_ALLOWED_UNDER = ("experiments/parsers/", "runner/families/")
SERVER_NAMES_ALLOWED = {"recovery_lab_cli/live.py"}
DASHBOARD_DATABASE = {
    "pg_advisory_xact_lock",
    "pg_try_advisory_lock",
    "pg_advisory_unlock",
    "pg_locks",
    "pg_database",
}


def _server_names(tree: ast.AST) -> list[tuple[int, str]]:
    """A server's own names (Innodb_*, Rocksdb_*, pg_*) in the code's string literals (docstrings,
    which say what a value is, are prose)."""
    prose = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        (node.lineno, name)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose
        for name in SERVER_NAME.findall(node.value)
        if name not in DASHBOARD_DATABASE
    ]


def test_no_code_outside_the_families_names_a_server_s_own_counters():
    """A run's samples carry the names every engine shares (runner/engine.py); each engine maps
    them to its own inside its family (seconds.py had its own copy of InnoDB's and RocksDB's)."""
    named = []
    for path in project_modules():
        relative = str(path.relative_to(ROOT))
        if relative in SERVER_NAMES_ALLOWED or relative.startswith(SERVER_NAMES_ALLOWED_UNDER):
            continue
        named += [f"{relative}:{line} {name}" for line, name in _server_names(ast.parse(path.read_text()))]
    assert named == [], "name it in its family's engine (Engine.samples) instead: " + ", ".join(named)


@pytest.mark.parametrize(
    "source",
    [
        'LEVELS = {"lsn": "Innodb_lsn_current"}',
        'x = f"SELECT {a} FROM pg_stat_database"',
        'def f():\n    """Rocksdb_wal_bytes"""\n    return ("Rocksdb_wal_bytes",)',
    ],
)
def test_the_scan_finds_a_server_s_own_name(source):
    assert _server_names(ast.parse(source))
    assert not _server_names(ast.parse('"""Innodb_lsn_current is prose here"""'))
