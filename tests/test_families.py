"""A family declares itself once (runner/family.py) and the registry checks it as it loads
(runner/families/__init__.py): a fourth family is a folder of the tests' own (tests/families/
percona), nothing outside it changed; a family that would claim another's build is refused."""

import textwrap
from pathlib import Path

import pytest

import runner.families as families
from runner.contract import engine_refuses
from runner.errors import RunFailed
from runner.families import REGISTRY, Registry

RUNNER_FAMILIES = ("runner.families", Path(families.__file__).parent)
FIXTURES = ("tests.families", Path(__file__).parent / "families")
PERCONA_LINE = "Ver 8.0.36-28 for Linux on x86_64 (Percona Server (GPL), Release 28, Revision 47601f19)"


def a_build(tmp_path: Path, line: str) -> dict:
    """A build's programs whose mysqld prints `line` for --version, as a real one does."""
    server = tmp_path / "mysqld"
    server.write_text(f"#!/bin/sh\necho '{tmp_path}/mysqld  {line}'\n")
    server.chmod(0o755)
    return {"launcher": [], "server": str(server)}


def test_a_fourth_family_is_a_folder_of_its_own_and_the_registry_knows_its_builds_and_releases(tmp_path):
    registry = Registry([RUNNER_FAMILIES, FIXTURES])
    assert registry.names == ("mariadb", "mysql", "percona", "postgresql")
    assert registry.families_running("innodb") == ("mariadb", "mysql", "percona")
    build = a_build(tmp_path, PERCONA_LINE)
    # MySQL's check had taken any mysqld whose line lacks "MariaDB": a Percona Server ran as MySQL
    assert REGISTRY.build_version("mysql", build) is None
    with pytest.raises(RunFailed, match="holds no server that runs innodb"):
        REGISTRY.family_for("innodb", "percona-8.0", build)
    assert registry.family_for("innodb", "percona-8.0", build) == "percona"
    assert registry.build_version("percona", build) == PERCONA_LINE
    assert registry.declared_for("Percona Server 8.0.36-28").named("Percona Server 8.0.36-28") == (
        "Percona Server 8.0.36"
    )
    assert registry.declared_for("9.7.4-2").name == "mysql"  # Debian's MySQL stays MySQL's
    assert registry.declared_for("10.11.19-MariaDB-0+deb12u1").series("10.11.19-MariaDB") == (
        "MariaDB",
        "10.11",
    )
    # every family's engine of a name is asked what it refuses, and says on whose server
    said = "tpcc_like does not run on innodb: use one of oltp_write_only, oltp_insert"
    assert engine_refuses("innodb", "tpcc_like", 0, {}, "sigkill", registry) == [
        ("workload.name", f"{said} (on Percona Server's server)")
    ]
    assert engine_refuses("innodb", "tpcc_like", 0, {}, "sigkill") == []


def a_family(root: Path, name: str, declaration: str) -> tuple[str, Path]:
    """A package of one family folder under `root` (on sys.path), as a source for a Registry."""
    package = root / f"{name}_families"
    (package / name).mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / name / "__init__.py").write_text(textwrap.dedent(declaration))
    (package / name / "engines.py").write_text("ENGINES = ()\n")
    return package.name, package


def test_a_family_that_would_claim_another_s_build_or_names_itself_wrong_is_refused(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    again = a_family(
        tmp_path,
        "mysql_again",
        """
        import dataclasses
        from runner.families.mysql import FAMILY as MYSQL
        FAMILY = dataclasses.replace(MYSQL, name="mysql_again", label="MySQL again")
        """,
    )
    claimed = r"family mysql's build example 'Ver 9\.7\.4-2 .*' is claimed by mysql, mysql_again"
    with pytest.raises(ImportError, match=claimed):
        Registry([RUNNER_FAMILIES, again])
    misnamed = a_family(
        tmp_path,
        "tidb",
        """
        import dataclasses
        from tests.families.percona import FAMILY as PERCONA
        FAMILY = dataclasses.replace(PERCONA, name="percona")
        """,
    )
    with pytest.raises(ImportError, match=r"families/tidb declares no FAMILY = Family\(name='tidb'"):
        Registry([RUNNER_FAMILIES, misnamed])
