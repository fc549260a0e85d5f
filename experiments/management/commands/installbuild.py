import subprocess

from django.core.management.base import BaseCommand, CommandError

from experiments.models import Host, Transport
from runner.contract import BUILD_NAME, SYSTEM_BUILD
from runner.families import FAMILIES
from workers.builds import BuildError, make_debian_build
from workers.hosts import transport_for
from workers.probing import probe_host
from workers.transports import TransportError


class Command(BaseCommand):
    help = (
        "Install a server build on a host from another Debian release's packages (mariadb-11.8 "
        "--debian trixie; mysql-9.7 --debian sid; postgresql-17 --debian trixie), fetched with a "
        "sources list of its own and unpacked beside the host's own server, never over it; then "
        "probe the host so its builds list it. The server family is the name's first part (or "
        "--server), a major version its last (postgresql-17). A build of that name is replaced."
    )

    def add_arguments(self, parser):
        parser.add_argument("host", help="a registered host's name ('local': this machine)")
        parser.add_argument("name", help="the build's name in definitions, e.g. mariadb-11.8")
        parser.add_argument("--debian", metavar="RELEASE", required=True, help="e.g. trixie (Debian 13)")
        parser.add_argument("--server", choices=FAMILIES, help="the family, if the name lacks it")
        parser.add_argument(
            "--major", metavar="MAJOR", help="the major version its packages carry (17), if the name lacks it"
        )
        parser.add_argument(
            "--if-missing",
            action="store_true",
            help="do nothing where the host lists a working build of that name",
        )

    def handle(self, *args, host, name, debian, if_missing, server=None, major=None, **options):
        if not BUILD_NAME.match(name) or name == SYSTEM_BUILD:
            raise CommandError(
                f"{name!r}: a build's name is letters, digits and . _ + - (not {SYSTEM_BUILD!r})"
            )
        prefix, _, version = name.partition("-")
        family = server or prefix
        if family not in FAMILIES:
            raise CommandError(
                f"{name!r} does not say its server: name it {'-..., '.join(FAMILIES)}-... or give --server"
            )
        major = major or version.split(".")[0]
        try:
            target = Host.objects.get(name=host)
        except Host.DoesNotExist:
            raise CommandError(f"no host named {host!r} (register it with manage.py registerhost)") from None
        if if_missing and any(
            build["name"] == name and not build.get("error")
            for build in (probe_host(target.pk).get("facts") or {}).get("server_builds", [])
        ):
            self.stdout.write(f"host {host} has build {name} already")
            return
        try:
            folder = make_debian_build(debian, family, major)
            self.stdout.write(f"build made from Debian {debian}'s packages in {folder}")
            transport_for(target).install_build(name, folder)
        except BuildError as exc:
            raise CommandError(str(exc)) from None
        except (TransportError, OSError, subprocess.SubprocessError) as exc:  # unreachable, refused, full
            raise CommandError(f"host {host}: the build could not be installed: {exc}") from None
        found = probe_host(target.pk)
        listed = {build["name"]: build for build in (found.get("facts") or {}).get("server_builds", [])}
        if found.get("error") or name not in listed:
            raise CommandError(
                f"installed, but host {host}'s probe does not list it: {found.get('error', '')}"
            )
        if listed[name].get("error"):
            raise CommandError(f"installed on host {host}, but it cannot start: {listed[name]['error']}")
        where = "this machine" if target.transport == Transport.LOCAL else host
        build = listed[name]
        engines = ", ".join(build["engines"])
        self.stdout.write(f"build {name} on {where}: {build['version']}, engines {engines}")
