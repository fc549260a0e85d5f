"""Crash images (crash.one_crash, runner/image.py) are named for one run of one dashboard (issue 64,
item 6b). Run ids are each dashboard's own, and two dashboards may share a host
(docs/operations.md): images named `run-<id>` alone had one dashboard's keeping overwrite the
other's image and its last restart remove it. The name carries the experiment's uid too."""

import dataclasses
import json
import os
from pathlib import Path

import pytest
from django.db import connection

from experiments import services
from experiments.models import Run, RunFile, RunStatus
from experiments.services.runs import run_spec
from runner import image
from runner.events import Clock
from runner.runner import open_server
from runner.stamper import LogStamper

from .test_crash_image import ONE_CRASH


def _dashboard_s_runs(next_run_id: int | None = None) -> list[Run]:
    """A dashboard's one-crash experiment: its lead (which keeps the image), then its restarts.
    `next_run_id`: where this dashboard's run ids start (another dashboard's database counts its own)."""
    if next_run_id is not None:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT setval(pg_get_serial_sequence('experiments_run', 'id'), %s, false)", [next_run_id]
            )
    experiment, _ = services.create_experiment(ONE_CRASH)
    return list(experiment.runs.order_by("id"))


def _spec(run: Run, base: Path):
    """What the dashboard sends when the run is claimed, for the host's work directory `base`."""
    return dataclasses.replace(run_spec(run), work_dir=str(base))


def _keep(base: Path, spec, datadir_holds: bytes) -> None:
    """The lead's crash kept, as the runner keeps it after its kill: its datadir holds `datadir_holds`."""
    work = base / f"run-{spec.run_id}-keeping-{os.urandom(4).hex()}"
    work.mkdir(mode=0o755)
    server = open_server(work, spec, Clock(), LogStamper(work / "none", work / "none.stamped", Clock()))
    server.datadir.mkdir()
    (server.datadir / "ibdata1").write_bytes(datadir_holds)
    server.error_log.write_bytes(b"[Note] InnoDB: Starting crash recovery\n")
    result = {"times": {"killed": Clock().now()}}
    image.keep(base, spec.image["keep"], server, work, result, None)


def _restore(base: Path, spec) -> bytes:
    """A restart of the image, as the runner restores it (and removes it after the last one):
    what its datadir holds."""
    work = base / f"run-{spec.run_id}-restoring-{os.urandom(4).hex()}"
    work.mkdir(mode=0o755)
    clock = Clock()
    server = open_server(work, spec, clock, LogStamper(work / "none", work / "none.stamped", clock))
    image.restore(base, spec.image["restore"], server, work, {"times": {}}, clock)
    if spec.image.get("remove"):
        image.remove(base, spec.image["restore"])
    return (server.datadir / "ibdata1").read_bytes()


@pytest.mark.django_db
def test_two_dashboards_runs_of_one_id_on_one_host_keep_two_images_and_remove_only_their_own(
    local_host, tmp_path
):
    first, *restarts_first = _dashboard_s_runs()
    keeps_first = _spec(first, tmp_path)
    restores_first = [_spec(restart, tmp_path) for restart in restarts_first]  # each waits for its turn
    Run.objects.all().delete()  # the other dashboard's database: its run ids count from the same place
    second, *restarts_second = _dashboard_s_runs(next_run_id=first.id)
    assert second.id == first.id
    keeps_second = _spec(second, tmp_path)

    _keep(tmp_path, keeps_first, b"the first dashboard's crash")
    _keep(tmp_path, keeps_second, b"the second dashboard's crash")
    for restart in restarts_second:  # the second's restarts, one after another; its last removes its image
        assert _restore(tmp_path, _spec(restart, tmp_path)) == b"the second dashboard's crash"
        Run.objects.filter(id=restart.id).update(status=RunStatus.DONE)
    assert not (tmp_path / image.IMAGES / keeps_second.image["keep"]).exists()
    for spec in restores_first:  # the first dashboard's image is whole, and its own
        assert _restore(tmp_path, spec) == b"the first dashboard's crash"
    assert keeps_first.image["keep"] != keeps_second.image["keep"]


@pytest.mark.django_db
def test_a_restart_asks_for_the_image_its_lead_said_it_kept(local_host):
    """An image kept before its name carried the experiment's uid (`run-<id>`): the restarts
    queued then restore it by the name its lead's result says."""
    lead, restart, *_ = _dashboard_s_runs()
    said = json.dumps({"status": "done", "image": {"kept": f"run-{lead.id}"}}).encode()
    RunFile.objects.create(run=lead, name="result.json", content=said, size_bytes=len(said))
    assert run_spec(restart).image["restore"] == f"run-{lead.id}"
