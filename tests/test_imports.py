"""POST /api/imports/ and the import service, on real logs (expected values read off the logs)."""

import io

import pytest

from experiments import services
from experiments.models import Experiment, Run, RunStatus
from experiments.services.imports import import_runs

from .conftest import DATA
from .factories import ExperimentFactory, RunFactory
from .samples import sample

pytestmark = pytest.mark.django_db

MARIADB_CRASH = DATA / "mariadb-10.11" / "innodb_binlog_during_load" / "error_with_clean_restart.log"


def upload(content: bytes, name: str = "error.log") -> io.BytesIO:
    handle = io.BytesIO(content)
    handle.name = name
    return handle


def parameters(**overrides) -> dict:
    return {
        "engine": "innodb",
        "buffer_pool_size": "2G",
        "redo_log_size": "4G",
        "insert_rate": "500",
        "host_label": "mgr07.greatsql",
        **overrides,
    }


def services_import(uploads, **overrides):
    return import_runs(uploads, parameters(**overrides))


def test_percona8_log_imports_as_a_run_charted_with_the_live_mariadb_runs(api, client, user):
    live = RunFactory(
        status=RunStatus.DONE,
        redo_bytes=32_000_000,
        recovery_seconds=0.29,
        server_version="10.11",
        experiment__created_by=user,  # runs join an experiment of one's own
    )
    body = {
        **parameters(),
        "experiment": live.experiment_id,
        "error_log": upload(sample("mysql80_recovery.txt", "A")),
    }
    response = api.post("/api/imports/", body, format="multipart")
    assert response.status_code == 201, response.content
    (run,) = response.json()["runs"]
    assert response.json()["experiment"] == live.experiment_id
    assert run["imported"] and run["host"] == "mgr07.greatsql" and run["server_version"] == "8.0.32-25"
    # "checkpoint_lsn = 536974192" ... "scanned up to log sequence number 536978901"
    assert run["metrics"]["redo_bytes"] == 4709
    assert run["metrics"]["recovery_seconds"] == pytest.approx(0.523445)
    assert run["parameters"] == {"buffer_pool_size": "2G", "redo_log_size": "4G", "insert_rate": 500}

    client.force_login(user)
    page = client.get(f"/experiments/{live.experiment_id}/")
    redo_chart = page.context["figures"]["redo"]
    charted = [point for trace in redo_chart["data"] for point in trace.get("customdata", [])]
    assert {live.id, run["id"]} <= set(charted)


def test_tokudb_log_with_measured_redo_bytes(api):
    body = {
        **parameters(engine="tokudb", server_version="5.7.36-39"),
        "redo_bytes": "18000000",
        "error_log": upload(sample("tokudb_recovery.txt", "A")),
    }
    response = api.post("/api/imports/", body, format="multipart")
    assert response.status_code == 201, response.content
    run = Run.objects.get()
    assert (run.engine, run.imported, run.experiment.imported) == ("tokudb", True, True)
    # "TokuFT recovery starting" 00:27:28 -> "TokuFT recovery done" 00:27:29
    assert (run.recovery_seconds, run.redo_bytes, run.redo_records_applied) == (1.0, 18_000_000, 18)
    assert run.server_version == "5.7.36-39"


def test_a_postgresql_server_log_imports_as_a_run_of_its_wal_replay(api):
    """A real PostgreSQL 15 crash (tests/data/postgresql-15/README.md), imported as the engine
    the runner does not drive yet: shared_buffers as the buffer pool, max_wal_size as the log."""
    log = (DATA / "postgresql-15" / "crash_after_pgbench" / "server.log").read_bytes()
    body = {
        **parameters(engine="postgresql", buffer_pool_size="128M", redo_log_size="1G"),
        "error_log": upload(log, "server.log"),
    }
    response = api.post("/api/imports/", body, format="multipart")
    assert response.status_code == 201, response.content
    run = Run.objects.get()
    assert (run.engine, run.imported, run.server_version) == ("postgresql", True, "PostgreSQL 15.20")
    assert run.redo_bytes == 74_073_152  # redo starts at 0/1511B00, done at 0/5BB5F40
    assert run.recovery_seconds == pytest.approx(0.299, abs=1e-6)  # to the end-of-recovery checkpoint
    assert run.ready_seconds == pytest.approx(0.319, abs=1e-6)
    assert run.phases["wal_replay"] == pytest.approx(0.218, abs=1e-6)
    assert run.phases["recovery_checkpoint"] == pytest.approx(0.046, abs=1e-6)
    explored = api.get("/api/explore/", {"x": "engine", "y": "recovery_seconds"}).json()
    assert "postgresql" in {x for series in explored["series"] for x in series["x"]}


def test_a_postgresql_log_over_the_stored_limit_keeps_its_own_lines_and_its_recovery(api, settings):
    """Over RAW_FILE_MAX_BYTES a log is stored as the lines its parser reads: PostgreSQL's by its
    own words (it had been trimmed by MySQL's keywords, and 'no crash recovery was found')."""
    settings.RAW_FILE_MAX_BYTES = 1 << 20
    real = (DATA / "postgresql-15" / "crash_after_pgbench" / "server.log").read_text()
    lines = real.splitlines(keepends=True)
    noise = "2026-11-26 18:50:30.900 UTC [13470] LOG:  duration: 0.05 ms  statement: SELECT 1\n" * 30_000
    log = "".join(lines[:12]) + noise + "".join(lines[12:])
    assert len(log) > 2 << 20
    body = {
        **parameters(engine="postgresql", redo_log_size="1G"),
        "error_log": upload(log.encode(), "server.log"),
    }
    response = api.post("/api/imports/", body, format="multipart")
    assert response.status_code == 201, response.content
    run = Run.objects.get()
    assert run.redo_bytes == 74_073_152 and run.phases["wal_replay"] == pytest.approx(0.218, abs=1e-6)
    kept = run.files.get(name="error.log")
    assert len(bytes(kept.content)) < 64 * 1024 and b"redo starts at 0/1511B00" in bytes(kept.content)


def test_an_lsn_past_a_bigint_is_stored_as_it_is(api):
    """'redo starts at FFFFFFFF/1511B00' is a position past 2^63: numeric, not a 500."""
    log = (DATA / "postgresql-15" / "crash_after_pgbench" / "server.log").read_text()
    log = log.replace("redo starts at 0/1511B00", "redo starts at FFFFFFFF/1511B00")
    log = log.replace("redo done at 0/5BB5F40", "redo done at FFFFFFFF/5BB5F40")
    body = {
        **parameters(engine="postgresql", redo_log_size="1G"),
        "error_log": upload(log.encode(), "server.log"),
    }
    response = api.post("/api/imports/", body, format="multipart")
    assert response.status_code == 201, response.content
    run = Run.objects.get()
    assert run.checkpoint_lsn == (0xFFFFFFFF << 32) + 0x1511B00 > 2**63
    assert run.redo_bytes == 74_073_152
    assert api.get(f"/api/runs/{run.pk}/").json()["metrics"]["crash_lsn"] == (0xFFFFFFFF << 32) + 0x5BB5F40


def test_a_log_with_two_crash_recoveries_makes_two_runs():
    log = (
        MARIADB_CRASH.read_bytes()
        + (DATA / "mariadb-10.11" / "innodb_after_workload" / "error.log").read_bytes()
    )
    result = services_import({"error_log": upload(log)})
    assert [r.repetition for r in result.runs] == [1, 2]
    # "Starting crash recovery from checkpoint LSN=44420", then the second log's LSN=655238
    assert [r.checkpoint_lsn for r in result.runs] == [44420, 655238]


def test_a_recovery_the_server_died_in_imports_as_a_failed_run_without_times():
    # MySQL 5.7.39: "Log scan progressed past the checkpoint lsn 19949026883" ... "Assertion failure
    # in thread 139759255815936 in file fut0lst.ic line 93", "mysqld got signal 6": never ready
    result = services_import({"error_log": upload(sample("production_logs.txt", "E"))})
    (run,) = result.runs
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED
    assert run.error.startswith("the server failed during this recovery: Assertion failure in thread")
    assert (run.checkpoint_lsn, run.redo_bytes) == (19949026883, 56)
    assert run.recovery_seconds is None and run.ready_seconds is None
    # a record of a production crash: it does not make its experiment "some runs failed" (issue 42)
    run.experiment.refresh_from_db()
    assert run.experiment.status == "done"


def test_a_restart_that_never_got_ready_crying_for_free_blocks_imports_as_a_stalled_run():
    """A real MySQL 9.7 multi-batch restart (tests/data/mysql-9.7/innodb_multi_batch) cut after
    its seventh batch, before it was ready, then InnoDB's warning as buf0lru.cc prints it
    (ER_IB_MSG_134, [MY-011959]; the DBAs' log held 247,000 of them): spliced, not a log a
    server wrote whole. It is a stalled crash restart, with no recovery time."""
    lines = (DATA / "mysql-9.7" / "innodb_multi_batch" / "error.log").read_text().splitlines()
    cut = next(i for i, line in enumerate(lines) if "Applying a batch of 842 redo log records" in line)
    warning = (
        "2026-11-27T15:06:{:02d}.147881Z 1 [Warning] [MY-011959] [InnoDB] Difficult to find free blocks in "
        "the buffer pool (21 search iterations)! 21 failed attempts to flush a page! Consider increasing "
        "the buffer pool size. Pending flushes (fsync) log: 0; buffer pool: 0. 1403 OS file reads, 0 OS "
        "file writes, 2 OS fsyncs."
    )
    log = "\n".join([*lines[:cut], *(warning.format(8 + n) for n in range(3))]) + "\n"
    result = services_import({"error_log": upload(log.encode())}, redo_log_size="128M", buffer_pool_size="8M")
    run = result.runs[-1]
    run.refresh_from_db()
    assert run.status == RunStatus.STALLED, (run.status, run.error)
    assert run.error.startswith(
        "recovery stalled: the server never became ready, writing 3 lines like: Difficult to find free blocks"
    ), run.error
    assert run.recovery_seconds is None and run.ready_seconds is None


def test_a_shutdown_tail_and_a_default_verbosity_recovery_import_as_one_run():
    # MySQL 8.0.17: a line of an earlier process, a start killed before ready, then a start whose
    # crash shows only as "[MY-010229] [Server] Starting crash recovery..."
    result = services_import({"error_log": upload(sample("production_logs.txt", "B"))})
    (run,) = result.runs
    run.refresh_from_db()
    assert run.status == RunStatus.DONE
    assert run.ready_seconds == pytest.approx(1.73383)  # 08:04:31.646815 -> 33.380645
    assert run.recovery_seconds is None and run.redo_bytes is None
    assert "logged no recovery of its own" in run.error


BAD_IMPORTS = {
    "unknown engine": ({"engine": "falcon"}, "engine"),
    "size without a unit": ({"buffer_pool_size": "2147483648"}, "buffer_pool_size"),
    "shell in a size": ({"redo_log_size": "4G;reboot"}, "redo_log_size"),
    "shell in the host label": ({"host_label": "db7$(id)"}, "host_label"),
    "negative insert rate": ({"insert_rate": "-5"}, "insert_rate"),
    "unknown zone": ({"timezone": "Mars/Olympus"}, "timezone"),
    "odd version": ({"server_version": "8.0.36; drop"}, "server_version"),
}


@pytest.mark.parametrize("label", BAD_IMPORTS)
def test_bad_parameters_get_400_on_the_field_and_store_nothing(api, label):
    overrides, field = BAD_IMPORTS[label]
    body = {**parameters(**overrides), "error_log": upload(MARIADB_CRASH.read_bytes())}
    response = api.post("/api/imports/", body, format="multipart")
    assert response.status_code == 400
    assert field in response.json()
    assert Run.objects.count() == 0 and Experiment.objects.count() == 0


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (sample("mysql80_recovery.txt", "K"), "no crash recovery was found"),
        (bytes(range(256)) * 40, "not error log"),
        (sample("sysbench_report.txt", "A"), "not error log"),
    ],
    ids=["clean start only", "binary", "a sysbench report"],
)
def test_a_log_without_a_crash_recovery_is_refused_with_the_reason(api, content, message):
    response = api.post("/api/imports/", {**parameters(), "error_log": upload(content)}, format="multipart")
    assert response.status_code == 400
    assert message in response.json()["error_log"][0]
    assert Run.objects.count() == 0


def test_myrocks_import_needs_the_rocksdb_log(api):
    response = api.post(
        "/api/imports/", {**parameters(engine="rocksdb"), "error_log": upload(b"x")}, format="multipart"
    )
    assert response.status_code == 400 and "rocksdb_log" in response.json()


def test_myrocks_import_reads_the_wal_replay_from_the_rocksdb_log(api):
    folder = DATA / "mariadb-10.11" / "myrocks_during_load"
    body = {
        **parameters(engine="rocksdb", timezone="UTC"),
        "error_log": upload((folder / "error.log").read_bytes()),
        "rocksdb_log": upload((folder / "rocksdb_LOG").read_bytes(), "LOG"),
    }
    response = api.post("/api/imports/", body, format="multipart")
    assert response.status_code == 201, response.content
    # recovery_started time_micros 1795236087439850 -> recovery_finished 1795236087525852
    assert response.json()["runs"][0]["metrics"]["recovery_seconds"] == pytest.approx(0.086002)
    # the WAL replay is a phase of its own in the breakdown, beside InnoDB's part of the restart
    assert response.json()["runs"][0]["phases"]["wal_replay"] == pytest.approx(0.086002)


def test_reparsing_an_imported_run_twice_changes_nothing():
    (run,) = services_import({"error_log": upload(MARIADB_CRASH.read_bytes())}).runs
    first = services.reparse_run(run.id)
    second = services.reparse_run(run.id)
    fields = (
        "checkpoint_lsn",
        "crash_lsn",
        "redo_bytes",
        "pages_to_recover",
        "recovery_seconds",
        "ready_seconds",
    )
    assert [getattr(first, f) for f in fields] == [getattr(second, f) for f in fields]
    assert [getattr(first, f) for f in fields] == [getattr(run, f) for f in fields]
    assert first.files.count() == second.files.count() == 2  # error.log and result.json


def test_a_large_log_keeps_the_lines_the_parser_reads_and_reparses_the_same(settings):
    settings.RAW_FILE_MAX_BYTES = 64 * 1024
    noise = b"2026-11-21  4:00:00 0 [Warning] Aborted connection 7 to db: 'sbtest' user: 'sbtest'\n" * 5000
    log = noise + MARIADB_CRASH.read_bytes() + noise
    (run,) = services_import({"error_log": upload(log)}).runs
    stored = run.files.get(name="error.log")
    assert stored.size_bytes == len(log) and len(bytes(stored.content)) < 64 * 1024
    again = services.reparse_run(run.id)
    assert (again.checkpoint_lsn, again.crash_lsn, again.recovery_seconds) == (
        run.checkpoint_lsn,
        run.crash_lsn,
        run.recovery_seconds,
    )
    assert run.checkpoint_lsn == 44420  # "Starting crash recovery from checkpoint LSN=44420"


def test_imports_need_a_logged_in_user_and_are_in_the_schema(client, api):
    body = {**parameters(), "error_log": upload(MARIADB_CRASH.read_bytes())}
    assert client.post("/api/imports/", body).status_code in (401, 403)
    assert Run.objects.count() == 0
    schema = api.get("/api/schema/")
    assert b"/api/imports/" in schema.content and b"error_log" in schema.content


def test_sizes_not_given_stay_unknown_and_every_page_takes_the_run(api, client, user):
    """Issue 34: an import whose buffer pool and redo log sizes nobody knows stores none (the form
    no longer fills 128M/512M in), and the pages that chart or group by them leave it out."""
    body = {**parameters(), "error_log": upload(sample("mysql80_recovery.txt", "A"))}
    del body["buffer_pool_size"], body["redo_log_size"]
    response = api.post("/api/imports/", body, format="multipart")
    assert response.status_code == 201, response.content
    (run,) = response.json()["runs"]
    assert run["parameters"] == {"insert_rate": 500}  # no guess stored as a fact
    stored = Run.objects.get(pk=run["id"])
    assert (stored.buffer_pool_bytes, stored.redo_log_bytes) == (None, None)
    assert run["metrics"]["recovery_seconds"] == pytest.approx(0.523445)  # measured all the same
    client.force_login(user)
    experiment = response.json()["experiment"]
    pages = [f"/experiments/{experiment}/", f"/runs/{run['id']}/", f"/experiments/{experiment}/report/"]
    pages += ["/explore/?x=redo_log_size&y=recovery_seconds", "/explore/?x=engine&y=recovery_seconds"]
    for page in pages:
        assert client.get(page).status_code == 200, page
    by_log = api.get("/api/explore/", {"x": "redo_log_size", "y": "recovery_seconds"}).json()
    assert run["id"] not in {i for series in by_log["series"] for i in series.get("run_ids", [])}
    form = client.get("/imports/new/").content.decode()
    assert 'name="buffer_pool_size" value="128M"' not in form and "empty: not known" in form
    # two experiments of one name are told apart by their ids; the intro names PostgreSQL's log
    twin = ExperimentFactory(name=Experiment.objects.get(pk=experiment).name, created_by=user)
    form = client.get("/imports/new/").content.decode()
    name = Experiment.objects.get(pk=experiment).name
    assert f">#{experiment} {name}</option>" in form and f">#{twin.pk} {name}</option>" in form
    assert "PostgreSQL" in form[form.index("<h1>") : form.index('class="experiment-form"')]


def test_a_recovery_timed_in_whole_seconds_says_so_beside_its_apply_rate(api, client, user):
    """A MariaDB log stamps whole seconds: the run page shows its recovery and apply rate with that
    resolution, not as if timed to the millisecond; MySQL 8's microseconds need no such word."""
    shown = {}
    for name, log in (
        ("mariadb", ("mariadb10_11_recovery.txt", "A")),
        ("mysql8", ("mysql80_recovery.txt", "A")),
    ):
        body = {**parameters(), "error_log": upload(sample(*log))}
        response = api.post("/api/imports/", body, format="multipart")
        assert response.status_code == 201, response.content
        client.force_login(user)
        page = client.get(f"/runs/{response.json()['runs'][0]['id']}/").content.decode()
        shown[name] = page
    assert "from whole-second stamps: ±1 s on the recovery" in shown["mariadb"]
    assert "from whole-second stamps" not in shown["mysql8"]


def test_every_import_is_listed_with_who_when_which_file_and_what_it_became(api, user):
    """Issue 68: /api/imports/ had answered 405 and nothing listed the imports."""
    body = {
        **parameters(),
        "experiment_name": "borrowed logs",
        "error_log": upload(MARIADB_CRASH.read_bytes(), "db7.err"),
    }
    made = api.post("/api/imports/", body, format="multipart")
    assert made.status_code == 201, made.content
    listed = api.get("/api/imports/")
    assert listed.status_code == 200, listed.content
    (item,) = listed.json()["results"]
    assert item["created_by"] == user.username and item["host_label"] == "mgr07.greatsql"
    assert item["experiment"] == made.json()["experiment"]
    assert item["runs"] == [run["id"] for run in made.json()["runs"]] and item["run_count"] == len(
        item["runs"]
    )
    assert item["files"] == [{"field": "error_log", "name": "db7.err", "bytes": MARIADB_CRASH.stat().st_size}]


def test_a_refused_import_lists_nothing_and_a_path_in_a_file_name_is_only_its_last_part(api):
    refused = api.post(
        "/api/imports/", {**parameters(), "error_log": upload(b"no log at all\n")}, format="multipart"
    )
    assert refused.status_code == 400 and api.get("/api/imports/").json()["count"] == 0
    named = upload(MARIADB_CRASH.read_bytes(), "../../etc/\x07mysqld.log")
    assert (
        api.post("/api/imports/", {**parameters(), "error_log": named}, format="multipart").status_code == 201
    )
    assert api.get("/api/imports/").json()["results"][0]["files"][0]["name"] == "mysqld.log"


def test_imports_stored_before_the_list_are_listed_from_their_runs():
    """0038 makes one import per error log imported before it (the same digest in one experiment)."""
    import importlib

    from django.apps import apps

    from experiments.models import LogImport

    migration = importlib.import_module("experiments.migrations.0038_log_import")
    result = services_import({"error_log": upload(MARIADB_CRASH.read_bytes())})
    LogImport.objects.all().delete()  # as before the table existed
    migration.imports_from_their_runs(apps, None)
    (item,) = LogImport.objects.all()
    assert item.created_by is None and item.experiment == result.experiment
    assert list(item.runs) == result.runs and item.run_count == len(result.runs)
    assert item.host_label == "mgr07.greatsql" and item.files[0]["name"] == "error.log"
