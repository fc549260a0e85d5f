"""Every parameter of a run, declared once: the rule its values keep and its default, what an axis,
a column and the form call it, its unit, how it is drawn and queried, and what a run that names
none of it had. The definition, the form, the runs CSV, explore's axes, the experiment's charts,
compare and the findings take their parameters from this table. No Django.

A new parameter: a `Parameter` in TABLE; the runner reads it from the spec's parameters.
"""

from collections.abc import Callable
from dataclasses import dataclass

from experiments import storage
from experiments.checks import boolean, int_between, matching, one_of, size_between
from experiments.vocabulary import CRASH_WHEN, CRASH_WHEN_NAMES, choices
from runner import contract

# How a parameter's values read: a size ("96M", drawn and compared by its bytes), a whole number,
# one of its choices, a name (a build's), or true where asked.
SIZE, NUMBER, CHOICE, NAME, FLAG = "size", "number", "choice", "name", "flag"


@dataclass(frozen=True)
class Parameter:
    name: str
    title: str  # what an axis and a column say: "buffer pool (bytes)"
    short: str  # what a cell's name calls it: "pool 1G"
    check: Callable[[object], object]  # one value's rule (experiments/checks.py)
    kind: str
    help: str = ""  # the form's words under its field
    # What a definition that names none runs (None: a run names it only where its definition did,
    # and `absent` says what a run that names none had).
    default: object = None
    initial: object = None  # the form's first value, where it is not the default
    label: str = ""  # the form's label, where the title is not it
    choices: tuple[tuple[object, str], ...] = ()  # CHOICE: (value, what it means)
    # A value ticked on the form is kept even where it is the one a run naming none has.
    kept_when_absent: bool = False
    column: str = ""  # the Run column that holds its number, where one does
    crash: str = ""  # the crash plan's value it is, swept among a run's parameters under this name
    phases: tuple[str, ...] = ()  # the phases it acts on directly: a finding says whether they moved

    @property
    def unit(self) -> str:
        return "B" if self.kind == SIZE else ""

    @property
    def absent(self) -> object:
        """What a run that names none of it had (None: every run names it, or none need)."""
        return contract.UNSAID_DEFAULTS.get(self.name)

    @property
    def absent_text(self) -> str | None:
        """`absent` as a run's parameters hold it in text (JSON's true and false)."""
        value = self.absent
        if value is None:
            return None
        return str(value).lower() if isinstance(value, bool) else str(value)


TABLE = (
    Parameter(
        "buffer_pool_size",
        "buffer pool (bytes)",
        "pool",
        size_between("8M", "64G"),
        SIZE,
        help="comma-separated: 128M, 1G",
        default=contract.DEFAULT_BUFFER_POOL,
        column="buffer_pool_bytes",
        phases=("redo_apply", "buffer_pool_load"),
    ),
    Parameter(
        "redo_log_size",
        "redo log size (bytes)",
        "log",
        size_between("8M", "64G"),
        SIZE,
        help="comma-separated: 64M, 512M",
        default=contract.DEFAULT_REDO_LOG,
        initial="64M, 512M",
        column="redo_log_bytes",
        phases=("redo_scan", "redo_apply", "wal_replay"),
    ),
    Parameter(
        "insert_rate",
        "insert rate asked (rows/s)",
        "rate",
        int_between(0, 1_000_000),
        NUMBER,
        help="rows inserted per second, comma-separated; 0 = unthrottled",
        default=0,
        column="insert_rate",
    ),
    # 0: binary log off; N: the server holds N binlog files at the crash (restart time against the
    # number of binlog files).
    Parameter(
        "binlog_files",
        "binlog files",
        "binlogs",
        int_between(0, contract.MAX_BINLOG_FILES),
        NUMBER,
        help="binary log files the server holds at the crash; 0 = binary log off",
        default=0,
        phases=("binlog_recovery",),
    ),
    # "system" (the host's installed server) or a build the host's probe lists under
    # WORK_DIR/builds/NAME/.
    Parameter(
        "server_build",
        "server build",
        "build",
        matching(contract.BUILD_NAME, "a build name like 10.11.9 or system"),
        NAME,
        help="comma-separated builds the hosts list (the hosts page): system, mariadb-11.8",
    ),
    # held_back: the method's, the engine's flushing held back so recovery replays the redo the
    # workload wrote; natural: the server's own flushing, as in production.
    Parameter(
        "flushing",
        "flushing",
        "flushing",
        one_of(*contract.FLUSHING),
        CHOICE,
        help="both: a sweep",
        choices=(
            ("held_back", "held back: recovery replays the redo the workload wrote (the method's)"),
            ("natural", "natural: the server flushes as in production (what a bigger log buys)"),
        ),
    ),
    # warm: what a crashed process on a machine that keeps running reads; cold: every file of the
    # server evicted first, as after a machine lost its memory.
    Parameter(
        "restart_cache",
        "page cache at the restart",
        "page cache",
        one_of(*contract.RESTART_CACHES),
        CHOICE,
        help="both: a sweep; none ticked: warm, or cold after a power cut",
        choices=(
            ("warm", "warm: the page cache as the kill left it (a crashed process, the machine up)"),
            ("cold", "cold: every file of the server evicted first (a machine that lost its memory)"),
        ),
        kept_when_absent=True,
    ),
    # local (the host's disk as it is) or a storage class (storage_classes.yaml) the runner caps to.
    Parameter(
        "storage",
        "storage at the restart",
        "storage",
        one_of(*storage.NAMES),
        CHOICE,
        help="a class caps the restarted server's reads and writes to its rates (the kernel's blkio "
        "throttle); the workload runs uncapped",
        choices=(
            (contract.LOCAL_STORAGE, f"{contract.LOCAL_STORAGE}: the host's disk as it is"),
            *((c.name, c.said()) for c in storage.CLASSES.values()),
        ),
    ),
    Parameter(
        "profile",
        "CPU profile of the restart",
        "profiled",
        boolean(),
        FLAG,
        label="CPU profile of each restart",
        help="perf samples the server from its spawn after the crash to its first query (where the host "
        "has perf); the run page draws a flame graph, compare what grew",
    ),
    # The crash plan's swept values (its fields are the crash plan's on the form).
    Parameter(
        "crash_when",
        "crash plan",
        "crash",
        one_of(*CRASH_WHEN_NAMES),
        CHOICE,
        choices=tuple(choices(CRASH_WHEN, CRASH_WHEN_NAMES)),
        crash="when",
    ),
    Parameter(
        "crash_redo_bytes",
        "crash at redo to replay (bytes)",
        "crash at redo",
        size_between("1M", "1T"),
        SIZE,
        crash="redo_bytes",
    ),
    Parameter(
        "crash_after_seconds",
        "crash after (s)",
        "crash after s",
        int_between(1, 86_400),
        NUMBER,
        crash="after_seconds",
    ),
)
BY_NAME = {parameter.name: parameter for parameter in TABLE}
# What a definition names under "parameters" (and the form's fieldset of them), and the crash
# plan's values swept among a run's parameters.
DEFINED = tuple(parameter for parameter in TABLE if not parameter.crash)
SWEPT = tuple(parameter for parameter in TABLE if parameter.crash)

# What an axis of a chart or an explored question is called, and the unit of its values.
AXIS_TITLES = {
    **{parameter.name: parameter.title for parameter in TABLE},
    "engine": "storage engine",
    "host": "host",
    "server_version": "server version",
    "experiment": "experiment",
}
PARAMETER_LABELS = {parameter.name: parameter.short for parameter in TABLE}
# The parameters every run of a definition names (a default where it named none), in order.
ALWAYS_NAMED = tuple(parameter.name for parameter in DEFINED if parameter.default is not None)
PARAMETER_UNITS = {parameter.name: parameter.unit for parameter in TABLE if parameter.unit}
OWN_PHASES = {parameter.name: parameter.phases for parameter in TABLE if parameter.phases}
SIZE_PARAMETERS = tuple(parameter.name for parameter in TABLE if parameter.kind == SIZE)
