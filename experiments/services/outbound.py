"""Alerts that leave the building: webhook targets are checked before they are stored and again
when they are sent, and a slow or hostile target cannot hold a worker.

- A target must resolve only to public addresses (every address its name resolves to is
  checked): loopback, link-local (cloud metadata at 169.254.169.254), private, shared (CG-NAT),
  unique-local IPv6, multicast, reserved and 0.0.0.0 are refused, unless the admin setting
  ALERT_INTERNAL_HOSTS names the host or a network holding its addresses (a chat server inside
  the network).
- The POST goes through requests-hardened's IP filter (Saleor's): it resolves again, refuses a
  forbidden address and connects to the very address it checked (no second lookup that DNS could
  answer differently). Redirects are never followed.
- One deadline for the whole request (connect, headers, body), and at most
  WEBHOOK_MAX_RESPONSE_BYTES of the answer are read.
"""

import ipaddress
import signal
import socket
import threading
import time
from contextlib import contextmanager
from urllib.parse import urlsplit

import requests
from django.conf import settings
from requests.adapters import HTTPAdapter
from requests_hardened import Config, HTTPSession
from requests_hardened.ip_filter_adapter import IPFilterAdapter

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class UnsafeTarget(ValueError):
    """A webhook address that may not be sent to; the message says why, for its owner."""


class DeliveryFailed(Exception):
    """A webhook not delivered: `public` is what every viewer may read, `detail` is for admins."""

    def __init__(self, public: str, detail: str, permanent: bool = False):
        super().__init__(detail)
        self.public, self.detail, self.permanent = public, detail, permanent


def _internal_allowed(hostname: str, addresses: list[Address]) -> bool:
    """True when the admin setting names this host, or a network that holds all its addresses."""
    names, networks = set(), []
    for entry in settings.ALERT_INTERNAL_HOSTS:
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            names.add(entry.lower().rstrip("."))
    if hostname.lower().rstrip(".") in names:
        return True
    return bool(addresses) and all(any(a in net for net in networks) for a in addresses)


def _unmapped(address: Address) -> Address:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _forbidden_kind(address: Address) -> str | None:
    """What kind of address this is, when it is not one on the public internet."""
    for attribute, kind in (
        ("is_unspecified", "unspecified"),
        ("is_loopback", "loopback"),
        ("is_link_local", "link-local"),
        ("is_multicast", "multicast"),
        ("is_private", "private"),
        ("is_reserved", "reserved"),
    ):
        if getattr(address, attribute):
            return kind
    return None if address.is_global else "not public"


def _resolve(hostname: str, port: int) -> list[Address]:
    try:
        infos = socket.getaddrinfo(hostname, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise UnsafeTarget(f"{hostname}: the name does not resolve ({exc})") from None
    return sorted({_unmapped(ipaddress.ip_address(info[4][0].split("%")[0])) for info in infos}, key=str)


def check_target(url: str) -> None:
    """UnsafeTarget unless every address the URL's host resolves to is public (or allowed)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UnsafeTarget(f"{url[:100]}: an http:// or https:// address with a host")
    if parts.username or parts.password:
        raise UnsafeTarget(f"{parts.hostname}: no user or password in the address")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise UnsafeTarget(f"{url[:100]}: the port is not a number from 1 to 65535") from None
    addresses = _resolve(parts.hostname, port)
    if _internal_allowed(parts.hostname, addresses):
        return
    for address in addresses:
        kind = _forbidden_kind(address)
        if kind:
            raise UnsafeTarget(
                f"{parts.hostname} resolves to {address}, a {kind} address: alerts go to public "
                "addresses only (an admin may allow an internal host with ALERT_INTERNAL_HOSTS)"
            )


class _Adapter(IPFilterAdapter):
    """requests-hardened's filter, except for a host the admin allowed."""

    def build_connection_pool_key_attributes(self, request, verify, cert=None):
        hostname = urlsplit(request.url).hostname or ""
        if settings.ALERT_INTERNAL_HOSTS and _internal_allowed(hostname, _resolve_quietly(hostname)):
            return HTTPAdapter.build_connection_pool_key_attributes(self, request, verify, cert)
        return super().build_connection_pool_key_attributes(request, verify, cert)


def _resolve_quietly(hostname: str) -> list[Address]:
    try:
        return _resolve(hostname, 0)
    except UnsafeTarget:
        return []


def _session() -> requests.Session:
    timeout = settings.WEBHOOK_TIMEOUT_S
    session = HTTPSession(
        Config(
            ip_filter_enable=True,
            ip_filter_allow_loopback_ips=False,
            never_redirect=True,
            default_timeout=(timeout, timeout),
            user_agent_override="recovery-lab-alerts",
        )
    )
    session.mount("http://", _Adapter(is_https_proto=False))
    session.mount("https://", _Adapter(is_https_proto=True))
    session.trust_env = False  # no proxy from the environment sends it around the filter
    return session


class _DeadlinePassed(Exception):
    pass


@contextmanager
def _deadline(seconds: float):
    """_DeadlinePassed when the block takes longer than `seconds` in all (a target that drips a
    header line every few seconds never trips a per-read timeout). SIGALRM interrupts a blocked
    read; it exists only in the main thread, which is where Celery's prefork pool runs tasks.
    Elsewhere the alerts task's own time limit bounds it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum, frame):
        raise _DeadlinePassed

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def post_json(url: str, payload: dict) -> int:
    """POST the payload; the HTTP status when it is 2xx, DeliveryFailed otherwise."""
    host = urlsplit(url).hostname or "?"
    try:
        check_target(url)
    except UnsafeTarget as exc:
        raise DeliveryFailed(f"refused: {host} is not a public address", str(exc), permanent=True) from None
    deadline_s = settings.WEBHOOK_TIMEOUT_S
    started = time.monotonic()
    try:
        with _deadline(deadline_s), _session() as session:
            with session.post(url, json=payload, stream=True, allow_redirects=False) as answer:
                _read_capped(answer)
                status = answer.status_code
                location = answer.headers.get("Location", "")
    except _DeadlinePassed:
        raise DeliveryFailed(
            f"{host} did not answer within {deadline_s:g} s",
            f"the deadline of {deadline_s:g} s passed after {time.monotonic() - started:.1f} s",
        ) from None
    except requests.RequestException as exc:
        raise DeliveryFailed(f"could not deliver to {host}", f"{exc.__class__.__name__}: {exc}") from None
    if 300 <= status < 400:
        raise DeliveryFailed(
            f"{host} answered with a redirect (HTTP {status}), which is not followed",
            f"HTTP {status} to {location[:300]!r}",
            permanent=True,
        )
    if not 200 <= status < 300:
        raise DeliveryFailed(f"{host} answered HTTP {status}", f"HTTP {status}")
    return status


def _read_capped(answer: requests.Response) -> bytes:
    """At most WEBHOOK_MAX_RESPONSE_BYTES of the answer: the rest is never read."""
    limit = settings.WEBHOOK_MAX_RESPONSE_BYTES
    kept = bytearray()
    for chunk in answer.iter_content(chunk_size=1024):
        kept += chunk
        if len(kept) >= limit:
            break
    return bytes(kept[:limit])
