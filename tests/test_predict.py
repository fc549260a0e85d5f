"""recovery-lab predict and exporter (issue 35): a live server's downtime if it crashed, from the
lab's runs. The end-to-end test has only real parts: lab runs crashed at three redo targets by the
worker, a private MariaDB loaded by sysbench as the live server, the installed console script,
and a real Prometheus scraping the exporter with the alert rules of docs/prometheus/."""

import json
import re
import subprocess
import urllib.request
from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from experiments import services
from experiments.analysis.planner import plan_from
from experiments.client import parse_seconds
from experiments.live import read_server
from experiments.models import Experiment, Run, RunStatus
from experiments.prediction import Fit, orchestrator_verdicts, release_of
from experiments.server_url import LiveError, parse_server_url
from experiments.services.tokens import new_token
from experiments.units import parse_size
from tests.factories import RunFactory

from .conftest import wait_for
from .live_mariadb import LiveMariaDB
from .postgres import create_cluster, remove_cluster
from .sshd import free_port
from .test_gate import CLIENT, artifact
from .test_planner import make_runs

ROOT = Path(__file__).resolve().parent.parent
PROMETHEUS = ROOT / ".cache" / "prometheus" / "usr" / "bin"
RULES = ROOT / "docs" / "prometheus" / "recovery-lab.rules.yml"
VERSION = "10.11.19-MariaDB-0+deb12u1"


@pytest.mark.parametrize(
    ("version", "release"),
    [
        ("10.11.19-MariaDB-0+deb12u1", ("MariaDB", "10.11")),
        ("11.8.3-MariaDB-0+deb13u1 from Debian", ("MariaDB", "11.8")),
        ("8.0.36-28", ("MySQL", "8.0")),
        ("5.7.44-log", ("MySQL", "5.7")),
        ("PostgreSQL 15.20 (Debian 15.20-0+deb12u1)", ("PostgreSQL", "15")),
        ("PostgreSQL 17.12", ("PostgreSQL", "17")),
        ("", None),
        ("unknown", None),
    ],
)
def test_a_version_names_its_server_and_release_series(version, release):
    assert release_of(version) == release


@pytest.mark.django_db
def test_the_prediction_is_the_planner_s_line_and_band(api):
    """Two implementations of one interval: the API's fit (computed by the client too, at every
    scrape) and the planner's band, at the planner's own grid."""
    make_runs(server_version=VERSION)
    answer = api.get("/api/predict/", {"host": "db7", "engine": "innodb", "server_version": VERSION}).json()
    fit = Fit.from_dict(answer["fit"])
    plan, _ = plan_from({"host": "db7", "engine": "innodb", "target_downtime_seconds": 6})
    band = plan.band
    for i in (0, 20, 40):
        at = fit.at(band["redo_bytes"][i])
        if at.refused:  # the band runs past twice the redo measured, the prediction does not
            continue
        assert at.typical_seconds == pytest.approx(band["line"][i], abs=1e-5)
        assert at.high_seconds == pytest.approx(band["upper"][i], abs=1e-5)
    assert answer["based_on_runs"] == 8 and answer["versions"] == [VERSION]


@pytest.mark.django_db
def test_the_api_predicts_at_given_volumes_and_refuses_far_beyond_what_the_lab_replayed(api):
    make_runs(server_version=VERSION)
    highest = Run.objects.order_by("-redo_bytes").first().redo_bytes
    response = api.get(
        "/api/predict/",
        {
            "host": "db7",
            "engine": "innodb",
            "server_version": VERSION,
            "redo_bytes": [highest // 2, highest * 3],
        },
    )
    assert response.status_code == 200, response.content
    inside, beyond = response.json()["predictions"]
    assert (
        inside["low_seconds"] < inside["typical_seconds"] < inside["high_seconds"] and not inside["refused"]
    )
    assert beyond["typical_seconds"] is None and "more than 2 times the largest redo" in beyond["refused"]


@pytest.mark.django_db
def test_the_api_refuses_another_release_and_says_what_the_lab_has(api):
    make_runs(server_version=VERSION)
    response = api.get(
        "/api/predict/", {"host": "db7", "engine": "innodb", "server_version": "11.8.3-MariaDB"}
    )
    assert response.status_code == 422
    assert response.json()["detail"] == (
        f"the lab has no run of MariaDB 11.8 (innodb) on db7 to predict a 11.8.3-MariaDB server from "
        f"(versions measured there: {VERSION})"
    )
    # a patch release of the same series stands, and says so
    same_series = api.get(
        "/api/predict/", {"host": "db7", "engine": "innodb", "server_version": "10.11.6-MariaDB"}
    )
    assert same_series.status_code == 200
    assert "not 10.11.6-MariaDB itself" in same_series.json()["warnings"][0]


@pytest.mark.django_db
def test_the_api_says_what_is_wrong_with_a_question(api):
    make_runs(server_version=VERSION)
    assert (
        api.get(
            "/api/predict/", {"host": "nowhere", "engine": "innodb", "server_version": VERSION}
        ).status_code
        == 404
    )
    bad = api.get(
        "/api/predict/",
        {"host": "db7", "engine": "innodb", "server_version": VERSION, "redo_bytes": ["-1", "x"]},
    )
    assert bad.status_code == 400 and "redo_bytes" in bad.json()
    assert api.get("/api/predict/", {"host": "db7", "engine": "innodb"}).status_code == 400


@pytest.mark.django_db
def test_runs_of_nearly_one_redo_volume_predict_nothing_outside_it(api):
    """The demo's runs replayed 9.3-10.4 MiB: the line through them said 0.03 s at no redo."""
    for i in range(6):
        RunFactory(status=RunStatus.DONE, host_label="db7", engine="innodb", server_version=VERSION,
                   redo_bytes=10 * 2**20 + i * 100_000, downtime_seconds=0.25 + 0.01 * (i % 3))  # fmt: skip
    answer = api.get(
        "/api/predict/",
        {
            "host": "db7",
            "engine": "innodb",
            "server_version": VERSION,
            "redo_bytes": [0, 10 * 2**20 + 200_000],
        },
    ).json()
    outside, inside = answer["predictions"]
    assert "too narrow a range" in outside["refused"] and inside["typical_seconds"] > 0.2


def test_orchestrators_are_held_to_the_worst_case():
    fit = Fit(
        intercept=1.0,
        slope=1e-7,
        residual=2.0,
        n=10,
        mean_redo=5e8,
        sxx=1e18,
        t=2.3,
        measured_redo=(1e8, 1e9),
    )
    worst = fit.at(int(1e9))
    lines = orchestrator_verdicts(worst, startup_probe_seconds=60)
    assert lines[0].startswith("systemd's default start timeout would kill this server during recovery")
    assert lines[1].startswith(
        "a startupProbe of 60 s would kill this server during recovery at the worst case"
    )
    calm = orchestrator_verdicts(Fit(0.1, 1e-9, 0.01, 10, 5e8, 1e18, 2.3, (1e8, 1e9)).at(int(1e9)), 60)
    assert [line.split(" leaves ")[0] for line in calm] == [
        "systemd's default start timeout",
        "a startupProbe of 60 s",
    ]


def test_durations_and_server_addresses_are_read_or_refused_with_the_reason():
    assert parse_seconds("30s") == 30 and parse_seconds("2m") == 120 and parse_seconds("1.5h") == 5400
    assert parse_seconds("250ms") == 0.25
    with pytest.raises(Exception, match="a duration like 30s"):
        parse_seconds("soon")
    url = parse_server_url("mysql://monitor:p%40ss@db1.example:3307")
    assert (url.scheme, url.host, url.port, url.user, url.password) == (
        "mysql",
        "db1.example",
        3307,
        "monitor",
        "p@ss",
    )
    assert "p@ss" not in repr(url) and url.name == "db1.example:3307"
    assert parse_server_url("postgres://u@db2/app").port == 5432
    for text, said in (
        ("http://x", "starts with mysql://"),
        ("mysql://", "names no host"),
        ("mysql://h:99999", "not a server address"),
    ):
        with pytest.raises(LiveError, match=said):
            parse_server_url(text)


def test_the_alert_rules_are_valid_and_fire_above_the_rto():
    """promtool (Debian's, unpacked by make setup) checks the rules and runs their unit tests."""
    checked = subprocess.run(
        [PROMETHEUS / "promtool", "check", "rules", RULES], capture_output=True, text=True
    )
    assert checked.returncode == 0 and "4 rules found" in checked.stdout, checked.stdout + checked.stderr
    tested = subprocess.run(
        [PROMETHEUS / "promtool", "test", "rules", RULES.with_suffix(".test.yml").name],
        capture_output=True, text=True, cwd=RULES.parent,
    )  # fmt: skip
    assert tested.returncode == 0 and "SUCCESS" in tested.stdout, tested.stdout + tested.stderr


def test_the_grafana_dashboard_asks_only_for_metrics_the_exporter_has():
    dashboard = json.loads((ROOT / "docs" / "prometheus" / "grafana-dashboard.json").read_text())
    asked = {
        name
        for panel in dashboard["panels"]
        for target in panel["targets"]
        for name in re.findall(r"recovery_lab_\w+", target["expr"])
    }
    exported = set(re.findall(r'"(recovery_lab_\w+)"', (ROOT / "experiments" / "production.py").read_text()))
    assert asked and asked <= exported, asked - exported
    rules = yaml.safe_load(RULES.read_text())
    in_rules = {
        n for rule in rules["groups"][0]["rules"] for n in re.findall(r"recovery_lab_\w+", rule["expr"])
    }
    assert in_rules <= exported, in_rules - exported


@pytest.mark.mariadb
def test_myrocks_wal_is_read_from_its_folder_and_refused_without_it():
    """MyRocks shows no live WAL size over SQL: predict reads its files on the database host."""
    live = LiveMariaDB(extra_options=("--plugin-load-add=ha_rocksdb", "--rocksdb-max-total-wal-size=64M"))
    try:
        live.start()
        live.sql("CREATE TABLE sbtest.t (id INT PRIMARY KEY, v VARCHAR(200)) ENGINE=ROCKSDB")
        live.sql("INSERT INTO sbtest.t SELECT seq, REPEAT('x', 200) FROM sbtest.seq_1_to_20000")
        url = parse_server_url(live.url())
        with pytest.raises(LiveError, match="run predict on the database host with --rocksdb-wal-dir"):
            read_server(url, "rocksdb", 5)
        state = read_server(url, "rocksdb", 5, wal_dir=str(live.datadir / "#rocksdb"))
        assert state.redo_to_replay > 20000 * 200  # the rows are in the WAL, not yet in an SST
        assert (state.worst_redo, state.bound) == (64 * 2**20, "rocksdb_max_total_wal_size")
        with pytest.raises(LiveError, match="runs innodb or rocksdb, not postgresql"):
            read_server(url, "postgresql", 5)
    finally:
        live.stop()


def test_a_postgresql_server_is_read_by_a_monitoring_role():
    """A cluster of the test's own: the WAL since the last checkpoint, bounded by max_wal_size."""
    cluster = create_cluster()
    try:
        with cluster.connect("postgres") as admin:
            admin.execute("CREATE ROLE monitor LOGIN IN ROLE pg_monitor")
            admin.execute(
                "CREATE TABLE t AS SELECT g, repeat('x', 200) AS v FROM generate_series(1, 20000) g"
            )
        state = read_server(
            parse_server_url(f"postgresql://monitor@127.0.0.1:{cluster.port}/postgres"), "postgresql", 5
        )
        assert release_of(state.version)[0] == "PostgreSQL" and state.engine == "postgresql"
        assert state.redo_to_replay > 20000 * 200 and state.worst_redo == 2**30  # max_wal_size's default
        assert state.buffer_pool_bytes == 128 * 2**20
    finally:
        remove_cluster(cluster)


LAB = {
    "name": "Lab: downtime against redo for predict",
    "hosts": ["local"],
    "engines": ["innodb"],
    "parameters": {"buffer_pool_size": ["128M"], "redo_log_size": ["128M"], "insert_rate": [0]},
    # a time, and no events: the time replaces them (20,000 events fall short of 24 MiB of redo)
    "workload": {"name": "oltp_insert", "tables": 2, "table_size": 5000, "threads": 2, "time_seconds": 300},
    "server_options": {"innodb_flush_log_at_trx_commit": [2]},
    "crash": {"method": "sigkill", "when": "at_redo_bytes", "redo_bytes": ["4M", "12M", "24M"]},
    "repetitions": 2,
}  # fmt: skip


def client(live_server, token: str, server_url: str, *args: str) -> subprocess.CompletedProcess:
    """The console script as an operator runs it beside the server: the server's address (with
    its password) in the environment, not on the command line."""
    environment = {
        "RECOVERY_LAB_URL": live_server.url,
        "RECOVERY_LAB_TOKEN": token,
        "RECOVERY_LAB_SERVER": server_url,
        "PATH": "/usr/bin:/bin",
    }
    return subprocess.run([str(CLIENT), *args], capture_output=True, text=True, env=environment, timeout=120)


def fetch(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.read().decode()
    except OSError:
        return ""


@pytest.mark.mariadb
@pytest.mark.django_db(transaction=True)
def test_predict_and_the_exporter_on_a_loaded_server_from_real_lab_runs(
    live_server, local_host, celery_worker_process, user, tmp_path
):
    # The live server loads while the lab's runs are made: a light, steady load (400 rows/s on one
    # thread), as a production server's, that leaves the CPU to the runs of the tests beside this.
    live = LiveMariaDB()
    processes: list[subprocess.Popen] = []
    try:
        live.start()
        live.start_load(rate=400, threads=1)
        experiment, _ = services.create_experiment(LAB)
        runs = Run.objects.filter(experiment=experiment)
        wait_for(lambda: not runs.exclude(status__in=RunStatus.finished()).exists(), 600, "six lab runs")
        assert runs.filter(status=RunStatus.DONE).count() == 6, list(runs.values("status", "error"))
        for run in runs:  # each crashed at its redo target, not where a number of events ended
            assert run.redo_bytes >= 0.9 * parse_size(run.parameters["crash_redo_bytes"]), run.parameters
        token = new_token(user)
        wait_for(lambda: live.checkpoint_age() > 2**20, 60, "1 MiB of checkpoint age on the live server")

        over = client(live_server, token, live.url(), "predict", "--lab-host", "local", "--rto", "1ms",
                      "--startup-probe", "60s")  # fmt: skip
        artifact("predict-over-rto.txt", over)
        assert over.returncode == 2, over.stdout + over.stderr
        now = re.search(r"^now +([0-9.]+) MiB of redo to replay -> downtime ([0-9.]+) s "
                        r"\(95% prediction interval ([0-9.]+)-([0-9.]+) s\)", over.stdout, re.M)  # fmt: skip
        assert now, over.stdout
        redo_mib, typical, low, high = map(float, now.groups())
        assert redo_mib >= 1 and low <= typical <= high
        assert re.search(
            r"^worst case +3[0-9.]+ MiB \(Innodb_checkpoint_max_age\) -> downtime", over.stdout, re.M
        )
        assert "RTO         0.001 s: EXCEEDED at the worst case" in over.stdout
        assert "a startupProbe of 60 s leaves" in over.stdout
        assert (
            live.url() not in over.stdout + over.stderr and "s3cret" not in over.stdout
        )  # no credentials said
        within = client(
            live_server, token, live.url(), "predict", "--lab-host", "local", "--rto", "1h", "--json"
        )
        assert within.returncode == 0, within.stdout + within.stderr
        body = json.loads(within.stdout)
        assert body["server"]["version"] == body["lab"]["versions"][0]  # the lab's runs of this very version
        assert body["lab"]["run_ids"] == sorted(runs.values_list("id", flat=True))
        wrong = client(live_server, token, live.url(password="wrong"), "predict", "--lab-host", "local")
        assert wrong.returncode == 3 and "Access denied for user 'monitor'" in wrong.stderr, wrong.stderr

        port = free_port()
        exporter = subprocess.Popen(
            [str(CLIENT), "exporter", "--lab-host", "local", "--listen", f"127.0.0.1:{port}", "--rto", "1ms"],
            env={"RECOVERY_LAB_URL": live_server.url, "RECOVERY_LAB_TOKEN": token,
                 "RECOVERY_LAB_SERVER": live.url(), "PATH": "/usr/bin:/bin"},
            stdout=subprocess.DEVNULL, stderr=(tmp_path / "exporter.log").open("wb"), start_new_session=True,
        )  # fmt: skip
        processes.append(exporter)
        metrics_url = f"http://127.0.0.1:{port}/metrics"
        wait_for(
            lambda: "recovery_lab_predicted_downtime_seconds{" in fetch(metrics_url),
            60,
            "the exporter's metrics",
        )
        samples = {
            (sample.name, sample.labels.get("bound", "")): (sample.labels, sample.value)
            for family in text_string_to_metric_families(fetch(metrics_url))
            for sample in family.samples
        }
        labels, high = samples[("recovery_lab_predicted_downtime_seconds", "high")]
        assert labels == {
            "server": f"127.0.0.1:{live.port}",
            "engine": "innodb",
            "lab_host": "local",
            "bound": "high",
        }
        assert 0 < samples[("recovery_lab_predicted_downtime_seconds", "typical")][1] <= high
        assert samples[("recovery_lab_up", "")][1] == 1 and samples[("recovery_lab_fit_runs", "")][1] == 6
        assert samples[("recovery_lab_redo_to_replay_bytes", "")][1] > 2**20
        assert samples[("recovery_lab_predicted_worst_downtime_seconds", "high")][1] > high
        assert 0 <= samples[("recovery_lab_fit_age_seconds", "")][1] < 600

        prometheus_port = free_port()
        scrape = {"job_name": "recovery-lab", "static_configs": [{"targets": [f"127.0.0.1:{port}"]}]}
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(RULES)],
            "scrape_configs": [scrape],
        }
        (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
        prometheus = subprocess.Popen(
            [PROMETHEUS / "prometheus", f"--config.file={tmp_path / 'prometheus.yml'}",
             f"--storage.tsdb.path={tmp_path / 'tsdb'}", f"--web.listen-address=127.0.0.1:{prometheus_port}"],
            stdout=subprocess.DEVNULL, stderr=(tmp_path / "prometheus.log").open("wb"),
            start_new_session=True,
        )  # fmt: skip
        processes.append(prometheus)
        alerts_url = f"http://127.0.0.1:{prometheus_port}/api/v1/alerts"

        def firing() -> list[dict]:
            answer = fetch(alerts_url)
            alerts = json.loads(answer)["data"]["alerts"] if answer else []
            return [
                a
                for a in alerts
                if a["labels"]["alertname"] == "RecoveryWorstCaseAboveRTO" and a["state"] == "firing"
            ]

        wait_for(firing, 60, "Prometheus to fire RecoveryWorstCaseAboveRTO")
        (alert,) = firing()
        assert alert["labels"]["server"] == f"127.0.0.1:{live.port}" and float(alert["value"]) > 0.001
    finally:
        for process in processes:
            process.kill()
            process.wait()
        live.stop()


@pytest.mark.django_db
def test_imported_runs_do_not_answer_a_prediction_or_the_planner_unless_asked(api, user):
    """An experimenter's crafted archive of fast runs labelled with the lab host and the exact
    version had turned an exceeded RTO into 'within it': only runs the lab's runners measured
    answer, and the answer names who defined them."""
    make_runs(server_version=VERSION)
    Experiment.objects.update(created_by=user)  # the lab's runs: experiments the DBA defined
    for redo in range(1, 37):  # 36 imported runs: a flat 0.01 s at any redo
        RunFactory(
            status=RunStatus.DONE, host_label="db7", engine="innodb", server_version=VERSION,
            redo_bytes=redo << 24, downtime_seconds=0.01, redo_log_bytes=4 << 30, imported=True,
        )  # fmt: skip
    asked = {"host": "db7", "engine": "innodb", "server_version": VERSION}
    largest = api.get("/api/predict/", asked).json()["fit"]["measured_redo"][1]
    lab = api.get("/api/predict/", {**asked, "redo_bytes": [largest]}).json()
    assert lab["based_on_runs"] == 8 and lab["imported_runs"] == 0 and lab["made_by"] == ["dba"]
    both = api.get("/api/predict/", {**asked, "redo_bytes": [largest], "include_imported": "true"}).json()
    assert both["based_on_runs"] == 44 and both["imported_runs"] == 36
    assert "36 of the 44 runs were imported" in " ".join(both["warnings"])
    assert both["predictions"][0]["typical_seconds"] < lab["predictions"][0]["typical_seconds"] - 0.5
    question = {"host": "db7", "engine": "innodb", "target_downtime_seconds": 6}
    planned = api.get("/api/planner/", question).json()
    assert planned["based_on_runs"] == 8 and planned["imported_runs"] == 0
