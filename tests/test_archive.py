"""Moving an experiment between installations: exported as one file, imported into a fresh
database (a real second PostgreSQL database, through the management commands) it charts the same;
a duplicate is refused, naming its copy; a bad archive stores nothing and says why."""

import io
import json
import re
import subprocess
import tarfile
from pathlib import Path

import pytest
from django.db import connection
from django.utils import timezone

from experiments.models import Experiment, Run, RunAttempt, RunFile, RunStatus
from experiments.pages.context import experiment_context
from experiments.services.archive import ArchiveRejected, export_experiment, import_experiment

from .conftest import MANAGE, database_url, manage_env
from .factories import ExperimentFactory, UserFactory, full_definition
from .test_analysis import done_run, noisy

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parent.parent
REAL_LOG = ROOT / "tests" / "data" / "mariadb-10.11" / "innodb_after_workload" / "error.log"


def charted(experiment_id: int) -> str:
    """What the experiment page charts and summarises, with each run id replaced by its place
    in the matrix (ids differ between installations; the matrix does not)."""
    experiment = Experiment.objects.get(pk=experiment_id)
    place = dict(experiment.runs.values_list("id", "matrix_index"))
    context = experiment_context(experiment)

    figures = json.loads(json.dumps(context["figures"], default=str))  # a copy to renumber
    for figure in figures.values():
        for trace in figure["data"]:
            if "customdata" in trace:
                trace["customdata"] = [
                    place.get(i, i) if isinstance(i, int) else i for i in trace["customdata"]
                ]
    summary = [
        [cell["cell"].label, cell["n"], [v["text"] for v in cell["values"]]] for cell in context["summary"]
    ]
    text = json.dumps({"figures": figures, "summary": summary}, sort_keys=True, default=str)
    # hover texts name runs by id too
    return re.sub(r"run (\d+) \\u00b7", lambda m: f"run @{place[int(m.group(1))]} \\u00b7", text)


@pytest.fixture
def finished():
    """Two log sizes x InnoDB/MyRocks x 3 repetitions with phases, a real error log, an attempt,
    a suspect run and an excluded one."""
    author = UserFactory(username="dana")
    experiment = ExperimentFactory(
        name="Move me",
        definition=full_definition(
            "Move me",
            engines=["innodb", "rocksdb"],
            parameters={"redo_log_size": ["64M", "512M"]},
            repetitions=3,
        ),
        created_by=author,
        tags=["baseline"],
        notes="Does the log size matter?",
        status="done",
    )
    index = 0
    for engine in ("innodb", "rocksdb"):
        for log, typical in ((64 * 2**20, 0.4), (512 * 2**20, 1.6)):
            for repetition, seconds in enumerate(noisy(index, 3, typical), start=1):
                run = done_run(
                    experiment,
                    matrix_index=index,
                    engine=engine,
                    redo_log_bytes=log,
                    repetition=repetition,
                    recovery_seconds=seconds,
                    downtime_seconds=seconds + 0.7,
                    redo_bytes=int(seconds * 80e6),
                    phases={"redo_scan": seconds / 4, "redo_apply": seconds * 3 / 4},
                    host_facts={"os": "Debian GNU/Linux 12", "cpu_count": 2},
                    finished_at=timezone.now(),
                )
                RunAttempt.objects.create(
                    run=run, number=1, worker="w1", started_at=timezone.now(), outcome="done"
                )
                RunFile.objects.create(
                    run=run,
                    name="error.log",
                    content=REAL_LOG.read_bytes(),
                    size_bytes=REAL_LOG.stat().st_size,
                )
                index += 1
    Run.objects.filter(experiment=experiment, matrix_index=1).update(suspect=True, suspect_reason="too fast")
    Run.objects.filter(experiment=experiment, matrix_index=2).update(
        excluded=True, excluded_reason="shared disk", excluded_by=author
    )
    return experiment


def exported(experiment) -> bytes:
    out = io.BytesIO()
    export_experiment(experiment, out, "lab-a")
    return out.getvalue()


def test_an_export_imported_again_charts_the_same_and_keeps_every_value(finished):
    before = charted(finished.id)
    columns = [f.name for f in Run._meta.concrete_fields if f.name not in ("id", "experiment", "host")]
    values_before = list(finished.runs.order_by("matrix_index").values(*columns))
    archive = exported(finished)
    finished.delete()  # this database no longer has it: as a fresh one

    imported = import_experiment(io.BytesIO(archive), user=UserFactory(username="erin"))
    # the same points; each is now drawn and named as a run measured elsewhere
    after = charted(imported.id)
    assert '"square"' in after and '"square"' not in before and "imported, " in after
    assert as_measured_here(after) == before
    # every value as it was, except that each run is now one measured elsewhere
    assert list(imported.runs.order_by("matrix_index").values(*columns)) == [
        {**values, "imported": True} for values in values_before
    ]
    assert imported.imported
    assert (imported.name, imported.notes, imported.tags) == (
        "Move me",
        "Does the log size matter?",
        ["baseline"],
    )
    assert imported.origin["installation"] == "lab-a" and imported.origin["author"] == "dana"
    assert imported.created_by.username == "erin"
    files = RunFile.objects.filter(run__experiment=imported)
    assert files.count() == 12 and all(bytes(f.content) == REAL_LOG.read_bytes() for f in files)
    assert RunAttempt.objects.filter(run__experiment=imported, worker="w1").count() == 12


def as_measured_here(charted_text: str) -> str:
    """charted() less the marks of imported runs (their symbol, their hover line)."""
    return re.sub(r"<br>imported, [^\"]*", "", charted_text).replace('"square"', '"circle"')


def charted_there(database: str, experiment_id: int) -> str:
    """charted() as a manage.py process working on another database answers it."""
    show = f"from tests.test_archive import charted; print(charted({experiment_id}))"
    return subprocess.run(
        [*MANAGE, "shell", "-v", "0", "-c", show],
        env=manage_env(database),
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def test_an_export_imported_into_a_fresh_database_charts_the_same(finished, fresh_database, tmp_path):
    """The literal case: a second, empty PostgreSQL database migrated and filled by the commands
    users run (exportexperiment here, importexperiment there)."""
    archive = tmp_path / "move-me.tar.gz"
    here = manage_env(connection.settings_dict["NAME"])
    subprocess.run([*MANAGE, "exportexperiment", str(finished.id), "-o", str(archive)], env=here, check=True)
    there = manage_env(fresh_database)
    subprocess.run([*MANAGE, "migrate", "-v", "0"], env=there, check=True)
    done = subprocess.run(
        [*MANAGE, "importexperiment", str(archive)], env=there, check=True, capture_output=True, text=True
    )
    new_id = int(re.search(r"imported as experiment (\d+): Move me", done.stdout).group(1))
    moved = charted_there(fresh_database, new_id)
    assert json.loads(as_measured_here(moved)) == json.loads(charted(finished.id))
    again = subprocess.run(
        [*MANAGE, "importexperiment", str(archive)], env=there, capture_output=True, text=True
    )
    assert again.returncode == 1 and f"has this experiment already: #{new_id} Move me" in again.stderr


def test_a_backup_restored_into_a_fresh_database_charts_the_same(finished, fresh_database, tmp_path):
    """docs/operations.md's backup and restore, as written there: pg_dump -Fc, pg_restore."""
    dump = tmp_path / "recovery-lab.dump"
    subprocess.run(
        ["pg_dump", "-Fc", "-f", str(dump), database_url(connection.settings_dict["NAME"])], check=True
    )
    subprocess.run(["pg_restore", "--no-owner", "-d", database_url(fresh_database), str(dump)], check=True)
    moved = charted_there(fresh_database, finished.id)
    assert json.loads(as_measured_here(moved)) == json.loads(charted(finished.id))
    # and the restored installation is at this code's schema: nothing left to migrate
    subprocess.run([*MANAGE, "migrate", "-v", "0", "--check"], env=manage_env(fresh_database), check=True)


def test_a_duplicate_is_refused_with_the_experiment_it_duplicates(api, finished):
    answer = api.post(
        "/api/experiments/import/", {"file": io.BytesIO(exported(finished))}, format="multipart"
    )
    assert answer.status_code == 409
    assert answer.json() == {
        "detail": f"this installation has this experiment already: #{finished.id} Move me",
        "existing": finished.id,
    }
    assert Experiment.objects.count() == 1


def test_the_api_exports_and_imports_and_viewers_may_only_export(api, client, finished):
    download = api.get(f"/api/experiments/{finished.id}/export/")
    assert download.status_code == 200 and download["Content-Type"] == "application/gzip"
    archive = b"".join(download.streaming_content)
    finished.delete()
    client.force_login(UserFactory(username="viewer", role="viewer"))
    assert client.get("/experiments/").status_code == 200
    assert client.post("/api/experiments/import/", {"file": io.BytesIO(archive)}).status_code == 403
    answer = api.post("/api/experiments/import/", {"file": io.BytesIO(archive)}, format="multipart")
    assert answer.status_code == 201 and len(answer.json()["runs"]) == 12


def test_the_import_page_stores_it_and_shows_a_refusal(client, user, finished):
    archive = exported(finished)
    client.force_login(user)
    refused = client.post("/experiments/import/", {"file": io.BytesIO(archive)})
    assert refused.status_code == 409
    assert f'href="/experiments/{finished.id}/"' in refused.content.decode()
    finished.delete()
    page = client.post("/experiments/import/", {"file": io.BytesIO(archive)})
    imported = Experiment.objects.get()
    assert page.status_code == 302 and page["Location"] == f"/experiments/{imported.id}/"
    assert "Imported from lab-a, where it was" in client.get(page["Location"]).content.decode()


def test_an_experiment_with_runs_still_going_is_not_exported(api, finished):
    done_run(finished, status=RunStatus.QUEUED)
    answer = api.get(f"/api/experiments/{finished.id}/export/")
    assert answer.status_code == 409 and "still has 1 run queued or running" in answer.json()["detail"]


def _archive(manifest: dict | None, extra: dict[str, bytes] | None = None) -> io.BytesIO:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, data in {
            **({"experiment.json": json.dumps(manifest).encode()} if manifest else {}),
            **(extra or {}),
        }.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    out.seek(0)
    return out


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda m: m.update(version=99), "format version 99; this installation reads version 1"),
        (lambda m: m.update(format="something"), "not an export of Recovery Lab"),
        (
            lambda m: m["runs"][3].update(status="exploded"),
            "run 4 of the archive: status: Value 'exploded' is not a valid choice.",
        ),
        (
            lambda m: m["runs"][0].update(recovery_seconds="fast"),
            "run 1 of the archive: recovery_seconds: “fast” value must be a float.",
        ),
        (lambda m: m["runs"][0].update(warp_factor=9), "run 1 of the archive: unknown columns warp_factor"),
        (
            lambda m: m["runs"][5]["files"][0].update(member="files/99/missing"),
            "the archive holds 'files/5/error.log', which the manifest does not list",
        ),
        (lambda m: m["runs"].append("not a run"), "experiment.json: runs is not a list of objects"),
        (lambda m: m["runs"][2].update(attempts={"1": {}}), "run 3 of the archive: attempts is not a list"),
        (
            lambda m: m["runs"][0]["files"][0].pop("member"),
            "the archive holds 'files/0/error.log', which the manifest does not list",
        ),
        (lambda m: m["runs"][0]["files"][0].pop("size_bytes"), "file 'error.log': no size_bytes"),
        (lambda m: m["runs"][1].update(finished_at=[2026]), "run 2 of the archive: finished_at: list is not"),
        (lambda m: m["runs"][1].update(files=[7]), "run 2 of the archive: files is not a list of objects"),
    ],
)
def test_a_bad_archive_stores_nothing_and_says_why(api, finished, change, message):
    manifest = json.loads(
        tarfile.open(fileobj=io.BytesIO(exported(finished))).extractfile("experiment.json").read()
    )
    members = {f["member"]: REAL_LOG.read_bytes() for run in manifest["runs"] for f in run["files"]}
    finished.delete()
    change(manifest)
    answer = api.post("/api/experiments/import/", {"file": _archive(manifest, members)}, format="multipart")
    assert answer.status_code == 400
    assert message in answer.json()["detail"]
    assert not Experiment.objects.exists() and not Run.objects.exists() and not RunFile.objects.exists()


def test_a_file_that_is_not_an_export_is_refused(api):
    answer = api.post("/api/experiments/import/", {"file": io.BytesIO(b"hello")}, format="multipart")
    assert answer.status_code == 400 and "not a .tar.gz archive" in answer.json()["detail"]
    answer = api.post(
        "/api/experiments/import/", {"file": _archive(None, {"notes.txt": b"hi"})}, format="multipart"
    )
    assert answer.status_code == 400
    assert answer.json()["detail"] == "the archive has no experiment.json: not an export of Recovery Lab"


def test_an_archive_cut_in_the_middle_is_refused_with_the_reason(api, finished):
    archive = exported(finished)
    finished.delete()
    for keep in (0.5, 0.9):
        cut = io.BytesIO(archive[: int(len(archive) * keep)])
        answer = api.post("/api/experiments/import/", {"file": cut}, format="multipart")
        assert answer.status_code == 400
        assert "cut short" in answer.json()["detail"] or "not a .tar.gz archive" in answer.json()["detail"]
    assert not Experiment.objects.exists() and not RunFile.objects.exists()


def test_an_archive_that_unpacks_beyond_the_bound_is_refused_before_it_is_read(api, settings):
    settings.ARCHIVE_MAX_UNPACKED_BYTES = 1 << 20
    manifest = {
        "format": "recovery-lab-experiment",
        "version": 1,
        "experiment": {},
        "runs": [{"files": [{"name": "error.log", "size_bytes": 32 << 20, "member": "zeros"}]}],
    }
    bomb = _archive(manifest, {"zeros": bytes(32 << 20)})
    answer = api.post("/api/experiments/import/", {"file": bomb}, format="multipart")
    assert answer.status_code == 400
    assert answer.json()["detail"] == "the archive's files add up to more than 1,048,576 bytes: refused"


def _manifest_of(experiment) -> tuple[dict, dict[str, bytes]]:
    manifest = json.loads(
        tarfile.open(fileobj=io.BytesIO(exported(experiment))).extractfile("experiment.json").read()
    )
    return manifest, {f["member"]: REAL_LOG.read_bytes() for run in manifest["runs"] for f in run["files"]}


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda m: m["runs"][0].update(status="queued"), "status 'queued': an archive holds finished runs"),
        (lambda m: m["runs"][0].update(host_label="=cmd|' /C calc'!A0"), "host \"=cmd|' /C calc'!A0\""),
        (lambda m: m["runs"][0].update(engine="oracle"), "engine: Value 'oracle' is not a valid choice"),
        (
            lambda m: m["runs"][0]["parameters"].update(binlog_files="abc"),
            "parameters.binlog_files: 'abc' is not a whole number",
        ),
        (lambda m: m["runs"][0]["parameters"].update(warp=9), "parameters.warp: not a parameter"),
        (
            lambda m: m["runs"][0].update(server_options={"innodb_flush_log_at_trx_commit": 7}),
            "server_options.innodb_flush_log_at_trx_commit",
        ),
        (
            lambda m: m["runs"][0].update(server_options={"init_file": "/etc/shadow"}),
            "server_options.init_file",
        ),
        (lambda m: m["experiment"].update(name="Bob's test\n"), "the experiment: name"),
        (lambda m: m["experiment"]["definition"].update(engines=["oracle"]), "definition.engines"),
    ],
)
def test_an_archive_is_checked_by_the_rules_a_run_made_here_passes(api, finished, change, message):
    manifest, members = _manifest_of(finished)
    finished.delete()
    change(manifest)
    answer = api.post("/api/experiments/import/", {"file": _archive(manifest, members)}, format="multipart")
    assert answer.status_code == 400 and message in answer.json()["detail"], answer.json()
    assert not Experiment.objects.exists() and not Run.objects.exists()


class _Counted(io.BytesIO):
    """Counts what the reader took of it."""

    taken = 0

    def read(self, size=-1):
        data = super().read(size)
        self.taken += len(data)
        return data


def test_an_archive_of_a_hundred_thousand_empty_members_stops_at_the_first_the_manifest_does_not_list(
    api, finished
):
    manifest, members = _manifest_of(finished)
    finished.delete()
    members.update({f"empty/{n}": b"" for n in range(100_000)})
    archive = _Counted(_archive(manifest, members).getvalue())
    with pytest.raises(ArchiveRejected, match="holds 'empty/0', which the manifest does not list"):
        import_experiment(archive)
    # the listed files and a little more were read: not the hundred thousand headers after them
    assert archive.taken < len(archive.getvalue()) / 4


# Issue 64, item 5b: an archive is read in one forward pass, in whatever order its members come,
# and a crafted one is a 400 with the reason, never a 500.


def _tar_gz(members: list[tuple[str, bytes]]) -> bytes:
    """The members in this order, a name twice if it is there twice."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def _with_notes(manifest: dict, members: dict[str, bytes], notes_per_run: int) -> None:
    """Each run also keeps `notes_per_run` small files of its own."""
    for run in manifest["runs"]:
        for n in range(notes_per_run):
            name, data = f"note-{n}.txt", f"run {run['matrix_index']}, note {n}\n".encode() * 40
            member = f"files/{run['matrix_index']}/{name}"
            run["files"].append({"name": name, "size_bytes": len(data), "truncated": False, "member": member})
            members[member] = data


@pytest.mark.parametrize("manifest_at", ["first", "last"])
def test_an_archive_in_reverse_order_is_imported_decompressing_its_stream_once(finished, manifest_at):
    manifest, members = _manifest_of(finished)
    _with_notes(manifest, members, notes_per_run=20)
    finished.delete()
    reversed_files = [
        (entry["member"], members[entry["member"]])
        for run in reversed(manifest["runs"])
        for entry in reversed(run["files"])
    ]
    listed = [("experiment.json", json.dumps(manifest).encode())]
    archive = _Counted(
        _tar_gz(listed + reversed_files if manifest_at == "first" else reversed_files + listed)
    )

    imported = import_experiment(archive, user=UserFactory(username="erin"))
    # one pass: no compressed byte is read twice (each member read out of order had rewound the
    # gzip stream and decompressed it again from the start)
    assert archive.taken <= len(archive.getvalue())
    assert imported.runs.count() == 12
    kept = RunFile.objects.filter(run__experiment=imported)
    assert kept.count() == 12 * 21
    note = kept.get(run__matrix_index=7, name="note-13.txt")
    assert bytes(note.content) == b"run 7, note 13\n" * 40
    assert bytes(kept.get(run__matrix_index=0, name="error.log").content) == REAL_LOG.read_bytes()


def _duplicate_run(manifest, members):
    manifest["runs"][4]["matrix_index"] = manifest["runs"][1]["matrix_index"]


def _duplicate_attempt(manifest, members):
    manifest["runs"][2]["attempts"].append(dict(manifest["runs"][2]["attempts"][0]))


def _duplicate_file(manifest, members):
    manifest["runs"][3]["files"].append(dict(manifest["runs"][3]["files"][0]))


@pytest.mark.parametrize(
    "craft, message",
    [
        (_duplicate_run, "runs 2 and 5 of the archive are both cell 1 of the matrix"),
        (_duplicate_attempt, "run 3 of the archive: attempt 1 is there twice"),
        (_duplicate_file, "run 4 of the archive: file 'error.log' is there twice"),
    ],
)
def test_a_crafted_archive_of_duplicates_is_a_400_that_says_which_and_stores_nothing(
    api, finished, craft, message
):
    manifest, members = _manifest_of(finished)
    finished.delete()
    craft(manifest, members)
    answer = api.post("/api/experiments/import/", {"file": _archive(manifest, members)}, format="multipart")
    assert answer.status_code == 400
    assert message in answer.json()["detail"], answer.json()
    assert not Experiment.objects.exists() and not Run.objects.exists() and not RunFile.objects.exists()


@pytest.mark.parametrize(
    "order, message",
    [
        ("member twice", "the archive holds 'files/0/error.log' twice"),
        ("manifest twice", "the archive holds 'experiment.json' twice"),
        ("no manifest", "the archive has no experiment.json: not an export of Recovery Lab"),
    ],
)
def test_an_archive_with_a_member_twice_or_none_listing_it_is_a_400(api, finished, order, message):
    manifest, members = _manifest_of(finished)
    finished.delete()
    listed = [("experiment.json", json.dumps(manifest).encode())]
    files = list(members.items())
    craft = {
        "member twice": listed + files + [("files/0/error.log", b"another log")],
        "manifest twice": listed + files + listed,
        "no manifest": files,
    }[order]
    answer = api.post("/api/experiments/import/", {"file": io.BytesIO(_tar_gz(craft))}, format="multipart")
    assert answer.status_code == 400
    assert answer.json()["detail"] == message
    assert not Experiment.objects.exists() and not RunFile.objects.exists()


def test_the_import_page_answers_a_duplicate_run_with_400_and_the_reason(client, user, finished):
    manifest, members = _manifest_of(finished)
    finished.delete()
    _duplicate_run(manifest, members)
    client.force_login(user)
    page = client.post("/experiments/import/", {"file": _archive(manifest, members)})
    assert page.status_code == 400
    assert "runs 2 and 5 of the archive are both cell 1 of the matrix" in page.content.decode()
    assert not Experiment.objects.exists()
