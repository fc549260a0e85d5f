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
from runner.builds import BUILDS_DIR
from runner.contract import RunSpec
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

        async def send(conn):
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

    async def _upload_runner(self, conn) -> str:
        """A folder of its own under the host's work directory, with the runner in it."""
        base = shlex.quote(self.host.work_dir)
        folder = (
            await self._command(conn, f"mkdir -p -- {base} && mktemp -d {base}/bundle-XXXXXXXX")
        ).decode()
        folder = folder.strip()
        await self._command(conn, f"cat > {shlex.quote(folder + '/runner.pyz')}", runner_zip())
        return folder

    # Work ------------------------------------------------------------------------------------

    async def _probe(self, conn, measure_disk: bool = False) -> dict:
        folder = await self._upload_runner(conn)
        runner = shlex.quote(folder + "/runner.pyz")
        work = shlex.quote(self.host.work_dir)
        try:
            if measure_disk:
                output = await self._command(conn, f"python3 {runner} --probe {work} --measure-disk")
            else:
                output = await self._command(conn, f"python3 {runner} --probe {work}")
        finally:
            await self._remove(conn, folder)
        return {"facts": json.loads(output), "host_key": "", "host_key_fingerprint": ""}

    async def _execute(
        self,
        conn,
        spec: RunSpec,
        on_progress: ProgressCallback,
        cancelled: threading.Event,
        on_sample: SampleCallback | None = None,
    ) -> Bundle:
        folder = await self._upload_runner(conn)
        quoted = {name: shlex.quote(f"{folder}/{name}") for name in ("runner.pyz", "spec.json", "bundle")}
        spec = replace(spec, work_dir=self.host.work_dir)
        try:
            await self._command(conn, f"cat > {quoted['spec.json']}", spec.to_json().encode())
            process = await conn.create_process(
                f"python3 {quoted['runner.pyz']} --spec {quoted['spec.json']} "
                f"--out {quoted['bundle']} --watch-stdin"
            )
            stray: list[str] = []
            stderr = asyncio.ensure_future(process.stderr.read())
            watcher = asyncio.ensure_future(close_on_cancel(process, cancelled))
            try:
                async for line in process.stdout:
                    # Django's ORM is synchronous: progress is written from a thread of its own.
                    if not await asyncio.to_thread(handle_event, line, on_progress, on_sample):
                        stray.append(line.rstrip())
                await process.wait()
            finally:
                watcher.cancel()
            if cancelled.is_set():
                raise RunCancelled()
            errors = await stderr
            if process.exit_status not in (0, 1):
                raise TransportError(
                    f"the host runner stopped (exit {process.exit_status}) without a result: "
                    f"{(errors or ' '.join(stray))[-500:]}",
                    permanent=process.exit_status == 127,
                )
            archive = await self._command(conn, f"tar -czf - -C {quoted['bundle']} .")
        finally:
            await self._remove(conn, folder)
        return unpack_bundle(archive)

    async def _remove(self, conn, folder: str) -> None:
        """Clean up; on a dropped connection there is nothing to do (and the first error counts)."""
        with contextlib.suppress(TransportError, asyncssh.Error, OSError, TimeoutError):
            await self._command(conn, f"rm -rf -- {shlex.quote(folder)}", timeout=60)


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
