"""The planner's answer on paper: its own report (HTML and PDF), and in the report of an
experiment that swept the redo at the crash."""

import re

import pytest

from experiments.reports.planner import target_above

from .factories import ExperimentFactory, UserFactory
from .test_analysis import done_run
from .test_browser import log_in, screenshot
from .test_planner import make_runs
from .test_reports import printed

QUERY = {"host": "db7", "engine": "innodb", "target_downtime_seconds": 6}


@pytest.fixture
def viewer(client, db):
    client.force_login(UserFactory(username="reader", role="viewer"))
    return client


def test_the_planner_report_states_the_question_with_its_limits_the_answer_and_its_runs(viewer):
    experiment = ExperimentFactory()
    make_runs(experiment=experiment, buffer_pool_bytes=1 << 30)
    html = viewer.get(
        "/planner/report/", {**QUERY, "experiments": str(experiment.id), "buffer_pool_size": "1G"}
    ).content.decode()
    assert (
        "How much redo may InnoDB on db7 have to replay for the downtime after a crash to stay under 6 s, "
        f"only runs of experiments #{experiment.id}, buffer pool 1 GiB?" in html
    )
    assert re.search(r"can have up to [0-9.,]+ (MiB|GiB) of redo to replay", html)
    assert f"from 8 runs of experiment #{experiment.id} (" in html and "all measured by this lab" in html
    appendix = html[html.index('id="runs"') :]
    assert len(re.findall(r"<tr><td>\d+</td><td>#", appendix)) == 8
    assert 'href="http://testserver/planner/report/?host=db7' in html  # its permalink


def test_a_planner_report_without_an_answer_says_why_and_a_bad_question_is_a_400(viewer):
    make_runs(count=3)
    html = viewer.get("/planner/report/", QUERY).content.decode()
    assert 'id="planner-refused"' in html and "needs at least 5" in html
    assert viewer.get("/planner/report/", {**QUERY, "target_downtime_seconds": -1}).status_code == 400
    assert viewer.get("/planner/report.pdf", {**QUERY, "host": "nowhere"}).status_code == 400


def test_the_planner_page_links_its_report(viewer):
    make_runs()
    html = viewer.get("/planner/", QUERY).content.decode()
    assert (
        '<a href="/planner/report/?host=db7&amp;engine=innodb&amp;target_downtime_seconds=6" '
        'id="planner-report">' in html
    )


@pytest.mark.parametrize(("longest", "target"), [(0.6349, 0.64), (12.01, 13), (0.05, 0.05), (3, 3)])
def test_an_experiment_s_plan_targets_its_longest_downtime_rounded_up(longest, target):
    assert target_above(longest) == pytest.approx(target)


def _swept(experiment, targets: dict[str, float]):
    """Runs of an experiment crashed at each redo target: downtime 0.2 s + 20 ms per MiB."""
    for target, mib in targets.items():
        for repetition, wobble in enumerate((0.97, 1.0, 1.03)):
            redo = int(mib * wobble * 2**20)
            done_run(
                experiment,
                host_label="db7",
                redo_bytes=redo,
                downtime_seconds=0.2 + 0.02 * redo / 2**20,
                repetition=repetition + 1,
                parameters={"buffer_pool_size": "128M", "redo_log_size": "64M", "crash_redo_bytes": target},
            )


def test_the_report_of_an_experiment_that_swept_redo_holds_the_planner_s_answer(viewer):
    swept = ExperimentFactory(name="Redo swept")
    _swept(swept, {"8M": 8, "16M": 16, "32M": 32})
    html = viewer.get(f"/experiments/{swept.id}/report/").content.decode()
    section = html[html.index('id="redo-plan"') : html.index("</section>", html.index('id="redo-plan"'))]
    # the question the experiment can carry: the shortest of its settings' median downtimes (rounded
    # up) whose answer lies within the redo it replayed, not its longest run's (an answer at the
    # edge of the data, or past it)
    target = re.search(
        r"so the target is ([0-9.]+) s: the median downtime at (.+?), ([0-9.]+) s, rounded up", section
    )
    assert target, section
    assert float(target.group(1)) == pytest.approx(target_above(float(target.group(3))))
    assert float(target.group(1)) < target_above(max(swept.runs.values_list("downtime_seconds", flat=True)))
    assert f"To keep the downtime after a crash under {float(target.group(1)):g} s, InnoDB on db7" in section
    assert "outside the redo these runs replayed" not in section
    assert f"from 9 runs of experiment #{swept.id} (" in section
    assert re.search(r"Each GiB of redo adds 2[0-9.]+ s", section), section  # 20 ms per MiB
    assert "/planner/?host=db7&amp;engine=innodb&amp;experiments=" in section

    one_target = ExperimentFactory(name="One target")
    _swept(one_target, {"8M": 8})
    assert 'id="redo-plan"' not in viewer.get(f"/experiments/{one_target.id}/report/").content.decode()


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_planner_report_prints_to_a_pdf_with_its_chart(page, live_server):
    make_runs()
    log_in(page, live_server)
    page.goto(f"{live_server.url}/planner/?host=db7&engine=innodb&target_downtime_seconds=6")
    page.click("#planner-report")
    page.wait_for_url("**/planner/report/**")  # the click navigates: wait for the report, not the planner
    page.wait_for_function("() => document.body.dataset.chartsReady === 'yes'")
    assert page.locator("#figure-planner .main-svg").count() >= 1
    screenshot(page, "planner-report.png")
    text = printed(
        page, live_server.url + page.locator("#report-pdf").get_attribute("href"), "planner-report"
    )
    for heading in ("The question", "Method", "Answer", "Chart", "Caveats", "the runs it stands on"):
        assert heading in text, heading
    assert re.search(r"can have up to [0-9.,]+\s+(MiB|GiB) of redo", text)
    assert re.search(r"Recovery-time plan\s+page 1 of \d", text)
