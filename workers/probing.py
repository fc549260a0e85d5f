"""Probing a host: connect, pin its key at first contact, read its facts, record its status.

Called by the API (`POST /api/hosts/{id}/probe/`), `registerhost --probe` and the beat task, by
name (experiments never imports workers).
"""

from experiments import services
from experiments.models import Host
from experiments.ssh_keys import SSHKeyError

from .transports import TransportError, transport_for


def probe_host(host_id: int) -> dict:
    """{"status", "facts", "host_key_fingerprint"} and "error" when the host could not be read.
    Running it twice changes nothing but last_seen."""
    host = Host.objects.get(id=host_id)
    try:
        found = transport_for(host).probe()
    except (TransportError, SSHKeyError) as exc:
        host = services.record_host_down(host_id, str(exc))
        return {
            "status": host.status,
            "facts": host.facts,
            "host_key_fingerprint": host.host_key_fingerprint,
            "error": str(exc),
        }
    host = services.record_probe(host_id, found["facts"], found["host_key"], found["host_key_fingerprint"])
    return {"status": host.status, "facts": host.facts, "host_key_fingerprint": host.host_key_fingerprint}
