"""The hosts page: benchmark hosts, probes, and the host keys an admin trusts."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from experiments import services
from experiments.analysis import aa
from experiments.models import Experiment, Host, Transport
from experiments.roles import FORBIDDEN, may_administer, may_experiment, role_required
from experiments.services.ssh_keys import SSHKeyError, dashboard_public_key
from recovery_lab_cli.units import as_row_id


@login_required
def host_list(request):
    hosts = list(Host.objects.with_activity())
    public_key = ""
    if any(host.transport == Transport.SSH for host in hosts):
        try:
            public_key = dashboard_public_key()
        except SSHKeyError as exc:
            messages.error(request, str(exc))
    names = {host.name for host in hosts}
    checks, spreads = aa.host_checks(names), aa.host_spreads(names)
    for host in hosts:
        host.aa_checks = checks.get(host.name, [])
        host.aa_floor = [
            (
                what,
                aa.floor({host.name}, metric, spreads),
                aa.spread_text(host.name, spreads.get(host.name, {}).get(metric)),
            )
            for metric, what in aa.AA_METRICS.items()
        ]
    experiments = Experiment.objects.filter(aa_check=False, imported=False).values("id", "name")[:AA_SOURCES]
    return render(
        request,
        "experiments/host_list.html",
        {
            "hosts": hosts,
            # the page looks again until every probe asked for has ended
            "probing": any(host.probe_state for host in hosts),
            "public_key": public_key,
            "aa_sources": experiments,
            "default_floor": aa.DEFAULT_MIN_EFFECT,
        },
    )


AA_SOURCES = 50  # the newest experiments offered as an A/A check's definition


@login_required
@require_POST
@role_required(may_experiment, FORBIDDEN["experiment"])
def host_aa_check(request, pk: int):
    """Start an A/A check of a host: an experiment's definition there, run twice, interleaved."""
    host = get_object_or_404(Host, pk=pk)
    try:
        source = as_row_id(request.POST.get("experiment", ""))
        if source is None:
            raise Experiment.DoesNotExist
        experiment = services.start_aa_check(host.name, source, request.user)
    except Experiment.DoesNotExist:
        messages.error(request, "choose an experiment whose definition the A/A check runs")
    except services.DefinitionError as exc:
        messages.error(request, f"{host.name}: the A/A check cannot run: {exc}")
    else:
        messages.success(
            request,
            f"A/A check #{experiment.id} queued on {host.name}: {experiment.runs.count()} runs, interleaved",
        )
    return redirect("host-list")


@login_required
@require_POST
@role_required(may_administer, FORBIDDEN["admin"])
def host_probe(request, pk: int):
    """A probe queued for the worker: the page shows it running, then what it found."""
    return _queue_probe(request, get_object_or_404(Host, pk=pk), measure_disk=False)


@login_required
@require_POST
@role_required(may_administer, FORBIDDEN["admin"])
def host_measure(request, pk: int):
    """The host's disk measured with fio (its floor), then its facts read again: queued for the
    worker, as a probe."""
    return _queue_probe(request, get_object_or_404(Host, pk=pk), measure_disk=True)


def _queue_probe(request, host: Host, measure_disk: bool):
    try:
        services.request_probe(host.pk, measure_disk)
    except services.ProbeBusy as exc:
        messages.warning(request, str(exc))
    else:
        what = "its disk measured (fio, about 12 s), then probed" if measure_disk else "probed"
        messages.info(request, f"{host.name} is being {what}: its result shows here when it is done")
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
    return _queue_probe(request, host, measure_disk=False)
