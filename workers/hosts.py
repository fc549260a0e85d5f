"""Which transport reaches a host: the one place that knows them all. The SSH transport is
imported only for an SSH host (asyncssh is loaded by workers that reach one)."""

from experiments.models import Host, Transport
from workers.local import LocalTransport
from workers.transports import TransportError


def transport_for(host: Host):
    if host.transport == Transport.LOCAL:
        return LocalTransport(host)
    if host.transport == Transport.SSH:
        from workers.ssh import SSHTransport

        return SSHTransport(host)
    raise TransportError(f"host {host.name}: unknown transport {host.transport!r}", permanent=True)
