"""The SSH transport (asyncssh): the runner zip and the spec go to the host, the runner runs
with the host's python3 and streams its events back, the bundle comes back as one tar.gz.

A host's key is pinned when an admin confirms the fingerprint a probe read (the probe of an
unconfirmed host reads the offered key and nothing else), and any other key is refused afterwards.
The dashboard logs in with its own key (experiments.services.ssh_keys), decrypted in memory only. The
runner's stdin stays open for the whole run: if the connection drops, sshd closes it and the
runner stops every process it started. Every command is built from values the dashboard made
(paths it generated, validated at registration), each quoted; nothing a user typed is in them.
"""

import asyncio
import contextlib
import io
import json
import shlex
import subprocess
import threading
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path

import asyncssh
from django.conf import settings

from experiments.ingest.unpacking import BoundedTar, Limits, UnpackRefused
from experiments.models import Host
from experiments.services import Bundle
from experiments.services.ssh_keys import dashboard_private_key, dashboard_public_key
from runner.contract import BUILDS_DIR, RunSpec
from workers.transports import (
    RUNNER_HARD_LIMIT_S,
    ProgressCallback,
    RunCancelled,
    SampleCallback,
    TransportError,
    handle_event,
    runner_zip,
)

KEEPALIVE_S = 10


class SSHTransport:
    def __init__(self, host: Host):
        self.host = host
        # Read from the database here, before the event loop: Django's ORM is synchronous.
        self.client_key = dashboard_private_key()
        self.public_key = dashboard_public_key()

    # The two things a transport does -----------------------------------------------------

    def probe(self, measure_disk: bool = False) -> dict:
        """Read the host's facts over a connection whose key is the pinned one. With no key
        pinned yet, only the key the host offers is read (no login, nothing sent): an admin
        confirms its fingerprint before anything else happens; "facts" is None then.
        `measure_disk`: the disk's floor measured first (fio)."""
        if not self.host.host_key:
            return asyncio.run(self._offered_key())
        return asyncio.run(self._with_connection(lambda conn: self._probe(conn, measure_disk)))

    async def _offered_key(self) -> dict:
        try:
            key = await asyncio.wait_for(
                asyncssh.get_server_host_key(self.host.ssh_host, port=self.host.ssh_port, config=[]),
                settings.SSH_CONNECT_TIMEOUT_S,
            )
        except (OSError, TimeoutError, asyncssh.Error) as exc:
            raise TransportError(f"{self.where}: {connection_trouble(exc)}", host_down=True) from None
        if key is None:
            raise TransportError(f"{self.where} offered no host key", permanent=True)
        return {
            "facts": None,
            "host_key": key.export_public_key().decode().strip(),
            "host_key_fingerprint": key.get_fingerprint("sha256"),
        }

    def execute(
        self,
        spec: RunSpec,
        on_progress: ProgressCallback,
        cancelled: threading.Event | None = None,
        on_sample: SampleCallback | None = None,
    ) -> Bundle:
        if not self.host.host_key:
            raise TransportError(
                f"host {self.host.name}: an admin has not confirmed its SSH host key yet; probe it and "
                "confirm the fingerprint (the hosts page, POST /api/hosts/{id}/trust-host-key/ or "
                "registerhost NAME --trust-host-key SHA256:...)",
                permanent=True,
            )

        async def run(conn):
            try:
                work = self._execute(conn, spec, on_progress, cancelled or threading.Event(), on_sample)
                return await asyncio.wait_for(work, RUNNER_HARD_LIMIT_S)
            except TimeoutError:
                # Leaving the connection closes the runner's stdin: it stops its processes.
                raise TransportError(
                    f"the host runner did not finish within {RUNNER_HARD_LIMIT_S} s", permanent=True
                ) from None

        return asyncio.run(self._with_connection(run))

    def install_build(self, name: str, folder: Path) -> None:
        """A build folder sent as a tar stream to the host's builds/NAME/, whole or not at all."""
        archive = subprocess.run(
            # gzip's fastest level: a 156 MiB build in 2 s, 3x smaller
            ["tar", "-I", "gzip -1", "-cf", "-", "-C", str(folder), "."],
            capture_output=True,
            check=True,
            timeout=600,
        ).stdout
        builds = f"{self.host.work_dir}/{BUILDS_DIR}"
        partial = shlex.quote(f"{builds}/.{name}.partial")
        final = shlex.quote(f"{builds}/{name}")
        bootstrap = shlex.quote(BOOTSTRAP)
        work = shlex.quote(self.host.work_dir)

        async def send(conn):
            # the work directory checked (and made root's) before anything is written in it
            done = await asyncio.wait_for(
                conn.run(f"python3 -c {bootstrap} {work} check", input=payload(), encoding=None), 300
            )
            if started_in((done.stdout or b"").partition(b"\n")[0]) is None:
                raise self._refused((done.stdout or b"") + (done.stderr or b""))
            await self._command(
                conn,
                f"mkdir -p -- {shlex.quote(builds)} && rm -rf -- {partial} && mkdir -- {partial} && "
                f"tar -xzf - -C {partial} && rm -rf -- {final} && mv -- {partial} {final}",
                archive,
                timeout=1800,
            )

        asyncio.run(self._with_connection(send))

    # Connection ----------------------------------------------------------------------------

    @property
    def where(self) -> str:
        return f"{self.host.ssh_user}@{self.host.ssh_host}:{self.host.ssh_port}"

    async def _with_connection(self, work: Callable[[asyncssh.SSHClientConnection], Awaitable]):
        if not self.host.host_key:  # never log in to a machine nobody vouched for
            raise TransportError(f"host {self.host.name}: no confirmed host key", permanent=True)
        known_hosts = ([asyncssh.import_public_key(self.host.host_key)], [], [])
        try:
            async with asyncssh.connect(
                self.host.ssh_host,
                port=self.host.ssh_port,
                username=self.host.ssh_user,
                client_keys=[asyncssh.import_private_key(self.client_key)],
                known_hosts=known_hosts,
                agent_path=None,
                config=[],
                connect_timeout=settings.SSH_CONNECT_TIMEOUT_S,
                keepalive_interval=KEEPALIVE_S,
                keepalive_count_max=3,
            ) as conn:
                return await work(conn)
        except asyncssh.HostKeyNotVerifiable:
            raise TransportError(
                f"{self.where} presented a host key that is not the one an admin confirmed "
                f"({self.host.host_key_fingerprint}). If the host was reinstalled on purpose, forget "
                "the old key (python manage.py registerhost NAME --forget-host-key), probe again and "
                "confirm the new one; otherwise something is answering in its place.",
                permanent=True,
            ) from None
        except asyncssh.PermissionDenied:
            raise TransportError(
                f"{self.where} refused the dashboard's key: add this line to ~{self.host.ssh_user}/"
                f".ssh/authorized_keys on the host:\n{self.public_key}",
                permanent=True,
            ) from None
        except (OSError, TimeoutError, asyncssh.Error) as exc:
            # refused, unreachable, timed out, dropped: the host may be back later
            raise TransportError(f"{self.where}: {connection_trouble(exc)}", host_down=True) from None

    async def _command(self, conn, command: str, data: bytes | None = None, timeout: float = 300) -> bytes:
        done = await asyncio.wait_for(conn.run(command, input=data, encoding=None, check=False), timeout)
        if done.exit_status != 0:
            raise TransportError(
                f"{self.where}: `{command.split()[0]}` failed (exit {done.exit_status}): "
                f"{(done.stderr or b'').decode(errors='replace')[-500:]}",
                permanent=done.exit_status == 127,  # not found: installing it is the user's move
            )
        return done.stdout or b""

    def _refused(self, output: bytes) -> TransportError:
        """The work directory failed the bootstrap's check: said with the runner's own words."""
        for line in output.decode(errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                said = json.loads(line)
                if isinstance(said, dict) and said.get("event") == "unsafe_work_dir":
                    # not permanent: the run waits, queued, until the host is fixed (dispatch)
                    return TransportError(f"{self.host.name}: {said['error']}", unsafe=True)
        return TransportError(
            f"{self.where}: the runner did not start: {output[-500:].decode(errors='replace')}"
        )

    # Work ------------------------------------------------------------------------------------

    async def _probe(self, conn, measure_disk: bool = False) -> dict:
        bootstrap = shlex.quote(BOOTSTRAP)
        work = shlex.quote(self.host.work_dir)
        mode = shlex.quote("probe-disk" if measure_disk else "probe")
        done = await asyncio.wait_for(
            conn.run(f"python3 -c {bootstrap} {work} {mode}", input=payload(), encoding=None, check=False),
            600,
        )
        output = done.stdout or b""
        first, _, facts = output.partition(b"\n")
        folder = started_in(first)
        if folder is None:
            raise self._refused(output + (done.stderr or b""))
        try:
            if done.exit_status != 0:
                raise TransportError(
                    f"{self.where}: the probe failed (exit {done.exit_status}): "
                    f"{(done.stderr or b'').decode(errors='replace')[-500:]}"
                )
            return {"facts": json.loads(facts), "host_key": "", "host_key_fingerprint": ""}
        finally:
            await self._remove(conn, folder)

    async def _execute(
        self,
        conn,
        spec: RunSpec,
        on_progress: ProgressCallback,
        cancelled: threading.Event,
        on_sample: SampleCallback | None = None,
    ) -> Bundle:
        spec = replace(spec, work_dir=self.host.work_dir)
        bootstrap = shlex.quote(BOOTSTRAP)
        work = shlex.quote(self.host.work_dir)
        process = await conn.create_process(f"python3 -c {bootstrap} {work} run", encoding=None)
        # the runner and its spec, then nothing: its stdin stays open while it runs (its watchdog)
        process.stdin.write(payload(spec.to_json().encode()))
        first = await process.stdout.readline()
        folder = started_in(first)
        if folder is None:
            rest = await process.stdout.read()
            errors = await process.stderr.read()
            process.close()
            raise self._refused(first + rest + errors)
        try:
            stray: list[str] = []
            stderr = asyncio.ensure_future(process.stderr.read())
            watcher = asyncio.ensure_future(close_on_cancel(process, cancelled))
            try:
                async for raw in process.stdout:
                    line = raw.decode(errors="replace")
                    # Django's ORM is synchronous: progress is written from a thread of its own.
                    if not await asyncio.to_thread(handle_event, line, on_progress, on_sample):
                        stray.append(line.rstrip())
                await process.wait()
            finally:
                watcher.cancel()
            if cancelled.is_set():
                raise RunCancelled()
            errors = (await stderr).decode(errors="replace")
            if process.exit_status not in (0, 1):
                raise TransportError(
                    f"the host runner stopped (exit {process.exit_status}) without a result: "
                    f"{(errors or ' '.join(stray))[-500:]}",
                    permanent=process.exit_status == 127,
                )
            archive = await self._command(conn, f"tar -czf - -C {shlex.quote(folder + '/bundle')} .")
        finally:
            await self._remove(conn, folder)
        return unpack_bundle(archive)

    async def _remove(self, conn, folder: str) -> None:
        """Clean up; on a dropped connection there is nothing to do (and the first error counts)."""
        with contextlib.suppress(TransportError, asyncssh.Error, OSError, TimeoutError):
            await self._command(conn, f"rm -rf -- {shlex.quote(folder)}", timeout=60)


# Run on the host as `python3 -c BOOTSTRAP WORK_DIR MODE`, its stdin: a 20-digit header (the
# runner zip's length, the spec's), the zip, the spec. It checks the work directory with the
# runner's own own_folder (imported from the zip in memory: nothing is written before the check)
# and makes it when missing; then writes the runner and the spec into a new folder of root's
# there (mkdtemp: 0700) and becomes the runner (exec): written and started in one step, from a
# place only root can write. Its first line says the folder; an unsafe work directory is said
# as the event unsafe_work_dir, and nothing is written or run. MODE: run, probe, probe-disk, or
# check (the folder made and checked, nothing run).
BOOTSTRAP = r"""
import json, os, sys, tempfile
def take(size):
    data = bytearray()
    while len(data) < size:
        chunk = os.read(0, size - len(data))
        if not chunk:
            sys.exit("recovery-lab: the runner was cut short in transit")
        data += chunk
    return bytes(data)
header = take(20)
code, spec = take(int(header[:10])), take(int(header[10:]))
memory = os.memfd_create("recovery-lab-runner")
written = 0
while written < len(code):
    written += os.write(memory, code[written:])
sys.path.insert(0, f"/proc/self/fd/{memory}")
from recovery_lab_runner.files import UnsafeFolder, own_folder
work, mode = sys.argv[1], sys.argv[2]
os.umask(0o077)
try:
    base = own_folder(work, "work directory", "the host's work_dir")
except (UnsafeFolder, OSError) as exc:
    print(json.dumps({"event": "unsafe_work_dir", "error": str(exc)}), flush=True)
    sys.exit(4)
if mode == "check":
    print(json.dumps({"event": "started", "folder": str(base)}), flush=True)
    sys.exit(0)
folder = tempfile.mkdtemp(prefix="bundle-", dir=base)
def put(name, data):
    fd = os.open(os.path.join(folder, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
put("runner.pyz", code)
print(json.dumps({"event": "started", "folder": folder}), flush=True)
runner = os.path.join(folder, "runner.pyz")
if mode == "run":
    put("spec.json", spec)
    spec_file, out = os.path.join(folder, "spec.json"), os.path.join(folder, "bundle")
    args = ["--spec", spec_file, "--out", out, "--watch-stdin"]
else:
    args = ["--probe", str(base), *(["--measure-disk"] if mode == "probe-disk" else [])]
os.execv(sys.executable, [sys.executable, runner, *args])
"""


def payload(spec: bytes = b"") -> bytes:
    """What BOOTSTRAP reads on its stdin: the header, the runner zip, the spec."""
    code = runner_zip()
    return f"{len(code):010d}{len(spec):010d}".encode() + code + spec


def started_in(line: bytes) -> str | None:
    """The folder BOOTSTRAP made, from its first line; None when it did not start the runner."""
    with contextlib.suppress(ValueError, AttributeError):
        said = json.loads(line)
        if said.get("event") == "started" and isinstance(said.get("folder"), str):
            return said["folder"]
    return None


async def close_on_cancel(process, cancelled: threading.Event) -> None:
    """Close the runner's channel once the run is cancelled: its stdin closes on the host and it
    stops every process it started."""
    while not cancelled.is_set():
        await asyncio.sleep(0.2)
    process.close()


def connection_trouble(exc: BaseException) -> str:
    """What went wrong with the connection, in words, with the library's own text after it."""
    detail = f"{exc.__class__.__name__}: {exc}".rstrip(": ")
    if isinstance(exc, asyncssh.ConnectionLost):
        return f"the connection dropped (host rebooted, sshd stopped or network lost) [{detail}]"
    if isinstance(exc, ConnectionRefusedError):
        return f"nothing accepts SSH connections on this port (sshd down, or wrong port) [{detail}]"
    if isinstance(exc, TimeoutError):
        return f"no answer within {settings.SSH_CONNECT_TIMEOUT_S} s (host down or firewalled) [{detail}]"
    return detail


# A bundle is a few files (result, logs, status snapshots, samples); more is not a runner's.
BUNDLE_MAX_MEMBERS = 200


def unpack_bundle(archive: bytes) -> Bundle:
    """The bundle's files from the tar.gz the host sent; flat names only, regular files only,
    within settings.BUNDLE_MAX_UNPACKED_BYTES (a permanent TransportError beyond, or when the
    archive is cut or corrupt)."""
    limits = Limits(unpacked_bytes=settings.BUNDLE_MAX_UNPACKED_BYTES, members=BUNDLE_MAX_MEMBERS)
    files = {}
    try:
        with BoundedTar(io.BytesIO(archive), limits) as tar:
            for member_name in tar.members:
                name = member_name.removeprefix("./")
                if "/" not in name:
                    files[name] = tar.read(member_name, limits.unpacked_bytes)
    except UnpackRefused as exc:
        raise TransportError(f"the bundle the host sent back is refused: {exc}", permanent=True) from exc
    if "result.json" not in files:
        raise TransportError("the host runner wrote no result.json", permanent=True)
    return Bundle(result=json.loads(files["result.json"]), files=files)
