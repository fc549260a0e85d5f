"""SSH hosts against a real sshd on loopback: registration, the probe, an admin confirming the
host key, refusals."""

import io
import re
import stat
from datetime import timedelta

import pytest
from auditlog.models import LogEntry
from django.core.management import call_command
from django.utils import timezone

from experiments import services
from experiments.models import Host, HostStatus, Transport
from experiments.services.ssh_keys import dashboard_public_key
from workers.probing import carry_out_requested_probe, probe_host

from .conftest import wait_for

pytestmark = pytest.mark.django_db


def register(staff_api, sshd, name="bench1", **more):
    """Through the API, as a user would."""
    response = staff_api.post(
        "/api/hosts/",
        {
            "name": name,
            "transport": "ssh",
            "ssh_user": "root",
            "ssh_host": "127.0.0.1",
            "ssh_port": sshd.port,
            **more,
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    return response.json()


def probe(staff_api, host_id: int, **body) -> dict:
    """An admin's probe: asked for through the API (202, queued), carried out as the worker carries
    it out (workers.probing), then the host as the API shows it, with `error` when the probe said
    one (probe_outcome)."""
    asked = staff_api.post(f"/api/hosts/{host_id}/probe/", body, format="json")
    assert asked.status_code == 202, asked.content
    assert asked.json()["probe_state"] == "queued"
    carry_out_requested_probe(host_id)  # a worker may have taken it first: then it waits for that
    wait_for(lambda: not Host.objects.get(id=host_id).probe_state, 120, "the probe to end")
    host = staff_api.get(f"/api/hosts/{host_id}/").json()
    if host["probe_failed"] or host["offered_host_key_fingerprint"]:
        host["error"] = host["probe_outcome"]
    return host


def confirm_host_key(staff_api, host_id: int, fingerprint: str) -> dict:
    """What an admin does for a new SSH host: probe (reads the key it offers), compare the
    fingerprint with the host's own, trust it, probe again (now over the trusted key)."""
    offered = probe(staff_api, host_id)
    assert offered["offered_host_key_fingerprint"] == fingerprint, offered
    trusted = staff_api.post(f"/api/hosts/{host_id}/trust-host-key/", {"fingerprint": fingerprint})
    assert trusted.status_code == 200, trusted.content
    return probe(staff_api, host_id)


def test_a_registered_host_shows_the_dashboard_key_and_a_probe_reads_only_the_key_it_offers(staff_api, sshd):
    sshd.authorized_keys.write_text("")  # a login would be refused: the first probe makes none
    host = register(staff_api, sshd)
    assert host["public_key"] == dashboard_public_key() and host["public_key"].startswith("ssh-ed25519 ")
    assert host["status"] == "unknown"

    probed = probe(staff_api, host["id"])
    assert probed["status"] == "unverified", probed
    assert probed["offered_host_key_fingerprint"] == sshd.fingerprint
    assert probed["host_key_fingerprint"] == "" and probed["facts"] == {}
    assert "ssh-keygen -lf" in probed["error"] and "authorized_keys" not in probed["error"]
    stored = Host.objects.get(id=host["id"])
    assert stored.host_key == "" and stored.offered_host_key.startswith("ssh-ed25519 ")


def test_an_admin_confirms_the_key_then_the_probe_reads_the_facts(staff_api, sshd):
    host = register(staff_api, sshd)
    probed = confirm_host_key(staff_api, host["id"], sshd.fingerprint)
    assert probed["status"] == "idle", probed
    assert probed["host_key_fingerprint"] == sshd.fingerprint
    facts = probed["facts"]
    assert facts["cpu_count"] >= 1 and facts["memory_bytes"] > 0 and "innodb" in facts["engines"]
    assert "mariadbd" in facts["servers"] and facts["disk"]["free_bytes"] > 0
    listed = staff_api.get("/api/hosts/").json()["results"][0]
    assert listed["status"] == "idle" and listed["last_seen"] and listed["facts"]["kernel"]
    assert listed["offered_host_key_fingerprint"] == ""


def test_a_fingerprint_that_is_not_the_offered_one_pins_nothing(staff_api, api, sshd):
    host = register(staff_api, sshd)
    url = f"/api/hosts/{host['id']}/trust-host-key/"
    never_probed = staff_api.post(url, {"fingerprint": sshd.fingerprint})
    assert never_probed.status_code == 400 and "offered no key yet" in never_probed.json()["fingerprint"][0]
    probe(staff_api, host["id"])
    other = "SHA256:" + "A" * 43
    wrong = staff_api.post(url, {"fingerprint": other})
    assert wrong.status_code == 400
    assert f"offered {sshd.fingerprint}, not {other}" in wrong.json()["fingerprint"][0]
    assert staff_api.post(url, {"fingerprint": "SHA256:short"}).status_code == 400
    assert api.post(url, {"fingerprint": sshd.fingerprint}).status_code == 403  # experimenters may not
    assert Host.objects.get(id=host["id"]).host_key == ""


def test_beat_s_probe_never_pins_a_key(staff_api, sshd):
    from workers import tasks

    host = register(staff_api, sshd)
    tasks.probe_host_task.run(host["id"])
    tasks.probe_host_task.run(host["id"])
    stored = Host.objects.get(id=host["id"])
    assert stored.status == HostStatus.UNVERIFIED and stored.host_key == ""
    assert stored.offered_host_key_fingerprint == sshd.fingerprint


def test_a_new_address_forgets_the_confirmed_key(staff_api, sshd):
    host = register(staff_api, sshd)
    confirm_host_key(staff_api, host["id"], sshd.fingerprint)
    services.register_host("bench1", Transport.SSH, "root", "localhost", sshd.port)
    moved = probe(staff_api, host["id"])
    assert moved["status"] == "unverified" and moved["host_key_fingerprint"] == ""
    assert moved["offered_host_key_fingerprint"] == sshd.fingerprint


def test_a_changed_host_key_is_refused(staff_api, sshd):
    host = register(staff_api, sshd)
    pinned = confirm_host_key(staff_api, host["id"], sshd.fingerprint)["host_key_fingerprint"]
    sshd.new_host_key()
    probed = probe(staff_api, host["id"])
    assert probed["status"] == "down"
    assert "not the one an admin confirmed" in probed["error"] and pinned in probed["error"]
    assert Host.objects.get(id=host["id"]).host_key_fingerprint == pinned  # still the confirmed key


def test_forgetting_the_key_reads_the_new_one_for_an_admin_to_confirm(staff_api, sshd):
    host = register(staff_api, sshd)
    confirm_host_key(staff_api, host["id"], sshd.fingerprint)
    sshd.new_host_key()
    services.forget_host_key(host["id"])
    assert (
        confirm_host_key(staff_api, host["id"], sshd.fingerprint)["host_key_fingerprint"] == sshd.fingerprint
    )


def test_a_key_missing_from_authorized_keys_says_which_line_to_add(staff_api, sshd):
    host = register(staff_api, sshd)
    confirm_host_key(staff_api, host["id"], sshd.fingerprint)
    sshd.authorized_keys.write_text("")
    probed = probe(staff_api, host["id"])
    assert probed["status"] == "down"
    assert "authorized_keys" in probed["error"] and dashboard_public_key() in probed["error"]


def test_a_host_that_refuses_connections_is_down_with_the_reason(staff_api, sshd):
    host = register(staff_api, sshd)
    sshd.stop()
    probed = probe(staff_api, host["id"])
    assert probed["status"] == "down" and "refused" in probed["error"].lower()


def test_only_staff_register_and_probe_hosts(api, sshd):
    body = {
        "name": "x",
        "transport": "ssh",
        "ssh_user": "root",
        "ssh_host": "127.0.0.1",
        "ssh_port": sshd.port,
    }
    assert api.post("/api/hosts/", body, format="json").status_code == 403
    host = services.register_host("x", Transport.SSH, "root", "127.0.0.1", sshd.port)
    assert api.post(f"/api/hosts/{host.id}/probe/").status_code == 403
    assert (
        api.post(f"/api/hosts/{host.id}/trust-host-key/", {"fingerprint": sshd.fingerprint}).status_code
        == 403
    )
    assert api.get("/api/hosts/").status_code == 200


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("ssh_host", "127.0.0.1; reboot"),
        ("ssh_user", "root$(id)"),
        ("work_dir", "/tmp/../etc"),
        ("ssh_port", 70000),
    ],
)
def test_host_values_are_checked_against_patterns(staff_api, field, value):
    body = {
        "name": "h1",
        "transport": "ssh",
        "ssh_user": "root",
        "ssh_host": "127.0.0.1",
        "ssh_port": 22,
        field: value,
    }
    response = staff_api.post("/api/hosts/", body, format="json")
    assert response.status_code == 400
    assert not Host.objects.filter(name="h1").exists()


def test_the_local_host_probes_without_ssh(local_host):
    found = probe_host(local_host.id)
    assert found["status"] == HostStatus.IDLE and found["facts"]["cpu_count"] >= 1


def test_registerhost_trusts_a_key_only_by_its_fingerprint(sshd):
    """The command an admin runs with the fingerprint read on the host itself."""
    from io import StringIO

    from django.core.management import CommandError, call_command

    where = f"root@127.0.0.1:{sshd.port}"
    with pytest.raises(CommandError, match=re.escape(f"offered {sshd.fingerprint}, not SHA256:")):
        call_command("registerhost", "bench9", "--ssh", where, "--trust-host-key", "SHA256:" + "B" * 43)
    assert Host.objects.get(name="bench9").host_key == ""
    out = StringIO()
    call_command(
        "registerhost", "bench9", "--ssh", where, "--trust-host-key", sshd.fingerprint, "--probe", stdout=out
    )
    assert f"trusted host key {sshd.fingerprint} of bench9" in out.getvalue()
    assert "probed: idle" in out.getvalue()
    assert Host.objects.get(name="bench9").host_key_fingerprint == sshd.fingerprint


def test_installbuild_puts_mariadb_11_8_on_an_ssh_host_and_its_probe_lists_it(staff_api, sshd, tmp_path):
    """The one command an admin runs for any host: the build `make setup` made from Debian 13's
    packages goes over SSH to the host's builds folder, and the host's own probe starts it."""
    work = tmp_path / "bench-work"
    host = register(staff_api, sshd, work_dir=str(work))
    confirm_host_key(staff_api, host["id"], sshd.fingerprint)
    said = io.StringIO()
    call_command("installbuild", "bench1", "mariadb-11.8", "--debian", "trixie", stdout=said)
    assert "build mariadb-11.8 on bench1: Ver 11.8." in said.getvalue(), said.getvalue()
    builds = {build["name"]: build for build in Host.objects.get(name="bench1").facts["server_builds"]}
    assert builds["mariadb-11.8"]["path"] == str(
        work / "builds" / "mariadb-11.8" / "usr" / "sbin" / "mariadbd"
    )
    assert builds["mariadb-11.8"]["engines"] == ["innodb", "rocksdb"]
    assert not (work / "builds" / ".mariadb-11.8.partial").exists()
    # no set-uid file came with the packages (PAM's helper is set-uid root in them)
    modes = [
        path.stat().st_mode
        for path in (work / "builds").rglob("*")
        if path.is_file() and not path.is_symlink()
    ]
    assert modes and not [mode for mode in modes if mode & (stat.S_ISUID | stat.S_ISGID)]


@pytest.mark.django_db(transaction=True)
@pytest.mark.busy  # a worker and a runner's probe: never beside a quiet test's timing
def test_a_probe_asked_for_is_the_workers_work_one_at_a_time_and_the_page_shows_its_outcome(
    staff_api, local_host, celery_worker_process, client, admin_user
):
    """Issue 52, item 6: "Measure the disk" no longer holds a web worker: the request queues it
    (202) and returns; a second click while it is queued or running is refused (409) with what
    runs; the worker carries it out and the hosts page shows what it found."""
    url = f"/api/hosts/{local_host.pk}/probe/"
    asked = staff_api.post(url, {"measure_disk": True}, format="json")
    assert asked.status_code == 202 and asked.json()["probe_state"] == "queued", asked.content
    again = staff_api.post(url, {}, format="json")
    assert again.status_code == 409
    assert "its disk measured is" in again.json()["detail"] and "already" in again.json()["detail"]
    wait_for(lambda: not probing(local_host.pk), 120, "the worker's probe to end")
    host = staff_api.get(f"/api/hosts/{local_host.pk}/").json()
    disk = host["facts"]["disk"]
    if disk.get("floor"):
        assert host["probe_outcome"].startswith("its disk reads ") and not host["probe_failed"]
    else:  # the suite's work folder is in memory: no disk to measure, and it says so
        assert host["probe_outcome"] == f"its disk was not measured: {disk['floor_error']}"
    client.force_login(admin_user)
    page = client.get("/hosts/").content.decode()
    assert host["probe_outcome"][:60] in page and 'http-equiv="refresh"' not in page
    # once it has ended, another may be asked (and is waited for: the worker's work ends in the test)
    assert staff_api.post(url, {}, format="json").status_code == 202
    wait_for(lambda: not probing(local_host.pk), 120, "the second probe to end")
    assert Host.objects.get(id=local_host.pk).probe_outcome == "its facts read: idle"
    # a probe's bookkeeping is not a change of the host in the audit trail
    entries = LogEntry.objects.get_for_object(Host.objects.get(id=local_host.pk))
    assert not entries.exclude(action=LogEntry.Action.CREATE).exists()


def probing(host_id: int) -> str:
    """The host's probe state, beat's resend of a lost probe message done first, as beat does it
    every 30 s (another test's process empties the shared queue when it starts)."""
    services.resend_requested_probes(timedelta(seconds=5))
    return Host.objects.get(id=host_id).probe_state


def test_a_probe_whose_message_was_lost_is_sent_again_by_beat(staff_api, local_host, broker):
    """The broker restarted (or was emptied) after a probe was asked for: beat's wake pass sends
    it again once it has waited PROBE_RESEND_S, and only then."""
    from workers.tasks import PROBE_RESEND_S

    from .conftest import queued_messages

    assert staff_api.post(f"/api/hosts/{local_host.pk}/probe/", {}, format="json").status_code == 202
    assert queued_messages(broker) == 0  # this test's transaction never commits: no message went
    assert services.resend_requested_probes(timedelta(seconds=PROBE_RESEND_S)) == []  # too soon
    Host.objects.filter(id=local_host.pk).update(probe_requested_at=timezone.now() - timedelta(minutes=1))
    assert services.resend_requested_probes(timedelta(seconds=PROBE_RESEND_S)) == [local_host.pk]
    assert queued_messages(broker) == 1
