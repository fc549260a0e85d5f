import re

from django.core.management.base import BaseCommand, CommandError

from experiments import services
from experiments.models import Host, Transport
from experiments.services.ssh_keys import SSHKeyError, dashboard_public_key
from runner.contract import DEFAULT_WORK_DIR
from workers.probing import probe_host

_SSH = re.compile(r"^([a-z_][a-z0-9_-]{0,31})@([A-Za-z0-9.-]{1,253}|\[[0-9a-fA-F:]+\])(?::([0-9]{1,5}))?$")


class Command(BaseCommand):
    help = (
        "Register (or update) a benchmark host: --local, or --ssh USER@HOST[:PORT] (prints the "
        "dashboard's public key to put in the host's authorized_keys). --probe connects now. An SSH "
        "host is used only once an admin confirmed its key: --trust-host-key SHA256:... (compare "
        "with `ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub` on the host)."
    )

    def add_arguments(self, parser):
        parser.add_argument("name")
        where = parser.add_mutually_exclusive_group()
        where.add_argument("--local", action="store_true", help="this machine, no SSH")
        where.add_argument("--ssh", metavar="USER@HOST[:PORT]")
        parser.add_argument("--work-dir", default=DEFAULT_WORK_DIR, help="where runs write on the host")
        parser.add_argument(
            "--probe",
            action="store_true",
            help="connect now: read its facts (a host with no confirmed key: only the key it offers)",
        )
        parser.add_argument(
            "--trust-host-key",
            metavar="SHA256:...",
            help="confirm the host's SSH key by its fingerprint, read on the host itself",
        )
        parser.add_argument(
            "--forget-host-key",
            action="store_true",
            help="the host was reinstalled: forget its key (confirm the new one with --trust-host-key)",
        )

    def handle(self, *args, name, local, ssh, work_dir, probe, forget_host_key, trust_host_key, **options):
        try:
            if local:
                host = services.register_host(name, Transport.LOCAL, work_dir=work_dir)
            elif ssh:
                match = _SSH.match(ssh)
                if not match:
                    raise CommandError(f"--ssh {ssh!r}: expected USER@HOST or USER@HOST:PORT")
                user, address, port = match.groups()
                host = services.register_host(
                    name,
                    Transport.SSH,
                    ssh_user=user,
                    ssh_host=address.strip("[]"),
                    ssh_port=int(port or 22),
                    work_dir=work_dir,
                )
                self.stdout.write(
                    f"Put this line in ~{user}/.ssh/authorized_keys on {address}:\n{dashboard_public_key()}"
                )
            else:
                host = Host.objects.filter(name=name).first()
                if host is None:
                    raise CommandError(
                        f"no host {name!r}: give --local or --ssh USER@HOST[:PORT] to register it"
                    )
        except (ValueError, SSHKeyError) as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"registered host {host.name} ({host.address})")
        if forget_host_key:
            services.forget_host_key(host.id)
            self.stdout.write("forgot its host key: confirm the new one with --trust-host-key SHA256:...")
        if trust_host_key:
            self._trust(host, trust_host_key)
        if probe:
            found = probe_host(host.id)
            if found.get("offered_host_key_fingerprint"):
                self.stdout.write(f"unverified: {found['error']}; then: --trust-host-key FINGERPRINT")
                return
            if "error" in found:
                raise CommandError(f"probe failed: {found['error']}")
            facts = found["facts"]
            engines = ", ".join(facts.get("engines", []))
            self.stdout.write(
                f"probed: {found['status']}, key {found['host_key_fingerprint'] or '(local)'}; "
                f"{facts.get('os')}, {facts.get('cpu_count')} CPUs, engines {engines}"
            )

    def _trust(self, host: Host, fingerprint: str) -> None:
        """Read the key the host offers now and pin it if its fingerprint is the one given."""
        if host.transport != Transport.SSH:
            raise CommandError(f"host {host.name} is local: it has no SSH key to trust")
        if not host.host_key:
            found = probe_host(host.id)
            if not found.get("offered_host_key_fingerprint"):
                raise CommandError(f"could not read the key host {host.name} offers: {found.get('error')}")
        try:
            host = services.trust_host_key(host.id, fingerprint)
        except services.HostKeyRejected as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"trusted host key {host.host_key_fingerprint} of {host.name}")
