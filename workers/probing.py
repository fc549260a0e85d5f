"""Probing a host: read its facts over a connection to its confirmed key (or, for a host whose key
no admin confirmed yet, only the key it offers), record its status.

Called by the API (`POST /api/hosts/{id}/probe/`), the hosts page, `registerhost --probe`,
`installbuild` and the beat task; handed to `create_experiment` by the pages and the API (an
admin's definition naming a build not listed yet).
"""

from experiments import services
from experiments.models import Host
from experiments.services.ssh_keys import SSHKeyError
from workers.hosts import transport_for
from workers.transports import TransportError


def probe_host(host_id: int, measure_disk: bool = False) -> dict:
    """{"status", "facts", "host_key_fingerprint"} and "error" when the host could not be read.
    Running it twice changes nothing but last_seen. `measure_disk`: the runner measures the work
    directory's disk with fio first (its floor, kept on the host and in every later probe)."""
    host = Host.objects.get(id=host_id)
    try:
        found = transport_for(host).probe(measure_disk=measure_disk)
    except (TransportError, SSHKeyError) as exc:
        if getattr(exc, "unsafe", False):
            host = services.record_host_unsafe(host_id, str(exc))
        else:
            host = services.record_host_down(host_id, str(exc))
        return {
            "status": host.status,
            "facts": host.facts,
            "host_key_fingerprint": host.host_key_fingerprint,
            "error": str(exc),
        }
    if found["facts"] is None:  # a host whose key no admin confirmed: only its key was read
        host = services.record_offered_host_key(host_id, found["host_key"], found["host_key_fingerprint"])
        return {
            "status": host.status,
            "facts": host.facts,
            "host_key_fingerprint": host.host_key_fingerprint,
            "offered_host_key_fingerprint": host.offered_host_key_fingerprint,
            "error": (
                f"host {host.name} offers the SSH key {host.offered_host_key_fingerprint}: compare it with "
                "`ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub` on the host, then confirm it"
            ),
        }
    host = services.record_probe(host_id, found["facts"])
    return {"status": host.status, "facts": host.facts, "host_key_fingerprint": host.host_key_fingerprint}


def carry_out_requested_probe(host_id: int) -> bool:
    """The probe an admin asked for (services.request_probe), if it is still queued: run, its
    outcome said in words on the host. False when there was none to take."""
    measure_disk = services.start_requested_probe(host_id)
    if measure_disk is None:
        return False
    outcome, failed = "the probe stopped before it ended (see the worker's log)", True
    try:
        found = probe_host(host_id, measure_disk=measure_disk)
        outcome, failed = probe_words(found, measure_disk)
    finally:
        services.end_requested_probe(host_id, outcome, failed)
    return True


def probe_words(found: dict, measure_disk: bool) -> tuple[str, bool]:
    """What a probe found, in words for the hosts page; and whether it failed."""
    if found.get("offered_host_key_fingerprint"):
        return found["error"], False
    if "error" in found:
        return found["error"], True
    disk = (found.get("facts") or {}).get("disk") or {}
    if measure_disk and disk.get("floor_error"):
        return f"its disk was not measured: {disk['floor_error']}", True
    if measure_disk and disk.get("floor"):
        return f"its disk reads {disk['floor']['seq_read_mb_s']:,.0f} MB/s sequentially (fio)", False
    return f"its facts read: {found['status']}", False
