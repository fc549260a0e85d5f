"""A CPU profile of the restart, where a run asks for one (`parameters.profile`). Standard library
only.

`perf record -e cpu-clock` (a software clock: no hardware counters needed, so it samples in a VM
too) samples every CPU, with call chains, from just before the crash to the restarted server's first
query answered: a perf attached to the server once spawned would miss its first moments and the
processes it had started by then (PostgreSQL forks its startup process at once), and perf's own
start (0.1 s and more on a busy host) is then no part of the downtime. The samples of the restarted
server's processes alone (their pids, as resources.py read them) are kept: perf's own stackcollapse
script folds them into one line per stack ("process;outer;...;leaf COUNT", Brendan Gregg's format;
the kernel's functions marked `_[k]`) kept as profile.folded, cut to the heaviest stacks
(MAX_FOLDED_BYTES) with the rest summed into one line. Names are the symbols the server's binary
exports unless the build has its debug symbols. Without perf, or where the kernel refuses sampling,
the run goes on and says why.
"""

import contextlib
import os
import select
import shutil
import signal
import subprocess
import time
from pathlib import Path

from .events import Clock
from .processes import first_line, spawn
from .resources import LOADER

FOLDED_FILE = "profile.folded"
FREQUENCY_HZ = 999
MAX_FOLDED_BYTES = 512 << 10
READY_TIMEOUT_S = 30.0
OTHER_STACKS = "[other stacks]"


class Profile:
    """perf record on every CPU from start() to stop(), kept for the pids stop() is given."""

    def __init__(self, work: Path, clock: Clock):
        self.work, self.clock = work, clock
        self.data = work / "perf.data"
        self.process: subprocess.Popen | None = None
        self.pipes: tuple = ()
        self.found: dict = {"frequency_hz": FREQUENCY_HZ, "event": "cpu-clock"}

    def start(self) -> None:
        perf = shutil.which("perf")
        if perf is None:
            self.found["error"] = "perf is not installed on this host (apt-get install linux-perf)"
            return
        # events off until perf is set up (on a busy host that takes longer than a small recovery),
        # then on through its control pipe, which acknowledges: sampling has begun
        control, control_end = os.pipe()
        ack_end, ack = os.pipe()
        args = [perf, "record", "-a", "-e", "cpu-clock", "-F", str(FREQUENCY_HZ), "-g", "--no-buildid-cache"]
        args += ["-o", str(self.data), "--quiet", "--delay=-1", f"--control=fd:{control},{ack}"]
        try:
            # the runner's own child, stopped by its pid with SIGINT (it then writes its file)
            self.process = spawn(
                args,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                pass_fds=(control, ack),
            )
        except OSError as exc:
            self.found["error"] = f"perf could not start: {exc}"
            os.close(control_end)
            os.close(ack_end)
            return
        finally:
            os.close(control)
            os.close(ack)
        # held open while perf runs: a control pipe closed under it spoils its file
        self.pipes = (os.fdopen(control_end, "wb", buffering=0), os.fdopen(ack_end, "rb", buffering=0))
        to_perf, answer = self.pipes
        try:
            to_perf.write(b"enable\n")
        except OSError:  # perf has already exited: stop() says why
            return
        ready, _, _ = select.select([answer], [], [], READY_TIMEOUT_S)
        said = answer.read(16) if ready else b""
        if not said.startswith(b"ack"):
            errors = self._end().decode(errors="replace").strip()[-300:]
            self.found["error"] = (
                f"perf ended before sampling (exit {self.process.returncode}): {errors}"
                if ready  # its end of the pipe closed: it exited
                else f"perf did not begin sampling within {READY_TIMEOUT_S:g} s"
            )
            return
        self.found["started_at"] = round(self.clock.now(), 4)

    def stop(self, pids: set[int], program: str | None = None) -> dict:
        """Stop sampling, fold the samples of `pids` into profile.folded; what it found (or why not)."""
        if self.process is None or "error" in self.found:
            return self.found
        self.found["stopped_at"] = round(self.clock.now(), 4)
        errors = self._end()
        if not self.data.exists() or self.data.stat().st_size == 0:
            said = errors.decode(errors="replace").strip()[-300:]
            self.found["error"] = f"perf recorded nothing (exit {self.process.returncode}): {said}"
            return self.found
        folding = time.monotonic()
        self._fold(pids, program)
        self.found["fold_s"] = round(time.monotonic() - folding, 3)  # after the restart, not in it
        with contextlib.suppress(OSError):
            self.data.unlink()
        return self.found

    def _end(self) -> bytes:
        """SIGINT to perf, which writes its file and exits; what it said on stderr."""
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signal.SIGINT)
        try:
            _, errors = self.process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            _, errors = self.process.communicate()
        for pipe in self.pipes:
            pipe.close()
        return errors or b""

    def _fold(self, pids: set[int], program: str | None) -> None:
        if not pids:
            self.found["error"] = "the server's processes were not read: no samples to keep"
            return
        perf = shutil.which("perf") or "perf"
        only = ["-i", str(self.data), "--pid", ",".join(map(str, sorted(pids)))]
        # perf's stackcollapse script by its path, which takes its own options after "--" (the
        # kernel's functions marked); by its name where perf does not say where its scripts are
        exec_path = first_line([perf, "--exec-path"])
        script = Path(exec_path) / "scripts" / "python" / "stackcollapse.py" if exec_path else None
        if script is not None and script.is_file():
            args = [perf, "script", *only, "-s", str(script), "--", "--kernel"]
        else:
            args = [perf, "script", "report", "stackcollapse", *only]
        done = subprocess.run(args, capture_output=True, timeout=600, stdin=subprocess.DEVNULL)
        stacks = []
        for line in done.stdout.decode(errors="replace").splitlines():
            stack, _, count = line.rpartition(" ")
            if stack and count.isdigit():
                if program and stack.startswith(LOADER):  # the loader's name: the program's
                    stack = program + stack[stack.find(";") :] if ";" in stack else program
                stacks.append((int(count), stack))
        if not stacks:
            self.found["error"] = (
                f"perf's samples could not be folded: {done.stderr.decode(errors='replace')[-300:]}"
            )
            return
        stacks.sort(reverse=True)
        kept, size, other = [], 0, 0
        for count, stack in stacks:
            line = f"{stack} {count}\n"
            if size + len(line) > MAX_FOLDED_BYTES:
                other += count
                continue
            kept.append(line)
            size += len(line)
        if other:
            kept.append(f"{OTHER_STACKS} {other}\n")
        (self.work / FOLDED_FILE).write_text("".join(kept))
        self.found.update(samples=sum(count for count, _ in stacks), stacks=len(stacks), stacks_cut=other > 0)
