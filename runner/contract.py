"""What crosses the wire between the dashboard and the host runner. Standard library only: this
module is shipped to the host inside the runner's zip.

The spec goes out as JSON and is read back into `RunSpec`, which checks every value again (the
dashboard validated them against its allow-lists already; nothing a user typed reaches a shell
on the host either way). The runner answers with JSON-line events on stdout and a
`result.json` whose `contract_version` says which shape it has.
"""

import json
import re
from dataclasses import asdict, dataclass, field

from .builds import BUILD_NAME, SYSTEM_BUILD
from .builds import BUILDS_DIR as BUILDS_DIR  # where a host keeps its builds, and how each says what
from .builds import MANIFEST as MANIFEST  # it holds: installbuild writes them, the runner reads them
from .builds import MANIFEST_FORMAT as MANIFEST_FORMAT
from .engine import DEFAULT_FLUSHING, FLUSHING
from .engine import SAMPLE_COUNTERS as SAMPLE_COUNTERS  # a run's samples' names, for the dashboard
from .engine import SAMPLE_LEVELS as SAMPLE_LEVELS
from .errors import RunFailed
from .families import ENGINES as RUNNER_ENGINES
from .families import FAMILY_ENGINES, REGISTRY, Registry, options_of
from .floor import MEMORY_FILE_SYSTEMS as MEMORY_FILE_SYSTEMS  # the dashboard reads them from here
from .page_cache import MODES as RESTART_CACHES
from .processes import POLL_S as POLL_S  # how finely the error log is stamped
from .throttle import LIMIT_FILES

CONTRACT_VERSION = 1
SIZE = re.compile(r"^[1-9][0-9]{0,6}[KMGT]$")
# The storage a run's restart reads and writes: the host's disk as it is, or a class whose limits
# the runner applies (throttle.py); the dashboard names the classes (experiments/storage.py).
LOCAL_STORAGE = "local"
IMAGE_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
STORAGE_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")
DEFAULT_RESTART_CACHE = "warm"
# What a run's buffer pool and redo log are where its definition names neither.
DEFAULT_BUFFER_POOL, DEFAULT_REDO_LOG = "128M", "96M"
# Parameters a run names only when its definition did, and what their absence means (runs made
# before a parameter existed name none of it): one table for the definition, cells, compare,
# reports and the command line.
UNSAID_DEFAULTS = {
    "server_build": SYSTEM_BUILD,
    "flushing": DEFAULT_FLUSHING,
    "profile": False,
    "restart_cache": DEFAULT_RESTART_CACHE,
    "storage": LOCAL_STORAGE,
}
# What a restart from a crash image (crash.one_crash, image.py) may change: the rest of a run's
# parameters and its server options shape the workload and the redo it wrote, so runs that differ
# in them need a workload of their own (each group of runs alike in them gets its own image).
RESTART_PARAMETERS = ("buffer_pool_size", "restart_cache", "storage", "profile")
# The server variables a definition may set, with the values each takes: a tuple lists them, a
# range bounds a whole number. The one allow-list, made of each engine's own in every family
# (families/): the dashboard's definition checks read it, and the runner checks every spec
# against it again. An option is given only to the runs of the engines that have it; two
# families' options of one name allow the same values.
SERVER_OPTIONS: dict[str, tuple | range] = {}
for _engines in FAMILY_ENGINES.values():
    for _engine in _engines.values():
        for _name, _allowed in _engine.options.items():
            if SERVER_OPTIONS.setdefault(_name, _allowed) != _allowed:
                raise ImportError(f"server option {_name} allows other values in {_engine.server}")


def engine_options(engine: str) -> tuple[str, ...]:
    """The server options of an engine's runs (on any family's server)."""
    return tuple(options_of(engine))


def engine_refuses(
    engine: str, workload: str, binlog_files: int, options: dict, method: str, registry: Registry = REGISTRY
) -> list:
    """(field, why) for each thing of a run an engine cannot do; options given as a value or a
    list of values (a definition's sweep). Each family's engine of that name is asked (the build,
    and so the family, is a host's): what only some refuse says on whose server."""
    running = registry.families_running(engine)
    refusing: dict[tuple, list[str]] = {}
    for family in running:
        kind = registry.engines[family][engine]
        for problem in _refused_by(kind, engine, workload, binlog_files, options, method):
            refusing.setdefault(problem, []).append(registry.declared[family].label)
    return [
        (field, why if len(labels) == len(running) else f"{why} (on {' and '.join(labels)}'s server)")
        for (field, why), labels in refusing.items()
    ]


def _refused_by(kind, engine: str, workload: str, binlog_files: int, options: dict, method: str) -> list:
    problems = []
    if kind.workloads is not None and workload not in kind.workloads:
        problems.append(
            ("workload.name", f"{workload} does not run on {engine}: use one of {', '.join(kind.workloads)}")
        )
    if binlog_files and not kind.binary_log:
        problems.append(("parameters.binlog_files", f"{engine} has no binary log: binlog_files must be 0"))
    if method == "power_loss":
        for name, refused in kind.power_loss_refuses.items():
            values = options.get(name)
            if refused in (values if isinstance(values, list) else [values]):
                problems.append(
                    (
                        f"server_options.{name}",
                        f"{name}={refused} cannot survive a power cut: it is not a crash-safe setting",
                    )
                )
    return problems


def largest_redo_target(engine: str, redo_log_bytes: int | None) -> int | None:
    """The most redo an at_redo_bytes crash can wait for on a log of this size: the engine
    checkpoints before its log is full (None: nothing bounds it, or no size is known)."""
    share = RUNNER_ENGINES[engine].reachable_share_of_log
    return int(share * redo_log_bytes) if share and redo_log_bytes else None


def engine_workloads(engine: str) -> tuple[str, ...] | None:
    """The workloads an engine's runs take (None: every one of WORKLOADS)."""
    return RUNNER_ENGINES[engine].workloads


def server_option_allowed(name: str, value: object) -> bool:
    """Whether the allow-list lets `name` take `value` (a whole number for a range; one of the
    listed values, as given or as its text, otherwise)."""
    allowed = SERVER_OPTIONS.get(name)
    if allowed is None or isinstance(value, bool):
        return False
    if isinstance(allowed, range):
        return isinstance(value, int) and value in allowed
    return value in allowed


WORK_DIR = re.compile(r"^(?!.*\.\.)/[A-Za-z0-9._/-]{1,200}$")  # no ".." anywhere
ENGINES = tuple(RUNNER_ENGINES)  # each family's engines (families/)
WORKLOADS = (
    "oltp_write_only",
    "oltp_insert",
    "oltp_read_write",
    "oltp_update_index",
    "oltp_update_non_index",
    "insert_indexed",
    "tpcc_like",
    "long_transaction",
)
# Workloads of the project's own: sysbench Lua scripts shipped with the runner (runner/lua/).
SCRIPTED_WORKLOADS = ("insert_indexed", "tpcc_like", "long_transaction")
# long_transaction's open transaction: this many rows unless the definition says (workload.open_rows).
DEFAULT_OPEN_ROWS = 10_000
# sigkill: the server is killed, the operating system keeps what it wrote. power_loss: killed
# under the power-cut layer (powercut.py), which then drops every write not yet synced.
CRASH_METHODS = ("sigkill", "power_loss")
# Written to at the top of the power-cut layer's mount, it makes the cut (powercut.py).
POWER_CUT_FILE = ".recovery-lab-power-cut"

# A host's work directory unless it is registered with another: root's, under /var/lib, never a
# folder of a shared one such as /var/tmp that another user could have made first.
DEFAULT_WORK_DIR = "/var/lib/recovery-lab/work"
CRASH_WHEN = ("after_workload", "during_workload", "at_redo_bytes", "during_transaction")
MAX_OPEN_ROWS = 10_000_000
# The binary log files a server may hold at the crash (seed 003 asked 1, 200 and 2,000).
MAX_BINLOG_FILES = 2000
UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def size_bytes(text: str) -> int:
    """'128M' -> 134217728 (sizes are checked against SIZE first)."""
    return int(text[:-1]) * UNITS[text[-1]]


WORKLOAD_NUMBERS = (
    "tables",
    "table_size",
    "threads",
    "events",
    "time_seconds",
    "warmup_max_seconds",
    "open_rows",
)


@dataclass(frozen=True)
class RunSpec:
    run_id: int
    engine: str
    parameters: dict
    server_options: dict = field(default_factory=dict)
    workload: dict = field(default_factory=dict)
    crash: dict = field(default_factory=dict)
    start_timeout_s: float = 600
    # A restart after the crash that moves nothing this long has stalled (runner/stall.py)
    stall_after_s: float = 90
    work_dir: str = DEFAULT_WORK_DIR
    # Start from a cached copy of the loaded dataset (loaded once per engine, server version and
    # size, shut down slowly): the redo replayed is then the workload's alone.
    reuse_dataset: bool = True
    # A storage class (parameters.storage, not local): its limits as the dashboard's classes give
    # them, applied to the restart (throttle.py): {"name", "read_bps", "write_bps", "read_iops",
    # "write_iops"}, 0 or absent for none.
    storage: dict = field(default_factory=dict)
    # One crash recovered many ways (image.py): {"keep": NAME} keeps the state the kill left;
    # {"restore": NAME, "remove": bool} restarts a copy of it instead of loading and crashing.
    image: dict = field(default_factory=dict)
    version: int = CONTRACT_VERSION

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_dict(cls, data: dict) -> "RunSpec":
        """The spec, checked value by value; RunFailed (permanent) names the first bad one."""
        if data.get("version", CONTRACT_VERSION) != CONTRACT_VERSION:
            raise RunFailed(
                f"spec version {data.get('version')} is not {CONTRACT_VERSION}: update the runner"
            )
        known = set(cls.__dataclass_fields__)
        unknown = set(data) - known
        if unknown:
            raise RunFailed(f"unknown spec fields: {', '.join(sorted(unknown))}")
        try:
            spec = cls(**data)
        except TypeError as exc:
            raise RunFailed(f"bad run spec: {exc}") from None
        spec.check()
        return spec

    def check(self) -> None:
        if not isinstance(self.run_id, int) or self.run_id < 0:
            raise RunFailed("run_id must be a whole number")
        if self.engine not in ENGINES:
            raise RunFailed(f"engine {self.engine!r} is not supported by this runner")
        for key, least in (("start_timeout_s", 0), ("stall_after_s", 1)):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int | float) or not least <= value <= 86400:
                raise RunFailed(f"{key} must be a number of seconds from {least} to 86400")
        for key in ("buffer_pool_size", "redo_log_size"):
            if key in self.parameters and not SIZE.match(str(self.parameters[key])):
                raise RunFailed(f"{key} {self.parameters[key]!r} is not a size like 256M")
        build = self.parameters.get("server_build", SYSTEM_BUILD)
        if not isinstance(build, str) or not BUILD_NAME.match(build):
            raise RunFailed(f"server_build {build!r} is not a build name")
        files = self.parameters.get("binlog_files", 0)
        if isinstance(files, bool) or not isinstance(files, int) or not 0 <= files <= MAX_BINLOG_FILES:
            raise RunFailed(f"binlog_files must be a whole number from 0 to {MAX_BINLOG_FILES}")
        if not isinstance(self.parameters.get("profile", False), bool):
            raise RunFailed("profile must be true or false")
        if self.parameters.get("restart_cache", DEFAULT_RESTART_CACHE) not in RESTART_CACHES:
            raise RunFailed(f"restart_cache must be one of {', '.join(RESTART_CACHES)}")
        if self.parameters.get("flushing", DEFAULT_FLUSHING) not in FLUSHING:
            raise RunFailed(f"flushing must be one of {', '.join(FLUSHING)}")
        rate = self.parameters.get("insert_rate", 0)
        if isinstance(rate, bool) or not isinstance(rate, int) or rate < 0:
            raise RunFailed("insert_rate must be a whole number >= 0")
        for name, value in self.server_options.items():
            if name not in SERVER_OPTIONS:
                raise RunFailed(f"server option {name!r} is not one this runner sets")
            if name not in options_of(self.engine):
                raise RunFailed(f"server option {name!r} is not one of {self.engine}'s")
            if not server_option_allowed(name, value):
                raise RunFailed(f"server option {name}={value!r} is not an allowed value")
        if self.workload.get("name") not in WORKLOADS:
            raise RunFailed(f"workload {self.workload.get('name')!r} is not supported")
        method = self.crash.get("method", "sigkill")
        for _field, problem in engine_refuses(
            self.engine, self.workload["name"], files, self.server_options, method
        ):
            raise RunFailed(problem)
        for key in WORKLOAD_NUMBERS:
            value = self.workload.get(key, 0)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise RunFailed(f"workload.{key} must be a whole number >= 0")
        if method not in CRASH_METHODS:
            raise RunFailed(f"crash.method {method!r} is not supported by this runner")
        when = self.crash.get("when")
        if when not in CRASH_WHEN:
            raise RunFailed(f"crash.when {when!r} is not supported by this runner")
        if when == "at_redo_bytes" and not SIZE.match(str(self.crash.get("redo_bytes", ""))):
            raise RunFailed("crash.redo_bytes must be a size like 128M")
        rows = self.crash.get("open_rows")
        if when == "during_transaction" and not (
            isinstance(rows, int) and not isinstance(rows, bool) and 1 <= rows <= MAX_OPEN_ROWS
        ):
            raise RunFailed(f"crash.open_rows must be a whole number from 1 to {MAX_OPEN_ROWS}")
        self._check_storage()
        self._check_image(method, files)
        if not isinstance(self.reuse_dataset, bool):
            raise RunFailed("reuse_dataset must be true or false")
        if not WORK_DIR.match(self.work_dir):
            raise RunFailed(f"work_dir {self.work_dir!r} is not an absolute path of plain characters")

    def _check_storage(self) -> None:
        name = self.parameters.get("storage", LOCAL_STORAGE)
        if not isinstance(name, str) or not STORAGE_NAME.match(name):
            raise RunFailed(f"storage {name!r} is not a storage class name like hdd-raid10")
        if name == LOCAL_STORAGE:
            if self.storage:
                raise RunFailed("storage limits are given for the local storage, which has none")
            return
        if not isinstance(self.storage, dict) or self.storage.get("name") != name:
            raise RunFailed(f"storage class {name} comes without its limits")
        for key, value in self.storage.items():
            if key == "name":
                continue
            if key not in LIMIT_FILES:
                raise RunFailed(f"storage.{key} is not a limit ({', '.join(LIMIT_FILES)})")
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 10**12:
                raise RunFailed(f"storage.{key} must be a whole number from 0 (none) to 10^12 per second")

    def _check_image(self, method: str, binlog_files: int) -> None:
        image = self.image
        if not image:
            return
        if not isinstance(image, dict) or set(image) - {"keep", "restore", "remove"}:
            raise RunFailed("image takes keep, restore and remove only")
        named = [image[key] for key in ("keep", "restore") if key in image]
        if len(named) != 1 or not isinstance(named[0], str) or not IMAGE_NAME.match(named[0]):
            raise RunFailed("image names one crash image to keep or to restore, like run-42")
        if not isinstance(image.get("remove", False), bool) or ("remove" in image and "keep" in image):
            raise RunFailed("image.remove is true or false, and only for a restore")
        if method != "sigkill":
            raise RunFailed("a crash image is kept after a kill -9 only (a power cut's is not built)")
        if binlog_files:
            raise RunFailed("a crash image does not keep binary log files yet: binlog_files must be 0")
