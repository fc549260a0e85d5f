"""SSH hosts against a real sshd on loopback: registration, probe and key pinning, refusals."""

import pytest

from experiments import services
from experiments.models import Host, HostStatus, Transport
from experiments.ssh_keys import dashboard_public_key
from workers.probing import probe_host

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


def test_a_registered_host_shows_the_dashboard_key_and_a_probe_pins_its_key_and_reads_its_facts(
    staff_api, sshd
):
    host = register(staff_api, sshd)
    assert host["public_key"] == dashboard_public_key() and host["public_key"].startswith("ssh-ed25519 ")
    assert host["status"] == "unknown"

    probed = staff_api.post(f"/api/hosts/{host['id']}/probe/").json()
    assert probed["status"] == "idle", probed
    assert probed["host_key_fingerprint"] == sshd.fingerprint
    facts = probed["facts"]
    assert facts["cpu_count"] >= 1 and facts["memory_bytes"] > 0 and "innodb" in facts["engines"]
    assert "mariadbd" in facts["servers"] and facts["disk"]["free_bytes"] > 0
    listed = staff_api.get("/api/hosts/").json()["results"][0]
    assert listed["status"] == "idle" and listed["last_seen"] and listed["facts"]["kernel"]


def test_a_changed_host_key_is_refused(staff_api, sshd):
    host = register(staff_api, sshd)
    pinned = staff_api.post(f"/api/hosts/{host['id']}/probe/").json()["host_key_fingerprint"]
    sshd.new_host_key()
    probed = staff_api.post(f"/api/hosts/{host['id']}/probe/").json()
    assert probed["status"] == "down"
    assert "not the one pinned" in probed["error"] and pinned in probed["error"]
    assert Host.objects.get(id=host["id"]).host_key_fingerprint == pinned  # still the first key


def test_forgetting_the_key_pins_the_new_one_at_the_next_probe(staff_api, sshd):
    host = register(staff_api, sshd)
    staff_api.post(f"/api/hosts/{host['id']}/probe/")
    sshd.new_host_key()
    services.forget_host_key(host["id"])
    assert (
        staff_api.post(f"/api/hosts/{host['id']}/probe/").json()["host_key_fingerprint"] == sshd.fingerprint
    )


def test_a_key_missing_from_authorized_keys_says_which_line_to_add(staff_api, sshd):
    sshd.authorized_keys.write_text("")
    host = register(staff_api, sshd)
    probed = staff_api.post(f"/api/hosts/{host['id']}/probe/").json()
    assert probed["status"] == "down"
    assert "authorized_keys" in probed["error"] and dashboard_public_key() in probed["error"]


def test_a_host_that_refuses_connections_is_down_with_the_reason(staff_api, sshd):
    host = register(staff_api, sshd)
    sshd.stop()
    probed = staff_api.post(f"/api/hosts/{host['id']}/probe/").json()
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
