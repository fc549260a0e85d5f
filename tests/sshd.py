"""A real sshd of the tests' own, on a free loopback port: its own host key, authorized_keys and
pid file; never the system's sshd. Stopped by its pid (and its process group)."""

import contextlib
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

SSHD = "/usr/sbin/sshd"


def command_name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def descendants(root: int) -> list[int]:
    """Every process under `root` (children, their children, ...), from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def free_port(address: str = "127.0.0.1") -> int:
    with socket.socket() as probe:
        probe.bind((address, 0))
        return probe.getsockname()[1]


def make_host_key(path: Path) -> str:
    """A fresh ed25519 host key; returns its SHA256 fingerprint as ssh-keygen prints it."""
    path.unlink(missing_ok=True)
    path.with_suffix(".pub").unlink(missing_ok=True)
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)
    listing = subprocess.run(
        ["ssh-keygen", "-l", "-f", str(path)], capture_output=True, text=True, check=True
    )
    return listing.stdout.split()[1]


@dataclass
class LoopbackSSHD:
    folder: Path
    port: int
    authorized_keys: Path
    host_key: Path
    address: str = "127.0.0.1"
    # Put before sshd's command: `ip netns exec NAME` starts it in a network namespace (see
    # tests/machines.py), so it and every session it serves have that namespace's network.
    prefix: tuple[str, ...] = ()
    fingerprint: str = ""
    process: subprocess.Popen | None = None

    def start(self) -> None:
        Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege-separation directory
        config = self.folder / "sshd_config"
        config.write_text(
            f"Port {self.port}\nListenAddress {self.address}\nHostKey {self.host_key}\n"
            f"AuthorizedKeysFile {self.authorized_keys}\nPidFile {self.folder / 'sshd.pid'}\n"
            "StrictModes no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
            "PubkeyAuthentication yes\nPermitRootLogin prohibit-password\nUsePAM no\nLogLevel ERROR\n"
        )
        log = (self.folder / "sshd.log").open("ab")
        self.process = subprocess.Popen(
            [*self.prefix, SSHD, "-D", "-e", "-f", str(config)],
            stderr=log,
            stdout=log,
            start_new_session=True,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"sshd exited: {(self.folder / 'sshd.log').read_text()[-500:]}")
            with socket.socket() as probe:
                if probe.connect_ex((self.address, self.port)) == 0:
                    return
            time.sleep(0.05)
        raise RuntimeError("sshd did not listen within 10 s")

    def stop(self) -> None:
        """The listener and every connection it serves: a host gone. Each connection's sshd
        calls setsid(), so they are found as the listener's descendants, not by its group; only
        sshd processes are killed (what runs in a session has to notice on its own)."""
        if self.process is not None and self.process.poll() is None:
            sessions = [pid for pid in descendants(self.process.pid) if command_name(pid) == "sshd"]
            os.killpg(self.process.pid, signal.SIGKILL)
            for pid in sessions:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            self.process.wait()

    def new_host_key(self) -> None:
        """The machine answering on this port is now another one."""
        self.stop()
        self.fingerprint = make_host_key(self.host_key)
        self.start()


def start_sshd(
    folder: Path, authorized: str, address: str = "127.0.0.1", port: int = 0, prefix: tuple[str, ...] = ()
) -> LoopbackSSHD:
    folder.mkdir(parents=True, exist_ok=True)
    authorized_keys = folder / "authorized_keys"
    authorized_keys.write_text(authorized + "\n" if authorized else "")
    sshd = LoopbackSSHD(
        folder=folder,
        port=port or free_port(address),
        authorized_keys=authorized_keys,
        host_key=folder / "host_key",
        address=address,
        prefix=prefix,
    )
    sshd.fingerprint = make_host_key(sshd.host_key)
    sshd.start()
    return sshd
