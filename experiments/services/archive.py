"""Moving an experiment between installations: one .tar.gz holding `experiment.json` (the
experiment, its runs with every column, their attempts) and each run's raw files as they were kept.

An export carries the experiment's uid: an installation that has it already refuses the import,
naming its copy. Every value read back goes through the model's own field parsing and validation
(`full_clean`), the archive is read in one forward pass and no member is extracted under its
name (no path in it matters), whatever its order, and the whole import is one transaction: a bad
archive leaves nothing, and says why (a run, an attempt or a file twice included).
"""

import datetime
import json
import tarfile
import time
from io import BytesIO
from typing import BinaryIO

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.serializers.json import DjangoJSONEncoder
from django.db import IntegrityError, transaction
from django.utils import timezone

from experiments.definition import (
    EXPERIMENT_NAME,
    HOST_NAME,
    RUN_PARAMETER_CHECKS,
    SERVER_OPTIONS,
    DefinitionError,
    clean_notes,
    clean_tags,
    validate_definition,
)
from experiments.ingest.unpacking import BoundedTar, Limits, UnpackRefused
from experiments.models import Experiment, Run, RunAttempt, RunFile, RunStatus
from experiments.services.audit import audited_by
from experiments.services.imports import HOST_LABEL, IMPORTS_DEFINITION, SERVER_VERSION
from experiments.vocabulary import ENGINE_LABELS

FORMAT = "recovery-lab-experiment"
VERSION = 1
MANIFEST = "experiment.json"
MAX_MANIFEST_BYTES = 64 * 1024 * 1024
# An import reads at most this many runs, and each at most this many attempts and files.
MAX_RUNS = 20_000
MAX_ATTEMPTS_PER_RUN = 100
MAX_FILES_PER_RUN = 100
EXPERIMENT_FIELDS = (
    "uid",
    "name",
    "definition",
    "status",
    "imported",
    "tags",
    "notes",
    "created_at",
    "finished_at",
)
# Columns that point at rows of this installation: carried by name, or not at all.
RUN_LOCAL = {"id", "experiment", "host", "excluded_by"}
ATTEMPT_LOCAL = {"id", "run", "host"}


class _Encoder(DjangoJSONEncoder):
    """Django's encoder, but times to the microsecond (it cuts them to milliseconds, as JavaScript
    does): an imported run keeps its times exactly."""

    def default(self, o):
        if isinstance(o, datetime.datetime):
            return o.isoformat()
        return super().default(o)


class ArchiveRejected(Exception):
    """An export that cannot be made or an archive that cannot be imported; `duplicate` names the
    experiment of this installation that the archive holds already."""

    def __init__(self, message: str, duplicate: Experiment | None = None):
        super().__init__(message)
        self.duplicate = duplicate


def _columns(model, skip: set[str]) -> list:
    return [f for f in model._meta.concrete_fields if f.name not in skip]


def _values(obj, fields) -> dict:
    return {f.name: f.value_from_object(obj) for f in fields}


def export_experiment(experiment: Experiment, out: BinaryIO, installation: str) -> None:
    """Write the experiment as one .tar.gz to `out`. Refused while runs are still going."""
    going = experiment.runs.exclude(status__in=RunStatus.finished()).count()
    if going:
        raise ArchiveRejected(
            f"experiment {experiment.pk} still has {going} run{'s' if going != 1 else ''} queued or running: "
            "wait for them or cancel them, then export"
        )
    run_fields, attempt_fields = _columns(Run, RUN_LOCAL), _columns(RunAttempt, ATTEMPT_LOCAL)
    runs = list(experiment.runs.select_related("excluded_by").prefetch_related("attempt_rows"))
    files = RunFile.objects.filter(run__experiment=experiment).defer("content").order_by("run_id", "name")
    files_of: dict[int, list] = {}
    for raw in files:
        files_of.setdefault(raw.run_id, []).append(raw)
    manifest = {
        "format": FORMAT,
        "version": VERSION,
        "installation": installation,
        "exported_at": timezone.now(),
        "experiment": {
            **{name: getattr(experiment, name) for name in EXPERIMENT_FIELDS},
            "id": experiment.pk,
            "author": experiment.created_by.get_username() if experiment.created_by else None,
        },
        "runs": [
            {
                **_values(run, run_fields),
                "excluded_by": run.excluded_by.get_username() if run.excluded_by else None,
                "attempts": [_values(attempt, attempt_fields) for attempt in run.attempt_rows.all()],
                "files": [
                    {
                        "name": raw.name,
                        "size_bytes": raw.size_bytes,
                        "truncated": raw.truncated,
                        "member": f"files/{run.matrix_index}/{raw.name}",
                    }
                    for raw in files_of.get(run.pk, [])
                ],
            }
            for run in runs
        ],
    }
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        _add(tar, MANIFEST, json.dumps(manifest, cls=_Encoder, indent=1).encode())
        for run in runs:
            for raw in files_of.get(run.pk, []):
                content = RunFile.objects.values_list("content", flat=True).get(pk=raw.pk)
                _add(tar, f"files/{run.matrix_index}/{raw.name}", bytes(content))


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = int(time.time())
    info.mode = 0o644
    tar.addfile(info, BytesIO(data))


def _limits() -> Limits:
    return Limits(
        unpacked_bytes=settings.ARCHIVE_MAX_UNPACKED_BYTES, members=1 + MAX_RUNS * MAX_FILES_PER_RUN
    )


def _manifest(tar: BoundedTar) -> dict:
    try:
        manifest = json.loads(tar.read(MANIFEST, MAX_MANIFEST_BYTES))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ArchiveRejected(f"{MANIFEST} is not JSON: {exc}") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ArchiveRejected(f"not an export of Recovery Lab ({MANIFEST} does not say format {FORMAT})")
    if manifest.get("version") != VERSION:
        raise ArchiveRejected(
            f"this archive is format version {manifest.get('version')!r}; this installation reads version "
            f"{VERSION}: upgrade it, or export again from an installation of the same version"
        )
    if not isinstance(manifest.get("experiment"), dict) or not isinstance(manifest.get("runs"), list):
        raise ArchiveRejected(f"{MANIFEST} lacks the experiment or its runs")
    if len(manifest["runs"]) > MAX_RUNS:
        raise ArchiveRejected(
            f"{MANIFEST} lists {len(manifest['runs']):,} runs; an import takes at most {MAX_RUNS:,}"
        )
    return manifest


def _listed_members(manifest: dict) -> set[str]:
    runs = _list_of_objects(manifest["runs"], MANIFEST, "runs", MAX_RUNS)
    return {
        str(entry.get("member"))
        for index, run in enumerate(runs)
        for entry in _list_of_objects(
            run.get("files", []), f"run {index + 1} of the archive", "files", MAX_FILES_PER_RUN
        )
    }


class _Listing:
    """The manifest, read as the archive's stream passes it, and every other file checked to be
    one it lists: once it has passed, the first unlisted file stops the reading (an archive of
    millions of empty members stops there); files before it wait for it, within the bounds."""

    def __init__(self):
        self.manifest: dict | None = None
        self.listed: set[str] = set()

    def passed(self, tar: BoundedTar, name: str) -> None:
        if name == MANIFEST:
            self.manifest = _manifest(tar)
            self.listed = _listed_members(self.manifest)
            for earlier in tar.members:
                self._check(earlier)
        elif self.manifest is not None:
            self._check(name)

    def _check(self, name: str) -> None:
        if name != MANIFEST and name not in self.listed:
            raise ArchiveRejected(f"the archive holds {name[:200]!r}, which the manifest does not list")


def _list_of_objects(value: object, where: str, what: str, most: int) -> list[dict]:
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise ArchiveRejected(f"{where}: {what} is not a list of objects")
    if len(value) > most:
        raise ArchiveRejected(f"{where}: {len(value):,} {what}; at most {most} are read")
    return value


def _build(model, values: dict, skip: set[str], where: str, **links):
    """A model instance from exported values, parsed by its own fields and validated."""
    fields = {f.name: f for f in _columns(model, skip)}
    unknown = set(values) - set(fields)
    if unknown:
        raise ArchiveRejected(f"{where}: unknown columns {', '.join(sorted(unknown))} (a newer format?)")
    parsed, errors = {}, {}
    for name, field in fields.items():
        if name in values:
            try:
                parsed[name] = field.to_python(values[name])
            except ValidationError as exc:
                errors[name] = exc.messages
            except (TypeError, ValueError, OverflowError):  # a list where a time goes, and the like
                errors[name] = [f"{type(values[name]).__name__} is not a value of this column"]
    obj = model(**parsed, **links)
    # A value equal to its field's default is what this installation would have stored itself
    # (an empty dict of server options is not "blank" here either).
    defaults = [n for n, v in parsed.items() if fields[n].has_default() and v == fields[n].get_default()]
    try:
        obj.full_clean(
            exclude=[*skip, *links, *defaults, *errors], validate_unique=False, validate_constraints=False
        )
    except ValidationError as exc:
        errors.update(exc.message_dict)
    if errors:
        details = "; ".join(f"{k}: {' '.join(v)}" for k, v in errors.items())
        raise ArchiveRejected(f"{where}: {details}")
    return obj


def _recheck_experiment(experiment: Experiment) -> None:
    """What a definition made here would pass: an archive is another installation's word, or
    anybody's who edited it."""
    experiment.imported = True
    problems = []
    if not EXPERIMENT_NAME.match(experiment.name or ""):
        problems.append("name: letters, digits, spaces and _ . , : ( ) / + % = @ # -, at most 200")
    try:
        experiment.tags, experiment.notes = clean_tags(experiment.tags), clean_notes(experiment.notes)
    except ValueError as exc:
        problems.append(str(exc))
    definition = experiment.definition
    if definition != IMPORTS_DEFINITION:
        hosts = definition.get("hosts") if isinstance(definition, dict) else None
        named = [h for h in hosts if isinstance(h, str)] if isinstance(hosts, list) else []
        try:
            # the hosts are the other installation's: their names are checked, not that they are here
            validate_definition(definition, [name for name in named if HOST_NAME.match(name)])
        except DefinitionError as exc:
            problems += [f"definition.{field}: {' '.join(words)}" for field, words in exc.errors.items()]
    if problems:
        raise ArchiveRejected(f"the experiment: {'; '.join(problems)}")


def _recheck_run(run: Run, where: str) -> None:
    """A run's names and parameters by the rules a run made or imported here passes; a run from
    an archive is imported (measured elsewhere) and finished (nothing may dispatch it)."""
    run.imported = True
    problems = []
    if run.status not in RunStatus.finished():
        problems.append(f"status {run.status!r}: an archive holds finished runs only")
    if run.engine not in ENGINE_LABELS:
        problems.append(f"engine {run.engine!r}: one of {', '.join(ENGINE_LABELS)}")
    if not HOST_LABEL.match(run.host_label or ""):
        problems.append(f"host {run.host_label[:40]!r}: letters, digits, '.', '_', '-', '@', ':' only")
    if run.server_version and not SERVER_VERSION.match(run.server_version):
        problems.append(f"server_version {run.server_version[:40]!r}: letters, digits and . _ + ~ : -")
    for group, rules in (("parameters", RUN_PARAMETER_CHECKS), ("server_options", SERVER_OPTIONS)):
        values = getattr(run, group)
        if not isinstance(values, dict):
            problems.append(f"{group}: an object of name: value")
            continue
        for name, value in values.items():
            if name not in rules:
                problems.append(f"{group}.{name}: not a {group[:-1].replace('_', ' ')} of this installation")
            elif value is not None:
                try:
                    rules[name](value)
                except ValueError as exc:
                    problems.append(f"{group}.{name}: {exc}")
    if problems:
        raise ArchiveRejected(f"{where}: {'; '.join(problems)}")


def import_experiment(upload: BinaryIO, user=None) -> Experiment:
    """Read an export and store it as a new experiment of this installation, with its runs,
    attempts and raw files; ArchiveRejected (nothing stored) when it cannot be, with the reason."""
    listing = _Listing()
    try:
        with BoundedTar(upload, _limits(), passed=listing.passed) as tar:
            if listing.manifest is None:
                raise ArchiveRejected(f"the archive has no {MANIFEST}: not an export of Recovery Lab")
            return _import(tar, listing.manifest, user)
    except UnpackRefused as exc:
        reason = str(exc)
        if reason.startswith("not a .tar.gz"):
            reason = f"not an export of Recovery Lab: {reason}"
        raise ArchiveRejected(reason) from exc


def _refuse_a_copy(uid: object) -> None:
    duplicate = Experiment.objects.filter(uid=uid).first() if uid else None
    if duplicate is not None:
        raise ArchiveRejected(
            f"this installation has this experiment already: #{duplicate.pk} {duplicate.name}",
            duplicate=duplicate,
        )


def _import(tar: BoundedTar, manifest: dict, user) -> Experiment:
    exported = dict(manifest["experiment"])
    runs = manifest["runs"]  # a list of objects: _listed_members checked it
    _refuse_a_copy(exported.get("uid"))
    try:
        return _store(tar, manifest, exported, runs, user)
    except IntegrityError as exc:  # what the checks before missed, or an import of it at once
        _refuse_a_copy(exported.get("uid"))
        constraint = getattr(getattr(exc.__cause__, "diag", None), "constraint_name", None)
        raise ArchiveRejected(
            f"the archive holds twice what this installation keeps once ({constraint or exc})"
        ) from exc


def _store(tar: BoundedTar, manifest: dict, exported: dict, runs: list[dict], user) -> Experiment:
    origin = {
        "installation": manifest.get("installation"),
        "id": exported.pop("id", None),
        "author": exported.pop("author", None),
        "exported_at": manifest.get("exported_at"),
    }
    with transaction.atomic(), audited_by(user):
        experiment = _build(
            Experiment,
            {name: exported[name] for name in EXPERIMENT_FIELDS if name in exported},
            {"id", "created_by", "idempotency_key", "origin"},
            "the experiment",
        )
        experiment.created_by, experiment.origin = user, origin
        _recheck_experiment(experiment)
        created_at = experiment.created_at
        experiment.save()
        Experiment.objects.filter(pk=experiment.pk).update(created_at=created_at)  # not the import's time
        cells: dict[int, int] = {}  # matrix index: the run's place in the archive
        for index, exported_run in enumerate(runs):
            _import_run(tar, experiment, dict(exported_run), index, cells)
    return Experiment.objects.get(pk=experiment.pk)


def _refuse_twice(values: list, said: str) -> None:
    seen = set()
    for value in values:
        if value in seen:
            raise ArchiveRejected(said.format(value))
        seen.add(value)


def _import_run(tar: BoundedTar, experiment: Experiment, values: dict, index: int, cells: dict) -> None:
    where = f"run {index + 1} of the archive"
    attempts = _list_of_objects(values.pop("attempts", []), where, "attempts", MAX_ATTEMPTS_PER_RUN)
    files = _list_of_objects(values.pop("files", []), where, "files", MAX_FILES_PER_RUN)
    excluded_by = values.pop("excluded_by", None)
    run = _build(Run, values, RUN_LOCAL, where, experiment=experiment)
    _recheck_run(run, where)
    if run.matrix_index in cells:
        raise ArchiveRejected(
            f"runs {cells[run.matrix_index] + 1} and {index + 1} of the archive are both cell "
            f"{run.matrix_index} of the matrix"
        )
    cells[run.matrix_index] = index
    if excluded_by:
        run.excluded_by = get_user_model().objects.filter(username=str(excluded_by)).first()
        if run.excluded_by is None:  # the user is not here: keep who it was in the reason
            run.excluded_reason = f"{run.excluded_reason} (excluded by {excluded_by})"[:500]
    queued_at = run.queued_at
    run.save()
    Run.objects.filter(pk=run.pk).update(queued_at=queued_at)  # when it was queued there, not now
    built = [
        _build(RunAttempt, dict(a), ATTEMPT_LOCAL, f"{where}, attempt {n + 1}", run=run)
        for n, a in enumerate(attempts)
    ]
    _refuse_twice([attempt.number for attempt in built], f"{where}: attempt {{}} is there twice")
    RunAttempt.objects.bulk_create(built)
    _refuse_twice([str(entry.get("name")) for entry in files], f"{where}: file {{!r}} is there twice")
    for entry in files:
        file_where = f"{where}, file {entry.get('name')!r}"
        missing = [key for key in ("name", "size_bytes", "member") if key not in entry]
        if missing:
            raise ArchiveRejected(f"{file_where}: no {', '.join(missing)}")
        content = tar.read(str(entry["member"]), 2 * settings.RAW_FILE_MAX_BYTES + (1 << 20))
        raw = _build(
            RunFile,
            {k: entry[k] for k in ("name", "size_bytes", "truncated") if k in entry},
            {"id", "run", "content"},
            file_where,
            run=run,
        )
        if raw.truncated is False and raw.size_bytes != len(content):
            raise ArchiveRejected(
                f"{where}, file {raw.name}: {len(content):,} bytes where {raw.size_bytes:,} were kept"
            )
        raw.content = content
        raw.save()
