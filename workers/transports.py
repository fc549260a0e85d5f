"""What every transport shares: how a run's spec reaches a benchmark host and its bundle comes back.

A transport copies nothing it does not need: the host runner (a zip of the standard-library
package `runner/`, its subfolders with it) and a JSON spec go out, `result.json` and the raw
files come back as a `Bundle`. The local transport (workers/local.py) runs the runner as a subprocess of the
worker; the SSH transport (workers/ssh.py) runs it on the host over SSH. Both keep the runner's
stdin open for the whole run: when the worker or the connection dies, the runner sees its stdin
close and stops every process it started. This module knows neither: workers/hosts.py chooses
one for a host.
"""

import importlib.util
import io
import json
import zipfile
from collections.abc import Callable
from functools import cache
from pathlib import Path

import runner

RUNNER_PACKAGE = Path(runner.__file__).resolve().parent
RUNNER_FILE = "runner.pyz"
# The runner has its own time limits for each step; this only catches a runner that hangs.
RUNNER_HARD_LIMIT_S = 24 * 3600
ProgressCallback = Callable[[str, float | None], None]
# A second's sample of the server's counters, as the runner took it (runner/sampler.py).
SampleCallback = Callable[[dict], None]


class TransportError(Exception):
    """The run could not be carried out on the host; the message is for the user.

    `permanent`: trying again cannot help (a bad spec, a missing binary, a changed host key, a
    server that never came back). Otherwise (a refused or dropped connection) the run may be
    tried again later. `host_down`: the host could not be reached at all (its status says so).
    `unsafe`: the host's work directory could be changed by another user (its status says so).
    """

    def __init__(self, message: str, permanent: bool = False, host_down: bool = False, unsafe: bool = False):
        super().__init__(message)
        self.permanent = permanent
        self.host_down = host_down
        self.unsafe = unsafe  # its work directory is refused: no run goes there until it is fixed


class RunCancelled(TransportError):
    """A user cancelled the run; its runner was told to stop (its stdin closed) and did."""

    def __init__(self):
        super().__init__(
            "cancelled while running: the runner stopped every process it started", permanent=True
        )


@cache
def runner_zip() -> bytes:
    """The runner as one file Python runs directly (`python3 runner.pyz`): its modules in a
    package, and a __main__ that starts it."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        # its modules, its families' folders and the workloads of its own (lua/)
        for path in sorted(RUNNER_PACKAGE.rglob("*")):
            inside = path.relative_to(RUNNER_PACKAGE)
            if path.suffix in (".py", ".lua") and inside != Path("__main__.py"):
                archive.write(path, f"recovery_lab_runner/{inside.as_posix()}")
        archive.writestr(
            "__main__.py", "import sys\nfrom recovery_lab_runner.runner import main\nsys.exit(main())\n"
        )
        # The power-cut layer's FUSE binding (ISC), found without importing it: importing it loads
        # libfuse3, which the dashboard's own machine need not have.
        archive.write(importlib.util.find_spec("mfusepy").origin, "mfusepy.py")
    return buffer.getvalue()


def write_runner(folder: Path) -> Path:
    """The runner zip written into folder, as the transports ship it; its path."""
    path = folder / RUNNER_FILE
    path.write_bytes(runner_zip())
    return path


def handle_event(line: str, on_progress: ProgressCallback, on_sample: SampleCallback | None = None) -> bool:
    """Pass a progress line (and a sample, to whoever wants them) on; False when the line is not
    one of the runner's events."""
    try:
        event = json.loads(line)
    except json.JSONDecodeError:
        return False
    if not isinstance(event, dict):
        return False
    if event.get("event") == "progress":
        percent = event.get("percent")
        on_progress(str(event.get("message", "")), percent if isinstance(percent, int | float) else None)
    elif event.get("event") == "sample" and on_sample is not None and isinstance(event.get("sample"), dict):
        on_sample(event["sample"])
    return True
