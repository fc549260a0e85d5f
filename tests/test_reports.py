"""Reports: findings in sentences from seeded runs whose effects are known, the caveats a reader
must see, the page for every role, and the PDF as Chromium prints it, read back with poppler."""

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sysconfig
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from experiments.analysis.cells import build_cells
from experiments.models import Run, RunStatus
from experiments.pages.context import row_of
from experiments.reports import pdf
from experiments.reports.findings import caveats, findings
from recovery_lab_cli.units import counted

from .factories import ExperimentFactory, UserFactory
from .sshd import descendants
from .test_analysis import done_run, noisy
from .test_browser import ROOT, log_in, screenshot

pytestmark = pytest.mark.django_db
MB = 1_000_000


@pytest.fixture
def known():
    """InnoDB and MyRocks, redo log 64M and 1G, five repetitions each. InnoDB recovers 4x slower
    with the bigger log (it replays 4x the redo at 100 MB/s); MyRocks takes 0.5 s whatever the log."""
    user = UserFactory(username="carol")
    experiment = ExperimentFactory(
        name="Log size vs recovery",
        created_by=user,
        notes="Is a 1G redo log worth its recovery time?",
        definition={
            "engines": ["innodb", "rocksdb"],
            "parameters": {"buffer_pool_size": ["128M"], "redo_log_size": ["64M", "1G"], "insert_rate": [0]},
            "workload": {
                "name": "oltp_insert",
                "tables": 2,
                "table_size": 1000,
                "threads": 2,
                "events": 5000,
            },
            "crash": {"method": "sigkill", "when": "after_workload"},
            "repetitions": 5,
        },
    )
    for log, redo in ((64 * 2**20, 50 * MB), (2**30, 200 * MB)):
        for seed, seconds in enumerate(noisy(log % 97, 5, redo / (100 * MB))):
            done_run(
                experiment,
                engine="innodb",
                redo_log_bytes=log,
                redo_bytes=int(seconds * 100 * MB * (1 + 0.02 * (seed % 3 - 1))),
                recovery_seconds=seconds,
                downtime_seconds=seconds + 1,
                repetition=seed + 1,
            )
        for seed, seconds in enumerate(noisy(log % 89, 5, 0.5)):
            done_run(
                experiment,
                engine="rocksdb",
                redo_log_bytes=log,
                redo_bytes=None,
                recovery_seconds=seconds,
                downtime_seconds=seconds + 0.8,
                repetition=seed + 1,
            )
    return experiment


def _findings(experiment) -> list[str]:
    rows = [row_of(run) for run in experiment.runs.all()]
    cells = build_cells(rows)
    return findings(rows, cells, ["redo_log_size", "engine"])


def test_findings_state_the_known_effects_with_their_intervals(known):
    lines = _findings(known)
    text = "\n".join(lines)
    # the log size: 4x slower for InnoDB, nothing for MyRocks
    innodb = next(line for line in lines if line.startswith("InnoDB at") and "log 1G" in line)
    ratio = float(re.search(r"crash recovery ([0-9.]+)x slower than log 64M", innodb).group(1))
    assert 3.4 < ratio < 4.6, innodb
    myrocks = next(line for line in lines if line.startswith("MyRocks at") and "log 1G" in line)
    assert "no significant difference" in myrocks, myrocks
    # the apply rate from the fitted line: 100 MB/s (95.4 MiB/s) inside its interval
    rate_line = next(line for line in lines if "replayed redo at about" in line)
    low, high = map(float, re.search(r"95% CI ([0-9.,]+)-([0-9.,]+)\)", rate_line).groups())
    assert "MiB/s" in rate_line and low < 100 * MB / 2**20 < high, rate_line
    # the engines at the same settings, and the headline per engine
    assert re.search(r"MyRocks: crash recovery [0-9.]+x faster than InnoDB at .*log 1G", text), text
    assert re.search(r"^InnoDB: crash recovery took [0-9.]+ s to [0-9.]+ s across 2 settings", text, re.M)


def test_caveats_name_failed_suspect_and_excluded_runs_and_thin_cells(known):
    admin = UserFactory(username="boss", is_staff=True)
    failed = done_run(known, status=RunStatus.FAILED, error="server never ready after the crash\ntail...")
    suspect = done_run(known, suspect=True, suspect_reason="recovery longer than the downtime")
    excluded = done_run(known, excluded=True, excluded_reason="disk shared with a backup", excluded_by=admin)
    done_run(known, engine="innodb", redo_log_bytes=16 * 2**20)  # a setting with one run
    runs = list(known.runs.select_related("excluded_by"))
    rows = [row_of(run) for run in runs]
    lines = caveats(runs, build_cells(rows))
    text = "\n".join(lines)
    assert f"run {failed.id}: server never ready after the crash" in text
    assert "tail..." not in text  # the first line of the error, not the whole tail
    assert f"Run {suspect.id} is suspect and left out of the statistics: recovery longer" in text
    assert f"Run {excluded.id} was excluded by boss: disk shared with a backup" in text
    assert re.search(r"InnoDB · .*log 16M.*: recovery: .*read its values as rough", text), text


def test_a_complete_experiment_has_no_caveat(known):
    runs = list(known.runs.all())
    assert caveats(runs, build_cells([row_of(r) for r in runs])) == []


def test_a_queued_experiment_is_said_not_started_and_counts_agree_with_their_nouns():
    """Issue 68: a queued experiment had read "still running" before any run started; "1 runs"."""
    from .factories import RunFactory

    experiment = ExperimentFactory()
    queued = [RunFactory(experiment=experiment, status=RunStatus.QUEUED)]
    assert caveats(queued, []) == ["No run had started when this report was made: 1 run queued."]
    queued.append(RunFactory(experiment=experiment, status=RunStatus.CANCELLED))
    said = caveats(queued, [])
    assert said[0] == "No run had started when this report was made: 1 of 2 runs queued."
    assert "1 run was cancelled before it finished." in said
    queued.append(RunFactory(experiment=experiment, status=RunStatus.RUNNING))
    assert caveats(queued, [])[0] == (
        "The experiment was still running when this report was made: 2 of 3 runs had not finished."
    )


@given(st.integers(min_value=0, max_value=10**7))
def test_a_count_and_its_noun_agree(count):
    """The rule (docs/sentences.md): one of a thing is singular, any other count plural."""
    said = counted(count, "run")
    assert said.endswith(" run") == (count == 1) and said.endswith(" runs") == (count != 1)
    assert int(said.split()[0].replace(",", "")) == count


def test_the_report_page_has_question_method_findings_summary_and_caveats(client, known):
    client.force_login(UserFactory(username="reader", role="viewer"))  # viewers read reports
    page = client.get(f"/experiments/{known.id}/report/")
    assert page.status_code == 200
    html = page.content.decode()
    for section in ("question", "method", "findings", "report-charts", "summary", "caveats", "runs"):
        assert f'id="{section}"' in html
    assert "Is a 1G redo log worth its recovery time?" in html
    assert "oltp_insert: tables 2, table_size 1000, threads 2, events 5000" in html
    assert "20 of 20 runs done" in html
    assert f'href="http://testserver/experiments/{known.id}/report/"' in html  # its permalink


def test_reports_need_a_login_and_an_experiment(client, known):
    assert client.get(f"/experiments/{known.id}/report/").status_code == 302
    client.force_login(UserFactory(username="reader", role="viewer"))
    assert client.get("/experiments/999999/report/").status_code == 404
    assert client.get("/experiments/999999/report.pdf").status_code == 404


def test_without_chromium_the_pdf_says_why(client, known, settings):
    settings.CHROMIUM_PATH = "/nonexistent/chromium"
    client.force_login(UserFactory(username="reader", role="viewer"))
    answer = client.get(f"/experiments/{known.id}/report.pdf")
    assert answer.status_code == 503
    assert "no Chromium at /nonexistent/chromium" in answer.content.decode()


def printed(page, url: str, name: str) -> str:
    """The PDF at `url` as the browser's session downloads it, kept in test-artifacts/ (NAME.pdf,
    and NAME-page-N.png for a look), read back as text by poppler."""
    answer = page.request.get(url)
    assert answer.status == 200 and answer.headers["content-type"] == "application/pdf"
    pdf = ROOT / "test-artifacts" / f"{name}.pdf"
    pdf.write_bytes(answer.body())
    subprocess.run(
        ["pdftoppm", "-r", "60", "-png", pdf, ROOT / "test-artifacts" / f"{name}-page"], check=True
    )
    return subprocess.run(
        ["pdftotext", "-layout", pdf, "-"], capture_output=True, text=True, check=True
    ).stdout


def _coloured_pixels(ppm: Path, colour: tuple[int, int, int]) -> int:
    """Pixels within a small distance of a colour in a binary PPM (pdftoppm's output)."""
    data = ppm.read_bytes()
    header = data.split(b"\n", 3)  # P6, width height, maxval, pixels
    pixels = memoryview(header[3])
    r, g, b = colour
    return sum(
        1
        for i in range(0, len(pixels) - 2, 3)
        if abs(pixels[i] - r) < 12 and abs(pixels[i + 1] - g) < 12 and abs(pixels[i + 2] - b) < 12
    )


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_report_prints_to_a_pdf_with_its_charts_and_tables(page, live_server, known, tmp_path):
    from experiments.vocabulary import ENGINE_COLOURS

    log_in(page, live_server)
    page.goto(f"{live_server.url}/experiments/{known.id}/report/")
    page.wait_for_function("() => document.body.dataset.chartsReady === 'yes'")
    drawn = page.locator("figure.report-chart .main-svg").count()
    assert drawn >= 4  # every chart of the experiment page, drawn
    screenshot(page, "report.png")

    text = printed(page, f"{live_server.url}/experiments/{known.id}/report.pdf", "report")
    pdf = ROOT / "test-artifacts" / "report.pdf"
    for heading in ("The question", "Method", "Findings", "Charts", "Summary per setting", "Caveats"):
        assert heading in text
    assert "Is a 1G redo log worth its recovery time?" in text
    assert "Recovery time against redo to replay" in text  # a chart's title, drawn into the PDF
    assert re.search(r"page 1 of [2-9]", text)
    run_ids = [str(run.id) for run in known.runs.all()]
    assert all(re.search(rf"^\s*{run_id}\s+InnoDB|^\s*{run_id}\s+MyRocks", text, re.M) for run_id in run_ids)

    subprocess.run(["pdftoppm", "-r", "60", pdf, tmp_path / "page"], check=True)
    pages = sorted(tmp_path.glob("page-*.ppm"))
    assert len(pages) >= 3
    # The engines' colours (markers and lines) are on the chart pages, not on the first page of text.
    innodb = tuple(int(ENGINE_COLOURS["innodb"][i : i + 2], 16) for i in (1, 3, 5))
    myrocks = tuple(int(ENGINE_COLOURS["rocksdb"][i : i + 2], 16) for i in (1, 3, 5))
    assert _coloured_pixels(pages[0], innodb) == 0
    assert max(_coloured_pixels(p, innodb) for p in pages) > 200
    assert max(_coloured_pixels(p, myrocks) for p in pages) > 200


@pytest.fixture
def two_versions():
    """The same setting on two server versions; the second recovers 2x slower."""
    before = ExperimentFactory(name="Before 10.11.19", notes="Did 10.11.19 slow recovery down?")
    after = ExperimentFactory(name="After 10.11.19")
    for seconds in noisy(1, 5, 1.0):
        done_run(before, recovery_seconds=seconds, server_version="10.11.18")
    for seconds in noisy(2, 5, 2.0):
        done_run(after, recovery_seconds=seconds, server_version="10.11.19")
    return before, after


def test_the_comparison_report_states_the_slowdown_and_each_side_s_method(client, two_versions):
    before, after = two_versions
    client.force_login(UserFactory(username="reader", role="viewer"))
    html = client.get("/compare/report/", {"experiments": f"{before.id},{after.id}"}).content.decode()
    assert "Did 10.11.19 slow recovery down?" in html
    assert html.count('<table class="method">') == 2
    regressions = html[html.index('id="regressions"') : html.index("</ul>", html.index('id="regressions"'))]
    assert re.search(
        r"crash recovery [0-9.]+x slower in #\d+ \(10\.11\.19\) than in #\d+ \(10\.11\.18\)", regressions
    )
    assert "(baseline)" in html and 'id="compare-table"' in html


def test_a_comparison_report_of_a_bad_list_is_a_400_with_the_reason(client, two_versions):
    client.force_login(UserFactory(username="reader", role="viewer"))
    answer = client.get("/compare/report/", {"experiments": "1"})
    assert answer.status_code == 400
    assert client.get("/compare/report.pdf", {"experiments": "999998,999999"}).status_code == 400


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_comparison_report_prints_to_a_pdf(page, live_server, two_versions):
    before, after = two_versions
    log_in(page, live_server)
    page.goto(f"{live_server.url}/compare/?experiments={before.id},{after.id}")
    page.click("#compare-report-link")
    page.wait_for_url("**/compare/report/**")  # the click navigates: wait for the report, not compare
    page.wait_for_function("() => document.body.dataset.chartsReady === 'yes'")
    assert page.locator("#figure-compare .main-svg").count() >= 1
    screenshot(page, "compare-report.png")
    text = printed(
        page, live_server.url + page.locator("#report-pdf").get_attribute("href"), "compare-report"
    )
    assert "Slower beyond the noise" in text and "Matched cells" in text
    # the web version, not the PDF (the address may wrap at its "?")
    assert f"/compare/report/?experiments={before.id},{after.id}" in re.sub(r"\?\n", "?", text)
    assert re.search(r"Comparison of #\d+ and #\d+\s+page 1 of \d", text)


def test_a_web_process_that_is_not_root_prints_with_chromium_s_sandbox(tmp_path):
    """As a packaged install runs it (an unprivileged user): the sandbox is on by default, and
    Chromium prints under it. (Root is the one case Chromium refuses it.)"""
    home = tmp_path / "home"
    home.mkdir()
    shutil.chown(home, "nobody")
    probe = (
        "import django; django.setup()\n"
        "from django.conf import settings\n"
        "from experiments.reports.pdf import html_to_pdf\n"
        "assert settings.REPORT_PDF_SANDBOX is True\n"
        "pdf = html_to_pdf('<body data-charts-ready=yes><h1>sandboxed</h1></body>', 'sandbox')\n"
        "print(pdf[:5].decode())\n"
    )
    done = subprocess.run(
        # the system's Python 3.11 on the project's packages (the venv's interpreter may live
        # under /root, which nobody may enter)
        ["runuser", "-u", "nobody", "--", "/usr/bin/python3", "-c", probe],
        cwd=ROOT,
        env={
            **{k: v for k, v in os.environ.items() if k != "REPORT_PDF_SANDBOX"},
            "HOME": str(home),
            "DJANGO_SETTINGS_MODULE": "tests.settings",
            "PYTHONPATH": f"{ROOT}:{sysconfig.get_paths()['purelib']}",
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "%PDF-"


def test_findings_on_disturbed_runs_say_so_and_the_caveats_name_them(known):
    """A report's sentences on runs measured while other work used the host say so in the same
    sentence; the caveats name each such run with its reason."""
    disturbed = known.runs.filter(engine="innodb", redo_log_bytes=2**30).first()
    Run.objects.filter(pk=disturbed.pk).update(
        disturbed=True, disturbed_reason="other processes used 61% of the host's CPU during the workload"
    )
    innodb = next(line for line in _findings(known) if line.startswith("InnoDB at") and "log 1G" in line)
    assert "slower than log 64M" in innodb and "(on a disturbed host: 1 of 10 runs;" in innodb, innodb
    runs = list(known.runs.all())
    lines = caveats(runs, build_cells([row_of(r) for r in runs]))
    assert (
        f"Run {disturbed.pk} was measured on a disturbed host (kept; comparisons say so): other processes"
        in ("\n".join(lines))
    )


def _printer_chromium() -> list[int]:
    """This process' report printer: the Chromium browser process (not its renderers) among the
    processes this test process started."""
    found = []
    for pid in descendants(os.getpid()):
        with contextlib.suppress(OSError):
            command = (Path("/proc") / str(pid) / "cmdline").read_bytes().split(b"\0")
            if pdf.PRINTER_CLASS.encode() in command and not any(a.startswith(b"--type=") for a in command):
                found.append(pid)
    return found


def test_reports_share_one_chromium_and_one_that_died_is_started_again():
    page = "<body data-charts-ready=yes><h1>{}</h1></body>"
    assert pdf.html_to_pdf(page.format("first"), "first")[:5] == b"%PDF-"
    launched = pdf._PRINTER.launches
    (chromium,) = _printer_chromium()
    assert pdf.html_to_pdf(page.format("second"), "second")[:5] == b"%PDF-"
    assert pdf._PRINTER.launches == launched and _printer_chromium() == [chromium]
    os.kill(chromium, signal.SIGKILL)  # as the OOM killer would
    assert pdf.html_to_pdf(page.format("third"), "third")[:5] == b"%PDF-"
    assert pdf._PRINTER.launches == launched + 1 and chromium not in _printer_chromium()
