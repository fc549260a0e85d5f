"""The local transport: the runner as a subprocess of the worker, on this machine."""

import contextlib
import json
import logging
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import replace
from pathlib import Path

from django.conf import settings

from experiments.models import Host
from experiments.services import Bundle
from runner.contract import BUILDS_DIR, RunSpec
from runner.files import UnsafeFolder, own_folder
from workers.transports import (
    RUNNER_HARD_LIMIT_S,
    ProgressCallback,
    RunCancelled,
    SampleCallback,
    TransportError,
    handle_event,
    write_runner,
)

logger = logging.getLogger(__name__)


def read_bundle(folder: Path) -> Bundle:
    result_path = folder / "result.json"
    if not result_path.exists():
        raise TransportError("the host runner wrote no result.json", permanent=True)
    result = json.loads(result_path.read_text())
    files = {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}
    return Bundle(result=result, files=files)


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


def work_dir() -> Path:
    """This machine's work directory, made root's (or this user's) and writable by nobody else,
    or refused: the runner is started from it, as root on a benchmark host."""
    try:
        return own_folder(settings.RUNNER_WORK_DIR, "work directory", "RUNNER_WORK_DIR")
    except UnsafeFolder as exc:
        raise TransportError(str(exc), permanent=True) from None


class LocalTransport:
    def __init__(self, host: Host):
        self.host = host

    def install_build(self, name: str, folder: Path) -> None:
        """A build folder copied to this machine's builds/NAME/, whole or not at all."""
        builds = work_dir() / BUILDS_DIR
        builds.mkdir(mode=0o755, exist_ok=True)
        partial = builds / f".{name}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        shutil.copytree(folder, partial, symlinks=True)
        shutil.rmtree(builds / name, ignore_errors=True)
        partial.rename(builds / name)

    def probe(self, measure_disk: bool = False) -> dict:
        """This machine's facts, read by the runner itself; `measure_disk`: its disk's floor
        measured first (fio, about 12 s)."""
        with tempfile.TemporaryDirectory(prefix="probe-", dir=work_dir()) as tmp:
            runner = write_runner(Path(tmp))
            done = subprocess.run(
                [
                    sys.executable,
                    str(runner),
                    "--probe",
                    str(settings.RUNNER_WORK_DIR),
                    *(["--measure-disk"] if measure_disk else []),
                ],
                capture_output=True,
                text=True,
                timeout=720 if measure_disk else 120,
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
        with tempfile.TemporaryDirectory(prefix="bundle-", dir=work_dir()) as tmp:
            folder = Path(tmp)
            spec_path = folder / "spec.json"
            spec_path.write_text(replace(spec, work_dir=str(settings.RUNNER_WORK_DIR)).to_json())
            runner = write_runner(folder)
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
