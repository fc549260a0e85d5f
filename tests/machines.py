"""Benchmark machines of the tests' own: each a network namespace (its own network stack,
loopback and ports, as a separate machine has) joined to this one by a veth pair, with a real
sshd on port 22 inside. Everything the dashboard starts there over SSH (the runner, its
mariadbd and sysbench) lives in that namespace's network.

Where network namespaces cannot be made (no CAP_SYS_ADMIN), each machine is an sshd on a
distinct loopback address instead (127.0.0.2, .3, ...): same SSH, shared network stack.

Names and subnets are drawn fresh for each machine and checked against what the system already
has, so two test sessions on one machine never take each other's."""

import contextlib
import ipaddress
import os
import random
import signal
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

from .sshd import LoopbackSSHD, start_sshd

IP = "/usr/sbin/ip"
# 10.200.0.0/16 cut into /30s: the host's end is .1, the machine's .2.
POOL = ipaddress.ip_network("10.200.0.0/16")


def _ip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([IP, *args], capture_output=True, text=True, check=False)


def namespaces_allowed() -> bool:
    """Whether this process may make a network namespace (tried, then removed)."""
    if not Path(IP).exists():
        return False
    name = f"rl-probe-{uuid.uuid4().hex[:8]}"
    made = _ip("netns", "add", name).returncode == 0
    if made:
        _ip("netns", "del", name)
    return made


def _free_subnet() -> ipaddress.IPv4Network:
    used = [
        ipaddress.ip_interface(field).network
        for line in _ip("-o", "-4", "addr", "show").stdout.splitlines()
        for field in line.split()[3:4]
    ]
    subnets = list(POOL.subnets(new_prefix=30))
    for subnet in random.sample(subnets, 50):
        if not any(subnet.overlaps(other) for other in used):
            return subnet
    raise RuntimeError(f"no free /30 left in {POOL}")


@dataclass
class Machine:
    """A pretend benchmark machine: where the dashboard reaches its sshd, and how to end it."""

    name: str
    sshd: LoopbackSSHD
    namespace: str = ""
    host_link: str = ""

    @property
    def address(self) -> str:
        return self.sshd.address

    @property
    def port(self) -> int:
        return self.sshd.port

    def pids(self) -> list[int]:
        """Every process in the machine's namespace (none without one)."""
        if not self.namespace:
            return []
        return [int(pid) for pid in _ip("netns", "pids", self.namespace).stdout.split()]

    def power_off(self) -> None:
        """The sshd, then every process left in the namespace (all started by this test, through
        that sshd), then the namespace and its link."""
        self.sshd.stop()
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if self.namespace:
            _ip("netns", "del", self.namespace)
            _ip("link", "del", self.host_link)  # normally gone with the namespace already


def start_machine(folder: Path, name: str, authorized: str, index: int, isolated: bool) -> Machine:
    """A machine named `name` whose sshd lets `authorized` in as root. `index` picks its loopback
    address when namespaces are not `isolated`."""
    if not isolated:
        return Machine(name=name, sshd=start_sshd(folder, authorized, address=f"127.0.0.{2 + index}"))
    tag = uuid.uuid4().hex[:8]
    namespace, host_link, inner_link = f"rl-{tag}", f"rl{tag}h", f"rl{tag}m"
    subnet = _free_subnet()
    host_end, machine_end = (str(address) for address in list(subnet.hosts())[:2])
    steps = [
        ("netns", "add", namespace),
        ("link", "add", host_link, "type", "veth", "peer", "name", inner_link, "netns", namespace),
        ("addr", "add", f"{host_end}/30", "dev", host_link),
        ("link", "set", host_link, "up"),
        ("-n", namespace, "addr", "add", f"{machine_end}/30", "dev", inner_link),
        ("-n", namespace, "link", "set", inner_link, "up"),
        ("-n", namespace, "link", "set", "lo", "up"),  # the runner's mariadbd listens on it
    ]
    for step in steps:
        done = _ip(*step)
        if done.returncode != 0:
            _ip("netns", "del", namespace)
            _ip("link", "del", host_link)
            raise RuntimeError(f"ip {' '.join(step)}: {done.stderr.strip()}")
    try:
        sshd = start_sshd(
            folder, authorized, address=machine_end, port=22, prefix=(IP, "netns", "exec", namespace)
        )
    except Exception:
        _ip("netns", "del", namespace)
        _ip("link", "del", host_link)
        raise
    return Machine(name=name, sshd=sshd, namespace=namespace, host_link=host_link)
