"""The load of `make bench` (scripts/bench_load.py starts it): API clients with a token and page
clients with a session, each acting every 0.5-1.5 s, against the real web process while runs
ingest. Ids and credentials come from the environment the bench sets.

Each request is named by its route, so the statistics are per endpoint."""

import os

from locust import HttpUser, between, task

LIVE = os.environ["LOAD_LIVE_EXPERIMENT"]  # the experiment whose runs are being carried out
HISTORY = os.environ["LOAD_HISTORY_EXPERIMENT"]  # a finished 200-run experiment
OTHER = os.environ["LOAD_OTHER_EXPERIMENT"]
RUN = os.environ["LOAD_RUN"]


def expect_200(client, method: str, path: str, name: str, **kwargs) -> None:
    """A request that counts as failed unless it answers 200 itself: a redirect (to the login
    form, say) is a failure too, though Locust counts it as a success by default."""
    with client.request(
        method, path, name=name, allow_redirects=False, catch_response=True, **kwargs
    ) as answer:
        if answer.status_code != 200:
            answer.failure(f"status {answer.status_code}")


class ApiClient(HttpUser):
    """A script or dashboard of a team's own, on the REST API."""

    wait_time = between(0.5, 1.5)

    def on_start(self):
        self.client.headers["Authorization"] = f"Token {os.environ['LOAD_TOKEN']}"

    @task(3)
    def follow_the_live_experiment(self):
        expect_200(self.client, "GET", f"/api/experiments/{LIVE}/", "GET /api/experiments/{id}/")

    @task(2)
    def list_experiments(self):
        expect_200(self.client, "GET", "/api/experiments/?sort=-created", "GET /api/experiments/")

    @task(2)
    def runs_of_an_experiment(self):
        expect_200(self.client, "GET", f"/api/runs/?experiment={HISTORY}", "GET /api/runs/?experiment=")

    @task(1)
    def explore(self):
        expect_200(
            self.client,
            "GET",
            "/api/explore/?x=redo_bytes&y=recovery_seconds&group=engine",
            "GET /api/explore/ (every run)",
        )

    @task(1)
    def compare(self):
        expect_200(self.client, "GET", f"/api/compare/?experiments={HISTORY},{OTHER}", "GET /api/compare/")

    @task(1)
    def hosts(self):
        expect_200(self.client, "GET", "/api/hosts/", "GET /api/hosts/")

    @task(1)
    def annotate(self):
        expect_200(
            self.client,
            "PATCH",
            f"/api/experiments/{HISTORY}/",
            "PATCH /api/experiments/{id}/",
            json={"notes": "looked at under load"},
        )


class PageClient(HttpUser):
    """Someone in a browser (the HTML only: static files are the web server's or WhiteNoise's)."""

    wait_time = between(0.5, 1.5)

    def on_start(self):
        self.client.cookies.set("sessionid", os.environ["LOAD_SESSION"])

    @task(3)
    def live_panel(self):
        expect_200(self.client, "GET", f"/experiments/{LIVE}/live/", "page /experiments/{id}/live/ (polled)")

    @task(2)
    def history(self):
        expect_200(self.client, "GET", "/experiments/", "page /experiments/")

    @task(1)
    def live_experiment(self):
        expect_200(self.client, "GET", f"/experiments/{LIVE}/", "page /experiments/{id}/ (running)")

    @task(1)
    def big_experiment(self):
        expect_200(self.client, "GET", f"/experiments/{HISTORY}/", "page /experiments/{id}/ (200 runs)")

    @task(1)
    def one_run(self):
        expect_200(self.client, "GET", f"/runs/{RUN}/", "page /runs/{id}/")

    @task(1)
    def explore(self):
        expect_200(self.client, "GET", "/explore/", "page /explore/")

    @task(1)
    def hosts(self):
        expect_200(self.client, "GET", "/hosts/", "page /hosts/")
