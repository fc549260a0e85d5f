"""One crash, recovered many ways (issue 55, runner/image.py), on a real MariaDB: a run crashes at
its redo target and keeps the state the kill left; another restarts a copy of it with a larger
buffer pool and a cold page cache. It replays the same redo, to the byte, from the same
checkpoint to the same crash LSN; nothing is loaded or run for it; it removes the image."""

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from django.conf import settings

from experiments import services
from experiments.definition import DefinitionError, validate_definition
from experiments.ingest.bundle import analyse_run
from experiments.models import Run, RunStatus
from experiments.services.images import image_name
from experiments.services.runs import run_spec
from runner.contract import RunFailed, RunSpec

from .test_end_to_end import runner_command
from .test_postgresql_runs import run_to_the_end


def run_runner(folder: Path, spec: dict) -> dict:
    """The runner zip as a transport runs it; its result.json, whatever the run's outcome."""
    (folder / "spec.json").write_text(json.dumps(spec))
    done = subprocess.run(runner_command(folder, "b"), capture_output=True, text=True, timeout=300)
    (folder / "events.jsonl").write_text(done.stdout)  # its progress, as the worker reads it
    return json.loads((folder / "b" / "result.json").read_text())


def spec(run_id: int, pool: str, cache: str, image: dict) -> dict:
    return {
        "run_id": run_id,
        "engine": "innodb",
        "parameters": {"buffer_pool_size": pool, "redo_log_size": "256M", "restart_cache": cache},
        "workload": {"name": "oltp_write_only", "tables": 2, "table_size": 5000, "threads": 2,
                     "events": 0, "time_seconds": 120},
        "crash": {"method": "sigkill", "when": "at_redo_bytes", "redo_bytes": "8M"},
        # as seed 000: the log written at each commit, synced each second, read through the cache
        "server_options": {"innodb_flush_log_at_trx_commit": 2},
        "work_dir": str(settings.RUNNER_DISK_WORK_DIR),  # on a disk: a cold restart evicts
        "start_timeout_s": 120,
        "image": image,
    }  # fmt: skip


@pytest.mark.mariadb
def test_one_crash_kept_then_restarted_cold_with_a_larger_pool_replays_the_same_redo(tmp_path):
    name = f"test-{os.getpid()}"
    images = Path(settings.RUNNER_DISK_WORK_DIR) / "images"
    read = {}
    for run_id, pool, cache, image in (
        (4101, "128M", "warm", {"keep": name}),
        (4103, "512M", "cold", {"restore": name, "remove": True}),
    ):
        folder = tmp_path / str(run_id)
        folder.mkdir()
        result = run_runner(folder, spec(run_id, pool, cache, image))
        assert result["status"] == "done", result.get("error")
        files = {p.name: p.read_bytes() for p in (folder / "b").iterdir() if p.is_file()}
        read[run_id] = (result, analyse_run(result, files, "innodb", 256 << 20))
        if run_id == 4101:  # kept whole, root's alone, before its own restart
            said = [json.loads(line).get("message", "") for line in (folder / "events.jsonl").open()]
            assert any(re.fullmatch(r"running oltp_write_only: \d\.\d of 8 MiB of redo to replay \(\d+%\)", m)
                       for m in said), said  # fmt: skip
            assert result["image"]["kept"] == name and (images / name / "MANIFEST.json").is_file()
            # keeping the image is the lab's step, not downtime (seed 000's keeper had counted 43 s)
            times, analysis = result["times"], read[run_id][1]
            steps = (("image_started", "image_kept"), ("cache_started", "cache_settled"))
            lab = sum(times[end] - times[start] for start, end in steps)
            assert (
                times["killed"] <= times["image_started"] < times["image_kept"] <= times["recovery_spawned"]
            )
            assert analysis.metrics["downtime_seconds"] == pytest.approx(
                times["recovery_first_query"] - times["killed"] - lab, abs=1e-5
            )
            assert any(
                bar["name"].startswith("the lab's copy of the crash") for bar in analysis.timeline["bars"]
            )
            assert (images / name).stat().st_mode & 0o077 == 0 and (
                images / name
            ).stat().st_uid == os.geteuid()
    kept, restored = read[4101], [read[4103]]
    for result, analysis in restored:
        # nothing of its own before the restart: the kill's state, the image's files and facts
        assert result["image"]["restored"] == name and "workload_ended" in result["times"]
        assert result["dataset"] == kept[0]["dataset"] and result["crash_plan"] == kept[0]["crash_plan"]
        for metric in ("redo_bytes", "checkpoint_lsn", "crash_lsn"):
            assert analysis.metrics[metric] == kept[1].metrics[metric] and analysis.metrics[metric], metric
        assert analysis.metrics["recovery_seconds"] > 0 and analysis.metrics["verified"] is True
        # its moments on its own clock: the workload's before its kill, its restart after
        times = result["times"]
        assert (
            times["workload_started"] < times["workload_ended"] <= times["killed"] < times["recovery_spawned"]
        )
        assert analysis.metrics["downtime_seconds"] > 0
        answered = round(times["recovery_first_query"] - times["recovery_spawned"], 6)  # as stored: µs
        assert 0 < analysis.metrics["ready_seconds"] <= answered
    # the image's log lines were read before the restart's moment, its own lines after it; and the
    # restart is read from its own lines even where the image's were stamped 0.85 ms before its spawn
    # (a slack of a millisecond had read the image's start as the restart's: ready at -0.00085 s)
    result, analysis = restored[0]
    spawned, folder = result["times"]["recovery_spawned"], tmp_path / "4103" / "b"
    files = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    stamped = files["error.log.stamped"].decode().splitlines()
    moments = [float(re.match(r"\[runner ([0-9.]+)\]", line).group(1)) for line in stamped]
    image_lines = sum(moment < spawned for moment in moments)
    assert 0 < image_lines < len(stamped) and moments[image_lines - 1] <= result["times"]["cache_settled"]
    assert all(moment >= spawned for moment in moments[image_lines:])
    late = [
        re.sub(r"^\[runner [0-9.]+\]", f"[runner {spawned - 0.00085:.6f}]", line)
        for line in stamped[:image_lines]
    ]
    files["error.log.stamped"] = "\n".join(late + stamped[image_lines:]).encode() + b"\n"
    assert (
        analyse_run(result, files, "innodb", 256 << 20).metrics["ready_seconds"]
        == analysis.metrics["ready_seconds"]
    )
    # each restart under its own settings: the pool it was given, the page cache it asked for
    assert restored[0][0]["effective_settings"]["innodb_buffer_pool_size"] == str(512 << 20)
    assert kept[0]["effective_settings"]["innodb_buffer_pool_size"] == str(128 << 20)
    assert (
        restored[0][0]["restart_cache"]["mode"] == "cold"
        and restored[0][0]["restart_cache"]["resident_bytes"] == 0
    )
    assert restored[0][0]["image"]["buffer_pool_size"] == "128M"  # the workload's, said on its page
    for result, _ in (kept, *restored):  # MDEV-28766: innodb_flush_log_at_trx_commit=2 buffers the log
        assert result["effective_settings"]["innodb_log_file_buffering"] == "ON"
        assert result["restart_cache"]["redo_direct"] is False
    assert not (images / name).exists(), "the last restart removes the image"


@pytest.mark.mariadb
def test_a_missing_image_fails_its_restart_for_good_and_the_spec_says_what_an_image_takes(tmp_path):
    folder = tmp_path / "r"
    folder.mkdir()
    result = run_runner(folder, spec(4104, "128M", "warm", {"restore": "never-kept"}))
    assert result["status"] == "failed" and result["permanent"] is True
    assert "crash image never-kept is not on this host" in result["error"]
    # a run the disk cannot hold fails for good before it loads anything (issue 55, item 5)
    huge = spec(4105, "128M", "warm", {"keep": "too-big"})
    huge["workload"] = {**huge["workload"], "tables": 64, "table_size": 10**9}
    result = run_runner(folder, huge)
    assert result["status"] == "failed" and result["permanent"] is True, result.get("error")
    assert "disk is too small for this run: it needs about" in result["error"]
    assert "the crash image and a restore's copy" in result["error"] and "dataset" not in result
    for image, said in (
        ({"keep": "a", "restore": "b"}, "names one crash image"),
        ({"keep": "../x"}, "names one crash image"),
        ({"keep": "a", "remove": True}, "only for a restore"),
        ({"keep": "a", "other": 1}, "takes keep, restore and remove only"),
    ):
        with pytest.raises(RunFailed, match=said):
            RunSpec.from_dict(spec(1, "128M", "warm", image))
    with pytest.raises(RunFailed, match="after a kill -9 only"):
        RunSpec.from_dict(
            {
                **spec(1, "128M", "warm", {"keep": "a"}),
                "crash": {"method": "power_loss", "when": "after_workload"},
            }
        )
    shutil.rmtree(folder, ignore_errors=True)


ONE_CRASH = {
    "name": "One crash, two pools",
    "hosts": ["local"],
    "engines": ["innodb"],
    "parameters": {"buffer_pool_size": ["128M", "512M"], "redo_log_size": ["256M"]},
    "workload": {"name": "oltp_write_only", "tables": 2, "table_size": 5000, "threads": 2,
                 "time_seconds": 120},
    "crash": {"method": "sigkill", "when": "at_redo_bytes", "redo_bytes": "8M", "one_crash": True},
    "repetitions": 2,
}  # fmt: skip


def test_a_definition_s_one_crash_groups_the_runs_alike_in_all_but_the_restart_s_settings():
    """The runs that differ only in the restart's own parameters (pool, page cache, storage,
    profile) and their repetition restart one crash; a parameter that shapes the workload (the redo
    log) makes a crash of its own; what an image does not keep yet is refused with why."""
    body = {**ONE_CRASH, "parameters": {**ONE_CRASH["parameters"], "redo_log_size": ["256M", "512M"],
                                         "restart_cache": ["warm", "cold"]}}  # fmt: skip
    specs = list(validate_definition(body, ["local"]).expand())
    keys = {spec.image_key for spec in specs}
    assert len(specs) == 16 and len(keys) == 2, keys
    for key in keys:
        alike = [spec for spec in specs if spec.image_key == key]
        assert len({spec.parameters["redo_log_size"] for spec in alike}) == 1 and len(alike) == 8
    each_its_own = {**body, "crash": {**body["crash"], "one_crash": False}}
    assert {spec.image_key for spec in validate_definition(each_its_own, ["local"]).expand()} == {""}
    for crash, parameters, said in (
        ({"method": "power_loss", "when": "after_workload", "one_crash": True}, {}, "takes method sigkill"),
        (ONE_CRASH["crash"], {"binlog_files": [10]}, "binary log files"),
    ):
        with pytest.raises(DefinitionError) as refused:
            asked = {**ONE_CRASH, "crash": crash, "parameters": {**ONE_CRASH["parameters"], **parameters}}
            validate_definition(asked, ["local"])
        assert any(said in message for message in refused.value.errors["crash.one_crash"]), (
            refused.value.errors
        )


@pytest.mark.django_db
def test_the_restarts_of_a_crash_never_kept_fail_saying_whose_crash(local_host):
    experiment, _ = services.create_experiment(ONE_CRASH)
    lead, *restarts = experiment.runs.order_by("id")
    assert lead.image_of_id is None and [run.image_of_id for run in restarts] == [lead.id] * 3
    assert run_spec(lead).image == {"keep": f"run-{lead.id}-{experiment.uid}"}  # its dashboard's alone
    assert run_spec(restarts[0]).image == {"restore": f"run-{lead.id}-{experiment.uid}", "remove": False}
    assert (
        not services.has_claimable_run(local_host.id)
        or services.claim_next_run(local_host.id, "w")[0] == lead
    )
    services.mark_run_failed(lead.id, "the server never started")
    for run in experiment.runs.exclude(id=lead.id):
        assert run.status == RunStatus.FAILED, run.status
        assert run.error == f"its crash image was never kept: run {lead.id}, which makes the crash, failed"


@pytest.mark.mariadb
@pytest.mark.django_db(transaction=True)
def test_one_crash_restarted_by_the_dashboard_s_runs_each_replays_it_under_its_own_pool(
    api, client, user, local_host, celery_worker_process
):
    experiment = run_to_the_end(api, ONE_CRASH)
    runs = list(Run.objects.filter(experiment_id=experiment).order_by("id"))
    assert [run.status for run in runs] == ["done"] * 4, [run.error for run in runs]
    lead = runs[0]
    assert [run.image_of_id for run in runs] == [None, lead.id, lead.id, lead.id]
    for run in runs:  # the same crash, to the byte; each restart under its own pool
        assert (run.redo_bytes, run.checkpoint_lsn, run.crash_lsn) == (
            lead.redo_bytes, lead.checkpoint_lsn, lead.crash_lsn
        ) and lead.crash_lsn, run.id  # fmt: skip
        assert run.effective_settings["innodb_buffer_pool_size"] == str(run.buffer_pool_bytes)
        assert run.recovery_seconds is not None and run.verified is True
        # the workload was measured once, by the run that made the crash: no copy counts as a sample
        if run.image_of_id:
            assert run.workload_tps is None and run.log_bytes_written is None, (run.id, run.workload_tps)
    client.force_login(user)
    page = client.get(f"/runs/{runs[1].id}/").content.decode()
    assert (
        f"Restarted from a copy of run {lead.id}&#x27;s crash (crash.one_crash): no workload of its own"
        in page
        and "the workload&#x27;s buffer pool is 128M, this restart&#x27;s 512M" in page
    ), page[:3000]
    assert "3 runs restarted copies of it" in client.get(f"/runs/{lead.id}/").content.decode()
    experiment_page = client.get(f"/experiments/{experiment}/").content.decode()
    assert (
        "All 4 runs restart one crash (crash.one_crash): they differ by their restart alone."
        in experiment_page
    )
    assert not (Path(settings.RUNNER_WORK_DIR) / "images" / image_name(lead)).exists(), "left behind"


def test_an_image_its_runs_left_behind_is_removed_by_a_later_run_after_a_day(tmp_path):
    """Images whose restarts were cancelled or failed are not kept for ever: a run's runner removes
    those older than IMAGE_HOURS, and leaves a fresh one (another experiment's, still in use)."""
    from runner import image

    old, fresh = image.images_root(tmp_path) / "run-1", image.images_root(tmp_path) / "run-2"
    for entry in (old, fresh):
        (entry / "data").mkdir(parents=True)
    long_ago = time.time() - (image.IMAGE_HOURS + 1) * 3600
    os.utime(old, (long_ago, long_ago))
    assert image.remove_stale(tmp_path) == ["run-1"] and not old.exists() and fresh.is_dir()


def test_the_form_offers_one_crash_and_run_again_keeps_it():
    """The new-experiment form's checkbox sets crash.one_crash; the form filled from a definition
    that has it ("run again") has it ticked, and gives it back."""
    from experiments.pages.forms import ExperimentForm

    definition = validate_definition(ONE_CRASH, ["local"]).as_dict()
    filled = {"events": 0, **ExperimentForm.initial_from(definition)}
    assert filled["one_crash"] is True
    sent = {key: value for key, value in filled.items() if value is not None and value is not False}
    form = ExperimentForm(data=sent, host_names=["local"])
    assert form.is_valid(), form.errors
    assert form.definition()["crash"]["one_crash"] is True
    unticked = ExperimentForm(data={k: v for k, v in sent.items() if k != "one_crash"}, host_names=["local"])
    assert unticked.is_valid(), unticked.errors
    assert "one_crash" not in unticked.definition()["crash"]
