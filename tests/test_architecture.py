"""The house's rules that no linter states: modules stay short unless they are one concept
(docs/architecture.md names each), and the runner imports nothing but the standard library."""

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 400
# One concept each, kept whole; docs/architecture.md says why.
LONG_ON_PURPOSE = {
    "experiments/parsers/errorlog.py",
    "recovery_lab_cli/client.py",
    "experiments/definition.py",
    "experiments/models.py",
    "experiments/services/archive.py",
}


def project_modules():
    for package in ("experiments", "workers", "runner", "webapp", "recovery_lab_cli"):
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" not in path.parts:
                yield path


def test_no_module_grows_past_the_limit_unless_it_is_one_concept():
    long = {
        str(path.relative_to(ROOT))
        for path in project_modules()
        if len(path.read_text().splitlines()) > MAX_LINES
    }
    assert long == LONG_ON_PURPOSE, (
        "split these by concept, or name them in docs/architecture.md and here: "
        f"{sorted(long - LONG_ON_PURPOSE)}; no longer long: {sorted(LONG_ON_PURPOSE - long)}"
    )


def test_the_runner_imports_only_the_standard_library_and_itself():
    runner = ROOT / "runner"
    outside = set()
    modules = sorted(runner.rglob("*.py"))
    assert len(modules) > 20, modules  # the package, not a folder left empty by a move
    for path in modules:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                # mfusepy ships inside the runner's zip (workers/transports.py runner_zip)
                if top not in sys.stdlib_module_names and top != "mfusepy":
                    outside.add(f"{path.relative_to(ROOT)}: {name}")
    assert not outside, outside


def test_nothing_in_experiments_calls_upwards_by_name():
    """A service that needs a probe is handed one by the pages or the API above it; none looks
    one up by name (import_string) behind the layers' backs."""
    by_name = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "experiments").rglob("*.py")
        if "migrations" not in path.parts and "import_string" in path.read_text()
    ]
    assert by_name == []


# What the dashboard (experiments/) may take from the runner: its contract, the families'
# registry and the declaration they are made of. Anything else of the runner's is the runner's.
RUNNER_SEAM = {"runner.contract", "runner.families", "runner.family"}


def runner_imports(source: str) -> set[str]:
    """The runner modules a module imports by name (`from runner import contract` names
    runner.contract)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.split(".")[0] == "runner"}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module.split(".")[0] == "runner":
            found |= (
                {f"runner.{alias.name}" for alias in node.names} if node.module == "runner" else {node.module}
            )
    return found


def test_the_dashboard_takes_from_the_runner_only_its_contract_and_the_families_registry():
    reaching = {
        f"{path.relative_to(ROOT)}: {name}"
        for path in (ROOT / "experiments").rglob("*.py")
        if "migrations" not in path.parts
        for name in runner_imports(path.read_text())
        if name not in RUNNER_SEAM
    }
    assert not reaching, "ask runner.contract or runner.families instead: " + ", ".join(sorted(reaching))


# The workers dispatch to the hosts: the runner's package itself (zipped and sent), and on the host
# root's folder checks (runner/files.py: one implementation of "a folder no one else can write",
# the one the runner runs there too, not a copy that could drift from it).
WORKERS_SEAM = RUNNER_SEAM | {"runner", "runner.files"}


def test_the_workers_take_from_the_runner_its_contract_its_package_and_its_folder_checks():
    reaching = {
        f"{path.relative_to(ROOT)}: {name}"
        for package in ("workers", "webapp", "recovery_lab_cli")
        for path in (ROOT / package).rglob("*.py")
        for name in runner_imports(path.read_text())
        if name not in WORKERS_SEAM
    }
    assert not reaching, "ask runner.contract or runner.families instead: " + ", ".join(sorted(reaching))


def test_the_seam_s_scan_sees_each_way_of_naming_a_runner_module():
    source = "from runner.throttle import X\nfrom runner import contract, floor\nimport runner.processes\n"
    assert runner_imports(source) == {
        "runner.throttle",
        "runner.contract",
        "runner.floor",
        "runner.processes",
    }
