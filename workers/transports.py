"""How a run's spec reaches a benchmark host and its bundle comes back.

A transport copies nothing it does not need: the host runner (one standard-library file) and a
JSON spec go out, `result.json` and the raw files come back as a `Bundle`. The local transport
runs the runner as a subprocess; SSH will follow the same `execute` contract.
"""

import json
import logging
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from django.conf import settings

from experiments.models import Host, Transport
from experiments.services import Bundle

logger = logging.getLogger(__name__)

RUNNER_PATH = Path(__file__).resolve().parent / "runner" / "runner.py"
# The runner has its own time limits for each step; this only catches a runner that hangs.
RUNNER_HARD_LIMIT_S = 24 * 3600


class TransportError(Exception):
    """The run could not be carried out on the host; the message is for the user."""


def read_bundle(folder: Path) -> Bundle:
    result_path = folder / "result.json"
    if not result_path.exists():
        raise TransportError("the host runner wrote no result.json")
    result = json.loads(result_path.read_text())
    files = {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}
    return Bundle(result=result, files=files)


ProgressCallback = Callable[[str, float | None], None]


def handle_events(stream, on_progress: ProgressCallback) -> list[str]:
    """Pass progress lines on as they arrive; return anything that was not an event."""
    other = []
    for line in stream:
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            other.append(line.rstrip())
            continue
        if isinstance(event, dict) and event.get("event") == "progress":
            percent = event.get("percent")
            on_progress(str(event.get("message", "")), percent if isinstance(percent, int | float) else None)
    return other


class LocalTransport:
    def __init__(self, host: Host):
        self.host = host

    def execute(self, spec: dict, on_progress: ProgressCallback) -> Bundle:
        settings.RUNNER_WORK_DIR.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="bundle-", dir=settings.RUNNER_WORK_DIR) as tmp:
            folder = Path(tmp)
            spec_path = folder / "spec.json"
            spec_path.write_text(json.dumps({**spec, "work_dir": str(settings.RUNNER_WORK_DIR)}))
            out = folder / "bundle"
            process = subprocess.Popen(
                [sys.executable, str(RUNNER_PATH), "--spec", str(spec_path), "--out", str(out)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            stray = handle_events(process.stdout, on_progress)
            try:
                process.wait(timeout=RUNNER_HARD_LIMIT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                raise TransportError("the host runner did not finish within 24 hours") from None
            stderr = process.stderr.read()
            if not (out / "result.json").exists():
                logger.error(
                    "runner exited %s without a bundle: %s %s", process.returncode, stray, stderr[-2000:]
                )
                raise TransportError(
                    f"the host runner stopped (exit {process.returncode}) without a result: "
                    f"{(stderr or ' '.join(stray))[-500:]}"
                )
            return read_bundle(out)


def transport_for(host: Host):
    if host.transport == Transport.LOCAL:
        return LocalTransport(host)
    raise TransportError(f"host {host.name}: the {host.transport} transport is not available yet")
