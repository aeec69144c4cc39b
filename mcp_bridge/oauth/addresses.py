"""Which IP addresses a fetch to a stranger's URL may reach.

Decisions are made on IP addresses only, never on what a host name looks
like: ``127.example`` or ``127.0.0.1.nip.io`` is a name like any other, and
its resolved addresses are what gets judged.

An IPv6 address that carries an IPv4 address inside it (IPv4-mapped,
IPv4-compatible, 6to4, Teredo, NAT64) is unwrapped first: a gateway or relay
on the path may deliver it to that IPv4 address, so it is judged as that
address too. An IPv4-mapped or well-known NAT64 address that carries a
public IPv4 address is that address (a dual-stack socket, an IPv6-only host
behind DNS64); every other wrapping is refused whole. Then both are checked against the special-purpose registries
(IANA's IPv4 and IPv6 Special-Purpose Address Registries, plus the
deprecated site-local and IPv4-compatible ranges), failing closed: a whole
registry block is refused even where a small part of it is globally
reachable, since no client metadata document lives there.
"""

from __future__ import annotations

import ipaddress
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network

LOOPBACK_V4 = IPv4Network("127.0.0.0/8")
LOOPBACK_V6 = IPv6Address("::1")

SPECIAL_V4: tuple[tuple[IPv4Network, str], ...] = tuple(
    (IPv4Network(net), why)
    for net, why in (
        ("0.0.0.0/8", "a 'this network' address"),
        ("10.0.0.0/8", "a private address"),
        ("100.64.0.0/10", "a shared (carrier-grade NAT) address"),
        ("127.0.0.0/8", "a loopback address"),
        ("169.254.0.0/16", "a link-local address"),
        ("172.16.0.0/12", "a private address"),
        ("192.0.0.0/24", "an IETF protocol assignment"),
        ("192.0.2.0/24", "a documentation address"),
        ("192.31.196.0/24", "an AS112 address"),
        ("192.52.193.0/24", "an AMT address"),
        ("192.88.99.0/24", "a 6to4 relay anycast address"),
        ("192.168.0.0/16", "a private address"),
        ("192.175.48.0/24", "an AS112 address"),
        ("198.18.0.0/15", "a benchmarking address"),
        ("198.51.100.0/24", "a documentation address"),
        ("203.0.113.0/24", "a documentation address"),
        ("224.0.0.0/4", "a multicast address"),
        ("240.0.0.0/4", "a reserved address"),
    )
)

SPECIAL_V6: tuple[tuple[IPv6Network, str], ...] = tuple(
    (IPv6Network(net), why)
    for net, why in (
        ("::/128", "an unspecified address"),
        ("::1/128", "a loopback address"),
        ("::/96", "an IPv4-compatible address (deprecated)"),
        ("::ffff:0:0/96", "an IPv4-mapped address"),
        ("64:ff9b::/96", "a NAT64 address"),
        ("64:ff9b:1::/48", "a local-use NAT64 address"),
        ("100::/64", "a discard-only address"),
        ("2001::/23", "an IETF protocol assignment (Teredo and others)"),
        ("2001:db8::/32", "a documentation address"),
        ("2002::/16", "a 6to4 address"),
        ("3fff::/20", "a documentation address"),
        ("5f00::/16", "a segment-routing address"),
        ("fc00::/7", "a unique-local (private) address"),
        ("fe80::/10", "a link-local address"),
        ("fec0::/10", "a site-local address (deprecated)"),
        ("ff00::/8", "a multicast address"),
    )
)

NAT64_WELL_KNOWN = IPv6Network("64:ff9b::/96")
COMPATIBLE = IPv6Network("::/96")


def embedded_ipv4(ip: IPv6Address) -> list[IPv4Address]:
    """Every IPv4 address ``ip`` carries: IPv4-mapped and -compatible,
    6to4 (2002::/16), Teredo (2001::/32: its server and its client) and
    NAT64 (64:ff9b::/96). The local-use NAT64 prefix 64:ff9b:1::/48 puts the
    IPv4 address where the operator's prefix length says, so it is refused
    whole rather than unwrapped."""
    found: list[IPv4Address] = []
    if ip.ipv4_mapped is not None:
        found.append(ip.ipv4_mapped)
    if ip.sixtofour is not None:
        found.append(ip.sixtofour)
    if ip.teredo is not None:
        found.extend(ip.teredo)
    if ip in NAT64_WELL_KNOWN or (ip in COMPATIBLE and int(ip) > 1):
        found.append(IPv4Address(int(ip) & 0xFFFFFFFF))
    return found


def _special(ip: IPv4Address | IPv6Address) -> str | None:
    table = SPECIAL_V4 if isinstance(ip, IPv4Address) else SPECIAL_V6
    for network, why in table:
        if ip in network:
            return why
    if not ip.is_global:  # whatever this Python's registry knows that the table above does not
        return "not a public address"
    return None


def is_loopback(ip: IPv4Address | IPv6Address) -> bool:
    """127.0.0.0/8, ::1, or an IPv4-mapped 127.x (what a dual-stack socket
    reports for a local IPv4 peer). No other wrapping of loopback counts."""
    if isinstance(ip, IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip in LOOPBACK_V4 if isinstance(ip, IPv4Address) else ip == LOOPBACK_V6


def refusal(address: str, *, allow_loopback: bool = False) -> str | None:
    """Why a connection to ``address`` (an IP literal, optionally with an
    IPv6 zone) is refused, or None if it may be made."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return f"{address!r} is not an IP address"
    if is_loopback(ip):
        return None if allow_loopback else f"{address} is a loopback address"
    if isinstance(ip, IPv6Address):
        for inner in embedded_ipv4(ip):
            why = _special(inner)
            if why:
                return f"{address} embeds {inner}, {why}"
        if ip.ipv4_mapped is not None or ip in NAT64_WELL_KNOWN:
            # Another spelling of a public IPv4 address (a dual-stack socket,
            # or an IPv6-only host behind DNS64): judged as that address.
            return None
    why = _special(ip)
    return f"{address} is {why}" if why else None


def is_loopback_literal(host: str) -> bool:
    """Whether a URL's host is a loopback IP literal (``127.0.0.1``,
    ``[::1]``) or exactly ``localhost`` (RFC 6761 reserves it for loopback).
    A name that merely starts with ``127.`` is not."""
    host = host.lower().strip("[]")
    if host == "localhost":
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    direct = ip in LOOPBACK_V4 if isinstance(ip, IPv4Address) else ip == LOOPBACK_V6
    return direct and str(ip) == host  # canonical spelling only: no "127.1", no "0x7f.0.0.1", no ::ffff:127.0.0.1
