"""The new-experiment form: collects values into a definition dict for validate_definition.

It does no validation of its own beyond shapes (numbers are numbers): one validator serves the
form, the API and imports, and its messages are put back on the matching form fields.
"""

import re

import yaml
from django import forms

from experiments.charts.layout import shown_title
from experiments.definition import SERVER_OPTIONS
from experiments.engines import DEFAULT_ENGINE
from experiments.parameters import CHOICE, DEFINED, FLAG, NUMBER, Parameter
from experiments.vocabulary import (
    CRASH_METHOD_NAMES,
    CRASH_METHODS,
    CRASH_WHEN,
    CRASH_WHEN_NAMES,
    ENGINES,
    RUNNABLE_ENGINES,
    WORKLOAD_NAMES,
    WORKLOADS,
    choices,
)
from runner.contract import WORKLOAD_NUMBERS


def _listed(values) -> list:
    return list(values) if isinstance(values, list | tuple) else [values]


def _split(text: str) -> list[str]:
    return [part.strip() for part in text.replace(";", ",").split(",") if part.strip()]


def _number_or_text(text: str):
    return int(text) if re.fullmatch(r"-?[0-9]{1,18}", text) else text


# The order a person reads a definition in (the database keeps JSON keys in its own order).
YAML_ORDER = {
    "": ("name", "description", "tags", "hosts", "engines", "parameters", "server_options", "workload",
         "crash", "repetitions"),
    "parameters": tuple(parameter.name for parameter in DEFINED),
    "workload": ("name", *WORKLOAD_NUMBERS),
    "crash": ("method", "when", "after_seconds", "redo_bytes", "open_rows"),
}  # fmt: skip


class _Dumper(yaml.SafeDumper):
    """Mappings as blocks, lists inline: `engines: [innodb, postgresql]`."""


_Dumper.add_representer(
    list, lambda dumper, data: dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=True)
)


def _ordered(mapping: dict, order: tuple) -> dict:
    known = {key: mapping[key] for key in order if key in mapping}
    return {**known, **{key: value for key, value in mapping.items() if key not in known}}


def definition_yaml(definition: dict) -> str:
    """A stored definition as the command line's file (`recovery-lab run FILE` takes it back),
    in reading order, its empty notes left out."""
    kept = {key: value for key, value in definition.items() if value not in ("", [], {}, None)}
    ordered = _ordered(kept, YAML_ORDER[""])
    for key in ("parameters", "workload", "crash"):
        if isinstance(ordered.get(key), dict):
            ordered[key] = _ordered(ordered[key], YAML_ORDER[key])
    return yaml.dump(ordered, Dumper=_Dumper, sort_keys=False, default_flow_style=False, allow_unicode=True)


def parameter_field(parameter: Parameter) -> forms.Field:
    """A parameter's field on the experiment form: text for sizes, numbers and names (comma-separated
    values make a sweep; blank: the definition's default), a box per choice, one for a flag."""
    label = parameter.label or shown_title(parameter.title, parameter.unit).capitalize()
    if parameter.kind == FLAG:
        return forms.BooleanField(required=False, label=label, help_text=parameter.help)
    if parameter.kind == CHOICE:
        # what none ticked means, in the words of its box ("held back", not "held_back")
        words = dict(parameter.choices).get(parameter.absent, str(parameter.absent)).split(":")[0]
        return forms.MultipleChoiceField(
            choices=list(parameter.choices),
            required=False,
            label=label,
            widget=forms.CheckboxSelectMultiple,
            help_text=parameter.help
            if parameter.kept_when_absent
            else f"{parameter.help}; none ticked: {words}",
        )
    blank = parameter.default if parameter.default is not None else parameter.absent
    initial = parameter.initial if parameter.initial is not None else parameter.default
    return forms.CharField(
        required=False,
        label=label,
        initial=None if initial is None else str(initial),
        help_text=f"{parameter.help}; blank: {blank}" if blank is not None else parameter.help,
    )


def parameter_values(parameter: Parameter, entered) -> list:
    """What the form's field says of a parameter, as a definition's list of values ([]: left to
    the definition's default, or to what a run naming none has)."""
    if parameter.kind == FLAG:
        return [True] if entered else []
    if parameter.kind == CHOICE:
        ticked = list(entered or [])
        return ticked if parameter.kept_when_absent or ticked != [parameter.absent] else []
    values = _split(entered or "")
    return [_number_or_text(v) for v in values] if parameter.kind == NUMBER else values


def parameter_initial(parameter: Parameter, values):
    """A definition's values of a parameter as its field shows them (parameter_values' inverse)."""
    if parameter.kind == FLAG:
        return True in _listed(values)
    if parameter.kind == CHOICE:
        return _listed(values)
    return ", ".join(str(v) for v in _listed(values))


class ExperimentForm(forms.Form):
    name = forms.CharField(max_length=200)
    description = forms.CharField(
        required=False,
        label="Question",
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="what this experiment asks; its report opens with it",
    )
    tags = forms.CharField(required=False, help_text="comma-separated labels to find it by: baseline, nvme")
    hosts = forms.MultipleChoiceField(widget=forms.CheckboxSelectMultiple)
    engines = forms.MultipleChoiceField(
        choices=choices(ENGINES, RUNNABLE_ENGINES),
        widget=forms.CheckboxSelectMultiple,
        initial=[DEFAULT_ENGINE],
    )
    server_options = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="one per line, name=value[,value]; allowed: " + ", ".join(sorted(SERVER_OPTIONS)),
    )
    workload = forms.ChoiceField(choices=choices(WORKLOADS, WORKLOAD_NAMES), initial="oltp_write_only")
    tables = forms.IntegerField(initial=4)
    table_size = forms.IntegerField(initial=20000)
    threads = forms.IntegerField(initial=4)
    warmup_max_seconds = forms.IntegerField(
        required=False,
        initial=0,
        help_text="after recovery, run the workload again for at most this long and time the way "
        "back to 90% throughput; 0 = off",
    )
    events = forms.IntegerField(initial=8000, help_text="transactions before the crash (after_workload)")
    time_seconds = forms.IntegerField(
        required=False, initial=0, help_text="or a workload of this many seconds; 0 = by events"
    )
    crash_method = forms.ChoiceField(
        choices=choices(CRASH_METHODS, CRASH_METHOD_NAMES),
        initial="sigkill",
        required=False,  # left out: kill -9, as before the power cut existed
        help_text="power loss mounts a layer over the datadir that drops unsynced writes at the crash "
        "(slower I/O before the crash); the run also counts acknowledged commits lost",
    )
    crash_when = forms.MultipleChoiceField(
        choices=choices(CRASH_WHEN, CRASH_WHEN_NAMES),
        widget=forms.CheckboxSelectMultiple,
        initial=["after_workload"],
        help_text="two or more: each a cell of the matrix, its runs beside the others'",
    )
    after_seconds = forms.CharField(
        required=False, help_text="with 'during the workload': seconds into it, comma-separated"
    )
    redo_bytes = forms.CharField(
        required=False, help_text="with 'when the redo to replay reaches': sizes like 128M, comma-separated"
    )
    open_rows = forms.IntegerField(
        required=False,
        help_text="with 'a transaction open' or the long_transaction workload: rows it changes",
    )
    one_crash = forms.BooleanField(
        required=False,
        label="One crash, recovered many ways",
        help_text="the runs that differ only in buffer pool, page cache, storage or repetition restart "
        "copies of one crash: the same redo to the byte (kill -9, no binary log files)",
    )
    repetitions = forms.IntegerField(initial=1)

    # definition path -> form field, for putting validation messages where the user typed
    FIELD_FOR = {
        **{f"parameters.{parameter.name}": parameter.name for parameter in DEFINED},
        "workload.time_seconds": "time_seconds",
        "workload.name": "workload",
        "workload.tables": "tables",
        "workload.table_size": "table_size",
        "workload.threads": "threads",
        "workload.events": "events",
        "workload.warmup_max_seconds": "warmup_max_seconds",
        "workload.open_rows": "open_rows",
        "crash.method": "crash_method",
        "crash.when": "crash_when",
        "crash.after_seconds": "after_seconds",
        "crash.redo_bytes": "redo_bytes",
        "crash.open_rows": "open_rows",
        "crash.one_crash": "one_crash",
    }

    def __init__(self, *args, host_names=(), **kwargs):
        super().__init__(*args, **kwargs)
        for parameter in DEFINED:  # one field each, from the table of parameters
            self.fields[parameter.name] = parameter_field(parameter)
        self.fields["hosts"].choices = [(h, h) for h in host_names]
        if len(host_names) == 1:
            self.fields["hosts"].initial = list(host_names)

    @property
    def parameter_fields(self) -> list:
        """The parameters' fields in the table's order (the template's fieldset of them)."""
        return [self[parameter.name] for parameter in DEFINED]

    def definition(self) -> dict:
        data = self.cleaned_data
        options: dict[str, list] = {}
        for line in (data.get("server_options") or "").splitlines():
            if line.strip():
                name, _, values = line.partition("=")
                options[name.strip()] = [_number_or_text(v) for v in _split(values)]
        whens = data["crash_when"]
        when = whens[0] if len(whens) == 1 else whens  # two or more: a sweep
        crash = {"method": data.get("crash_method") or "sigkill", "when": when}
        long_transaction = data["workload"] == "long_transaction"  # its open_rows are the workload's
        for key in ("after_seconds", "redo_bytes"):
            values = [_number_or_text(v) for v in _split(data.get(key) or "")]
            if values:
                crash[key] = values[0] if len(values) == 1 else values  # two or more: a sweep
        if not long_transaction and data.get("open_rows") not in (None, ""):
            crash["open_rows"] = data["open_rows"]
        if data.get("one_crash"):
            crash["one_crash"] = True
        parameters = {
            parameter.name: values
            for parameter in DEFINED
            if (values := parameter_values(parameter, data.get(parameter.name)))
        }
        return {
            "name": data["name"],
            "hosts": data["hosts"],
            "engines": data["engines"],
            "parameters": parameters,
            "server_options": options,
            "workload": {
                "name": data["workload"],
                "tables": data["tables"],
                "table_size": data["table_size"],
                "threads": data["threads"],
                "events": data["events"],
                **({"time_seconds": data["time_seconds"]} if data.get("time_seconds") else {}),
                "warmup_max_seconds": data.get("warmup_max_seconds") or 0,
                **({"open_rows": data["open_rows"]} if long_transaction and data.get("open_rows") else {}),
            },
            "crash": crash,
            "repetitions": data["repetitions"],
            "description": data.get("description") or "",
            "tags": data.get("tags") or "",
        }

    @staticmethod
    def initial_from(definition: dict) -> dict:
        """The form's values for a definition (an experiment's, to run it again): what
        definition() turns back into the same definition."""
        parameters, workload = definition.get("parameters", {}), definition.get("workload", {})
        crash = definition.get("crash", {})

        def listed(values) -> str:
            return ", ".join(str(v) for v in (values if isinstance(values, list) else [values]))

        whens = crash.get("when", "after_workload")
        open_rows = workload.get("open_rows") or crash.get("open_rows")
        return {
            "name": f"{definition.get('name', '')} (again)"[:200],
            "description": definition.get("description", ""),
            "tags": ", ".join(definition.get("tags", [])),
            "hosts": definition.get("hosts", []),
            "engines": definition.get("engines", []),
            **{
                parameter.name: parameter_initial(parameter, parameters[parameter.name])
                for parameter in DEFINED
                if parameter.name in parameters
            },
            "server_options": "\n".join(
                f"{name}={listed(values)}" for name, values in definition.get("server_options", {}).items()
            ),
            **{
                name: workload[name]
                for name in WORKLOAD_NUMBERS
                if name in workload and name != "open_rows"  # the crash plan's field shows it
            },
            "workload": workload.get("name"),
            "crash_method": crash.get("method", "sigkill"),
            "crash_when": whens if isinstance(whens, list) else [whens],
            **{key: listed(crash[key]) for key in ("after_seconds", "redo_bytes") if key in crash},
            **({"open_rows": open_rows} if open_rows else {}),
            "one_crash": bool(crash.get("one_crash")),
            "repetitions": definition.get("repetitions", 1),
        }

    def add_definition_errors(self, errors: dict[str, list[str]]) -> None:
        for path, messages in errors.items():
            field = self.FIELD_FOR.get(path, path.split(".")[0])
            if path.startswith("server_options"):
                field = "server_options"
            target = field if field in self.fields else None
            for message in messages:
                prefix = f"{path}: " if target is None and path != "non_field_errors" else ""
                self.add_error(target, prefix + message)


class ExperimentChoiceField(forms.ModelChoiceField):
    """An experiment by its id and name: two of one name had been two identical lines."""

    def label_from_instance(self, obj) -> str:
        return f"#{obj.pk} {obj.name}"


class ImportForm(forms.Form):
    """The import page. Parameter checks are import_runs'; its messages land on these fields."""

    error_log = forms.FileField(help_text="the server's error log through the crash recovery")
    engine = forms.ChoiceField(choices=choices(ENGINES))  # imports take every engine, runnable or not
    server_version = forms.CharField(required=False, help_text="empty: read from the log")
    buffer_pool_size = forms.CharField(
        required=False, help_text="with a unit: 128M, 8G; empty: not known (kept unknown, not guessed)"
    )
    redo_log_size = forms.CharField(
        required=False, help_text="with a unit: 512M, 2G; empty: not known (kept unknown, not guessed)"
    )
    insert_rate = forms.CharField(initial="0", help_text="rows/s the workload ran at; 0 = unthrottled")
    host_label = forms.CharField(help_text="where the run was done, e.g. db7.prod")
    timezone = forms.CharField(initial="UTC", help_text="zone of the log's local times (5.5/5.6, MariaDB)")
    redo_bytes = forms.CharField(required=False, help_text="redo or WAL replayed, if the log does not say")
    innodb_status_at_crash = forms.FileField(
        label="InnoDB status at the crash",
        required=False,
        help_text="SHOW ENGINE INNODB STATUS before the crash",
    )
    rocksdb_log = forms.FileField(label="RocksDB LOG", required=False, help_text="RocksDB's LOG (MyRocks)")
    rocksdb_status_at_crash = forms.FileField(label="RocksDB status at the crash", required=False)
    sysbench_report = forms.FileField(label="sysbench report", required=False)
    experiment = ExperimentChoiceField(
        queryset=None, required=False, empty_label="a new experiment", help_text="chart them with these runs"
    )
    experiment_name = forms.CharField(required=False, help_text="for a new experiment")

    FILE_FIELDS = (
        "error_log",
        "innodb_status_at_crash",
        "rocksdb_log",
        "rocksdb_status_at_crash",
        "sysbench_report",
    )

    def __init__(self, *args, experiments=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["experiment"].queryset = experiments

    def uploads(self) -> dict:
        return {
            name: self.cleaned_data[name].file for name in self.FILE_FIELDS if self.cleaned_data.get(name)
        }

    def upload_names(self) -> dict[str, str]:
        """The files' names as the browser sent them, by field (shown on the imports page)."""
        given = [name for name in self.FILE_FIELDS if self.cleaned_data.get(name)]
        return {name: self.cleaned_data[name].name for name in given}

    def parameters(self) -> dict:
        return {name: self.cleaned_data.get(name) for name in self.fields if name not in self.FILE_FIELDS}

    def add_import_errors(self, errors: dict[str, list[str]]) -> None:
        for field, messages in errors.items():
            for message in messages:
                self.add_error(field if field in self.fields else None, message)
