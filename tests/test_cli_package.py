"""The command line on its own (cli/pyproject.toml): installed into a clean virtual environment
from the lock, with no network, it has no Django, Celery or scipy, and its `recovery-lab` talks
to the real dashboard (live server, real PostgreSQL) as a CI job's or a database host's would."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from experiments.models import Experiment
from experiments.services.tokens import new_token

from .test_client import two_builds

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def cli_venv(tmp_path_factory) -> Path:
    """The package installed as `uv sync --package recovery-lab-cli` installs it: a wheel, not the
    checkout, with the locked versions of only what it depends on."""
    uv = shutil.which("uv")
    assert uv, "uv is not on PATH: make setup installs it"
    venv = tmp_path_factory.mktemp("cli") / "venv"
    environment = {**os.environ, "UV_PROJECT_ENVIRONMENT": str(venv)}
    done = subprocess.run(
        [
            uv,
            "sync",
            "--frozen",
            "--offline",
            "--no-editable",
            "--package",
            "recovery-lab-cli",
            "--no-dev",
            "-q",
        ],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return venv


def run_alone(venv: Path, cwd: Path, url: str, token: str, *args: str) -> subprocess.CompletedProcess:
    """The venv's recovery-lab, away from the checkout (its folder is not on the path)."""
    environment = {"RECOVERY_LAB_URL": url, "RECOVERY_LAB_TOKEN": token, "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [str(venv / "bin" / "recovery-lab"), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
    )


def test_the_cli_installs_alone_without_the_dashboard_s_dependencies(cli_venv, tmp_path):
    python = str(cli_venv / "bin" / "python")
    probe = "import importlib.util as u; print(*[bool(u.find_spec(m)) for m in MODULES])"
    modules = (
        "recovery_lab_cli",
        "runner",
        "requests",
        "django",
        "celery",
        "scipy",
        "experiments",
        "workers",
    )
    found = subprocess.run(
        [python, "-c", probe.replace("MODULES", repr(modules))], cwd=tmp_path, capture_output=True, text=True
    )
    assert dict(zip(modules, found.stdout.split(), strict=True)) == {
        "recovery_lab_cli": "True",
        "runner": "True",  # the families' registry and the contract: standard library only
        "requests": "True",
        "django": "False",
        "celery": "False",
        "scipy": "False",
        "experiments": "False",
        "workers": "False",
    }, found.stderr
    helped = run_alone(cli_venv, tmp_path, "http://127.0.0.1:9", "-", "predict", "--help")
    assert helped.returncode == 0 and "--lab-host" in helped.stdout, helped.stderr
    assert "--engine {innodb,rocksdb,postgresql}" in helped.stdout  # the families' engines, from the runner


def test_the_cli_alone_compares_and_gates_against_the_dashboard(
    cli_venv, tmp_path, live_server, user, local_host
):
    token = new_token(user)
    baseline, candidate = two_builds(3.0)
    pair = (str(baseline.id), str(candidate.id))
    compared = run_alone(
        cli_venv, tmp_path, live_server.url, token, "compare", *pair, "--ignore", "buffer_pool_size"
    )
    assert compared.returncode == 0, compared.stderr
    row = next(line for line in compared.stdout.splitlines() if "recovery_seconds" in line)
    assert "buffer_pool_size 128M -> 16M" in row and "slower" in row
    # the gate reads the baseline's definition from the dashboard and refuses a sweep of the setting
    Experiment.objects.filter(id=baseline.id).update(
        status="done", definition={"parameters": {"buffer_pool_size": ["128M"]}}
    )
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump({"name": "sweep", "parameters": {"buffer_pool_size": ["16M", "32M"]}}))
    gated = run_alone(
        cli_venv, tmp_path, live_server.url, token, "gate", str(path), "--baseline", str(baseline.id)
    )
    assert gated.returncode == 2 and "parameters.buffer_pool_size differs" in gated.stderr, gated.stderr
    assert Experiment.objects.count() == 2  # nothing queued
