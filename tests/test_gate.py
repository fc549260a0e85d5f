"""The regression gate end to end: the installed `recovery-lab` console script against the real
web application (live server), Celery worker, private mariadbd and sysbench. The baseline is run
with `run --wait`; the gate then passes the same definition on another build (matched on all but
the build) and gives its verdict on MariaDB 11.8 against the host's 10.11, measured alone (a
quiet test); and, in a test beside the others, fails ten times the redo with exit 1 and the
table, and the run page of one of those runs shows its seconds before and after the crash."""

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from django.conf import settings

from experiments.services.tokens import new_token

from .test_browser import drawn_charts, log_in, screenshot

ROOT = Path(__file__).resolve().parent.parent
CLIENT = ROOT / ".venv" / "bin" / "recovery-lab"


def definition(name: str, events: int) -> dict:
    return {
        "name": name,
        "hosts": ["local"],
        "engines": ["innodb"],
        "parameters": {"buffer_pool_size": ["128M"], "redo_log_size": ["512M"]},
        "workload": {
            "name": "oltp_write_only",
            "tables": 2,
            "table_size": 20000,
            "threads": 2,
            "events": events,
        },
        # commits written to the log, synced once a second: the same redo, written several times
        # faster (the gate compares recovery, which replays it all after a kill)
        "server_options": {"innodb_flush_log_at_trx_commit": [2]},
        "crash": {"method": "sigkill", "when": "after_workload"},
        "repetitions": 3,
    }


def client(live_server, token: str, *args: str, timeout_s: float = 1800) -> subprocess.CompletedProcess:
    """The console script as a CI job runs it: the server and token from the environment."""
    environment = {"RECOVERY_LAB_URL": live_server.url, "RECOVERY_LAB_TOKEN": token, "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [str(CLIENT), *args], capture_output=True, text=True, env=environment, timeout=timeout_s
    )


def artifact(name: str, done: subprocess.CompletedProcess) -> None:
    """What a reviewer of the CI job reads, kept in test-artifacts/."""
    folder = ROOT / "test-artifacts"
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(f"exit {done.returncode}\n{done.stdout}{done.stderr}")


def gate(
    live_server, token: str, definition_file: str, baseline_id: int, kept_as: str, *more: str, decide=True
):
    """`recovery-lab gate` against the baseline at 25%, its output kept for the reviewer. These
    tests hold the verdict to what was measured, so they ask for one even where the runner found
    the host disturbed (the row then says so), unless `decide` is false; that a disturbed host
    otherwise decides nothing is tests/test_differences.py's."""
    done = client(
        live_server,
        token,
        "gate",
        definition_file,
        "--baseline",
        str(baseline_id),
        "--max-slowdown",
        "25%",
        "--poll",
        "1",
        *(["--decide-on-disturbed-host"] if decide else []),
        *more,
    )
    artifact(kept_as, done)
    return done


def written(folder: Path, name: str, body: dict) -> str:
    path = folder / name
    path.write_text(yaml.safe_dump(body))
    return str(path)


@pytest.fixture
def candidate_build():
    """A build named "candidate" on the local host: a copy of the system's server."""
    folder = settings.RUNNER_WORK_DIR / "builds" / "candidate"
    (folder / "bin").mkdir(parents=True, exist_ok=True)
    shutil.copy2(shutil.which("mariadbd") or "/usr/sbin/mariadbd", folder / "bin" / "mariadbd")
    yield "candidate"
    shutil.rmtree(settings.RUNNER_WORK_DIR / "builds", ignore_errors=True)


def run_baseline(live_server, token: str, tmp_path: Path) -> int:
    """The baseline, run with `recovery-lab run --wait`: its experiment's id."""
    baseline_file = written(tmp_path, "baseline.yaml", definition("gate baseline", 3000))
    baseline = client(live_server, token, "run", baseline_file, "--wait", "--poll", "1")
    assert baseline.returncode == 0, baseline.stdout + baseline.stderr
    assert baseline.stdout.count(" done ") >= 3  # the runs table: three runs done
    return int(re.search(r"^experiment (\d+) \(3 runs\) queued", baseline.stdout, re.M).group(1))


@pytest.mark.mariadb
@pytest.mark.django_db(transaction=True)
@pytest.mark.quiet  # a PASS for the same speed is measured with no other server beside it
def test_gate_passes_another_build_of_the_same_settings_and_names_the_version_change(
    live_server, local_host, celery_worker_process, user, tmp_path, candidate_build, debian_build
):
    token = new_token(user)
    baseline_id = run_baseline(live_server, token, tmp_path)

    # The CI case: the same definition on another build (a copy of the system's server, so the
    # same speed), matched on everything but the build.
    on_build = definition("gate: another build", 3000)
    on_build["parameters"]["server_build"] = [candidate_build]
    built = written(tmp_path, "build.yaml", on_build)
    # The same speed passes; where the light tests beside it disturbed the host (a recovery of
    # 60 ms doubles there), the gate decides nothing rather than cry a regression (a CI run had
    # 0.058 s against 0.109 s, "host disturbed in 3 runs", when asked to decide anyway).
    other_build = gate(live_server, token, built, baseline_id, "gate-build.txt", decide=False)
    said = other_build.stdout + other_build.stderr
    assert other_build.returncode in (0, 2) and "REGRESSION" not in said, said
    if other_build.returncode == 0:
        assert "PASS: no significant slowdown beyond 25%" in other_build.stdout
    else:
        assert "nothing decided" in said and "undecided: host disturbed in" in other_build.stdout, said
    # the build is the one change named: the server's defaults are no change
    assert "changed from the baseline (left out of the match): server_build\n" in other_build.stdout
    assert re.search(r"^innodb .* recovery_seconds .*\(n=3\)", other_build.stdout, re.M), other_build.stdout
    assert re.search(
        r"^innodb .* server_build system -> candidate +recovery_seconds", other_build.stdout, re.M
    )

    # Two real versions: the same definition on MariaDB 11.8 (Debian 13's packages, through its
    # own loader) against the baseline on the host's 10.11. What it finds is a measurement: the
    # test holds the gate to naming the change and to an exit code that is its verdict.
    on_11_8 = definition("gate: MariaDB 11.8", 3000)
    on_11_8["parameters"]["server_build"] = [debian_build[0]]
    # Gated on the downtime too: 11.8's clean start is slower than 10.11's (issue 42 measured 0.09 s
    # against 0.59-1.03 s), so where its downtime is a regression the row must say whether the
    # clean start moved alike (a start-up change), and the exit still follows the gated metrics.
    versions = gate(
        live_server,
        token,
        written(tmp_path, "versions.yaml", on_11_8),
        baseline_id,
        "gate-versions.txt",
        *("--metric", "recovery_seconds", "--metric", "downtime_seconds"),
    )
    # 3 runs a side decide: a 11.8 recovery shorter than its log resolves counts at the
    # resolution (it had been left out, and the gate exited 2 on "1 run measured 0")
    rows = {m: line for line in versions.stdout.splitlines() for m in ("recovery_seconds", "downtime_seconds")
            if line.startswith("innodb ") and f" {m} " in line}  # fmt: skip
    failing = sum("REGRESSION" in line for line in rows.values())
    assert versions.returncode in (0, 1), versions.stdout + versions.stderr
    verdict = "PASS: no significant slowdown" if not versions.returncode else f"FAIL: {failing} significant"
    assert (versions.returncode == 1) == (failing > 0) and verdict in versions.stdout, versions.stdout
    candidate = re.search(r"^experiment (\d+) \(3 runs\) queued", versions.stdout, re.M).group(1)
    answer = client(
        live_server, token, "compare", str(baseline_id), candidate, "--ignore", "server_build", "--json"
    )
    startup = next(iter(json.loads(answer.stdout)["cells"]), {}).get("startup_change", {})
    assert ("a start-up change" in rows["downtime_seconds"]) == bool(startup), versions.stdout
    assert "changed from the baseline (left out of the match): server_build\n" in versions.stdout
    assert re.search(
        r"^the servers reported: 10\.11\.\S+ in #\d+, 11\.8\.[^,]+ in #\d+$", versions.stdout, re.M
    )
    assert re.search(
        r"^innodb .* server_build system -> mariadb-11.8 +recovery_seconds", versions.stdout, re.M
    )


@pytest.mark.browser
@pytest.mark.mariadb
@pytest.mark.quiet
@pytest.mark.django_db(transaction=True)
def test_gate_fails_ten_times_the_redo_with_exit_1_and_its_run_page_shows_why(
    live_server, local_host, celery_worker_process, user, tmp_path, page
):
    """Quiet again: beside the power cuts' FUSE layers (a fresh-clone CI run, 2026-11-27) all six
    runs were disturbed, 0.057 s against 0.345 s came out 5.95x with an interval of 1.03-34x,
    and the gate rightly called it no significant difference. A verdict on a ratio of times is
    measured alone, like the other gate test's."""
    token = new_token(user)
    baseline_id = run_baseline(live_server, token, tmp_path)
    # ten times (five was called "no significant difference" in a full suite: recoveries of 50-150
    # ms, with noise of tens of ms, whatever else the machine does)
    slower = written(tmp_path, "slower.yaml", definition("gate: ten times the redo", 30000))
    failed = gate(live_server, token, slower, baseline_id, "gate-fail.txt")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    row = next(line for line in failed.stdout.splitlines() if "recovery_seconds" in line)
    assert "REGRESSION: B slower beyond 25%" in row
    ratio = float(re.search(r" ([0-9.]+)x ", row).group(1))
    assert ratio > 1.25
    assert "FAIL: 1 significant slowdown(s) beyond 25%" in failed.stdout
    slower_id = int(re.search(r"^experiment (\d+) \(3 runs\) queued", failed.stdout, re.M).group(1))

    # The run page of one of the slower runs: its seconds before the crash and its restart.
    from experiments.models import Run

    run = Run.objects.filter(experiment_id=slower_id, status="done").first()
    log_in(page, live_server)
    page.goto(f"{live_server.url}/runs/{run.id}/")
    drawn_charts(page, "#samples-chart", "#timeline-chart")
    samples = page.locator("#samples-chart").inner_text()
    assert "crash (kill -9)" in samples and "checkpoint age" in samples
    timeline = page.locator("#timeline-chart").inner_text()
    for step in (
        "nothing running",
        "redo apply",
        "start to ready for connections",
        "clean start: start to ready",
    ):
        assert step in timeline, step
    screenshot(page, "run-seconds-before-and-after-the-crash.png")
    page.locator(".run-charts").screenshot(path=str(ROOT / "test-artifacts" / "run-charts.png"))
