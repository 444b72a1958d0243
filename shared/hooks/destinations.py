"""Where a key's hook may post: not into the server's own network unless the operator says so.

A hook added through the API makes the server send requests to a URL its caller chose. Left
open, any key could reach what only the server reaches (a cloud metadata address, Redis's or
an admin port on localhost, a private service). So a key's hook posts only to a host whose
every address is public, or to one the operator lists in ``GROUNDSWELL_HOOK_ALLOWED_HOSTS``
(an exact name, or ``*.example.com`` for its subdomains). The addresses are checked when the
hook is added and again before each attempt (a name can be pointed elsewhere later). Global
hooks (``GROUNDSWELL_HOOKS``) are the operator's own and are not checked.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable
from urllib.parse import urlsplit

Resolve = Callable[[str], list[str]]


class HookRefused(ValueError):
    """A hook's URL points where a key's hook may not post; the message says why."""


def _resolve(host: str) -> list[str]:
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError) as exc:
        raise HookRefused(f"host {host!r} does not resolve: {exc}") from None
    return [str(info[4][0]) for info in infos]


def allowed_by_name(host: str, allowed: Iterable[str]) -> bool:
    host = host.lower().rstrip(".")
    for entry in allowed:
        entry = entry.lower().rstrip(".")
        if entry.startswith("*.") and host.endswith(entry[1:]) and host != entry[2:]:
            return True
        if host == entry:
            return True
    return False


def check_destination(url: str, allowed: Iterable[str], resolve: Resolve = _resolve) -> None:
    """Refuse (:class:`HookRefused`) a URL whose host is neither listed in ``allowed`` nor
    public at every address it resolves to."""
    try:
        host = urlsplit(url).hostname
    except ValueError as exc:
        raise HookRefused(f"{url!r} is not a URL: {exc}") from None
    if not host:
        raise HookRefused(f"{url!r} names no host")
    if allowed_by_name(host, allowed):
        return
    try:
        addresses = [host] if ipaddress.ip_address(host) else []
    except ValueError:
        addresses = resolve(host)
    for text in addresses:
        address = ipaddress.ip_address(text.split("%", 1)[0])
        mapped = getattr(address, "ipv4_mapped", None)
        if mapped is not None:
            address = mapped
        if not address.is_global:
            raise HookRefused(
                f"host {host!r} is {address}, not a public address: a key's hook posts only "
                "to public hosts or to those GROUNDSWELL_HOOK_ALLOWED_HOSTS lists"
            )
