"""Server builds as a parameter: the probe lists the builds under the work directory's builds/,
a definition sweeps `server_build`, each run starts its build's own binary (real mariadbd and
mysqld and sysbench through the Celery worker), and explore charts the same definition across
builds."""

import json
import re
import shutil
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import timezone

from experiments.analysis.series import differences, history
from experiments.models import Run, Series
from experiments.services import series as series_service
from runner.builds import MANIFEST
from runner.probe import server_builds

from .conftest import wait_for
from .factories import UserFactory

SYSTEM_SERVER = shutil.which("mariadbd") or "/usr/sbin/mariadbd"


def on_builds(name: str, builds: list[str], events: int = 10) -> dict:
    """A small InnoDB definition sweeping `builds`."""
    return {
        "name": name,
        "hosts": ["local"],
        "engines": ["innodb"],
        "parameters": {"server_build": builds},
        "workload": {
            "name": "oltp_write_only",
            "tables": 1,
            "table_size": 5000,
            "threads": 2,
            "events": events,
        },
        "crash": {"method": "sigkill", "when": "after_workload"},
        "repetitions": 1,
    }


@pytest.fixture
def copied_build():
    """A second build: a copy of the system's server under builds/copy/bin (a binary tarball
    unpacked there looks the same to the runner)."""
    folder = settings.RUNNER_WORK_DIR / "builds" / "copy"
    (folder / "bin").mkdir(parents=True, exist_ok=True)
    shutil.copy2(SYSTEM_SERVER, folder / "bin" / "mariadbd")
    (settings.RUNNER_WORK_DIR / "builds" / "empty").mkdir(exist_ok=True)  # no server: not a build
    yield "copy"
    shutil.rmtree(settings.RUNNER_WORK_DIR / "builds", ignore_errors=True)


def test_the_probe_lists_the_system_server_and_each_build_with_its_version(copied_build):
    builds = {build["name"]: build for build in server_builds(str(settings.RUNNER_WORK_DIR))}
    assert set(builds) == {"system", "copy"}
    assert builds["copy"]["path"].endswith("builds/copy/bin/mariadbd")
    assert "MariaDB" in builds["copy"]["version"] and builds["copy"]["version"] == builds["system"]["version"]


def test_a_hosts_facts_ask_each_server_its_version_once_and_a_changed_build_is_seen_by_the_next_probe(
    copied_build, tmp_path
):
    """The families ask about the same servers: inside one reading of the host's facts a command
    runs once (a counting wrapper stands for the copied build's server); the next reading runs it
    again, so a build replaced between two runs is described as it now is."""
    from runner.probe import host_facts

    server = settings.RUNNER_WORK_DIR / "builds" / "copy" / "bin" / "mariadbd"
    real, counted = server.with_name("mariadbd.real"), tmp_path / "asked"
    server.rename(real)
    server.write_text(f'#!/bin/sh\necho asked >> {counted}\nexec {real} "$@"\n')
    server.chmod(0o755)
    first = {build["name"]: build for build in host_facts(str(settings.RUNNER_WORK_DIR))["server_builds"]}
    asked_once = counted.read_text().count("asked")
    assert asked_once == 1 and "MariaDB" in first["copy"]["version"], (asked_once, first["copy"])
    server.write_text("#!/bin/sh\necho 'mariadbd  Ver 99.1.0-MariaDB for a test'\n")
    second = {build["name"]: build for build in host_facts(str(settings.RUNNER_WORK_DIR))["server_builds"]}
    assert second["copy"]["version"].startswith("Ver 99.1.0-MariaDB"), second["copy"]


@pytest.mark.django_db
def test_a_build_the_probed_host_does_not_have_is_refused_and_nothing_queued(api, local_host):
    local_host.facts = {"server_builds": [{"name": "system", "path": SYSTEM_SERVER, "version": "x"}]}
    local_host.save()
    body = on_builds("builds", ["system", "11.4-debug"])
    answer = api.post("/api/experiments/", body, format="json")
    assert answer.status_code == 400
    assert (
        "has no server build 11.4-debug (its last probe listed: system)"
        in answer.json()["parameters.server_build"][0]
    )
    assert Run.objects.count() == 0
    bad = api.post(
        "/api/experiments/", {**body, "parameters": {"server_build": ["../../bin"]}}, format="json"
    )
    assert bad.status_code == 400 and "is not a build name" in bad.json()["parameters.server_build"][0]


@pytest.mark.django_db
def test_a_build_unpacked_since_the_last_probe_is_found_when_an_admin_asks_for_it(
    staff_api, client, local_host, copied_build
):
    local_host.facts = {"server_builds": [{"name": "system", "path": SYSTEM_SERVER, "version": "x"}]}
    local_host.save()
    body = on_builds("the build a CI job just handed over", ["copy"])
    answer = staff_api.post("/api/experiments/", body, format="json")
    assert answer.status_code == 201, answer.content
    local_host.refresh_from_db()
    assert "copy" in [build["name"] for build in local_host.facts["server_builds"]]
    client.force_login(UserFactory(username="boss", is_staff=True))
    page = client.get("/hosts/").content.decode()  # the hosts page lists it, with its release and engines
    assert re.search(r">copy</span> \(MariaDB 10\.11\.\d+; innodb, rocksdb\)", page), page


@pytest.mark.django_db
def test_an_experimenter_s_request_never_probes_a_host_and_gets_the_builds_known(
    api, local_host, copied_build
):
    """Only an admin's request (or beat) makes the dashboard reach a host."""
    local_host.facts = {"server_builds": [{"name": "system", "path": SYSTEM_SERVER, "version": "x"}]}
    local_host.save()
    answer = api.post("/api/experiments/", on_builds("not probed for", ["copy"]), format="json")
    assert answer.status_code == 400
    refusal = answer.json()["parameters.server_build"][0]
    assert "has no server build copy (its last probe listed: system)" in refusal
    assert "an admin's probe (or beat's, every 10 minutes) lists them" in refusal
    local_host.refresh_from_db()
    assert local_host.last_seen is None and len(local_host.facts["server_builds"]) == 1  # not probed
    assert Run.objects.count() == 0


@pytest.mark.mariadb
@pytest.mark.django_db(transaction=True)
def test_mariadb_10_11_11_8_and_mysql_9_7_run_side_by_side_and_each_is_named(
    api, client, local_host, celery_worker_process, debian_build, mysql_build
):
    """Three real servers: Debian 12's MariaDB 10.11 (the host's own), Debian 13's 11.8 and
    Oracle's MySQL 9.7 from Debian unstable, each of the last two through its release's loader.
    One experiment sweeps them on InnoDB, twice each; the family of each run is its build's."""
    name, said = debian_build
    mysql, said_mysql = mysql_build
    assert f"build {name} on this machine: Ver 11.8." in said and "engines innodb, rocksdb" in said, said
    assert f"build {mysql} on this machine: Ver 9.7." in said_mysql and "engines innodb" in said_mysql
    local_host.refresh_from_db()
    builds = {build["name"]: build for build in local_host.facts["server_builds"]}
    assert builds["system"]["version"].startswith("Ver 10.11."), builds
    assert builds[name]["version"].startswith("Ver 11.8.") and builds[name]["source"].startswith(
        "Debian trixie: "
    )
    assert builds[mysql]["versions"] == {"mysql": builds[mysql]["version"]} and builds[mysql]["engines"] == [
        "innodb"
    ]
    body = on_builds("three servers side by side", ["system", name, mysql], events=2000)
    body["parameters"]["redo_log_size"] = ["128M"]
    body["parameters"]["profile"] = [True]  # each restart profiled: the page draws what moved between servers
    body["repetitions"] = 2
    # each build's second repetition restarts a copy of its first one's crash (crash.one_crash):
    # no load and no workload of its own, on MariaDB's and MySQL's files alike
    body["crash"]["one_crash"] = True
    created = api.post("/api/experiments/", body, format="json")
    assert created.status_code == 201, created.content
    runs = Run.objects.filter(experiment_id=created.json()["id"])
    wait_for(lambda: all(r.is_finished for r in runs.all()), 600, "the six runs", interval_s=1)
    started = {}
    release = {"system": "10.11.", name: "11.8.", mysql: "9.7."}
    for run in runs.all():
        build = run.parameters["server_build"]
        assert run.status == "done", (build, run.error)
        assert run.verified is True, build  # the tables' checksums after recovery
        assert run.server_version.startswith(release[build]), run.server_version
        # the run carries its server: the family whose build ran it, as the runner said
        assert run.server_family == ("mysql" if build == mysql else "mariadb"), (build, run.server_family)
        assert run.recovery_seconds is not None and run.redo_bytes > 0, build
        if run.image_of_id:  # the same crash, to the byte, under the same build
            assert (
                run.image_of.parameters["server_build"] == build and run.redo_bytes == run.image_of.redo_bytes
            )
        result = json.loads(bytes(run.files.get(name="result.json").content))
        started[build] = result["server_args"]
        if build == mysql:  # every batch's pages ("N redo log records" counts pages), as its log says
            log = bytes(run.files.get(name="error.log").content).decode()
            recovery = log[log.index("Starting crash recovery") :]
            counted = sum(int(n) for n in re.findall(r"Applying a batch of (\d+) redo log records", recovery))
            assert counted and run.pages_to_recover == counted, (run.pages_to_recover, counted)
            assert run.redo_records_applied is None
    assert runs.count() == 6
    # 11.8 and 9.7 start through their release's loader with its libraries first; 10.11 is the host's own
    for build in (name, mysql):
        loader = str(settings.RUNNER_WORK_DIR / "builds" / build / "usr/lib64/ld-linux-x86-64.so.2")
        assert started[build][:2] == [loader, "--library-path"], started[build][:4]
    assert started["system"][0] == SYSTEM_SERVER
    assert "--innodb-redo-log-capacity=128M" in started[mysql] and "--mysqlx=OFF" in started[mysql]
    explored = api.get(
        "/api/explore/",
        {"x": "server_version", "y": "recovery_seconds", "experiments": str(created.json()["id"])},
    ).json()
    versions = {x for series in explored["series"] for x in series["x"]}
    assert {".".join(version.split(".")[:2]) for version in versions} == {"10.11", "11.8", "9.7"}
    # the findings set each build against the system's, naming the server each run said it was
    client.force_login(UserFactory())
    page = client.get(f"/experiments/{created.json()['id']}/").content.decode()
    findings = re.sub(r"<[^>]+>", "", page[page.index('id="experiment-findings"') : page.index("Caveats")])
    system = r"build system \(MariaDB 10\.11\.\d+\)"
    for build, server in ((name, r"MariaDB 11\.8\.\d+"), (mysql, r"MySQL 9\.7\.\d+")):
        # "no significant difference ... between A and B", or "A: crash recovery 3.3x slower than B"
        compared = (
            rf"between build {build} \({server}\) and {system}"
            rf"|build {build} \({server}\): crash recovery [0-9.]+x (?:slower|faster) than {system}"
        )
        assert re.search(compared, findings), findings
    # redo the design did not vary enough to show a slope is never put down to "other costs"
    assert "other costs dominate" not in findings
    # seed 001's question, did the repeats take the same time: each cell's range and spread, said
    for build in ("system", name, mysql):
        took = sorted(r.recovery_seconds for r in runs.all() if r.parameters["server_build"] == build)
        if took[0] > 0:
            said = f"its 2 runs took {took[0]:.3g} s to {took[1]:.3g} s of crash recovery, a spread of "
            assert (
                said in findings and f"{(took[1] - took[0]) / ((took[0] + took[1]) / 2):.0%}" in findings
            ), (
                said,
                findings,
            )
    # each server's profile: its own program at the top, even where it ran through a loader;
    # and against the system's, which functions moved
    for run in runs.all():
        stacks = bytes(run.files.get(name="profile.folded").content).decode()
        program = "mysqld" if run.parameters["server_build"] == mysql else "mariadbd"
        assert stacks.startswith(program + ";") or f"\n{program};" in stacks, stacks[:300]
        assert "ld-linux" not in {line.split(";")[0] for line in stacks.splitlines()}
        # the threads of the recovery's window, or of the whole start where the recovery took less
        # than the log resolves (MariaDB 11.8 recovers this in under 5 ms: no window of its own)
        used = (run.resources.get("recovery") or run.resources["rest"])["threads"]
        assert not [t["name"] for t in used if t["name"].startswith("ld-linux")]
    assert page.count('data-figure="profile-diff-figure-') == 2  # 11.8 and 9.7, each against 10.11


@pytest.mark.django_db
def test_the_experiment_page_charts_the_same_definition_across_builds():
    from experiments.pages.context import experiment_context

    from .factories import ExperimentFactory
    from .test_analysis import done_run, noisy

    experiment = ExperimentFactory()
    for build, version, typical in (
        ("system", "10.11.19-MariaDB", 1.0),
        ("candidate", "10.11.20-MariaDB", 1.6),
    ):
        for seconds in noisy(len(build), 3, typical):
            parameters = {
                "buffer_pool_size": "128M",
                "redo_log_size": "64M",
                "insert_rate": 0,
                "server_build": build,
            }
            done_run(experiment, recovery_seconds=seconds, parameters=parameters, server_version=version)
    context = experiment_context(experiment)
    assert "server_build" in context["axes"]
    figure = context["figures"]["axis-server_build"]
    medians = [trace for trace in figure["data"] if trace.get("error_y")]
    assert len(medians) == 2  # recovery and downtime, each one series over both builds (not split by version)
    assert sorted(medians[0]["x"]) == ["candidate", "system"]
    by_version = context["figures"]["axis-server_version"]
    assert len([trace for trace in by_version["data"] if trace.get("error_y")]) == 2


@pytest.fixture
def unusable_builds():
    """Two builds that cannot start: 11.8's server alone, without Debian 13's loader and C
    library (what unpacking its package by hand gives on Debian 12), and a manifest naming a
    file outside its folder."""
    builds = settings.RUNNER_WORK_DIR / "builds"
    newer = Path(settings.BUILDS_CACHE_DIR) / "debian-trixie-mariadb" / "usr" / "sbin" / "mariadbd"
    assert newer.exists(), f"{newer} is missing: `make setup` unpacks MariaDB 11.8 there"
    (builds / "too-new" / "bin").mkdir(parents=True)
    shutil.copy2(newer, builds / "too-new" / "bin" / "mariadbd")
    (builds / "escaping").mkdir()
    (builds / "escaping" / MANIFEST).write_text(
        json.dumps({"format": 1, "server": "../../../usr/sbin/mariadbd"})
    )
    yield
    shutil.rmtree(builds)


@pytest.mark.django_db
def test_a_build_that_cannot_start_says_why_on_the_hosts_page_and_in_a_refusal(
    api, client, local_host, unusable_builds
):
    builds = {build["name"]: build for build in server_builds(str(settings.RUNNER_WORK_DIR))}
    # the dynamic loader's own words: a library Debian 12 does not have (libaio.so.1t64), or its
    # C library too old (GLIBC_2.38 not found)
    assert "error while loading shared libraries" in builds["too-new"]["error"], builds["too-new"]
    assert "version" not in builds["too-new"]
    assert "server must be a path inside the build's folder" in builds["escaping"]["error"]
    assert "error" not in builds["system"]
    local_host.facts = {"server_builds": list(builds.values())}
    local_host.save()
    client.force_login(UserFactory(username="boss", is_staff=True))
    page = client.get("/hosts/").content.decode()
    assert "too-new (cannot start: " in page and "error while loading shared libraries" in page
    answer = api.post(
        "/api/experiments/", on_builds("on a build that cannot start", ["too-new"]), format="json"
    )
    assert answer.status_code == 400
    assert "host local cannot start server build too-new: " in answer.json()["parameters.server_build"][0]
    assert Run.objects.count() == 0


@pytest.mark.mariadb
@pytest.mark.django_db(transaction=True)
def test_a_series_whose_build_moved_to_11_8_names_the_version_in_what_differed(
    user, local_host, celery_worker_process, debian_build
):
    """Two real firings of one series, the second after its definition moved to MariaDB 11.8:
    what differed between them names the build and the versions the servers reported."""
    name, _ = debian_build
    body = on_builds("nightly", ["system"], events=500)
    body["repetitions"] = 1
    series = series_service.create_series(
        {"name": "nightly", "definition": body, "schedule": "@hourly"}, user=user
    )

    def fire(at) -> None:
        Series.objects.filter(pk=series.pk).update(next_firing_at=at)
        [experiment_id] = series_service.fire_due_series(now=at)
        runs = Run.objects.filter(experiment_id=experiment_id)
        wait_for(lambda: all(r.is_finished for r in runs.all()), 300, "the firing's run", interval_s=0.5)
        assert [r.status for r in runs] == ["done"], list(runs.values("error"))

    first = timezone.now() - timedelta(hours=2)
    fire(first)
    series_service.update_series(
        series.pk, {"definition": {**body, "parameters": {"server_build": [name]}}}, user=user
    )
    fire(first + timedelta(hours=1))
    before, after = history(series.pk)
    said = differences(before, after)
    assert said[0] == f"server build: system -> {name}", said
    assert re.match(r"server version: 10\.11\.\S+ -> 11\.8\.", said[1]), said


PERCONA_LINE = "Ver 8.0.36-28 for Linux on x86_64 (Percona Server (GPL), Release 28, Revision 47601f19)"


@pytest.mark.parametrize(
    "version, family, shown",
    [
        ("Ver 9.7.4-2 for Linux on x86_64 ((Debian))", "mysql", "MySQL 9.7.4"),
        ("Ver 11.8.9-MariaDB-0+deb13u1 from Debian", "mariadb", "MariaDB 11.8.9"),
        ("Ver 11.8.9-MariaDB-0+deb13u1 from Debian", "", "MariaDB 11.8.9"),
        ("postgres (PostgreSQL) 17.12 (Debian 17.12-0+deb13u1)", "postgresql", "PostgreSQL 17.12"),
        # a server no family of this runner claims is shown as it names itself
        (PERCONA_LINE, "", PERCONA_LINE),
    ],
)
def test_the_hosts_page_names_each_build_s_server(version, family, shown):
    from experiments.templatetags.hosts import server_release

    assert server_release(version, family) == shown


@pytest.mark.django_db
def test_installbuild_takes_its_family_from_the_name_or_server_and_refuses_a_name_that_says_none():
    from django.core.management import CommandError, call_command

    with pytest.raises(
        CommandError, match=r"'pg17' does not say its server: name it mariadb-\.\.\., mysql-\.\.\."
    ):
        call_command("installbuild", "nowhere", "pg17", "--debian", "trixie")
    # a family and a major version given: it goes on to the host, which is not registered here
    with pytest.raises(CommandError, match="no host named 'nowhere'"):
        call_command(
            "installbuild", "nowhere", "pg17", "--debian", "trixie", "--server", "postgresql", "--major", "17"
        )
