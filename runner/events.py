"""What the runner says to its transport (JSON lines on stdout) and the clock it times on."""

import json
import sys
import threading
import time

EMITTING = threading.Lock()  # the sampler's thread emits too: one whole line at a time


def emit(event: str, **fields) -> None:
    line = json.dumps({"event": event, **fields}) + "\n"
    with EMITTING:
        sys.stdout.write(line)
        sys.stdout.flush()


def progress(message: str, percent: float) -> None:
    """A step of the run, and how far through the whole run it is (0-100), for the live page."""
    emit("progress", message=message, percent=round(percent, 1))


class Clock:
    """Host monotonic time, expressed as Unix seconds so it lines up with the server's log."""

    def __init__(self):
        self._wall0 = time.time()
        self._mono0 = time.monotonic()

    def now(self) -> float:
        return self._wall0 + (time.monotonic() - self._mono0)
