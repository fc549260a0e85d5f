"""The hosts page: benchmark hosts, probes, and the host keys an admin trusts."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.module_loading import import_string
from django.views.decorators.http import require_POST

from experiments import services
from experiments.models import Host, Transport
from experiments.roles import FORBIDDEN, may_administer, role_required
from experiments.services import PROBE_HOST
from experiments.services.ssh_keys import SSHKeyError, dashboard_public_key


@login_required
def host_list(request):
    hosts = list(Host.objects.with_activity())
    public_key = ""
    if any(host.transport == Transport.SSH for host in hosts):
        try:
            public_key = dashboard_public_key()
        except SSHKeyError as exc:
            messages.error(request, str(exc))
    return render(request, "experiments/host_list.html", {"hosts": hosts, "public_key": public_key})


@login_required
@require_POST
@role_required(may_administer, FORBIDDEN["admin"])
def host_probe(request, pk: int):
    host = get_object_or_404(Host, pk=pk)
    found = import_string(PROBE_HOST)(host.pk)
    if found.get("offered_host_key_fingerprint"):
        messages.warning(request, found["error"])
    elif "error" in found:
        messages.error(request, f"{host.name}: {found['error']}")
    return redirect("host-list")


@login_required
@require_POST
@role_required(may_administer, FORBIDDEN["admin"])
def host_trust_key(request, pk: int):
    """An admin confirms the key a host offered (the form carries the fingerprint shown): pinned,
    then the host is probed over it."""
    host = get_object_or_404(Host, pk=pk)
    try:
        host = services.trust_host_key(host.pk, request.POST.get("fingerprint", ""), request.user)
    except services.HostKeyRejected as exc:
        messages.error(request, str(exc))
        return redirect("host-list")
    messages.success(request, f"{host.name}: host key {host.host_key_fingerprint} trusted")
    found = import_string(PROBE_HOST)(host.pk)
    if "error" in found:
        messages.error(request, f"{host.name}: {found['error']}")
    return redirect("host-list")
