import re

from django.core.management.base import BaseCommand, CommandError

from experiments import services
from experiments.models import Transport

_SSH = re.compile(r"^([a-z_][a-z0-9_-]{0,31})@([A-Za-z0-9.-]{1,253}|\[[0-9a-fA-F:]+\])(?::([0-9]{1,5}))?$")


class Command(BaseCommand):
    help = "Register (or update) a benchmark host: --local, or --ssh USER@HOST[:PORT] --key PATH."

    def add_arguments(self, parser):
        parser.add_argument("name")
        where = parser.add_mutually_exclusive_group(required=True)
        where.add_argument("--local", action="store_true", help="this machine, no SSH")
        where.add_argument("--ssh", metavar="USER@HOST[:PORT]")
        parser.add_argument("--key", metavar="PATH", default="", help="SSH private key")

    def handle(self, *args, name, local, ssh, key, **options):
        try:
            if local:
                host = services.register_host(name, Transport.LOCAL)
            else:
                match = _SSH.match(ssh)
                if not match:
                    raise CommandError(f"--ssh {ssh!r}: expected USER@HOST or USER@HOST:PORT")
                if not key:
                    raise CommandError("--ssh needs --key PATH (the private key to log in with)")
                user, address, port = match.groups()
                host = services.register_host(
                    name,
                    Transport.SSH,
                    ssh_user=user,
                    ssh_host=address.strip("[]"),
                    ssh_port=int(port or 22),
                    ssh_key_path=key,
                )
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"registered host {host.name} ({host.address})")
