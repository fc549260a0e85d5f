"""Production settings come from the environment: with them, Django's deployment checks pass;
without TLS they warn (so the check is real)."""

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
PRODUCTION = {
    "DJANGO_SETTINGS_MODULE": "webapp.settings",
    "DEBUG": "false",
    "SECRET_KEY": secrets.token_urlsafe(50),
    "ALLOWED_HOSTS": "recovery-lab.example.com",
    "CSRF_TRUSTED_ORIGINS": "https://recovery-lab.example.com",
    "HTTPS": "true",
    "BEHIND_TLS_PROXY": "true",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS": "true",
    "SECURE_HSTS_PRELOAD": "true",
}


def check_deploy(**env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            str(ROOT / ".venv" / "bin" / "python"),
            str(ROOT / "manage.py"),
            "check",
            "--deploy",
            "--fail-level",
            "WARNING",
        ],
        # the test session's own switch (tests/settings.py) is no production setting
        env={**{k: v for k, v in os.environ.items() if k != "DJANGO_ALLOW_ASYNC_UNSAFE"}, **env},
        capture_output=True,
        text=True,
        cwd=ROOT,
    )


def test_check_deploy_is_clean_with_production_settings_from_the_environment():
    result = check_deploy(**PRODUCTION)
    assert result.returncode == 0, result.stderr
    assert "no issues" in result.stdout


def test_without_tls_the_deployment_check_names_what_is_missing():
    result = check_deploy(**{**PRODUCTION, "HTTPS": "false"})
    assert result.returncode == 1
    for setting in (
        "SESSION_COOKIE_SECURE",
        "CSRF_COOKIE_SECURE",
        "SECURE_SSL_REDIRECT",
        "SECURE_HSTS_SECONDS",
    ):
        assert setting in result.stderr


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("change-me", "SECRET_KEY is a published example value"),
        ("change-me-in-production", "SECRET_KEY is a published example value"),
        ("django-insecure-" + "x" * 50, "SECRET_KEY is a published example value"),
        ("k" * 40, "SECRET_KEY is 40 characters long, fewer than 50"),
    ],
)
def test_start_up_refuses_a_known_or_short_secret_key(key, message):
    result = check_deploy(**{**PRODUCTION, "SECRET_KEY": key})
    assert result.returncode == 1
    assert message in result.stderr and "token_urlsafe(48)" in result.stderr


def test_the_compose_file_takes_its_secrets_from_the_environment_file():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    app = compose["x-app"]["environment"]
    assert app["SECRET_KEY"].startswith("${SECRET_KEY:?")
    assert "${POSTGRES_PASSWORD:?" in app["DATABASE_URL"]
    assert compose["services"]["postgres"]["environment"]["POSTGRES_PASSWORD"].startswith(
        "${POSTGRES_PASSWORD:?"
    )
    example = (ROOT / ".env.example").read_text()
    assert "\nSECRET_KEY=\n" in example and "\nPOSTGRES_PASSWORD=\n" in example


def test_the_openapi_schema_validates_without_a_warning(tmp_path):
    """One enum name per set of choices, every view described: a client generator reads it as is."""
    result = subprocess.run(
        [
            str(ROOT / ".venv" / "bin" / "python"),
            str(ROOT / "manage.py"),
            "spectacular",
            "--validate",
            "--fail-on-warn",
            "--file",
            str(tmp_path / "schema.yml"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    schema = (tmp_path / "schema.yml").read_text()
    for name in ("EngineEnum", "RunStatusEnum", "ExperimentStatusEnum"):
        assert f"    {name}:" in schema


@pytest.mark.parametrize(
    ("env", "timeout"),
    [
        ({}, 30 + 2 * 4 * 1024**3 // (10 * 1024**2)),  # the largest upload at the slowest rate
        ({"UPLOAD_MAX_BYTES": str(1024**2), "REPORT_PDF_TIMEOUT_S": "600"}, 630),  # a PDF report
    ],
)
def test_gunicorn_s_worker_timeout_covers_the_longest_request_the_settings_allow(env, timeout):
    """gunicorn's own default (30 s) would kill a worker in the middle of an upload or a report."""
    probe = "import runpy; print(runpy.run_path('webapp/gunicorn.conf.py')['timeout'])"
    done = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "python"), "-c", probe],
        env={**os.environ, **PRODUCTION, **env},
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) == timeout


def test_make_setup_writes_the_secrets_file_for_its_owner_only(tmp_path):
    (tmp_path / ".env.example").write_text((ROOT / ".env.example").read_text())
    script = [
        "bash",
        str(ROOT / "scripts" / "write_env.sh"),
    ]
    subprocess.run(script, cwd=tmp_path, check=True, capture_output=True)
    written = tmp_path / ".env"
    key = next(line for line in written.read_text().splitlines() if line.startswith("SECRET_KEY="))
    assert written.stat().st_mode & 0o777 == 0o600 and len(key) > 60
    # one written before, readable by everyone: kept, and closed
    written.chmod(0o644)
    subprocess.run(script, cwd=tmp_path, check=True, capture_output=True)
    assert written.stat().st_mode & 0o777 == 0o600 and key in written.read_text()


def test_an_env_copied_from_the_example_gets_every_empty_secret_filled_and_starts(tmp_path):
    """`.env` copied from `.env.example`, as its comments invite, had left SECRET_KEY empty and
    setup ended in a traceback: setup fills every empty secret, and Django starts on the file."""
    example = (ROOT / ".env.example").read_text()
    (tmp_path / ".env.example").write_text(example)
    (tmp_path / ".env").write_text(example)  # cp .env.example .env
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "write_env.sh")], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    written = dict(
        line.split("=", 1)
        for line in (tmp_path / ".env").read_text().splitlines()
        if "=" in line and line[0] != "#"
    )
    empty = [
        name for name, value in written.items() if not value and ("SECRET" in name or "PASSWORD" in name)
    ]
    assert not empty and len(written["SECRET_KEY"]) >= 50, empty
    # the settings load from it (the traceback was start-up refusing an empty SECRET_KEY)
    env = {k: v for k, v in os.environ.items() if k not in written and not k.startswith("DJANGO_")}
    started = subprocess.run(
        [
            sys.executable,
            "-c",
            "import django, os; os.environ['DJANGO_SETTINGS_MODULE'] = 'webapp.settings'; "
            "import environ; environ.Env.read_env(os.path.join(os.environ['ENV_DIR'], '.env')); "
            "django.setup()",
        ],
        cwd=ROOT,
        env={**env, "ENV_DIR": str(tmp_path)},
        capture_output=True,
        text=True,
    )
    assert started.returncode == 0, started.stderr[-2000:]
    # run again, nothing changes
    before = (tmp_path / ".env").read_text()
    subprocess.run(
        ["bash", str(ROOT / "scripts" / "write_env.sh")], cwd=tmp_path, check=True, capture_output=True
    )
    assert (tmp_path / ".env").read_text() == before


def test_the_image_runs_as_an_unprivileged_user():
    lines = (ROOT / "Dockerfile").read_text().splitlines()
    users = [line.split()[1] for line in lines if line.startswith("USER ")]
    assert users and users[-1] not in ("root", "0")
    last_run = max(i for i, line in enumerate(lines) if line.startswith("RUN "))
    assert lines.index(f"USER {users[-1]}") > last_run


def test_the_plotly_builds_served_are_the_version_the_plotly_package_draws_for():
    """The figures are built for the plotly package's plotly.js; the builds in static/ (basic for
    most pages, cartesian and strict for explore) must be that same version (upgrade them together)."""
    import plotly

    def version(path: Path) -> str:
        return re.search(
            r"plotly\.js(?: \((?:strict|cartesian|basic) - minified\))? v(\d+\.\d+\.\d+)",
            path.read_text()[:300],
        ).group(1)

    package = version(Path(plotly.__file__).parent / "package_data" / "plotly.min.js")
    for build in ("strict", "cartesian", "basic"):
        assert version(ROOT / "static" / f"plotly-{build}" / f"plotly-{build}.min.js") == package, build
