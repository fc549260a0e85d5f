"""The error log, each line stamped with the moment the runner saw it (MariaDB logs whole seconds)."""

import threading
from pathlib import Path

from .events import Clock
from .files import Refused, read_regular, refuse
from .processes import POLL_S


class LogStamper(threading.Thread):
    """Tails the server's error log and writes each line, prefixed with when it appeared."""

    def __init__(self, source: Path, target: Path, clock: Clock):
        super().__init__(daemon=True)
        self.source, self.target, self.clock = source, target, clock
        self._stopping = threading.Event()
        self.lines: list[tuple[float, str]] = []
        self.bytes_read = 0  # of the log so far (stall.py: the server's writes less its log's)
        self._lock = threading.Lock()
        # reads of the log done so far, for settle()
        self._passes = 0
        self._passed = threading.Condition()

    def run(self) -> None:
        offset, pending = 0, b""
        with self.target.open("w", encoding="utf-8") as out:
            while True:
                stopping = self._stopping.is_set()
                try:  # the server's OS user's folder: a plain file, a link at its name not followed
                    chunk = read_regular(self.source, start=offset)
                except FileNotFoundError:
                    chunk = b""
                except Refused as exc:
                    refuse(str(exc))
                    chunk = b""
                if chunk:
                    offset += len(chunk)
                    self.bytes_read = offset
                    moment = self.clock.now()
                    pending += chunk
                    *complete, pending = pending.split(b"\n")
                    for raw in complete:
                        text = raw.decode("utf-8", errors="replace").rstrip("\r")
                        out.write(f"[runner {moment:.6f}] {text}\n")
                        with self._lock:
                            self.lines.append((moment, text))
                    out.flush()
                with self._passed:
                    self._passes += 1
                    self._passed.notify_all()
                if stopping:
                    if pending:
                        text = pending.decode("utf-8", errors="replace")
                        out.write(f"[runner {self.clock.now():.6f}] {text}\n")
                    return
                self._stopping.wait(POLL_S)

    def stop(self) -> None:
        self._stopping.set()
        self.join(timeout=10)

    def settle(self, timeout_s: float = 2.0) -> None:
        """Wait until a read of the log that began after this call is done: once the server has
        exited, its last lines (the reason it gave) are then in `lines`."""
        with self._passed:
            wanted = self._passes + 2
            self._passed.wait_for(lambda: self._passes >= wanted or not self.is_alive(), timeout_s)

    def line_count(self) -> int:
        with self._lock:
            return len(self.lines)

    def texts(self, first: int) -> list[str]:
        """The lines read from the `first`th on."""
        with self._lock:
            return [text for _, text in self.lines[first:]]

    def tail(self, count: int = 12) -> str:
        """The last lines read; after the server exited, call settle() first."""
        with self._lock:
            return "\n".join(text for _, text in self.lines[-count:])
