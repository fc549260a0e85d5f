"""No user value reaches a shell or a SQL string: the project's own code (experiments/,
recovery_lab_cli/, workers/, webapp/) is read as Python syntax trees and every call that could
hand a string to a shell or to SQL is checked. Processes start from argument lists; SQL is a
constant with parameters beside it.

Values that must cross a shell (the remote commands over SSH, workers/ssh.py) are checked against
patterns first (tests/test_ssh.py, test_definition.py) and quoted with shlex.quote: every
interpolation there is checked to be quoted."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted(
    path
    for package in ("experiments", "workers", "runner", "webapp", "recovery_lab_cli")
    for path in (ROOT / package).rglob("*.py")
)
SHELL_CALLS = {
    ("os", "system"),
    ("os", "popen"),
    ("subprocess", "getoutput"),
    ("subprocess", "getstatusoutput"),
    ("asyncio", "create_subprocess_shell"),
}
RAW_SQL = {"raw", "extra", "RawSQL"}
# SQL an engine's class declares as a constant (runner/engine.py), run as it is by the live readers
DECLARED_SQL = {"redo_to_replay_sql"}


def calls(path: Path):
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Call):
            yield node


def name_of(call: ast.Call) -> tuple[str, str]:
    func = call.func
    if isinstance(func, ast.Attribute):
        owner = func.value.id if isinstance(func.value, ast.Name) else ""
        return owner, func.attr
    return "", func.id if isinstance(func, ast.Name) else ""


def where(path: Path, call: ast.Call) -> str:
    return f"{path.relative_to(ROOT)}:{call.lineno}"


def test_the_guard_reads_the_project():
    assert len(SOURCES) > 50 and any(p.name == "runner.py" for p in SOURCES)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_shell_and_no_sql_built_from_strings(path):
    found = []
    for call in calls(path):
        owner, name = name_of(call)
        if any(
            k.arg == "shell" and not (isinstance(k.value, ast.Constant) and not k.value.value)
            for k in call.keywords
        ):
            found.append(f"{where(path, call)}: shell=")
        if (owner, name) in SHELL_CALLS:
            found.append(f"{where(path, call)}: {owner}.{name}")
        if name in RAW_SQL:
            found.append(f"{where(path, call)}: {name}() takes SQL text")
        if name == "execute" and owner in ("cursor", "conn", "connection", "db") and call.args:
            sql = call.args[0]
            declared = isinstance(sql, ast.Attribute) and sql.attr in DECLARED_SQL
            if not declared and not (isinstance(sql, ast.Constant) and isinstance(sql.value, str)):
                found.append(f"{where(path, call)}: SQL that is not a constant string")
    assert found == []


def test_the_sql_the_engines_declare_is_a_constant_of_their_class():
    from runner.families import FAMILY_ENGINES

    for engines in FAMILY_ENGINES.values():
        for kind in engines.values():
            declared = {name: getattr(type(kind), name) for name in DECLARED_SQL}
            assert all(sql is None or isinstance(sql, str) for sql in declared.values()), kind.name
            assert declared == {name: getattr(kind, name) for name in DECLARED_SQL}  # not set per object


def test_every_value_in_a_remote_shell_command_is_quoted():
    """workers/ssh.py sends the few remote commands there are (`_command`, `create_process`,
    `conn.run`); each value put into one is shlex.quote'd, directly or through a name (or a dict of
    names) assigned from shlex.quote."""
    tree = ast.parse((ROOT / "workers" / "ssh.py").read_text())

    def is_quote(node) -> bool:
        return isinstance(node, ast.Call) and name_of(node) == ("shlex", "quote")

    quoted_names = {
        target.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        and (is_quote(node.value) or (isinstance(node.value, ast.DictComp) and is_quote(node.value.value)))
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    commands = []
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
        owner, name = name_of(call)
        position = {"_command": 1, "create_process": 0}.get(
            name, 0 if (owner, name) == ("conn", "run") else None
        )
        if position is not None and len(call.args) > position:
            if getattr(call.args[position], "id", "") == "command":
                continue  # inside _command itself: its callers are checked
            commands.append(call.args[position])
    assert len(commands) >= 6  # the guard sees them
    unquoted = []
    for command in commands:
        assert isinstance(command, ast.JoinedStr | ast.Constant), ast.unparse(command)
        for value in getattr(command, "values", []):
            if isinstance(value, ast.FormattedValue):
                inner = value.value
                ok = is_quote(inner) or (
                    isinstance(inner, ast.Name | ast.Subscript)
                    and getattr(inner, "id", getattr(getattr(inner, "value", None), "id", "")) in quoted_names
                )
                if not ok:
                    unquoted.append(f"line {command.lineno}: {ast.unparse(inner)}")
    assert unquoted == []
