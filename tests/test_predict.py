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

from experiments.analysis.planner import plan_from
from experiments.models import Experiment, Run, RunStatus
from experiments.services.tokens import new_token
from recovery_lab_cli import lab_request
from recovery_lab_cli.client import parse_seconds
from recovery_lab_cli.live import read_server
from recovery_lab_cli.prediction import Fit, orchestrator_verdicts, release_of
from recovery_lab_cli.server_url import LiveError, parse_server_url
from recovery_lab_cli.units import parse_size
from tests.factories import RunFactory
from workers.probing import probe_host

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
def test_the_fit_stands_on_the_runs_with_the_server_s_buffer_pool_and_says_where_its_runs_differ(api):
    """Issue 54: a server with a 1 GiB pool is predicted from the lab's 1 GiB runs, not from a pool
    of 128 MiB and 1 GiB runs; where the lab has too few of its pool, the fit pools them and says so."""
    small, large = 128 << 20, 1 << 30
    make_runs(server_version=VERSION, buffer_pool_bytes=small)  # 1.5 s + 4 s per GB (points)
    for i, redo in enumerate((200e6, 600e6, 1000e6, 1400e6, 1800e6, 400e6)):  # twice as steep
        RunFactory(status=RunStatus.DONE, host_label="db7", engine="innodb", server_version=VERSION,
                   buffer_pool_bytes=large, redo_log_bytes=4 << 30, redo_bytes=int(redo),
                   downtime_seconds=1 + 9.6e-9 * redo + 0.05 * (i % 2))  # fmt: skip
    query = {"host": "db7", "engine": "innodb", "server_version": VERSION, "redo_bytes": [1_000_000_000]}

    pooled = api.get("/api/predict/", query).json()  # a dashboard asked without the settings
    assert pooled["based_on_runs"] == 14 and pooled["matched"] == {} and pooled["differing"] == {}

    answer = api.get("/api/predict/", {**query, "buffer_pool_bytes": large, "redo_log_bytes": 4 << 30}).json()
    assert answer["based_on_runs"] == 6 and answer["buffer_pool_bytes"] == [large]
    assert answer["matched"] == {"buffer_pool_bytes": large, "redo_log_bytes": 4 << 30}
    assert answer["predictions"][0]["typical_seconds"] == pytest.approx(10.6, abs=0.1)
    assert (
        "the fit stands on the 6 of 14 runs with this server's buffer pool (1 GiB); the others had a buffer "
        "pool of 128 MiB" in answer["warnings"]
    )

    other = api.get("/api/predict/", {**query, "buffer_pool_bytes": 256 << 20}).json()
    assert other["based_on_runs"] == 14
    assert other["differing"] == {"buffer_pool_bytes": {"server": 256 << 20, "lab": [small, large]}}
    assert (
        "the lab's runs had a buffer pool of 128 MiB, 1 GiB, this server 256 MiB: runs of 256 MiB would "
        "stand for it" in other["warnings"]
    )
    # two runs of its pool are too few to fit on: the fit pools them, and says how many there are
    for redo in (300e6, 900e6):
        RunFactory(status=RunStatus.DONE, host_label="db7", engine="innodb", server_version=VERSION,
                   buffer_pool_bytes=256 << 20, redo_bytes=int(redo), downtime_seconds=3)  # fmt: skip
    few = api.get("/api/predict/", {**query, "buffer_pool_bytes": 256 << 20}).json()
    assert few["based_on_runs"] == 16
    assert any("this server 256 MiB (2 runs of it, too few to fit on)" in w for w in few["warnings"])
    assert api.get("/api/predict/", {**query, "buffer_pool_bytes": 0}).status_code == 400


@pytest.mark.django_db
def test_a_server_the_calibration_bench_has_not_held_to_real_crashes_is_said_to_be_so(api):
    """docs/production.md: the bench measures MariaDB and MySQL; a PostgreSQL prediction says it
    is not calibrated, a MariaDB one does not."""
    pg = "PostgreSQL 15.20 (Debian 15.20-0+deb12u1)"
    for i, redo in enumerate((100e6, 300e6, 500e6, 700e6, 900e6)):
        RunFactory(status=RunStatus.DONE, host_label="db7", engine="postgresql", server_version=pg,
                   redo_bytes=int(redo), downtime_seconds=1 + 2e-9 * redo + 0.01 * i)  # fmt: skip
    make_runs(server_version=VERSION)
    said = api.get("/api/predict/", {"host": "db7", "engine": "postgresql", "server_version": pg}).json()
    assert (
        "PostgreSQL predictions are not yet held to real crashes by the calibration bench "
        "(docs/production.md): read the interval as the lab's runs' alone" in said["warnings"]
    )
    mariadb = api.get("/api/predict/", {"host": "db7", "engine": "innodb", "server_version": VERSION}).json()
    assert not any("calibration" in warning for warning in mariadb["warnings"])


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
    assert checked.returncode == 0 and "6 rules found" in checked.stdout, checked.stdout + checked.stderr
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
    production = (ROOT / "recovery_lab_cli" / "production.py").read_text()
    exported = set(re.findall(r'"(recovery_lab_\w+)"', production))
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


def client(
    live_server, token: str, server_url: str, *args: str, timeout: float = 120
) -> subprocess.CompletedProcess:
    """The console script as an operator runs it beside the server: the server's address (with
    its password) in the environment, not on the command line."""
    environment = {
        "RECOVERY_LAB_URL": live_server.url,
        "RECOVERY_LAB_TOKEN": token,
        "RECOVERY_LAB_SERVER": server_url,
        "PATH": "/usr/bin:/bin",
    }
    return subprocess.run(
        [str(CLIENT), *args], capture_output=True, text=True, env=environment, timeout=timeout
    )


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
        token = new_token(user)
        probe_host(local_host.id)  # the host's builds, as a probe finds them
        # predict --measure: no lab runs yet, so no prediction; the runs that would stand for
        # this server (its build, pool, log and durability) queued, followed, and predicted from
        measured = client(live_server, token, live.url(), "predict", "--lab-host", "local", "--measure",
                          "--repetitions", "2", "--wait", "--poll", "1", timeout=600)  # fmt: skip
        artifact("predict-measure.txt", measured)
        assert measured.returncode == 0, measured.stdout + measured.stderr
        assert (
            "lab         no prediction yet: /api/predict/: not found on "
            f"{live_server.url}: host: no run was measured on 'local'" in measured.stdout
        ), measured.stdout
        assert re.search(
            r"^measure     on local, build system \(MariaDB 10\.11\.\d+\): buffer_pool_size 128M, "
            r"redo_log_size 48M, innodb_flush_log_at_trx_commit 2; crashed at \d+M, \d+M and 2\dM of redo, "
            r"2 runs each$",
            measured.stdout,
            re.M,
        ), measured.stdout
        assert re.search(r"^now +[0-9.]+ MiB of redo to replay -> downtime", measured.stdout, re.M)
        experiment = Experiment.objects.get()
        assert experiment.definition["server_options"] == {"innodb_flush_log_at_trx_commit": [2]}
        runs = Run.objects.filter(experiment=experiment)
        assert runs.filter(status=RunStatus.DONE).count() == 6, list(runs.values("status", "error"))
        for run in runs:  # each crashed at its redo target, not where a number of events ended
            assert run.redo_bytes >= 0.9 * parse_size(run.parameters["crash_redo_bytes"]), run.parameters
        wait_for(lambda: live.checkpoint_age() > 2**20, 60, "1 MiB of checkpoint age on the live server")

        over = client(live_server, token, live.url(), "predict", "--lab-host", "local", "--rto", "1ms",
                      "--startup-probe", "60s")  # fmt: skip
        artifact("predict-over-rto.txt", over)
        now = re.search(r"^now +([0-9.]+) MiB of redo to replay -> downtime ([0-9.]+) s "
                        r"\(95% prediction interval ([0-9.]+)-([0-9.]+) s\)", over.stdout, re.M)  # fmt: skip
        assert now, over.stdout
        redo_mib, typical, low, high = map(float, now.groups())
        assert redo_mib >= 1 and low <= typical <= high
        # a wide interval says why and what would narrow it (six runs: more repetitions)
        wide = re.search(
            r"^interval    a crash now: the interval is ±([0-9.]+) s \(\d+% of the typical\): \d runs, \d of "
            r"them on a disturbed host, scatter [0-9.]+ s about the line.*; narrower with more repetitions",
            over.stdout,
            re.M,
        )
        assert bool(wide) == ((high - low) / 2 > 0.5 * typical), over.stdout
        assert re.search(
            r"^worst case +3[0-9.]+ MiB \(Innodb_checkpoint_max_age\) -> downtime", over.stdout, re.M
        )
        # a crash now against the RTO, decided on the 95% interval: all of it over 1 ms, exceeded
        # (exit 2); an interval down to 0 s (six disturbed runs, CI's) holds 1 ms: at risk (exit 4)
        if low > 0.001:
            assert over.returncode == 2, over.stdout + over.stderr
            said = f"RTO         0.001 s, a crash now: EXCEEDED (even the 95% interval's low end, {low:.3g} s"
        else:
            assert over.returncode == 4, over.stdout + over.stderr
            said = f"RTO         0.001 s, a crash now: AT RISK (it lies inside the 95% interval, {low:.3g}-"
        assert said in over.stdout, over.stdout
        assert "RTO         0.001 s, the worst case: EXCEEDED" in over.stdout
        # the RTO inside the interval: at risk, exit 4 (a wide interval had cried "exceeded")
        middle = f"{(low + high) / 2 * 1000:.0f}ms"
        at_risk = client(live_server, token, live.url(), "predict", "--lab-host", "local", "--rto", middle)
        assert at_risk.returncode == 4, at_risk.stdout + at_risk.stderr
        assert re.search(
            r"^RTO .*, a crash now: AT RISK \(it lies inside the 95% interval", at_risk.stdout, re.M
        )
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
        # the fit's runs are the measured ones (on a quiet host, where five or more were)
        quiet = sorted(runs.filter(disturbed=False).values_list("id", flat=True))
        assert body["lab"]["run_ids"] == (
            quiet if len(quiet) >= 5 else sorted(runs.values_list("id", flat=True))
        )
        # the runs it measured have the server's pool and log: the fit says it matched both
        assert body["lab"]["matched"] == {"buffer_pool_bytes": 128 << 20, "redo_log_bytes": 48 << 20}
        assert body["lab"]["differing"] == {} and body["server"]["server_options"] == {
            "innodb_flush_log_at_trx_commit": 2
        }
        # the lab saw this 128M pool's recovery stall at 28 MiB (runner/stall.py): a crash now
        # replays less than the lab recovered there, the worst case (3x MiB) more
        stalled = RunFactory(
            status=RunStatus.STALLED, buffer_pool_bytes=128 << 20, redo_bytes=28 << 20,
            server_version=body["server"]["version"], parameters=runs.first().parameters,
        )  # fmt: skip
        worst = client(
            live_server, token, live.url(), "predict", "--lab-host", "local", "--decide-on", "worst"
        )
        assert worst.returncode == 5, worst.stdout + worst.stderr
        assert re.search(
            rf"^STALL RISK  the worst case: the lab saw a 128\.0 MiB buffer pool's recovery stall at 28\.0 "
            rf"MiB \(run #{stalled.id}\); this server's pool is 128\.0 MiB with 3[0-9.]+ MiB to replay, and "
            r"the most the lab recovered on a 128\.0 MiB pool was 2[0-9.]+ MiB \(run #\d+\)$",
            worst.stdout,
            re.M,
        ), worst.stdout
        assert "STALL RISK  a crash now" not in worst.stdout
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
        assert samples[("recovery_lab_up", "")][1] == 1 and samples[("recovery_lab_fit_runs", "")][1] == len(
            body["lab"]["run_ids"]
        )
        assert samples[("recovery_lab_redo_to_replay_bytes", "")][1] > 2**20
        assert samples[("recovery_lab_predicted_worst_downtime_seconds", "high")][1] > high
        assert 0 <= samples[("recovery_lab_fit_age_seconds", "")][1] < 600
        # exceeded (2) where the interval's low end is over 1 ms, at risk (1) where it reaches 0 s:
        # read at the same scrape as the bounds (a scrape reads the server anew)
        scraped = {
            (sample.name, sample.labels.get("bound") or sample.labels.get("case")): sample.value
            for family in text_string_to_metric_families(fetch(metrics_url))
            for sample in family.samples
        }
        lowest = scraped[("recovery_lab_predicted_downtime_seconds", "low")]
        assert scraped[("recovery_lab_rto_outcome", "now")] == (2 if lowest > 0.001 else 1), scraped
        assert scraped[("recovery_lab_stall_risk", "now")] == 0
        assert scraped[("recovery_lab_stall_risk", "worst")] == 1

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


# A probe's facts as this machine gives them (runner/probe.server_builds): the system's MariaDB and
# PostgreSQL, and a MySQL 9.7 installed as a build (installbuild).
BUILDS = [
    {"name": "system", "versions": {
        "mariadb": "Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64 (Debian 12)",
        "postgresql": "postgres (PostgreSQL) 15.20 (Debian 15.20-0+deb12u1)"}},
    {"name": "mysql-9.7", "version": "Ver 9.7.4-2 for Linux on x86_64 ((Debian))"},
    {"name": "broken", "error": "cannot start"},
]  # fmt: skip


@pytest.mark.parametrize(
    ("version", "build", "said"),
    [
        (VERSION, "system", "MariaDB 10.11.19"),
        ("10.11.6-MariaDB-log", "system",
         "MariaDB 10.11.19, of 10.11.6-MariaDB-log's release series MariaDB 10.11"),
        ("9.7.4-2", "mysql-9.7", "MySQL 9.7.4"),
        ("PostgreSQL 15.20 (Debian 15.20-0+deb12u1)", "system", "PostgreSQL 15.20"),
    ],
)  # fmt: skip
def test_measure_picks_the_lab_build_of_the_server_s_version_or_release(version, build, said):
    assert lab_request.build_for({"name": "bench-1", "facts": {"server_builds": BUILDS}}, version) == (
        build,
        said,
    )


def test_measure_refuses_a_server_the_lab_host_has_no_build_of_and_says_what_it_has():
    with pytest.raises(lab_request.RequestRefused) as refused:
        lab_request.build_for({"name": "bench-1", "facts": {"server_builds": BUILDS}}, "11.8.3-MariaDB")
    assert str(refused.value) == (
        "the lab host bench-1 has no build of MariaDB 11.8.3 or its release series (system: MariaDB "
        "10.11.19, PostgreSQL 15.20; mysql-9.7: MySQL 9.7.4); install one there (manage.py installbuild)"
    )
    with pytest.raises(lab_request.RequestRefused, match="no build probed yet: probe the host"):
        lab_request.build_for({"name": "new", "facts": {}}, VERSION)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("state", "targets"),
    [  # MariaDB: 75% of a 48M log, under its checkpoint's 38 MiB; MySQL: its capacity; PostgreSQL:
        # 45% of max_wal_size; MyRocks with no WAL limit: from the redo it has now
        (dict(engine="innodb", worst_redo=38 << 20, redo_log_bytes=48 << 20), ["3M", "14M", "27M"]),
        (dict(engine="innodb", worst_redo=1 << 30, redo_log_bytes=1 << 30), ["76M", "307M", "576M"]),
        (dict(engine="postgresql", worst_redo=1 << 30, redo_log_bytes=1 << 30, version="PostgreSQL 15.20",
              server_options={"synchronous_commit": "remote_apply"}), ["46M", "184M", "345M"]),
        (dict(engine="rocksdb", worst_redo=None, redo_log_bytes=None, server_options={}),
         ["6M", "25M", "48M"]),
    ],
)  # fmt: skip
def test_the_runs_measure_asks_for_are_a_definition_the_dashboard_takes(state, targets, local_host):
    """Whatever the server, what --measure queues passes the dashboard's own checks (a redo target
    its log can reach, an option value the lab allows), at the server's settings."""
    from experiments.definition import validate_definition
    from recovery_lab_cli.live import ServerState

    fields = {"server": "db1:3306", "version": VERSION, "redo_to_replay": 5 << 20, "bound": "",
              "buffer_pool_bytes": 3 << 30, "server_options": {"innodb_flush_log_at_trx_commit": 2},
              **state}  # fmt: skip
    server = ServerState(**fields)
    definition = lab_request.measuring_definition(server, "local", "system", 3)
    assert definition["crash"]["redo_bytes"] == targets
    checked = validate_definition(definition, ["local"])
    assert checked.parameters["buffer_pool_size"] == ["3G"] and checked.repetitions == 3
    if server.redo_log_bytes:
        assert checked.parameters["redo_log_size"] == [lab_request._size(server.redo_log_bytes)]
    # a value the lab does not allow (PostgreSQL's remote_apply) is left to the server's default
    assert "synchronous_commit" not in definition["server_options"]
