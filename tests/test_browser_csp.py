"""Every page under the site's Content-Security-Policy (scripts from the site's files only: no
inline script, no eval) in Debian's Chromium: no violation, and the charts still drawn, the
WebGL one of thousands of points included. The PDF print runs under the same policy."""

import pytest
from django.utils import timezone

from experiments.charts.layout import WEBGL_FROM_POINTS
from experiments.models import Run, Series
from experiments.services.runs import Bundle, ingest_bundle

from .factories import ChangePointFactory, ExperimentFactory, RunFactory, UserFactory
from .test_browser import screenshot
from .test_seconds import bundle

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Every violation Chromium sees: the policy's own event, and the console line it writes.
WATCH = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", e => window.__violations.push(
  `${e.violatedDirective} ${e.blockedURI || "inline"} ${e.sourceFile}:${e.lineNumber}`));
"""

# Trace types a page asked for that its plotly.js build (cartesian, or strict for WebGL) lacks.
UNDRAWABLE = """
!window.Plotly ? [] : Array.from(document.querySelectorAll(".js-plotly-plot")).flatMap(
  gd => gd.data.map(t => t.type || "scatter")
).filter(type => !(type in Plotly.PlotSchema.get().traces))
"""


def _history(user):
    """Two finished experiments of 12 runs each, one of them with thousands of points more."""
    experiments = []
    for n in range(2):
        experiment = ExperimentFactory(
            name=f"csp {n}", created_by=user, status="done", finished_at=timezone.now()
        )
        for index in range(12):
            RunFactory(
                experiment=experiment,
                status="done",
                matrix_index=index,
                repetition=index % 3 + 1,
                engine=("innodb", "rocksdb")[index % 2],
                recovery_seconds=0.5 + index * 0.1 + n,
                downtime_seconds=1.5 + index * 0.1 + n,
                redo_bytes=(index + 1) * 10**7,
                redo_log_bytes=64 * 2**20,
                buffer_pool_bytes=128 * 2**20,
                finished_at=timezone.now(),
            )
        experiments.append(experiment)
    many = ExperimentFactory(name="csp many", created_by=user, status="done", finished_at=timezone.now())
    template = Run.objects.filter(experiment=experiments[0]).first()
    Run.objects.bulk_create(
        Run(
            experiment=many,
            matrix_index=index,
            host=template.host,
            host_label="local",
            engine="innodb",
            status="done",
            parameters=template.parameters,
            recovery_seconds=0.2 + index / 1000,
            redo_bytes=index * 10**5,
            finished_at=timezone.now(),
        )
        for index in range(WEBGL_FROM_POINTS + 100)
    )
    return experiments


def test_every_page_loads_under_the_policy_with_its_charts_drawn(page, live_server):
    admin = UserFactory(
        username="root-csp", password="correct horse battery", is_staff=True, is_superuser=True
    )
    first, second = _history(admin)
    series = Series.objects.create(
        name="csp nightly",
        definition={},
        schedule="@nightly",
        next_firing_at=timezone.now(),
        created_by=admin,
    )
    first.series, first.fired_for = series, timezone.now()
    first.save()
    ChangePointFactory(series=series, experiment=first, firing_index=1)
    run = first.runs.first()
    # a real run's bundle, profiled: its flame graph needs plotly's strict build (the icicle)
    result, files = bundle("innodb_300M_profiled")
    profiled = RunFactory(experiment=first, engine="innodb", status="running", matrix_index=99)
    profiled = ingest_bundle(profiled.id, Bundle(result, files))
    page.context.add_init_script(WATCH)
    page.goto(f"{live_server.url}/login/")
    page.fill("input[name=username]", "root-csp")
    page.fill("input[name=password]", "correct horse battery")
    page.click("button[type=submit]")
    page.wait_for_selector("text=Log out")
    pages = {
        "/experiments/": 0,
        "/experiments/new/": 0,
        f"/experiments/{first.id}/": 1,
        f"/experiments/{first.id}/report/": 1,
        f"/runs/{run.id}/": 0,
        f"/runs/{profiled.id}/": 3,  # the seconds before, the timeline with its threads, the profile
        "/explore/?x=redo_bytes&y=recovery_seconds&group=experiment": 1,  # thousands of points: WebGL
        f"/explore/?x=engine&y=recovery_seconds&experiments={first.id}": 1,  # boxes: the cartesian build
        f"/compare/?experiments={first.id},{second.id}": 1,
        f"/compare/report/?experiments={first.id},{second.id}": 1,
        "/planner/": 0,
        "/hosts/": 0,
        "/imports/new/": 0,
        "/experiments/import/": 0,
        "/series/": 0,
        f"/series/{series.id}/": 0,
        "/admin/": 0,
        "/api/experiments/": 0,
        "/api/docs/": 0,
    }
    console = []
    page.on(
        "console", lambda message: console.append(message.text) if "Security Policy" in message.text else None
    )
    for path, charts_at_least in pages.items():
        answer = page.goto(live_server.url + path)
        assert answer.status == 200, path
        assert "script-src 'self'" in answer.headers["content-security-policy"], path
        page.wait_for_load_state("networkidle")
        # charts off the screen are drawn as a reader scrolls to them (the run page's): scroll
        holders = page.locator(".figure")
        for index in range(holders.count()):
            holders.nth(index).scroll_into_view_if_needed()
        if charts_at_least:
            page.wait_for_selector(".js-plotly-plot")
        if path == f"/runs/{profiled.id}/":
            page.wait_for_selector("#profile-chart.js-plotly-plot .icicle")
        drawn = page.locator(".js-plotly-plot").count()
        assert drawn >= charts_at_least, path
        assert page.evaluate(UNDRAWABLE) == [], path  # a trace the page's plotly.js build lacks
        assert page.evaluate("window.__violations") == [], path
        if path == f"/runs/{profiled.id}/":
            assert page.locator("#profile-chart.js-plotly-plot .icicle").count() >= 1
            assert page.locator("#restart-resources table.resource-table").count() == 2
            page.set_viewport_size({"width": 1280, "height": 900})
            screenshot(page, "run-resources.png")
        if "explore" in path:
            assert page.locator("#explore-chart .gl-container, #explore-chart canvas").count() > 0
            shown = "webgl" if "group=experiment" in path else "boxes"
            screenshot(page, f"csp-explore-{shown}.png")
    if "/api/docs/" in pages:
        assert page.locator(".swagger-ui").count() == 1  # the API's docs drawn by their own script
    assert console == []
    # the PDF is printed by Chromium under the same policy (it refuses to print past a violation)
    pdf = page.request.get(f"{live_server.url}/experiments/{first.id}/report.pdf")
    assert pdf.status == 200 and pdf.body()[:5] == b"%PDF-"
