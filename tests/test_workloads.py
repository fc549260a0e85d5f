"""The workloads of the project's own (sysbench Lua scripts shipped with the runner), each in a
real run through the worker on InnoDB and MyRocks, its rate recorded as for sysbench's own."""

import pytest

from experiments.definition import DefinitionError, validate_definition
from experiments.models import Run, RunFile
from runner import contract

from .conftest import runner_processes, wait_for

REAL = [pytest.mark.mariadb, pytest.mark.django_db(transaction=True)]


def definition(workload: dict, **extra) -> dict:
    return {"name": "w", "hosts": ["local"], "engines": ["innodb"], "workload": workload, **extra}


@pytest.mark.parametrize(
    "raw, field, says",
    [
        (
            definition({"name": "long_transaction"}, crash={"when": "after_workload"}),
            "crash.when",
            "only while it runs",
        ),
        (definition({"name": "oltp_insert", "open_rows": 10}), "workload.open_rows", "only long_transaction"),
        (
            definition({"name": "tpcc_like"}, parameters={"insert_rate": [100]}),
            "parameters.insert_rate",
            "inserts no rows",
        ),
    ],
)
def test_the_workloads_own_settings_are_checked(raw, field, says):
    with pytest.raises(DefinitionError) as refused:
        validate_definition(raw, ["local"])
    assert says in " ".join(refused.value.errors[field])


def test_a_long_transaction_keeps_its_rows_and_the_others_have_none():
    long = validate_definition(
        definition({"name": "long_transaction"}, crash={"when": "during_workload", "after_seconds": 5}),
        ["local"],
    )
    assert long.as_dict()["workload"]["open_rows"] == contract.DEFAULT_OPEN_ROWS
    assert (
        "open_rows"
        not in validate_definition(definition({"name": "tpcc_like"}), ["local"]).as_dict()["workload"]
    )


def finished(api, body: dict, count: int) -> list[Run]:
    created = api.post("/api/experiments/", body, format="json")
    assert created.status_code == 201, created.content
    runs = Run.objects.filter(experiment_id=created.json()["id"]).order_by("engine")
    wait_for(
        lambda: all(r.is_finished for r in runs.all()), timeout_s=600, what=f"{count} runs", interval_s=1
    )
    assert [r.status for r in runs] == ["done"] * count, [r.error for r in runs]
    return list(runs)


def prepared(run: Run) -> str:
    """What the script printed while it loaded its tables (a dataset copied from the cache: "")."""
    kept = RunFile.objects.filter(run=run, name="sysbench_prepare.txt").first()
    return bytes(kept.content).decode() if kept else ""


@pytest.mark.mariadb
@pytest.mark.django_db(transaction=True)
@pytest.mark.quiet
def test_insert_indexed_holds_its_rate_on_both_engines_and_loads_its_own_schema(
    api, local_host, celery_worker_process
):
    """iiBench-like inserts into a table with three secondary indexes at 300 rows/s for a fixed
    number of rows, crashed after them; its dataset is its own (not sysbench's OLTP tables)."""
    body = {
        "name": "insert_indexed on both engines",
        "hosts": ["local"],
        "engines": ["innodb", "rocksdb"],
        "parameters": {"redo_log_size": ["256M"], "insert_rate": [300]},
        "workload": {"name": "insert_indexed", "tables": 2, "table_size": 5000, "threads": 2, "events": 1200},
        "crash": {"method": "sigkill", "when": "after_workload"},
        "repetitions": 1,
    }
    created = api.post("/api/experiments/", body, format="json")
    assert created.status_code == 201, created.content
    runs = Run.objects.filter(experiment_id=created.json()["id"])
    wait_for(lambda: all(r.is_finished for r in runs.all()), timeout_s=600, what="2 runs", interval_s=1)
    assert [r.status for r in runs] == ["done", "done"], [r.error for r in runs]
    for run in runs:
        # sysbench's own count and rate, as for its built-in workloads
        assert run.rows_inserted == 1200 and 270 <= run.achieved_insert_rate <= 330, run.achieved_insert_rate
        assert "insert rate not reached" not in run.error
        assert run.downtime_seconds is not None, run
        if run.engine == "innodb":
            assert run.redo_bytes > 0 and run.recovery_seconds is not None, run
        # the script loaded its own tables (the OLTP datasets of other tests are not reused for it)
        prepared = RunFile.objects.filter(run=run, name="sysbench_prepare.txt").first()
        if not run.dataset_reused:
            assert prepared is not None
            assert "Creating table 'sbtest1' with 3 secondary indexes" in bytes(prepared.content).decode()
    assert runner_processes() == []


@pytest.mark.mariadb
@pytest.mark.django_db(transaction=True)
def test_tpcc_like_on_both_engines_commits_what_it_said_and_recovers_it(
    api, local_host, celery_worker_process
):
    """Order-entry transactions over one warehouse, crashed after them: each engine's tables
    after recovery are the tables before the kill (the runner's checksums of its nine tables)."""
    workload = {"name": "tpcc_like", "tables": 1, "table_size": 2000, "threads": 2, "events": 600}
    body = {**definition(workload), "engines": ["innodb", "rocksdb"], "crash": {"when": "after_workload"}}
    for run in finished(api, body, 2):
        assert run.verified is True and run.workload_tps > 0, run
        assert run.downtime_seconds is not None
        if not run.dataset_reused:
            assert "Loading warehouse 1: 10 districts, 3000 customers, 2000 stock rows" in prepared(run)
    assert runner_processes() == []


@pytest.mark.mariadb
@pytest.mark.django_db(transaction=True)
def test_long_transaction_leaves_its_rows_for_recovery_to_roll_back(api, local_host, celery_worker_process):
    """oltp_write_only with a transaction of 20,000 rows open beside it, killed mid-workload:
    InnoDB's recovery rolls those rows back (MyRocks never wrote an uncommitted one)."""
    workload = {"name": "long_transaction", "tables": 2, "table_size": 20000, "threads": 2, "events": 0,
                "time_seconds": 60, "open_rows": 20000}  # fmt: skip
    body = {
        **definition(workload),
        "engines": ["innodb", "rocksdb"],
        "crash": {"when": "during_workload", "after_seconds": 6},
    }
    runs = finished(api, body, 2)
    innodb = next(r for r in runs if r.engine == "innodb")
    assert innodb.rows_undone >= 20000 and innodb.trx_rolled_back >= 1, (
        innodb.rows_undone,
        innodb.trx_rolled_back,
    )
    assert all(r.downtime_seconds is not None for r in runs)
    assert runner_processes() == []
