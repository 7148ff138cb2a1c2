"""The address guard: readdod fetches the public web, not the machine it runs on.

A captured URL is untrusted input. Without a guard, ``http://127.0.0.1:8080/admin``,
``http://169.254.169.254/`` (cloud metadata) or a public page that redirects
there would make the daemon read private services for whoever can capture.

The guard is checked twice for every connection: before each request (every
redirect hop) on the URL's host, and inside the connection pool's network
backend on the address actually dialled. The backend resolves the name itself
and connects to the checked IP, so a DNS answer that changes between the two
looks (DNS rebinding) cannot slip a private address through.
"""

from __future__ import annotations

import ipaddress
import socket
import typing
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Final

import anyio
import httpcore

from readdod.errors import ErrorCode, ExtractionError

__all__ = [
    "AddressGuard",
    "GuardedBackend",
    "IPAddress",
    "Resolver",
    "blocked_kind",
    "system_resolver",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
#: ``(host, port) -> IP addresses as text``; raises ``socket.gaierror`` like getaddrinfo.
Resolver = Callable[[str, int], Awaitable[list[str]]]

_SHARED: Final = ipaddress.IPv4Network("100.64.0.0/10")
_NAT64: Final = ipaddress.IPv6Network("64:ff9b::/96")
_RESOLVE_TIMEOUT_S: Final = 10.0
# getaddrinfo errors that will not change if asked again soon.
_PERMANENT_GAI: Final = frozenset(
    code
    for code in (
        getattr(socket, "EAI_NONAME", None),
        getattr(socket, "EAI_NODATA", None),
        getattr(socket, "EAI_SERVICE", None),
    )
    if code is not None
)


async def system_resolver(host: str, port: int) -> list[str]:
    """The system's answer for ``host``, without blocking the event loop."""
    infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    seen: dict[str, None] = {}
    for _family, _type, _proto, _name, sockaddr in infos:
        seen.setdefault(str(sockaddr[0]), None)
    return list(seen)


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address tunnels to (mapped, 6to4, NAT64, Teredo)."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip.teredo is not None:
        return ip.teredo[1]
    return None


def blocked_kind(ip: IPAddress) -> str | None:
    """Why ``ip`` is not a public internet address (e.g. "loopback"), or None if it is."""
    if isinstance(ip, ipaddress.IPv6Address):
        inner = _embedded_ipv4(ip)
        if inner is not None:
            kind = blocked_kind(inner)
            return f"{kind} (inside an IPv6 address)" if kind else None
    if ip.is_unspecified:
        return "unspecified"
    if ip.is_loopback:
        return "loopback"
    if ip.is_link_local:
        return "link-local"
    if ip.is_multicast:
        return "multicast"
    if isinstance(ip, ipaddress.IPv4Address) and ip in _SHARED:
        return "shared (carrier-grade NAT)"
    if ip.is_private:
        return "private"
    if ip.is_reserved:
        return "reserved"
    if not ip.is_global:
        return "non-public"
    return None


def _parse_ip(text: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        return None


class AddressGuard:
    """Refuses hosts that resolve to non-public addresses, unless allowed."""

    def __init__(
        self,
        *,
        allow_private: bool = False,
        allow_networks: Iterable[str] = (),
        resolver: Resolver | None = None,
        resolve_timeout_s: float = _RESOLVE_TIMEOUT_S,
    ) -> None:
        self.allow_private = allow_private
        self.allow_networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = tuple(
            ipaddress.ip_network(net, strict=False) for net in allow_networks
        )
        self.resolver: Resolver = resolver or system_resolver
        self.resolve_timeout_s = resolve_timeout_s

    @property
    def active(self) -> bool:
        return not self.allow_private

    def check_ip(self, host: str, address: str) -> None:
        """Raise EXTRACTION_BLOCKED_ADDRESS if connecting to ``address`` is not allowed."""
        if not self.active:
            return
        ip = _parse_ip(address)
        if ip is None:
            raise _blocked(host, address, "unparseable")
        if any(ip.version == net.version and ip in net for net in self.allow_networks):
            return
        kind = blocked_kind(ip)
        if kind is not None:
            raise _blocked(host, address, kind)

    async def resolve(self, host: str, port: int) -> list[str]:
        """Every address ``host`` resolves to, each checked; all must pass.

        One bad address blocks the host: a name that answers both a public
        and a private address is either misconfigured or an attack.
        """
        host = host.strip("[]")
        if _parse_ip(host) is not None:
            self.check_ip(host, host)
            return [host]
        try:
            with anyio.fail_after(self.resolve_timeout_s):
                addresses = await self.resolver(host, port)
        except TimeoutError as exc:
            raise ExtractionError(
                f"Looking up {host} took longer than {self.resolve_timeout_s:g} seconds"
                " (DNS); try again later.",
                code=ErrorCode.EXTRACTION_FETCH_FAILED,
                retryable=True,
            ) from exc
        except (socket.gaierror, UnicodeError) as exc:
            permanent = isinstance(exc, UnicodeError) or exc.errno in _PERMANENT_GAI
            raise ExtractionError(
                f"Could not find the server {host} (DNS: {exc}); check the address"
                + ("." if permanent else ", or try again later."),
                code=ErrorCode.EXTRACTION_FETCH_FAILED,
                retryable=not permanent,
                debug=repr(exc),
            ) from exc
        if not addresses:
            raise ExtractionError(
                f"Could not find the server {host} (DNS gave no address); check the address.",
                code=ErrorCode.EXTRACTION_FETCH_FAILED,
                retryable=False,
            )
        for address in addresses:
            self.check_ip(host, address)
        return addresses

    async def check_host(self, host: str, port: int) -> None:
        if self.active:
            await self.resolve(host, port)


def _blocked(host: str, address: str, kind: str) -> ExtractionError:
    shown = host if host == address else f"{host} ({address})"
    base, within, rest = kind.partition(" (")
    what = f"{base} address" + (f"{within}{rest}" if within else "")
    article = "an" if what[0] in "aeiou" else "a"
    return ExtractionError(
        f"readdod does not fetch {shown}: it is {article} {what}, not the public web."
        " If you mean to read pages from your own network, set fetch.allow_private = true"
        " (or list the network in fetch.allow_networks); or save the page in your browser"
        " and capture it with `readdod capture URL --html FILE`.",
        code=ErrorCode.EXTRACTION_BLOCKED_ADDRESS,
        retryable=False,
    )


class GuardedBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network backend, resolving and checking before every connect."""

    def __init__(self, guard: AddressGuard, inner: httpcore.AsyncNetworkBackend | None = None):
        self.guard = guard
        self.inner = inner or httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        local_address: str | None = None,
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        addresses = await self.guard.resolve(host, port)
        options: Sequence[httpcore.SOCKET_OPTION] | None = (
            list(socket_options) if socket_options is not None else None
        )
        last: Exception | None = None
        for address in addresses:
            try:
                stream = await self.inner.connect_tcp(
                    address,
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=options,
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last = exc
                continue
            peer = stream.get_extra_info("server_addr")
            try:
                self.guard.check_ip(host, str(peer[0]) if peer else "")
            except BaseException:
                await stream.aclose()
                raise
            return stream
        assert last is not None
        raise last

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise ExtractionError(
            "readdod does not fetch through Unix sockets.",
            code=ErrorCode.EXTRACTION_BLOCKED_ADDRESS,
            retryable=False,
        )

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)
