"""How a run's spec reaches a benchmark host and its bundle comes back.

A transport copies nothing it does not need: the host runner (a zip of the standard-library
package `workers/runner`) and a JSON spec go out, `result.json` and the raw files come back as
a `Bundle`. The local transport runs the runner as a subprocess of the worker; the SSH transport
(workers/ssh.py) runs it on the host over SSH. Both keep the runner's stdin open for the whole
run: when the worker or the connection dies, the runner sees its stdin close and stops every
process it started.
"""

import contextlib
import importlib.util
import io
import json
import logging
import subprocess
import sys
import tempfile
import threading
import zipfile
from collections.abc import Callable
from dataclasses import replace
from functools import cache
from pathlib import Path

from django.conf import settings

from experiments.models import Host, Transport
from experiments.services import Bundle

from .runner.contract import RunSpec

logger = logging.getLogger(__name__)

RUNNER_PACKAGE = Path(__file__).resolve().parent / "runner"
RUNNER_PATH = RUNNER_PACKAGE / "runner.py"
# The runner has its own time limits for each step; this only catches a runner that hangs.
RUNNER_HARD_LIMIT_S = 24 * 3600
ProgressCallback = Callable[[str, float | None], None]
# A second's sample of the server's counters, as the runner took it (runner.py Sampler).
SampleCallback = Callable[[dict], None]


class TransportError(Exception):
    """The run could not be carried out on the host; the message is for the user.

    `permanent`: trying again cannot help (a bad spec, a missing binary, a changed host key, a
    server that never came back). Otherwise (a refused or dropped connection) the run may be
    tried again later. `host_down`: the host could not be reached at all (its status says so).
    """

    def __init__(self, message: str, permanent: bool = False, host_down: bool = False):
        super().__init__(message)
        self.permanent = permanent
        self.host_down = host_down


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
        for module in sorted(RUNNER_PACKAGE.glob("*.py")):
            if module.name != "__main__.py":
                archive.write(module, f"recovery_lab_runner/{module.name}")
        archive.writestr(
            "__main__.py", "import sys\nfrom recovery_lab_runner.runner import main\nsys.exit(main())\n"
        )
        # The power-cut layer's FUSE binding (ISC), found without importing it: importing it loads
        # libfuse3, which the dashboard's own machine need not have.
        archive.write(importlib.util.find_spec("mfusepy").origin, "mfusepy.py")
    return buffer.getvalue()


def read_bundle(folder: Path) -> Bundle:
    result_path = folder / "result.json"
    if not result_path.exists():
        raise TransportError("the host runner wrote no result.json", permanent=True)
    result = json.loads(result_path.read_text())
    files = {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}
    return Bundle(result=result, files=files)


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


def handle_events(
    stream, on_progress: ProgressCallback, on_sample: SampleCallback | None = None
) -> list[str]:
    """Pass progress lines on as they arrive; return anything that was not an event."""
    return [line.rstrip() for line in stream if not handle_event(line, on_progress, on_sample)]


def drain(stream, into: list[str]) -> threading.Thread:
    """Read a stream to its end in a thread, so the runner never blocks on a full pipe."""
    thread = threading.Thread(target=lambda: into.extend(stream), daemon=True)
    thread.start()
    return thread


def close_on_cancel(process: subprocess.Popen, cancelled: threading.Event | None) -> None:
    """Close the runner's stdin once the run is cancelled (it then stops everything it started);
    return when the runner ends on its own."""
    if cancelled is None:
        return
    while not cancelled.wait(0.2):
        if process.poll() is not None:
            return
    with contextlib.suppress(OSError, ValueError):
        process.stdin.close()


class LocalTransport:
    def __init__(self, host: Host):
        self.host = host

    def probe(self) -> dict:
        """This machine's facts, read by the runner itself."""
        settings.RUNNER_WORK_DIR.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="probe-", dir=settings.RUNNER_WORK_DIR) as tmp:
            runner = Path(tmp) / "runner.pyz"
            runner.write_bytes(runner_zip())
            done = subprocess.run(
                [sys.executable, str(runner), "--probe", str(settings.RUNNER_WORK_DIR)],
                capture_output=True,
                text=True,
                timeout=120,
            )
        if done.returncode != 0:
            raise TransportError(f"the probe failed: {done.stderr[-500:]}")
        return {"facts": json.loads(done.stdout), "host_key": "", "host_key_fingerprint": ""}

    def execute(
        self,
        spec: RunSpec,
        on_progress: ProgressCallback,
        cancelled: threading.Event | None = None,
        on_sample: SampleCallback | None = None,
    ) -> Bundle:
        settings.RUNNER_WORK_DIR.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="bundle-", dir=settings.RUNNER_WORK_DIR) as tmp:
            folder = Path(tmp)
            spec_path = folder / "spec.json"
            spec_path.write_text(replace(spec, work_dir=str(settings.RUNNER_WORK_DIR)).to_json())
            runner = folder / "runner.pyz"
            runner.write_bytes(runner_zip())
            out = folder / "bundle"
            process = subprocess.Popen(
                [sys.executable, str(runner), "--spec", str(spec_path), "--out", str(out), "--watch-stdin"],
                stdin=subprocess.PIPE,  # held open: if this worker dies, the runner stops
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            stderr: list[str] = []
            drain(process.stderr, stderr)
            # Closing the runner's stdin makes it stop its processes and exit: the hard limit,
            # and a cancel.
            expired = threading.Event()
            limit = threading.Timer(RUNNER_HARD_LIMIT_S, lambda: (expired.set(), process.stdin.close()))
            limit.start()
            watcher = threading.Thread(target=close_on_cancel, args=(process, cancelled), daemon=True)
            watcher.start()
            try:
                stray = handle_events(process.stdout, on_progress, on_sample)
                process.wait()
            finally:
                limit.cancel()
                if process.stdin and not process.stdin.closed:
                    process.stdin.close()
            if cancelled is not None and cancelled.is_set():
                raise RunCancelled()
            if expired.is_set():
                raise TransportError(
                    f"the host runner did not finish within {RUNNER_HARD_LIMIT_S} s and was stopped",
                    permanent=True,
                )
            if not (out / "result.json").exists():
                logger.error(
                    "runner exited %s without a bundle: %s %s", process.returncode, stray, stderr[-20:]
                )
                raise TransportError(
                    f"the host runner stopped (exit {process.returncode}) without a result: "
                    f"{(''.join(stderr) or ' '.join(stray))[-500:]}",
                    permanent=process.returncode not in (-9, 3),
                )
            return read_bundle(out)


def transport_for(host: Host):
    if host.transport == Transport.LOCAL:
        return LocalTransport(host)
    if host.transport == Transport.SSH:
        from .ssh import SSHTransport  # asyncssh is only loaded by workers that reach SSH hosts

        return SSHTransport(host)
    raise TransportError(f"host {host.name}: unknown transport {host.transport!r}", permanent=True)
