"""A listen address (the metrics endpoint's), read and judged without I/O."""

from __future__ import annotations

import ipaddress
from typing import Final, NamedTuple

#: Names that always mean this machine (no resolver is asked).
LOOPBACK_NAMES: Final = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


class ListenAddress(NamedTuple):
    host: str
    port: int


def parse(text: str) -> ListenAddress:
    """``host:port`` or ``[v6]:port``; ValueError with what is wrong."""
    raw = text.strip()
    if raw.startswith("["):
        host, sep, rest = raw[1:].partition("]")
        if not sep or not rest.startswith(":"):
            raise ValueError(f"{text!r} is not [address]:port")
        port_text = rest[1:]
    else:
        host, sep, port_text = raw.rpartition(":")
        if not sep or ":" in host:
            raise ValueError(f"{text!r} is not host:port (write an IPv6 address as [::1]:9464)")
    if not host:
        raise ValueError(f"{text!r} names no host; write 127.0.0.1:{port_text or 9464}")
    try:
        port = int(port_text)
    except ValueError:
        raise ValueError(f"{text!r}: the port {port_text!r} is not a number") from None
    if not 1 <= port <= 65535:
        raise ValueError(f"{text!r}: the port must be between 1 and 65535")
    return ListenAddress(host, port)


def is_loopback(host: str) -> bool:
    """True for a loopback address literal or a name that always means this machine."""
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check(text: str, *, allow_remote: bool) -> ListenAddress:
    """The address, refused if it reaches beyond this machine and that was not allowed.

    The metrics carry no secret, but they tell how much a person reads and
    when; another machine may read them only on purpose.
    """
    addr = parse(text)
    if not allow_remote and not is_loopback(addr.host):
        raise ValueError(
            f"{text!r} is not a loopback address, so other machines could read the metrics;"
            " listen on 127.0.0.1 or [::1] (and let a local Prometheus or a proxy reach it),"
            " or set metrics.allow_remote = true to mean it"
        )
    return addr
