"""The experiment definition: validation against allow-lists, and expansion into runs.

The UI form, the REST API and YAML import all hand a plain dict to `validate_definition`. It
returns a normalized `ExperimentDefinition` or raises `DefinitionError` with one message per
field, so a bad definition is rejected whole, before anything is stored or queued. Every value
that will end up on a server's or sysbench's command line is checked here against an allow-list
or a pattern; nothing a user types reaches a shell (the runner starts processes with argument
lists as a second line of defence).
"""

import itertools
import json
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field

from experiments.checks import boolean, int_between, one_of
from experiments.engines import ENGINES as ENGINE_REGISTRY
from experiments.parameters import DEFINED, SWEPT, TABLE
from experiments.vocabulary import (
    CRASH_METHOD_NAMES,
    INSERTS_PER_TRANSACTION,
    RUNNABLE_ENGINES,
    WORKLOAD_NAMES,
)
from recovery_lab_cli.units import parse_size
from recovery_lab_cli.yaml_input import shown
from runner import contract

MAX_VALUES_PER_PARAMETER = 10
MAX_REPETITIONS = 20
MAX_RUNS = 200

EXPERIMENT_NAME = re.compile(r"^[A-Za-z0-9 _.,:()/+%=@#-]{1,200}$")
HOST_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,62}$")
BUILD_NAME = contract.BUILD_NAME
TAG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._:+#/-]{0,39}$")
MAX_TAGS = 12
MAX_NOTES = 5000


class DefinitionError(Exception):
    """A definition that cannot run; `errors` maps a field path to its messages. `partial`: the
    definition as far as it passed (its bad fields left out or at their defaults), so the checks
    made against the hosts can say their part in the same answer: every bad field at once."""

    def __init__(self, errors: dict[str, list[str]], partial: "ExperimentDefinition | None" = None):
        super().__init__("; ".join(f"{k}: {' '.join(v)}" for k, v in errors.items()))
        self.errors = errors
        self.partial = partial


# Engine-neutral parameters: name -> (validator, default), from the one table of them
# (experiments/parameters.py). Translation to server variables is the runner's job (it knows the
# server version); see each family's engines.py in runner/families/.
PARAMETERS: dict[str, tuple[Callable[[object], object], object]] = {
    parameter.name: (parameter.check, parameter.default) for parameter in DEFINED
}

# Further server variables a user may set. Values are matrix dimensions like parameters. Each is
# given only to the runs of the engines that have it (innodb_* to InnoDB's, checkpoint_timeout to
# PostgreSQL's). The allow-list is the runner's contract (the runner checks every spec against it).


def _option_check(allowed: tuple | range) -> Callable[[object], object]:
    if isinstance(allowed, range):
        return int_between(allowed.start, allowed.stop - 1)
    return one_of(*allowed)


SERVER_OPTIONS: dict[str, Callable[[object], object]] = {
    name: _option_check(allowed) for name, allowed in contract.SERVER_OPTIONS.items()
}


@dataclass(frozen=True)
class Workload:
    name: str = "oltp_write_only"
    tables: int = 4
    table_size: int = 50_000
    threads: int = 4
    events: int = 20_000
    time_seconds: int = 0
    # > 0: after recovery, run the workload again for at most this long and time how long the
    # throughput takes to be back to 90% of its pre-crash rate (warmup_seconds).
    warmup_max_seconds: int = 0
    # long_transaction only: rows its open transaction changes (contract.DEFAULT_OPEN_ROWS if unsaid)
    open_rows: int | None = None


@dataclass(frozen=True)
class CrashPlan:
    method: str = "sigkill"
    # A list is a sweep of crash plans ("after_workload" beside "during_workload"), each value a
    # dimension of the matrix like the values below.
    when: str | list[str] = "after_workload"
    # during_workload; at_redo_bytes: a size, like "128M". Either may be a list: a sweep, each
    # value a dimension of the matrix (CRASH_SWEEPS names it among a run's parameters).
    after_seconds: int | list[int] | None = None
    redo_bytes: str | list[str] | None = None
    open_rows: int | None = None  # during_transaction
    # One crash recovered many ways (runner/image.py): the runs alike in all but the restart's
    # parameters (contract.RESTART_PARAMETERS) and their repetition restart copies of one crash.
    one_crash: bool | None = None


# Which crash plan takes which extra value.
CRASH_VALUES = {
    "during_workload": "after_seconds",
    "at_redo_bytes": "redo_bytes",
    "during_transaction": "open_rows",
}
# Crash values that may be swept, and the name each value takes among a run's parameters (the
# matrix's dimensions: its cells, labels and chart points); run_spec hands it back to the crash plan.
CRASH_SWEEPS = {parameter.crash: parameter.name for parameter in SWEPT}


WORKLOAD_CHECKS: dict[str, Callable[[object], object]] = {
    "name": one_of(*WORKLOAD_NAMES),
    "tables": int_between(1, 64),
    "table_size": int_between(1, 10_000_000),
    "threads": int_between(1, 256),
    "events": int_between(0, 10_000_000),
    "time_seconds": int_between(0, 86_400),
    "warmup_max_seconds": int_between(0, 3600),
    "open_rows": int_between(1, contract.MAX_OPEN_ROWS),
}
CRASH_CHECKS: dict[str, Callable[[object], object]] = {
    "method": one_of(*CRASH_METHOD_NAMES),
    **{parameter.crash: parameter.check for parameter in SWEPT},
    "open_rows": int_between(1, 10_000_000),
    "one_crash": boolean(),
}
# What a run's parameters may hold: the definition's parameters and its swept crash values.
RUN_PARAMETER_CHECKS: dict[str, Callable[[object], object]] = {
    parameter.name: parameter.check for parameter in TABLE
}


@dataclass(frozen=True)
class RunSpec:
    """One cell of the matrix, repeated: what a single Run executes."""

    matrix_index: int
    host: str
    engine: str
    parameters: dict
    server_options: dict
    repetition: int
    # crash.one_crash: the runs of one key restart copies of one crash, made by the first of them
    image_key: str = ""


@dataclass
class ExperimentDefinition:
    name: str
    hosts: list[str]
    engines: list[str]
    parameters: dict[str, list]
    server_options: dict[str, list]
    workload: Workload
    crash: CrashPlan
    repetitions: int
    # Not part of the matrix: the question it asks and labels to find it by (editable later).
    description: str = ""
    tags: list[str] = field(default_factory=list)
    run_count: int = field(init=False)

    def __post_init__(self):
        # Counted, not expanded: a hostile matrix must be refused before it is enumerated.
        common = [
            len(self.hosts),
            self.repetitions,
            *(len(v) for v in self.parameters.values()),
            *(len(v) for v in self.crash_sweeps().values()),
        ]
        self.run_count = sum(
            math.prod([*common, *(len(self.server_options[n]) for n in self.options_for(engine))])
            for engine in self.engines
        )

    def crash_sweeps(self) -> dict[str, list]:
        """The crash values given as lists, by the parameter name each run carries them under."""
        return {
            name: value
            for key, name in CRASH_SWEEPS.items()
            if isinstance(value := getattr(self.crash, key), list)
        }

    def options_for(self, engine: str) -> list[str]:
        """The server options that vary for an engine's runs: an option of another engine
        (innodb_* for MyRocks, rocksdb_* for InnoDB, either for PostgreSQL) is not one of its
        dimensions, and is not given to its server (an InnoDB server without the MyRocks plugin
        refuses rocksdb_*)."""
        own = contract.engine_options(engine)
        return [name for name in self.server_options if name in own]

    def as_dict(self) -> dict:
        data = asdict(self)
        data.pop("run_count")
        data["crash"] = {key: value for key, value in data["crash"].items() if value is not None}
        data["workload"] = {key: value for key, value in data["workload"].items() if value is not None}
        return data

    def expand(self) -> Iterable[RunSpec]:
        """Hosts x engines x parameter values x server option values x repetitions, in the order
        the runs go (matrix_index): round robin over the cells, each cell's first repetition, then
        each one's second, ... so a slow hour on a host falls on every cell alike instead of on
        the cells that happened to run in it."""
        values = {**self.parameters, **self.crash_sweeps()}
        if self.crash.method == "power_loss" and "restart_cache" not in values:
            values["restart_cache"] = ["cold"]  # a cut loses the machine's memory: said on its runs
        param_names = list(values)
        cells = [
            (host, engine, param_values, option_names, option_values)
            for host in self.hosts
            for engine in self.engines
            for param_values in itertools.product(*(values[n] for n in param_names))
            for option_names in [self.options_for(engine)]
            for option_values in itertools.product(*(self.server_options[n] for n in option_names))
        ]
        index = 0
        for repetition in range(1, self.repetitions + 1):
            for host, engine, param_values, option_names, option_values in cells:
                yield RunSpec(
                    matrix_index=index,
                    host=host,
                    engine=engine,
                    parameters={
                        name: value
                        for name, value in zip(param_names, param_values, strict=True)
                        # the default is left unsaid, as runs made before it could be named are
                        # (a build named, even the system's, stays named)
                        if name == "server_build"
                        or name not in contract.UNSAID_DEFAULTS
                        or value != contract.UNSAID_DEFAULTS[name]
                    },
                    server_options=dict(zip(option_names, option_values, strict=True)),
                    repetition=repetition,
                    image_key=self._image_key(
                        host,
                        engine,
                        dict(zip(param_names, param_values, strict=True)),
                        dict(zip(option_names, option_values, strict=True)),
                    ),
                )
                index += 1

    def _image_key(self, host: str, engine: str, parameters: dict, options: dict) -> str:
        """The crash a run restarts from under crash.one_crash: its host, engine, server options and
        every parameter but the restart's own; "" where each run makes its own crash."""
        if not self.crash.one_crash:
            return ""
        shaping = {
            name: value for name, value in parameters.items() if name not in contract.RESTART_PARAMETERS
        }
        return json.dumps([host, engine, shaping, options], sort_keys=True)


class _Collector:
    def __init__(self):
        self.errors: dict[str, list[str]] = {}

    def add(self, path: str, message: str) -> None:
        self.errors.setdefault(path, []).append(message)


def _as_list(value: object) -> list:
    return list(value) if isinstance(value, list | tuple) else [value]


def _check_values(errors: _Collector, path: str, raw: object, check: Callable[[object], object]) -> list:
    values = _as_list(raw)
    if not values:
        errors.add(path, "give at least one value")
        return []
    if len(values) > MAX_VALUES_PER_PARAMETER:
        errors.add(path, f"at most {MAX_VALUES_PER_PARAMETER} values")
        return []
    checked = []
    for value in values:
        try:
            normalized = check(value)
        except ValueError as exc:
            errors.add(path, str(exc))
            continue
        if normalized not in checked:
            checked.append(normalized)
    return checked


def _check_names(errors: _Collector, path: str, raw: object, allowed: Iterable[str]) -> list[str]:
    allowed = list(allowed)
    values = _as_list(raw) if raw is not None else []
    if not values:
        errors.add(path, "give at least one")
        return []
    names = []
    for value in values:
        if not isinstance(value, str) or value not in allowed:
            errors.add(path, f"{shown(value)} is not one of: {', '.join(allowed) or '(none registered)'}")
        elif value not in names:
            names.append(value)
    return names


def _check_engines(errors: _Collector, raw: object) -> list[str]:
    engines = _check_names(errors, "engines", raw, RUNNABLE_ENGINES)
    for name in _as_list(raw):
        if isinstance(name, str) and name in ENGINE_REGISTRY and ENGINE_REGISTRY[name].not_runnable:
            errors.add("engines", ENGINE_REGISTRY[name].not_runnable)
    return engines


def _check_mapping(errors: _Collector, path: str, raw: object, allowed: dict, defaults: bool):
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        errors.add(path, "must be an object of name: [values]")
        return {}
    result = {}
    for name, values in raw.items():
        if name not in allowed:
            errors.add(f"{path}.{name}", f"not allowed here; allowed: {', '.join(sorted(allowed))}")
            continue
        check = allowed[name][0] if defaults else allowed[name]
        result[name] = _check_values(errors, f"{path}.{name}", values, check)
    if defaults:
        for name, (_, default) in allowed.items():
            if default is not None:
                result.setdefault(name, [default])
    return result


def _check_workload(errors: _Collector, raw: object) -> Workload:
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        errors.add("workload", "must be an object")
        return Workload()
    values: dict = {}
    for key, value in raw.items():
        if key in WORKLOAD_CHECKS:
            try:
                values[key] = WORKLOAD_CHECKS[key](value)
            except ValueError as exc:
                errors.add(f"workload.{key}", str(exc))
        else:
            errors.add(f"workload.{key}", f"unknown; known: {', '.join(WORKLOAD_CHECKS)}")
    if values.get("time_seconds"):
        # a workload of a time replaces a number of events, as documented: the default 20,000
        # events had ended a time_seconds workload short of its redo target (25 MiB for 96M)
        values["events"] = 0
    if values.get("name") == "long_transaction":
        values.setdefault("open_rows", contract.DEFAULT_OPEN_ROWS)
    elif "open_rows" in values:
        errors.add("workload.open_rows", "only long_transaction leaves a transaction open")
        del values["open_rows"]
    return Workload(**values)


def _check_long_transaction(errors: _Collector, workload: Workload, crash: CrashPlan) -> None:
    """long_transaction's transaction is open only while the workload runs."""
    if workload.name == "long_transaction" and set(whens(crash)) - {"during_workload", "at_redo_bytes"}:
        errors.add(
            "crash.when",
            "long_transaction leaves its transaction open only while it runs: crash during_workload "
            "(after_seconds) or at_redo_bytes",
        )


def _check_crash(errors: _Collector, raw: object, workload: Workload) -> CrashPlan:
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        errors.add("crash", "must be an object")
        return CrashPlan()
    plan = {}
    for key, value in raw.items():
        if key not in CRASH_CHECKS:
            errors.add(f"crash.{key}", f"unknown; known: {', '.join(CRASH_CHECKS)}")
            continue
        if key in CRASH_SWEEPS and isinstance(value, list):  # a sweep: each value checked
            plan[key] = _check_values(errors, f"crash.{key}", value, CRASH_CHECKS[key])
            continue
        try:
            plan[key] = CRASH_CHECKS[key](value)
        except ValueError as exc:
            errors.add(f"crash.{key}", str(exc))
    if plan.get("one_crash") is False:
        del plan["one_crash"]  # unsaid, as definitions made before it say nothing
    crash = CrashPlan(**plan)
    planned = whens(crash)
    if crash.one_crash and crash.method != "sigkill":
        errors.add(
            "crash.one_crash", "a power cut's crash image is not kept yet: one_crash takes method sigkill"
        )
    for when, key in CRASH_VALUES.items():
        if when in planned and getattr(crash, key) is None:
            errors.add(f"crash.{key}", f"required with when: {when}")
        elif when not in planned and key in plan:
            errors.add(f"crash.{key}", f"only used with when: {when}")
    if len(planned) > 1 and any(isinstance(plan.get(key), list) for key in CRASH_VALUES.values()):
        errors.add("crash.when", "sweep the crash plans or one plan's value, not both at once")
    if set(planned) & {"after_workload", "during_transaction"}:
        if workload.events == 0 and workload.time_seconds == 0:
            errors.add("workload.events", "a crash after the workload needs events or time_seconds")
    return crash


def whens(crash: CrashPlan) -> list[str]:
    """The crash plans of a definition: one, or a sweep."""
    return _as_list(crash.when)


def _check_insert_rate(errors: _Collector, workload: Workload, parameters: dict) -> None:
    """insert_rate is rows inserted per second; sysbench's --rate is transactions per second. The
    two agree for the workloads that insert one row per transaction; one that inserts none
    cannot be held to an insert rate."""
    rates = [rate for rate in parameters.get("insert_rate", []) if rate]
    if rates and INSERTS_PER_TRANSACTION.get(workload.name, 0) == 0:
        errors.add(
            "parameters.insert_rate",
            f"{workload.name} inserts no rows, so it has no insert rate: use 0, or an insert workload "
            "(oltp_insert, oltp_write_only, oltp_read_write, insert_indexed, long_transaction)",
        )


def _check_redo_target(errors: _Collector, crash: CrashPlan, engines: list[str], parameters: dict) -> None:
    """InnoDB and PostgreSQL checkpoint before their log is full, so an at_redo_bytes target must
    fit the smallest redo log of the matrix with room to spare, or the run would never crash as
    planned."""
    if "at_redo_bytes" not in whens(crash) or not crash.redo_bytes:
        return
    bounded = [ENGINE_REGISTRY[name] for name in engines if ENGINE_REGISTRY[name].reachable_share_of_log]
    if not bounded:
        return
    kind = min(bounded, key=lambda engine: engine.reachable_share_of_log)
    share = kind.reachable_share_of_log
    logs = parameters.get("redo_log_size") or [PARAMETERS["redo_log_size"][1]]
    smallest = min(logs, key=parse_size)
    target = max(_as_list(crash.redo_bytes), key=parse_size)  # of a sweep, the largest
    if parse_size(target) > share * parse_size(smallest):
        errors.add(
            "crash.redo_bytes",
            f"{target} cannot be reached with redo_log_size {smallest}: {kind.label} checkpoints "
            f"before its log is full; use a redo log of at least "
            f"{math.ceil(parse_size(target) / share / (1 << 20))}M",
        )


def _check_engines_fit(
    errors: _Collector, engines: list[str], parameters: dict, options: dict, workload, crash: CrashPlan
) -> None:
    """What an engine's runs cannot do: a workload in another server's SQL, a binary log where
    its server has none, an option no engine of the definition has."""
    for name in engines:
        for where, problem in contract.engine_refuses(
            name, workload.name, max(parameters.get("binlog_files") or [0]), options, crash.method
        ):
            errors.add(where, problem)
    for option in options:
        if engines and not any(option in contract.engine_options(name) for name in engines):
            having = [
                kind.label
                for name, kind in ENGINE_REGISTRY.items()
                if kind.runnable and option in contract.engine_options(name)
            ]
            errors.add(
                "server_options",
                f"{option} is an option of {', '.join(having)}: none of the engines chosen has it",
            )


def clean_tags(raw: object) -> list[str]:
    """Tags as a list or comma-separated text -> a list without repeats, in order; ValueError
    naming the first bad one."""
    if isinstance(raw, str):
        raw = raw.split(",")
    if not isinstance(raw, list | tuple):
        raise ValueError("a list of tags, or tags separated by commas")
    tags: list[str] = []
    for tag in raw:
        if not isinstance(tag, str):
            raise ValueError(f"{shown(tag)} is not a tag: tags are text")
        tag = " ".join(tag.split())
        if not tag:
            continue
        if not TAG.match(tag):
            raise ValueError(
                f"{shown(tag)} is not a tag: 1-40 letters, digits, spaces and . _ : + # / -, starting with a "
                "letter or digit"
            )
        if tag not in tags:
            tags.append(tag)
    if len(tags) > MAX_TAGS:
        raise ValueError(f"at most {MAX_TAGS} tags")
    return tags


def clean_notes(raw: object) -> str:
    if not isinstance(raw, str):
        raise ValueError("notes are text")
    if len(raw) > MAX_NOTES:
        raise ValueError(f"at most {MAX_NOTES} characters ({len(raw)} given)")
    return raw.strip()


FIELDS = (
    "name",
    "hosts",
    "engines",
    "parameters",
    "server_options",
    "workload",
    "crash",
    "repetitions",
    "description",
    "tags",
)


def _values_of(check: Callable[[object], object]) -> dict:
    return {"type": "array", "minItems": 1, "maxItems": MAX_VALUES_PER_PARAMETER, "items": check.schema}


def _closed(properties: dict) -> dict:
    return {"type": "object", "additionalProperties": False, "properties": properties}


# The answers' field paths that rules beyond the schema may name (a 400 naming another field means
# the schema let through what validation refuses: tests/test_fuzz.py checks it).
CHECKED_BEYOND_SCHEMA = (
    "hosts",
    "parameters",
    "crash",
    "server_options",
    "workload.name",
    "workload.events",
    "workload.open_rows",
    "non_field_errors",
)


def definition_json_schema() -> dict:
    """The JSON Schema of a definition, from the tables that validate one: what a schema can
    say (fields, names, enums, ranges, patterns). What it cannot is said in its description and
    checked by validate_definition alone: hosts must be registered, sizes within their range, a
    crash plan's `when` and its value go together, a redo target must fit the smallest redo log,
    an insert rate needs an insert workload, the matrix at most MAX_RUNS runs."""
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["name", "hosts", "engines"],
        "description": "What a schema cannot say is checked too: hosts must be registered, sizes within "
        "their range, a crash plan's `when` and its value go together, a redo target must fit the smallest "
        f"redo log, an insert rate needs an insert workload, the matrix at most {MAX_RUNS} runs.",
        "properties": {
            # the name is stripped before its rule applies: not blank
            "name": {"type": "string", "pattern": r"^(?! *$)" + EXPERIMENT_NAME.pattern[1:]},
            "hosts": {
                "type": "array",
                "minItems": 1,
                "items": {"type": "string", "pattern": HOST_NAME.pattern},
                "description": "registered hosts' names",
            },
            "engines": {
                "type": "array",
                "minItems": 1,
                "uniqueItems": True,
                "items": {"enum": list(RUNNABLE_ENGINES)},
            },
            "parameters": _closed({name: _values_of(check) for name, (check, _) in PARAMETERS.items()}),
            "server_options": _closed({name: _values_of(check) for name, check in SERVER_OPTIONS.items()}),
            "workload": _closed({name: check.schema for name, check in WORKLOAD_CHECKS.items()}),
            "crash": _closed(
                {
                    name: {"anyOf": [check.schema, _values_of(check)]}
                    if name in CRASH_SWEEPS
                    else check.schema
                    for name, check in CRASH_CHECKS.items()
                }
            ),
            "repetitions": {"type": "integer", "minimum": 1, "maximum": MAX_REPETITIONS},
            "description": {"type": "string", "maxLength": MAX_NOTES, "description": "the question it asks"},
            "tags": {
                "type": "array",
                "maxItems": MAX_TAGS,
                "items": {"type": "string", "pattern": TAG.pattern},
            },
        },
    }


def validate_definition(raw: object, known_hosts: Iterable[str]) -> ExperimentDefinition:
    """Check a user's definition and return it normalized, or raise DefinitionError."""
    errors = _Collector()
    if not isinstance(raw, dict):
        raise DefinitionError({"non_field_errors": ["the definition must be a JSON object"]})
    for key in raw:
        if key not in FIELDS:
            errors.add(str(key), f"unknown field; known: {', '.join(sorted(FIELDS))}")

    name = raw.get("name")
    if not isinstance(name, str) or not EXPERIMENT_NAME.match(name.strip()):
        errors.add("name", "1-200 characters: letters, digits, spaces and _ . , : ( ) / + % = @ # -")
        name = ""
    hosts = _check_names(errors, "hosts", raw.get("hosts"), known_hosts)
    engines = _check_engines(errors, raw.get("engines"))
    parameters = _check_mapping(errors, "parameters", raw.get("parameters"), PARAMETERS, True)
    server_options = _check_mapping(
        errors, "server_options", raw.get("server_options"), SERVER_OPTIONS, False
    )
    workload = _check_workload(errors, raw.get("workload"))
    crash = _check_crash(errors, raw.get("crash"), workload)
    _check_long_transaction(errors, workload, crash)
    _check_redo_target(errors, crash, engines, parameters)
    _check_engines_fit(errors, engines, parameters, server_options, workload, crash)
    _check_insert_rate(errors, workload, parameters)
    if crash.one_crash and max(parameters.get("binlog_files") or [0]):
        errors.add("crash.one_crash", "a crash image does not keep binary log files yet: binlog_files 0 only")
    repetitions = 1
    try:
        repetitions = int_between(1, MAX_REPETITIONS)(raw.get("repetitions", 1))
    except ValueError as exc:
        errors.add("repetitions", str(exc))
    description, tags = "", []
    try:
        description = clean_notes(raw.get("description", ""))
    except ValueError as exc:
        errors.add("description", str(exc))
    try:
        tags = clean_tags(raw.get("tags", []))
    except ValueError as exc:
        errors.add("tags", str(exc))

    def made() -> ExperimentDefinition:
        return ExperimentDefinition(
            name=name.strip(),
            hosts=hosts,
            engines=engines,
            parameters=parameters,
            server_options=server_options,
            workload=workload,
            crash=crash,
            repetitions=repetitions,
            description=description,
            tags=tags,
        )

    if errors.errors:
        try:
            partial = made()
        except (TypeError, ValueError, KeyError, AttributeError):  # too little passed to stand
            partial = None
        raise DefinitionError(errors.errors, partial=partial)
    definition = made()
    if definition.run_count > MAX_RUNS:
        raise DefinitionError(
            {
                "non_field_errors": [
                    f"this matrix expands to {definition.run_count} runs; the limit is {MAX_RUNS}"
                ]
            }
        )
    return definition
