"""Experiments: a definition validated, stored with its runs, its hosts woken once committed."""

import re
from collections.abc import Callable

from django.db import IntegrityError, transaction

from experiments.definition import (
    MAX_REPETITIONS,
    DefinitionError,
    ExperimentDefinition,
    clean_notes,
    clean_tags,
    validate_definition,
)
from experiments.models import Experiment, Host, Run
from experiments.roles import may_administer
from experiments.services.audit import audited_by
from experiments.services.dispatch import wake_hosts
from experiments.services.hosts import active_host_names
from recovery_lab_cli.units import parse_size
from runner.contract import LOCAL_STORAGE

IDEMPOTENCY_KEY = re.compile(r"^[A-Za-z0-9._:-]{1,100}$")


def create_experiment(
    raw_definition: object,
    user=None,
    idempotency_key: str = "",
    series=None,
    fired_for=None,
    aa_check: bool = False,
    probe: Callable[[int], dict] | None = None,
) -> tuple[Experiment, bool]:
    """Validate a definition, store the experiment and its runs, wake their hosts once committed.

    Returns (experiment, created). With an idempotency key the client chose, sending the same
    request again returns the experiment the first one made (created False), so a client that
    retries after a lost answer does not start the work twice. An A/A check (start_aa_check)
    is stored as one. Raises DefinitionError (nothing
    stored, nothing queued) when the definition is bad, ValueError for a malformed key. A firing
    of a recurring series names its series and the scheduled moment it stands for. `probe`
    (workers.probing.probe_host, given by the pages and the API, which sit above the workers):
    how an admin's definition naming a build the host's last probe did not list probes it again;
    without it (a series' firing, inside its row lock) the builds known decide.
    """
    if idempotency_key and not IDEMPOTENCY_KEY.match(idempotency_key):
        raise ValueError("Idempotency-Key: 1 to 100 letters, digits, '.', '_', ':' or '-'")
    if idempotency_key:
        earlier = Experiment.objects.filter(created_by=user, idempotency_key=idempotency_key).first()
        if earlier is not None:
            return earlier, False
    definition = _checked(raw_definition, user, probe)
    try:
        with transaction.atomic(), audited_by(user):
            experiment = Experiment.objects.create(
                name=definition.name,
                definition=definition.as_dict(),
                notes=definition.description,
                tags=definition.tags,
                created_by=user,
                idempotency_key=idempotency_key,
                series=series,
                fired_for=fired_for,
                aa_check=aa_check,
            )
            runs = _create_runs(experiment, definition)
            host_ids = {run.host_id for run in runs}
            transaction.on_commit(lambda: wake_hosts(host_ids))
    except IntegrityError:
        # The same key sent twice at once: the other request made it.
        return Experiment.objects.get(created_by=user, idempotency_key=idempotency_key), False
    return experiment, True


def start_aa_check(host_name: str, experiment_id: int, user=None) -> Experiment:
    """An A/A check of a host: the experiment's definition on that host alone, run twice,
    interleaved (each repetition twice: odd ones copy A, even ones copy B; see analysis/aa.py).
    Raises Experiment.DoesNotExist, or DefinitionError (nothing stored) when the doubled matrix
    is too large or the host is not registered."""
    source = Experiment.objects.get(pk=experiment_id)
    definition = dict(source.definition)
    repetitions = int(definition.get("repetitions", 1))
    if 2 * repetitions > MAX_REPETITIONS:
        raise DefinitionError(
            {
                "repetitions": [
                    f"an A/A check runs each repetition twice: at most {MAX_REPETITIONS // 2} repetitions"
                ]
            }
        )
    definition.update(
        name=f"A/A check of {host_name}: {source.name}"[:200].rstrip(),
        hosts=[host_name],
        repetitions=2 * repetitions,
        description=f"Experiment #{source.id}'s definition run twice on {host_name}, interleaved: "
        "the difference between its copies is this host's noise.",
        tags=["aa-check"],
    )
    experiment, _ = create_experiment(definition, user, aa_check=True)
    return experiment


def _checked(raw_definition: object, user, probe) -> ExperimentDefinition:
    """The definition validated, then checked against its hosts; DefinitionError with every bad
    field at once: the hosts' checks run on what passed even where other fields did not."""
    try:
        definition, errors = validate_definition(raw_definition, active_host_names()), {}
    except DefinitionError as exc:
        if exc.partial is None:  # not even an object
            raise
        definition, errors = exc.partial, dict(exc.errors)
    for check in (_check_hosts_can_crash_so, _check_hosts_can_throttle):
        _gather(errors, check, definition)
    _gather(errors, _check_hosts_have_builds, definition, user, probe)
    if errors:
        raise DefinitionError(errors)
    return definition


def _gather(errors: dict[str, list[str]], check, *args) -> None:
    """A host check's refusals added to `errors`, field by field."""
    try:
        check(*args)
    except DefinitionError as exc:
        for path, messages in exc.errors.items():
            errors.setdefault(path, []).extend(messages)


def _check_hosts_can_crash_so(definition: ExperimentDefinition) -> None:
    """A power cut needs FUSE on the host: a host whose last probe found it missing is refused
    here, with what to install, rather than failing each of its runs later. A host never probed
    is let through (its runner says the same if it cannot)."""
    if definition.crash.method != "power_loss":
        return
    refused = []
    for host in Host.objects.filter(name__in=definition.hosts):
        ready = (host.facts or {}).get("power_loss")
        if ready is not None and not ready.get("ready"):
            missing = ", ".join(ready.get("missing", []))
            refused.append(f"host {host.name} cannot cut power: missing {missing}")
    if refused:
        raise DefinitionError({"crash.method": refused})


def _check_hosts_can_throttle(definition: ExperimentDefinition) -> None:
    """A storage class needs the kernel's block I/O controller on the host: a host whose last
    probe found none is refused here, with why. A host never probed is let through (its runner
    says the same if it cannot)."""
    if not set(definition.parameters.get("storage", [LOCAL_STORAGE])) - {LOCAL_STORAGE}:
        return
    refused = []
    for host in Host.objects.filter(name__in=definition.hosts):
        control = (host.facts or {}).get("io_control")
        if control is not None and not control.get("ready"):
            refused.append(
                f"host {host.name} cannot cap a restart's I/O: missing {', '.join(control['missing'])}"
            )
    if refused:
        raise DefinitionError({"parameters.storage": refused})


def _builds(facts: dict | None) -> dict[str, dict] | None:
    listed = (facts or {}).get("server_builds")
    return None if listed is None else {build["name"]: build for build in listed}


def _build_refusal(host: Host, name: str, build: dict, engines: list[str]) -> str | None:
    """Why a build the host lists cannot take this definition's runs: it cannot start (its
    probe said why), or it lacks an engine the definition names."""
    if build.get("error"):
        return f"host {host.name} cannot start server build {name}: {build['error']}"
    missing = [engine for engine in engines if "engines" in build and engine not in build["engines"]]
    if missing:
        return (
            f"server build {name} on host {host.name} has no {', '.join(missing)} "
            f"(it has {', '.join(build['engines'])})"
        )
    return None


def _check_hosts_have_builds(
    definition: ExperimentDefinition, user, probe: Callable[[int], dict] | None
) -> None:
    """Each server build named must be one the host lists, able to start, with the definition's
    engines. A build its last probe did not list may have been unpacked since (a CI job hands
    its build over, then asks for it): for an admin the host is probed again before the
    definition is refused. Anyone else gets the builds known (no request of theirs makes the
    dashboard log in to a host; beat's probe or an admin refreshes them). A host never probed is
    let through (its runner refuses a build it does not have). Without `probe`, never probe."""
    wanted = definition.parameters.get("server_build") or []
    may_probe = probe is not None and bool(wanted) and may_administer(user)
    refused = []
    for host in Host.objects.filter(name__in=definition.hosts) if wanted else []:
        builds = _builds(host.facts)
        if builds is None:
            continue
        if set(wanted) - set(builds) and may_probe:
            builds = _builds(probe(host.pk).get("facts")) or {}
        for build in wanted:
            if build not in builds:
                refused.append(
                    f"host {host.name} has no server build {build} (its last probe listed: "
                    f"{', '.join(builds) or 'none'}); install one with `manage.py installbuild` or "
                    "unpack it in its work directory's builds/NAME/; "
                    + (
                        "probe it again"
                        if may_probe
                        else "an admin's probe (or beat's, every 10 minutes) lists them"
                    )
                )
            elif reason := _build_refusal(host, build, builds[build], definition.engines):
                refused.append(reason)
    if refused:
        raise DefinitionError({"parameters.server_build": refused})


def _create_runs(experiment: Experiment, definition: ExperimentDefinition) -> list[Run]:
    hosts = {h.name: h for h in Host.objects.filter(name__in=definition.hosts)}
    specs = list(definition.expand())
    runs = Run.objects.bulk_create(
        Run(
            experiment=experiment,
            matrix_index=spec.matrix_index,
            host=hosts[spec.host],
            host_label=spec.host,
            engine=spec.engine,
            parameters=spec.parameters,
            server_options=spec.server_options,
            repetition=spec.repetition,
            buffer_pool_bytes=parse_size(spec.parameters["buffer_pool_size"]),
            redo_log_bytes=parse_size(spec.parameters["redo_log_size"]),
            insert_rate=spec.parameters["insert_rate"],
            crash_method=definition.crash.method,
        )
        for spec in specs
    )
    # crash.one_crash: the first run of each image key makes the crash, the others restart copies of it
    leads: dict[str, Run] = {}
    for spec, run in zip(specs, runs, strict=True):
        if spec.image_key and leads.setdefault(spec.image_key, run) is not run:
            run.image_of = leads[spec.image_key]
    Run.objects.bulk_update([run for run in runs if run.image_of_id], ["image_of"])
    return runs


class AnnotationRejected(ValueError):
    def __init__(self, errors: dict[str, str]):
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))
        self.errors = errors


def annotate(
    target: Experiment | Run, notes: object = None, tags: object = None, user=None
) -> Experiment | Run:
    """Set an experiment's or a run's notes and tags (None leaves one as it is). AnnotationRejected
    with {"notes"|"tags": message} when a value is refused; nothing is saved then."""
    errors, fields = {}, []
    for name, value, clean in (("notes", notes, clean_notes), ("tags", tags, clean_tags)):
        if value is None:
            continue
        try:
            setattr(target, name, clean(value))
            fields.append(name)
        except ValueError as exc:
            errors[name] = str(exc)
    if errors:
        target.refresh_from_db(fields=["notes", "tags"])
        raise AnnotationRejected(errors)
    if fields:
        with audited_by(user):
            target.save(update_fields=fields)
    return target
