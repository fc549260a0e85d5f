"""The workloads of the project's own (sysbench Lua scripts shipped with the runner), each in a
real run through the worker on InnoDB and MyRocks, its rate recorded as for sysbench's own."""

import pytest

from experiments.models import Run, RunFile

from .conftest import runner_processes, wait_for

pytestmark = [pytest.mark.mariadb, pytest.mark.django_db(transaction=True)]


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
    wait_for(lambda: all(r.is_finished for r in runs), timeout_s=600, what="2 runs", interval_s=1)
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
