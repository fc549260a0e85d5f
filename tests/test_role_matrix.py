"""The role matrix: every page and API endpoint, for every role, in one table. Each cell is the
status that role gets; a test per row and role, each on a fresh world. A route added to the URL
configuration without a row here fails `test_every_route_and_method_is_in_the_matrix`.

Roles: anonymous; a viewer; an experimenter who is not the experiment's author ("other"); the
author (an experimenter); an admin. The Django admin's own pages (staff only) are one row."""

import re

import pytest
from django.urls import URLResolver, get_resolver
from django.utils import timezone
from rest_framework.test import APIClient

from experiments.models import ChangePoint, ExperimentStatus, RunFile, RunStatus, Series
from experiments.roles import ADMIN, EXPERIMENTER, VIEWER, role_of

from .factories import ExperimentFactory, HostFactory, RunFactory, UserFactory
from .test_roles import DEFINITION

pytestmark = pytest.mark.django_db

ROLES = ("anonymous", "viewer", "other", "author", "admin")
LOGIN = "login"  # a page's redirect to the login form
READ = (LOGIN, 200, 200, 200, 200)
API_READ = (401, 200, 200, 200, 200)
AUTHOR_PAGE = (LOGIN, 403, 403, 302, 302)  # a change to the experiment, by form: redirected back
AUTHOR_API = (401, 403, 403, 200, 200)
EXPERIMENTER_PAGE = (LOGIN, 403, 200, 200, 200)
EXPERIMENTER_API_BAD_BODY = (401, 403, 400, 400, 400)  # allowed in, and told what is missing

# (method, route as the URL configuration names it, path, body, status per role in ROLES)
MATRIX = [
    ("get", "", "/", None, (302, 302, 302, 302, 302)),
    ("get", "login/", "/login/", None, (200, 200, 200, 200, 200)),
    ("post", "logout/", "/logout/", None, (302, 302, 302, 302, 302)),
    ("get", "admin/", "/admin/", None, (302, 302, 302, 302, 200)),
    # pages
    ("get", "account/token/", "/account/token/", None, READ),
    ("post", "account/token/", "/account/token/", {"action": "revoke"}, (LOGIN, 302, 302, 302, 302)),
    ("get", "experiments/", "/experiments/", None, READ),
    ("get", "experiments/new/", "/experiments/new/", None, EXPERIMENTER_PAGE),
    ("post", "experiments/new/", "/experiments/new/", {}, EXPERIMENTER_PAGE),  # the form, with errors
    ("get", "experiments/import/", "/experiments/import/", None, EXPERIMENTER_PAGE),
    ("post", "experiments/import/", "/experiments/import/", {}, (LOGIN, 403, 400, 400, 400)),  # no file
    ("get", "experiments/<pk>/", "/experiments/{experiment}/", None, READ),
    ("get", "experiments/<pk>/report/", "/experiments/{experiment}/report/", None, READ),
    ("get", "experiments/<pk>/definition.yaml", "/experiments/{experiment}/definition.yaml", None, READ),
    (
        "get",
        "experiments/<pk>/report.pdf",
        "/experiments/{experiment}/report.pdf",
        None,
        (LOGIN, 503, 503, 503, 503),
    ),
    ("get", "experiments/<pk>/live/", "/experiments/{experiment}/live/", None, READ),
    ("post", "experiments/<pk>/cancel/", "/experiments/{experiment}/cancel/", {}, AUTHOR_PAGE),
    (
        "post",
        "experiments/<pk>/annotate/",
        "/experiments/{experiment}/annotate/",
        {"notes": "n"},
        AUTHOR_PAGE,
    ),
    ("get", "runs/<pk>/", "/runs/{run}/", None, READ),
    ("post", "runs/<pk>/annotate/", "/runs/{run}/annotate/", {"notes": "n"}, AUTHOR_PAGE),
    ("get", "runs/<pk>/live/", "/runs/{run}/live/", None, READ),
    ("post", "runs/<pk>/exclude/", "/runs/{run}/exclude/", {"reason": "noisy neighbour"}, AUTHOR_PAGE),
    ("post", "runs/<pk>/include/", "/runs/{run}/include/", {}, AUTHOR_PAGE),
    ("post", "runs/<pk>/cancel/", "/runs/{run}/cancel/", {}, AUTHOR_PAGE),
    ("post", "runs/<pk>/reparse/", "/runs/{run}/reparse/", {}, AUTHOR_PAGE),
    ("get", "runs/<pk>/files/<name>", "/runs/{run}/files/error.log", None, READ),
    ("get", "runs/<pk>/files/<name>/download", "/runs/{run}/files/error.log/download", None, READ),
    ("get", "explore/", "/explore/", None, READ),
    ("get", "compare/", "/compare/", None, READ),
    ("get", "compare/report/", "/compare/report/?experiments={experiment},{other_experiment}", None, READ),
    (
        "get",
        "compare/report.pdf",
        "/compare/report.pdf?experiments={experiment},{other_experiment}",
        None,
        (LOGIN, 503, 503, 503, 503),
    ),
    ("get", "planner/", "/planner/", None, READ),
    # two runs make no plan: the report says so, to anyone who reads
    (
        "get",
        "planner/report/",
        "/planner/report/?host=local&engine=innodb&target_downtime_seconds=30",
        None,
        READ,
    ),
    (
        "get",
        "planner/report.pdf",
        "/planner/report.pdf?host=local&engine=innodb&target_downtime_seconds=30",
        None,
        (LOGIN, 503, 503, 503, 503),
    ),
    ("get", "hosts/", "/hosts/", None, READ),
    ("post", "hosts/<pk>/probe/", "/hosts/{host}/probe/", {}, (LOGIN, 403, 403, 403, 302)),
    ("post", "hosts/<pk>/measure/", "/hosts/{host}/measure/", {}, (LOGIN, 403, 403, 403, 302)),
    ("post", "hosts/<pk>/trust-key/", "/hosts/{host}/trust-key/", {}, (LOGIN, 403, 403, 403, 302)),
    # an A/A check with no experiment chosen: redirected back with the message
    ("post", "hosts/<pk>/aa-check/", "/hosts/{host}/aa-check/", {}, (LOGIN, 403, 302, 302, 302)),
    ("get", "series/", "/series/", None, READ),
    ("get", "series/<pk>/", "/series/{series}/", None, READ),
    # the series' controls: its owner (the author) and admins
    ("get", "series/<pk>/edit/", "/series/{series}/edit/", None, (LOGIN, 403, 403, 200, 200)),
    (
        "post",
        "series/<pk>/edit/",
        "/series/{series}/edit/",
        {},
        (LOGIN, 403, 403, 200, 200),
    ),  # the form, with errors
    ("post", "series/<pk>/pause/", "/series/{series}/pause/", {}, AUTHOR_PAGE),
    ("post", "series/<pk>/fire/", "/series/{series}/fire/", {}, AUTHOR_PAGE),
    ("get", "series/<pk>/delete/", "/series/{series}/delete/", None, (LOGIN, 403, 403, 200, 200)),
    ("post", "series/<pk>/delete/", "/series/{series}/delete/", {}, AUTHOR_PAGE),
    (
        "post",
        "change-points/<pk>/triage/",
        "/change-points/{change_point}/triage/",
        {"triage": "acknowledged"},
        AUTHOR_PAGE,
    ),
    # any experimenter makes a series of their own from an experiment (a bad form: back with why)
    (
        "post",
        "experiments/<pk>/repeat/",
        "/experiments/{experiment}/repeat/",
        {},
        (LOGIN, 403, 302, 302, 302),
    ),
    ("get", "imports/", "/imports/", None, READ),
    ("get", "imports/new/", "/imports/new/", None, EXPERIMENTER_PAGE),
    ("post", "imports/new/", "/imports/new/", {}, EXPERIMENTER_PAGE),
    # API
    ("get", "api/", "/api/", None, API_READ),
    ("get", "api/schema/", "/api/schema/", None, API_READ),
    ("get", "api/docs/", "/api/docs/", None, API_READ),
    ("get", "api/experiments/", "/api/experiments/", None, API_READ),
    ("post", "api/experiments/", "/api/experiments/", DEFINITION, (401, 403, 201, 201, 201)),
    ("post", "api/experiments/import/", "/api/experiments/import/", {}, EXPERIMENTER_API_BAD_BODY),
    ("get", "api/experiments/<pk>/", "/api/experiments/{experiment}/", None, API_READ),
    ("patch", "api/experiments/<pk>/", "/api/experiments/{experiment}/", {"notes": "n"}, AUTHOR_API),
    ("post", "api/experiments/<pk>/cancel/", "/api/experiments/{experiment}/cancel/", {}, AUTHOR_API),
    ("get", "api/experiments/<pk>/export/", "/api/experiments/{experiment}/export/", None, API_READ),
    ("get", "api/runs/", "/api/runs/", None, API_READ),
    ("get", "api/runs/<pk>/", "/api/runs/{run}/", None, API_READ),
    ("patch", "api/runs/<pk>/", "/api/runs/{run}/", {"notes": "n"}, AUTHOR_API),
    ("post", "api/runs/<pk>/exclude/", "/api/runs/{run}/exclude/", {"reason": "noisy"}, AUTHOR_API),
    ("post", "api/runs/<pk>/include/", "/api/runs/{run}/include/", {}, AUTHOR_API),
    ("post", "api/runs/<pk>/cancel/", "/api/runs/{run}/cancel/", {}, AUTHOR_API),
    ("get", "api/hosts/", "/api/hosts/", None, API_READ),
    ("post", "api/hosts/", "/api/hosts/", {"name": "db10", "transport": "local"}, (401, 403, 403, 403, 201)),
    ("get", "api/hosts/<pk>/", "/api/hosts/{host}/", None, API_READ),
    ("post", "api/hosts/<pk>/probe/", "/api/hosts/{host}/probe/", {}, (401, 403, 403, 403, 202)),
    ("get", "api/hosts/<pk>/aa-checks/", "/api/hosts/{host}/aa-checks/", None, API_READ),
    ("post", "api/hosts/<pk>/aa-checks/", "/api/hosts/{host}/aa-checks/", {}, EXPERIMENTER_API_BAD_BODY),
    (
        "post",
        "api/hosts/<pk>/trust-host-key/",
        "/api/hosts/{host}/trust-host-key/",
        {},
        (401, 403, 403, 403, 400),  # an admin's empty body: no fingerprint
    ),
    ("get", "api/imports/", "/api/imports/", None, API_READ),
    ("post", "api/imports/", "/api/imports/", {}, EXPERIMENTER_API_BAD_BODY),
    ("get", "api/series/", "/api/series/", None, API_READ),
    ("post", "api/series/", "/api/series/", {}, EXPERIMENTER_API_BAD_BODY),
    ("get", "api/series/<pk>/", "/api/series/{series}/", None, API_READ),
    ("patch", "api/series/<pk>/", "/api/series/{series}/", {"enabled": False}, AUTHOR_API),
    ("get", "api/change-points/<pk>/", "/api/change-points/{change_point}/", None, API_READ),
    (
        "patch",
        "api/change-points/<pk>/",
        "/api/change-points/{change_point}/",
        {"triage": "acknowledged"},
        AUTHOR_API,
    ),
    ("get", "api/explore/", "/api/explore/?x=redo_bytes&y=recovery_seconds", None, API_READ),
    ("get", "api/compare/", "/api/compare/?experiments={experiment},{other_experiment}", None, API_READ),
    (
        "get",
        "api/planner/",
        "/api/planner/?host=local&engine=innodb&target_downtime_seconds=30&write_mb_per_s=5",
        None,
        (401, 422, 422, 422, 422),  # let in, and told two runs do not make a plan
    ),
    (
        "get",
        "api/predict/",
        "/api/predict/?host=local&engine=innodb&server_version=10.11.19-MariaDB&redo_bytes=1000",
        None,
        (401, 422, 422, 422, 422),  # let in, and told the lab has no run of MariaDB 10.11 to predict from
    ),
]


def route_key(route: str) -> str:
    """A route as written in the table: regex anchors gone, every capture as <name>."""
    route = route.replace("^", "").replace("$", "")
    route = re.sub(r"\(\?P<(\w+)>[^)]*\)", r"<\1>", route)
    return re.sub(r"<\w+:(\w+)>", r"<\1>", route)


def routes() -> dict[str, set[str]]:
    """Every route of the URL configuration (the admin's own and format suffixes aside) with its
    methods where the view names them (DRF viewsets); {} where the view decides."""
    found: dict[str, set[str]] = {}

    def walk(patterns, prefix=""):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                if str(pattern.pattern) != "admin/":
                    walk(pattern.url_patterns, prefix + str(pattern.pattern))
                continue
            route = route_key(prefix + str(pattern.pattern))
            if "<format>" in route:
                continue
            # DRF adds "head" beside "get" once a request was served: HEAD is GET without a body.
            actions = set(getattr(pattern.callback, "actions", None) or {}) - {"head"}
            found.setdefault(route, set()).update(actions)

    walk(get_resolver().url_patterns)
    found["admin/"] = set()
    return found


def test_every_route_and_method_is_in_the_matrix():
    table: dict[str, set[str]] = {}
    for method, route, *_ in MATRIX:
        table.setdefault(route, set()).add(method)
    configured = routes()
    assert sorted(configured) == sorted(table), "a route without a row in the matrix, or a row for none"
    for route, methods in configured.items():
        assert methods <= table[route], f"{route}: {sorted(methods - table[route])} not in the matrix"


@pytest.fixture
def world(local_host, settings):
    """A finished experiment of the author's with a run and its error log, another experiment to
    compare it with, a host; no Chromium, so the PDFs answer 503 once past the role check."""
    settings.CHROMIUM_PATH = "/nonexistent/chromium"
    author = UserFactory(username="author")
    experiment = ExperimentFactory(created_by=author, status=ExperimentStatus.DONE)
    run = RunFactory(experiment=experiment, status=RunStatus.DONE, recovery_seconds=1.0)
    RunFile.objects.create(
        run=run, name="error.log", content=b"2026-11-23  1:00:00 0 [Note] ok\n", size_bytes=32
    )
    other_experiment = ExperimentFactory(created_by=author, status=ExperimentStatus.DONE)
    RunFactory(experiment=other_experiment, status=RunStatus.DONE, recovery_seconds=2.0)
    users = {
        "anonymous": None,
        "viewer": UserFactory(username="reader", role=VIEWER),
        "other": UserFactory(username="other"),
        "author": author,
        "admin": UserFactory(username="boss", is_staff=True),
    }
    assert [role_of(users[name]) for name in ROLES] == [None, VIEWER, EXPERIMENTER, EXPERIMENTER, ADMIN]
    series = Series.objects.create(
        name="nightly",
        definition=DEFINITION,
        schedule="@nightly",
        next_firing_at=timezone.now(),
        created_by=author,
    )
    point = ChangePoint.objects.create(
        series=series, metric="recovery_seconds", experiment=experiment, firing_index=7,
        before_median=1.0, after_median=2.0, ratio=2.0, worse=True,
    )  # fmt: skip
    ids = {
        "series": series.id,
        "change_point": point.id,
        "experiment": experiment.id,
        "other_experiment": other_experiment.id,
        "run": run.id,
        "host": HostFactory(name="db9").id,
    }
    return users, ids


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize(("method", "route", "path", "body", "expected"), MATRIX, ids=lambda v: None)
def test_the_role_gets_its_cell(world, client, method, route, path, body, expected, role):
    users, ids = world
    path = path.format(**ids)
    want = expected[ROLES.index(role)]
    if route.startswith("api/"):
        api = APIClient()
        if users[role] is not None:
            api.force_authenticate(users[role])
        response = getattr(api, method)(path, body, format="multipart" if "import" in route else "json")
    else:
        if users[role] is not None:
            client.force_login(users[role])
        response = getattr(client, method)(path, body or {})
    if want == LOGIN:
        assert response.status_code == 302 and response["Location"].startswith("/login/"), (
            response.status_code,
            response.get("Location"),
        )
    else:
        assert response.status_code == want, (role, method, path, response.status_code)
