"""Hosts: registration (checked against patterns), probe results, host keys an admin confirms."""

import logging
import re
from datetime import timedelta

from celery import current_app
from django.db import transaction
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerUnreachable

from experiments.definition import HOST_NAME
from experiments.models import Host, HostStatus, ProbeState, Transport
from experiments.services.audit import audited_by
from runner import contract

logger = logging.getLogger(__name__)

SSH_USER = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")
SSH_HOST = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$|^[0-9a-fA-F:]{2,39}$")
WORK_DIR = contract.WORK_DIR


class HostRejected(ValueError):
    """A registration that cannot be stored, naming the field at fault."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


def register_host(
    name: str,
    transport: str,
    ssh_user: str = "",
    ssh_host: str = "",
    ssh_port: int = 22,
    work_dir: str = contract.DEFAULT_WORK_DIR,
    user=None,
) -> Host:
    """Create or update a host. Running it twice with the same values changes nothing; a new
    address forgets the confirmed host key (an admin confirms the new machine's)."""
    if not HOST_NAME.match(name or ""):
        raise HostRejected(
            "name", f"host name {name!r}: lowercase letters, digits, '.', '_' and '-', at most 63"
        )
    if transport not in Transport.values:
        raise HostRejected("transport", f"transport must be one of {', '.join(Transport.values)}")
    if transport == Transport.SSH:
        if not SSH_USER.match(ssh_user or ""):
            raise HostRejected("ssh_user", f"ssh_user {ssh_user!r}: a login name such as root or bench")
        if not SSH_HOST.match(ssh_host or ""):
            raise HostRejected("ssh_host", f"ssh_host {ssh_host!r}: a host name or IP address")
        if not 1 <= int(ssh_port) <= 65535:
            raise HostRejected("ssh_port", f"ssh_port {ssh_port}: 1..65535")
    if not WORK_DIR.match(work_dir or ""):
        raise HostRejected(
            "work_dir", f"work_dir {work_dir!r}: an absolute path of letters, digits, '.', '_', '-', '/'"
        )
    address = {"ssh_user": ssh_user, "ssh_host": ssh_host, "ssh_port": int(ssh_port)}
    with transaction.atomic(), audited_by(user):
        host = Host.objects.select_for_update().filter(name=name).first()
        if host is None:
            return Host.objects.create(name=name, transport=transport, work_dir=work_dir, **address)
        before = (host.transport, host.ssh_user, host.ssh_host, host.ssh_port)
        moved = before != (transport, *address.values())
        host.transport, host.work_dir, host.active = transport, work_dir, True
        for field, value in address.items():
            setattr(host, field, value)
        if moved:
            host.host_key = host.host_key_fingerprint = ""
            host.offered_host_key = host.offered_host_key_fingerprint = ""
            host.status = HostStatus.UNKNOWN
        host.save()
    return host


def record_probe(host_id: int, facts: dict) -> Host:
    """Store what a probe found over a connection to the confirmed key (or a local host). Running
    it twice changes nothing but last_seen. Never pins a key: see trust_host_key."""
    with transaction.atomic():
        host = Host.objects.select_for_update().get(id=host_id)
        host.facts, host.last_seen, host.last_error = facts, timezone.now(), ""
        host.status = HostStatus.IDLE
        host.save()
    return host


def record_offered_host_key(host_id: int, host_key: str, fingerprint: str) -> Host:
    """A probe of a host with no confirmed key read the key it offers: kept to show an admin, the
    host `unverified` (nothing is sent to it) until an admin confirms it. Running it twice
    changes nothing but last_seen; a host whose key was confirmed meanwhile is left as it is."""
    with transaction.atomic():
        host = Host.objects.select_for_update().get(id=host_id)
        if host.host_key:
            return host
        host.offered_host_key, host.offered_host_key_fingerprint = host_key, fingerprint
        host.status, host.last_seen, host.last_error = HostStatus.UNVERIFIED, timezone.now(), ""
        host.save()
    return host


class HostKeyRejected(ValueError):
    """A fingerprint an admin gave does not confirm the key the host offered (or none was read)."""


def trust_host_key(host_id: int, fingerprint: str, user=None) -> Host:
    """An admin's act: pin the key the last probe read, if `fingerprint` (SHA256:...) is its
    fingerprint, compared out of band with the host's own (`ssh-keygen -lf
    /etc/ssh/ssh_host_ed25519_key.pub` there). Running it twice changes nothing."""
    fingerprint = (fingerprint or "").strip()
    with transaction.atomic(), audited_by(user):
        host = Host.objects.select_for_update().get(id=host_id)
        if host.host_key and host.host_key_fingerprint == fingerprint:
            return host
        if not host.offered_host_key:
            raise HostKeyRejected(f"host {host.name} has offered no key yet: probe it, then confirm")
        if fingerprint != host.offered_host_key_fingerprint:
            raise HostKeyRejected(
                f"host {host.name} offered {host.offered_host_key_fingerprint}, not "
                f"{fingerprint or 'nothing'}: nothing was pinned (compare with ssh-keygen -lf on the host)"
            )
        host.host_key, host.host_key_fingerprint = host.offered_host_key, host.offered_host_key_fingerprint
        host.offered_host_key = host.offered_host_key_fingerprint = ""
        host.status = HostStatus.UNKNOWN  # confirmed; the next probe reads its facts
        host.save()
    return host


def record_host_unsafe(host_id: int, error: str) -> Host:
    """The host's work directory (or a folder above it) could be changed by another user: the
    runner refused it, nothing was written or run there. `unsafe`, with the reason and the fix,
    until a probe finds it safe; its runs wait, queued, meanwhile (dispatch)."""
    Host.objects.filter(id=host_id).update(status=HostStatus.UNSAFE, last_error=error[:2000])
    return Host.objects.get(id=host_id)


def record_host_down(host_id: int, error: str) -> Host:
    """A probe or a run could not reach the host: `down`, with the reason, until it answers."""
    Host.objects.filter(id=host_id).update(status=HostStatus.DOWN, last_error=error[:2000])
    return Host.objects.get(id=host_id)


def forget_host_key(host_id: int) -> None:
    """After a host was reinstalled on purpose: the next probe reads its new key, for an admin to
    confirm."""
    Host.objects.filter(id=host_id).update(
        host_key="",
        host_key_fingerprint="",
        offered_host_key="",
        offered_host_key_fingerprint="",
        status=HostStatus.UNKNOWN,
    )


def active_host_names() -> list[str]:
    return list(Host.objects.filter(active=True).values_list("name", flat=True))


def record_host_reachable(host_id: int) -> None:
    Host.objects.filter(id=host_id).update(last_seen=timezone.now(), status=HostStatus.IDLE, last_error="")


REQUESTED_PROBE_TASK = "workers.tasks.requested_probe_task"
# A probe asked for and not ended after this long was lost with its worker: another may be asked.
PROBE_LOST_AFTER = timedelta(minutes=15)


class ProbeBusy(Exception):
    """A probe of the host is queued or running already."""


def request_probe(host_id: int, measure_disk: bool = False) -> Host:
    """An admin asks for a probe (`measure_disk`: fio first): queued for the worker, one at a time
    per host. ProbeBusy while one is queued or running. The task is sent once the request is
    saved; with the broker unreachable the probe ends at once, saying so."""
    with transaction.atomic():
        host = Host.objects.select_for_update().get(id=host_id)
        recent = host.probe_requested_at and timezone.now() - host.probe_requested_at < PROBE_LOST_AFTER
        if host.probe_state and recent:
            what = "its disk measured" if host.probe_measure_disk else "a probe"
            raise ProbeBusy(
                f"{host.name}: {what} is {host.probe_state} already "
                f"(asked at {host.probe_requested_at:%H:%M:%S}): its result shows here when it is done"
            )
        host.probe_state, host.probe_measure_disk = ProbeState.QUEUED, measure_disk
        host.probe_requested_at = timezone.now()
        # update(), not save(): a probe's bookkeeping is no change of the host for the audit trail
        Host.objects.filter(id=host_id).update(
            probe_state=host.probe_state,
            probe_measure_disk=measure_disk,
            probe_requested_at=host.probe_requested_at,
        )
        transaction.on_commit(lambda: _send_probe(host_id))
    return host


def _send_probe(host_id: int) -> None:
    try:
        current_app.send_task(REQUESTED_PROBE_TASK, args=[host_id], retry=False)
    except (BrokerUnreachable, OSError) as exc:
        logger.warning("broker unreachable, the probe of host %s waits: %s", host_id, exc)
        Host.objects.filter(id=host_id, probe_state=ProbeState.QUEUED).update(
            probe_state="",
            probe_outcome="the probe could not be queued: the task broker is unreachable; try again",
            probe_failed=True,
            probe_outcome_at=timezone.now(),
        )


def resend_requested_probes(older_than: timedelta) -> list[int]:
    """Beat: a probe asked for and still queued after `older_than` lost its message (the broker
    restarted or was emptied): sent again. Taking it is atomic (start_requested_probe), so a
    second message changes nothing. Returns the hosts whose probe was sent again."""
    since = timezone.now() - older_than
    waiting = list(
        Host.objects.filter(probe_state=ProbeState.QUEUED, probe_requested_at__lt=since).values_list(
            "id", flat=True
        )
    )
    for host_id in waiting:
        _send_probe(host_id)
    return waiting


def start_requested_probe(host_id: int) -> bool | None:
    """The worker takes the host's queued probe: whether it measures the disk; None when there
    is none to take (taken by another worker, or never asked)."""
    with transaction.atomic():
        host = Host.objects.select_for_update().filter(id=host_id, probe_state=ProbeState.QUEUED).first()
        if host is None:
            return None
        Host.objects.filter(id=host_id).update(probe_state=ProbeState.RUNNING)  # not audited: bookkeeping
        return host.probe_measure_disk


def end_requested_probe(host_id: int, outcome: str, failed: bool) -> None:
    Host.objects.filter(id=host_id).update(
        probe_state="", probe_outcome=outcome[:2000], probe_failed=failed, probe_outcome_at=timezone.now()
    )
