"""Importing runs done elsewhere: logs and snapshots of a crash recovery, with its parameters.

`import_runs` is the one way in, for the import page and `POST /api/imports/`. It validates every
parameter against an allow-list, parses the error log, and creates one imported Run per crash
recovery the log holds (a production log may hold several), with the raw files stored like a
live run's, so `reparse` recomputes it the same way. Nothing is stored when anything is wrong.
"""

import hashlib
import json
import re
from dataclasses import dataclass
from typing import BinaryIO
from zoneinfo import ZoneInfo, available_timezones

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Max
from django.utils import timezone

from experiments.definition import EXPERIMENT_NAME, DefinitionError, int_between
from experiments.engines import engine as engine_named
from experiments.models import Engine, Experiment, ExperimentStatus, LogImport, Run, RunStatus
from experiments.parsers import parse_bytes, reduce_error_log
from experiments.services import (
    TRUNCATION_MARKER,
    apply_metrics,
    mark_stalled,
    refresh_experiment_status,
    store_files,
)
from recovery_lab_cli.units import SizeError, format_size, parse_size

# Upload field -> the file name analysis reads (the names a live run's bundle uses).
IMPORT_FILES = {
    "error_log": "error.log",
    "innodb_status_before": "innodb_status_before_run.txt",
    "innodb_status_at_crash": "innodb_status_at_crash.txt",
    "innodb_status_after": "innodb_status_after_recovery.txt",
    "rocksdb_status_at_crash": "rocksdb_status_at_crash.txt",
    "rocksdb_log": "rocksdb_LOG",
    "sysbench_report": "sysbench_report.txt",
}
MAX_RUNS_PER_IMPORT = 50
# The definition of an experiment that holds imported runs (nothing to run).
IMPORTS_DEFINITION = {"imported": True}
SERVER_VERSION = re.compile(r"^[A-Za-z0-9][\w.+~:-]{0,119}$")
HOST_LABEL = re.compile(r"^[A-Za-z0-9][\w.@:-]{0,99}$")
MAX_INSERT_RATE = 10_000_000
MAX_REDO_BYTES = 10**12 - 1  # what a 12-digit form value holds


class ImportRejected(DefinitionError):
    """An import that cannot be stored; `errors` maps a field to its messages."""


@dataclass
class ImportParameters:
    engine: str
    # None: not known (never a guess stored as a fact)
    buffer_pool_size: str | None
    redo_log_size: str | None
    insert_rate: int
    host_label: str
    server_version: str
    timezone: str
    redo_bytes: int | None


@dataclass
class ImportResult:
    experiment: Experiment
    runs: list[Run]
    warnings: list[str]


def validate_import(data: dict) -> ImportParameters:
    """The run's parameters, normalised, or ImportRejected with a message per field."""
    errors: dict[str, list[str]] = {}

    def fail(field: str, message: str) -> None:
        errors.setdefault(field, []).append(message)

    engine = str(data.get("engine") or "").strip()
    if engine not in Engine.values:
        fail("engine", f"choose one of {', '.join(Engine.values)}")
    sizes: dict[str, str | None] = {}
    for field in ("buffer_pool_size", "redo_log_size"):
        text = str(data.get(field) or "").strip()
        if not text:  # not known: it stays unknown
            sizes[field] = None
            continue
        try:
            sizes[field] = format_size(parse_size(text))
        except SizeError as exc:
            fail(field, str(exc))
    insert_rate = 0
    try:
        insert_rate = int_between(0, MAX_INSERT_RATE)(data.get("insert_rate") or 0)
    except ValueError:
        fail("insert_rate", f"a whole number of rows per second, 0..{MAX_INSERT_RATE} (0: unthrottled)")
    host_label = str(data.get("host_label") or "").strip()
    if not HOST_LABEL.match(host_label):
        fail("host_label", "letters, digits, '.', '_', '-', '@', ':'; at most 100; e.g. db7.prod")
    server_version = str(data.get("server_version") or "").strip()
    if server_version and not SERVER_VERSION.match(server_version):
        fail("server_version", "a version such as 8.0.36 or 5.7.44-48 (letters, digits, . + ~ : -)")
    zone = str(data.get("timezone") or "UTC").strip()
    if zone not in available_timezones() and zone != "UTC":
        fail("timezone", "an IANA zone name such as UTC or Europe/Paris: the zone of the log's local times")
    redo_bytes = None
    if data.get("redo_bytes") not in (None, ""):
        try:
            redo_bytes = int_between(0, MAX_REDO_BYTES)(data["redo_bytes"])
        except ValueError:
            fail("redo_bytes", "a whole number of bytes")
    if errors:
        raise ImportRejected(errors)
    return ImportParameters(
        engine=engine,
        buffer_pool_size=sizes["buffer_pool_size"],
        redo_log_size=sizes["redo_log_size"],
        insert_rate=insert_rate,
        host_label=host_label,
        server_version=server_version,
        timezone=zone,
        redo_bytes=redo_bytes,
    )


def _read_kept(name: str, upload: BinaryIO, size: int) -> bytes:
    """What is stored of an upload: all of it, or for a large error log the lines the parser
    reads (re-parsing them gives the same result), or else its head and tail."""
    limit = settings.RAW_FILE_MAX_BYTES
    upload.seek(0)
    if size <= limit:
        return upload.read()
    if name == "error.log":
        reduced = reduce_error_log(upload)
        if len(reduced) <= limit:
            return reduced
    upload.seek(0)
    head = upload.read(limit // 2)
    upload.seek(size - limit // 2)
    return head + TRUNCATION_MARKER + upload.read()


def import_runs(
    uploads: dict[str, BinaryIO],
    data: dict,
    *,
    experiment_id: int | None = None,
    experiment_name: str = "",
    user=None,
    names: dict[str, str] | None = None,
) -> ImportResult:
    """Create imported runs from uploaded files and parameters, and the import's row (LogImport:
    who, when, which files, what they became).

    uploads: upload field (IMPORT_FILES) -> seekable binary file; names: the files' names as
    uploaded, by field (kept on the import's row, never used as a path). Raises ImportRejected, storing
    nothing, when a parameter is bad, the log holds no crash recovery or the same error log was
    imported before (the message names that import): a second copy would count one crash twice
    in every statistic.
    """
    parameters = validate_import(data)
    unknown = set(uploads) - set(IMPORT_FILES)
    if unknown:
        raise ImportRejected({name: ["not a file this import takes"] for name in sorted(unknown)})
    if "error_log" not in uploads:
        raise ImportRejected({"error_log": ["the server's error log is required"]})
    kind = engine_named(parameters.engine)
    if kind.own_log_upload and kind.own_log_upload not in uploads:
        raise ImportRejected({kind.own_log_upload: [kind.own_log_missing]})
    experiment = _target_experiment(experiment_id, experiment_name)
    uploads["error_log"].seek(0)
    digest = hashlib.file_digest(uploads["error_log"], "sha256").hexdigest()
    _refuse_a_second_import(digest)

    zone = ZoneInfo(parameters.timezone)
    files: dict[str, bytes] = {}
    sizes: dict[str, int] = {}
    crashes = 0
    failures: list[str | None] = []
    stalls: list[str | None] = []
    for field, upload in uploads.items():
        name = IMPORT_FILES[field]
        upload.seek(0, 2)
        sizes[name] = upload.tell()
        files[name] = _read_kept(name, upload, sizes[name])
        if field in ("error_log", "rocksdb_log"):
            # What is stored is what analysis and reparse will read: check that, not the upload.
            parsed = parse_bytes(name, files[name], local_tz=zone)
            if parsed.kind != field:
                what = field.replace("_", " ")
                raise ImportRejected({field: [f"this is not {what}: {'; '.join(parsed.warnings)}"]})
            if field == kind.recovery_upload:
                crashes = len(parsed.crash_episodes)
                failures = [e.failure if e.failed else None for e in parsed.crash_episodes]
                stalls = [stall_text(e) if e.stalled else None for e in parsed.crash_episodes]
                if not crashes:
                    raise ImportRejected({field: [_no_crash_message(parsed)]})

    with transaction.atomic():
        with connection.cursor() as cursor:  # two uploads of one file at once: one gets in
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [int(digest[:15], 16)])
        _refuse_a_second_import(digest)
        experiment = (
            Experiment.objects.select_for_update().get(pk=experiment.pk) if experiment.pk else experiment
        )
        if not experiment.pk:
            experiment.created_by = user
            experiment.save()
        top = experiment.runs.aggregate(top=Max("matrix_index"))["top"]
        next_index = 0 if top is None else top + 1
        runs, warnings = [], []
        for crash_index in range(min(crashes, MAX_RUNS_PER_IMPORT)):
            run, run_warnings = _create_run(
                experiment,
                parameters,
                files,
                sizes,
                crash_index,
                next_index + crash_index,
                digest,
                failure=failures[crash_index] if crash_index < len(failures) else None,
                stalled=stalls[crash_index] if crash_index < len(stalls) else None,
            )
            runs.append(run)
            warnings += run_warnings
        if crashes > MAX_RUNS_PER_IMPORT:
            warnings.append(
                f"the log holds {crashes} crash recoveries; the first {MAX_RUNS_PER_IMPORT} were imported"
            )
        warnings = sorted(set(warnings))
        LogImport.objects.create(
            created_at=timezone.now(),
            created_by=user if getattr(user, "pk", None) else None,
            host_label=parameters.host_label,
            engine=parameters.engine,
            server_version=parameters.server_version or "",
            experiment=experiment,
            source_sha256=digest,
            files=[
                {"field": f, "name": _shown_name((names or {}).get(f), f), "bytes": sizes[IMPORT_FILES[f]]}
                for f in uploads
            ],
            run_count=len(runs),
            warnings=warnings,
        )
    refresh_experiment_status(experiment.pk)
    return ImportResult(experiment, runs, warnings)


def _shown_name(name: str | None, field: str) -> str:
    """An uploaded file's name as the importer's browser sent it: its last part, printable, cut
    short (it is shown, never opened)."""
    if not name:
        return IMPORT_FILES[field]
    last = name.replace("\\", "/").rsplit("/", 1)[-1]
    return "".join(c for c in last if c.isprintable())[:120] or IMPORT_FILES[field]


def _refuse_a_second_import(digest: str) -> None:
    earlier = list(
        Run.objects.filter(source_sha256=digest)
        .select_related("experiment")
        .order_by("id")[:MAX_RUNS_PER_IMPORT]
    )
    if earlier:
        first = earlier[0]
        raise ImportRejected(
            {
                "error_log": [
                    f"this error log was imported on {first.finished_at:%Y-%m-%d %H:%M} UTC into "
                    f"experiment {first.experiment_id} ({first.experiment.name}) as run(s) "
                    f"{', '.join(str(run.id) for run in earlier)}; importing it again would count "
                    "its crashes twice"
                ]
            }
        )


def stall_text(episode) -> str:
    """A stalled crash restart in words, as the runner says a lab run's."""
    return (
        f"recovery stalled: the server never became ready, writing {episode.stall_lines:,} lines like: "
        f"{episode.stall_line}"
    )


def _no_crash_message(parsed) -> str:
    starts = len(parsed.episodes)
    if not starts:
        return "no server start was found in this log"
    return (
        f"no crash recovery was found: the log holds {starts} server start(s), all clean "
        "(a recovery shows as 'Database was not shut down normally', 'Starting crash recovery', "
        "'Recovering after a crash using' or an LSN mismatch)"
    )


def _target_experiment(experiment_id: int | None, name: str) -> Experiment:
    if experiment_id is not None:
        try:
            return Experiment.objects.get(pk=experiment_id)
        except Experiment.DoesNotExist:
            raise ImportRejected({"experiment": [f"there is no experiment {experiment_id}"]}) from None
    name = (name or "").strip() or f"Imported runs {timezone.now():%Y-%m-%d %H:%M}"
    if not EXPERIMENT_NAME.match(name):
        raise ImportRejected({"experiment_name": ["letters, digits, spaces and _.,:()/+%=@#-, at most 200"]})
    return Experiment(
        name=name,
        definition=IMPORTS_DEFINITION,
        status=ExperimentStatus.DONE,
        imported=True,
        finished_at=timezone.now(),
    )


def _create_run(
    experiment: Experiment,
    parameters: ImportParameters,
    files: dict[str, bytes],
    sizes: dict[str, int],
    crash_index: int,
    index: int,
    digest: str,
    failure: str | None = None,
    stalled: str | None = None,
) -> tuple[Run, list[str]]:
    """One imported crash recovery as a run: done, or failed where the server died during it."""
    result = {"imported": True, "crash_index": crash_index, "timezone": parameters.timezone}
    if parameters.redo_bytes is not None:
        result["redo_bytes"] = parameters.redo_bytes
    run_files = {**files, "result.json": json.dumps(result, indent=2).encode()}
    now = timezone.now()
    run = Run.objects.create(
        experiment=experiment,
        matrix_index=index,
        host=None,
        host_label=parameters.host_label,
        engine=parameters.engine,
        parameters={
            **{
                name: value
                for name, value in (
                    ("buffer_pool_size", parameters.buffer_pool_size),
                    ("redo_log_size", parameters.redo_log_size),
                )
                if value is not None  # an unknown size is left out, not guessed
            },
            "insert_rate": parameters.insert_rate,
        },
        repetition=crash_index + 1,
        buffer_pool_bytes=parse_size(parameters.buffer_pool_size) if parameters.buffer_pool_size else None,
        redo_log_bytes=parse_size(parameters.redo_log_size) if parameters.redo_log_size else None,
        insert_rate=parameters.insert_rate,
        status=RunStatus.DONE,
        imported=True,
        source_sha256=digest,
        server_version=parameters.server_version,
        started_at=now,
        finished_at=now,
    )
    store_files(run, run_files, sizes)
    warnings = apply_metrics(run, run_files, result)
    if parameters.server_version:  # what the importer says wins over what the log suggests
        run.server_version = parameters.server_version
    run.error = ("Parsed with warnings: " + "; ".join(warnings))[:2000] if warnings else ""
    if failure:
        run.status = RunStatus.FAILED
        run.error = (f"the server failed during this recovery: {failure}. " + run.error)[:2000]
    elif stalled:  # a result, as a lab run's stall: it has no recovery time
        mark_stalled(run, f"{stalled}. {run.error}")
    run.save()
    return run, warnings
