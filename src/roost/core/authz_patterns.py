"""The entries of HTCondor's ``ALLOW_<LEVEL>`` / ``DENY_<LEVEL>`` lists, compiled once.

An entry names who (an authenticated identity ``user@domain``) and from where (a
host), as HTCondor's ``IpVerify`` reads them:

- ``user@domain/host``; ``user@domain`` alone means from any host; a bare ``host``
  means anyone from that host (``*/host``); ``*`` (or ``*/*``) is anyone anywhere.
- The user part is compared without regard to case, with HTCondor's wildcard: a
  ``*`` at the start, at the end, or one in the middle (``*@example.org``,
  ``alice@*``, ``condor@*.example.org``). An unauthenticated peer is
  ``unauthenticated@unmapped``, so ``*`` matches it too (as in HTCondor).
- The host part is a network (an IP address; an IPv4 prefix written ``10.0.*``,
  ``10.0.`` or even ``10.0``; an IPv6 prefix ``2001:db8:*``; CIDR ``10.0.0.0/8`` or
  ``10.0.0.0/255.0.0.0``), the special ``{:local_ips:}``, or a host name pattern
  compared with the peer's names (case-insensitive, same wildcard rule).

With one slash the entry is ``user/host`` when there is an ``@`` before the slash or
it starts with ``*``, else a network if it reads as one (``10.0.0.0/8``), else
``user/host`` again; with two slashes it is ``user/network/mask``. These are
HTCondor's own rules (``IpVerify::split_entry``).

Pure: no DNS. A caller that wants literal host names in the lists to match the
addresses they resolve to (HTCondor resolves them when it reads the lists) passes a
``resolve`` function; the peer's own names come with each request.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

UNAUTHENTICATED = "unauthenticated@unmapped"
LOCAL_IPS = "{:local_ips:}"

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class AuthzConfigError(ValueError):
    """An ``ALLOW_*``/``DENY_*`` entry roost cannot read; names the knob and the entry."""

    def __init__(self, knob: str, entry: str, problem: str) -> None:
        super().__init__(f"{knob}: entry {entry!r}: {problem}")
        self.knob, self.entry, self.problem = knob, entry, problem


def wildcard_matcher(pattern: str) -> Callable[[str], bool]:
    """HTCondor's one-wildcard match, case-insensitive.

    ``*x`` ends with x, ``x*`` starts with x, ``a*b`` starts with a and ends with b,
    ``*x*`` contains x, ``a*b*`` starts with a and contains b later; any further ``*``
    is literal, as in HTCondor's ``matches_withwildcard``.
    """
    if pattern == "*":
        return lambda s: True
    star = pattern.find("*")
    if star < 0:
        folded = pattern.casefold()
        return lambda s: s.casefold() == folded
    if star == 0:
        start, end, prefix = "", pattern[1:], False
    elif star == len(pattern) - 1:
        start, end, prefix = pattern[:-1], "", True
    else:
        start, end, prefix = pattern[:star], pattern[star + 1 :], False
    if end.endswith("*"):
        end, prefix = end[:-1], True
    regex = re.escape(start) + ".*" + re.escape(end) + (".*" if prefix else "")
    return re.compile(regex, re.IGNORECASE | re.DOTALL).fullmatch  # type: ignore[return-value]


def parse_network(text: str) -> IPNetwork | None:
    """``text`` as HTCondor reads a network (``condor_netaddr::from_net_string``), else None."""
    if "/" in text:
        base, _, mask = text.partition("/")
        try:
            addr = ipaddress.ip_address(base)
        except ValueError:
            return None
        if mask.isdigit():
            bits = int(mask)
        elif addr.version == 4:
            bits = _mask_bits(mask)
            if bits is None:
                return None
        else:
            return None
        try:
            return ipaddress.ip_network(f"{addr}/{bits}", strict=False)
        except ValueError:
            return None
    if ":" in text:
        star = text.find("*")
        if star < 0:
            try:
                return ipaddress.ip_network(text)
            except ValueError:
                return None
        if star != len(text) - 1 or text[star - 1 : star] != ":":
            return None  # the wildcard must follow the last colon
        try:
            return ipaddress.ip_network(f"{text[:-1]}:/{16 * text.count(':')}", strict=False)
        except ValueError:
            return None
    return _ipv4_prefix(text)


def _mask_bits(mask: str) -> int | None:
    """A dotted netmask as a prefix length; None unless it is ones then zeros."""
    try:
        value = int(ipaddress.IPv4Address(mask))
    except ValueError:
        return None
    bits = bin(value).count("1")
    return bits if value == ((1 << 32) - 1) ^ ((1 << (32 - bits)) - 1) else None


def _ipv4_prefix(text: str) -> IPNetwork | None:
    """``10.0.0.1`` exactly, or a prefix of whole octets: ``10.0.*``, ``10.0.``, ``10.0``."""
    if not text or len(text) > 15:
        return None
    if text.endswith("*") or text.endswith("."):
        text = text[:-2] if text[-2:] in (".*", "..") else text[:-1]
    parts = text.split(".")
    if not parts or len(parts) > 4 or not all(p.isdigit() and int(p) <= 255 for p in parts):
        return None
    octets = [int(p) for p in parts] + [0] * (4 - len(parts))
    return ipaddress.ip_network((bytes(octets), 8 * len(parts)))


def split_entry(entry: str) -> tuple[str, str]:
    """(user pattern, host pattern) of one list entry, by HTCondor's rules."""
    first = entry.find("/")
    if first < 0:
        return (entry, "*") if "@" in entry else ("*", entry)
    if entry.find("/", first + 1) >= 0:
        return entry[:first], entry[first + 1 :]
    at = entry.find("@")
    if (0 <= at < first) or entry.startswith("*"):
        return entry[:first], entry[first + 1 :]
    if parse_network(entry) is not None:
        return "*", entry
    return entry[:first], entry[first + 1 :]


@dataclass(frozen=True)
class Peer:
    """Who asks and from where: the identity (``UNAUTHENTICATED`` when none), the
    address as the connection saw it, and any names the caller knows for it."""

    identity: str
    address: IPAddress | None
    names: tuple[str, ...]

    @property
    def text(self) -> str:
        """``identity/host`` as reasons show it."""
        where = str(self.address) if self.address is not None else (self.names or ("?",))[0]
        return f"{self.identity}/{where}"


def make_peer(identity: str | None, host: str, hostnames: Iterable[str] = ()) -> Peer:
    """A :class:`Peer`; ``host`` is an IP address (IPv4-mapped IPv6 counts as IPv4) or a name."""
    names = tuple(hostnames)
    try:
        address: IPAddress | None = ipaddress.ip_address(host)
    except ValueError:
        address, names = None, (host, *names) if host else names
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return Peer(identity or UNAUTHENTICATED, address, names)


@dataclass(frozen=True)
class Entry:
    """One compiled entry; ``knob`` is the configuration variable it came from."""

    text: str
    knob: str
    user: Callable[[str], bool]
    network: IPNetwork | None = None
    local: bool = False
    any_host: bool = False
    name: Callable[[str], bool] | None = None
    resolved: frozenset[IPAddress] = field(default_factory=frozenset)

    def matches(self, peer: Peer, local_ips: frozenset[IPAddress]) -> bool:
        if not self.user(peer.identity):
            return False
        if self.any_host:
            return True
        addr = peer.address
        if addr is not None:
            if self.network is not None:
                return addr.version == self.network.version and addr in self.network
            if self.local:
                return addr in local_ips
            if addr in self.resolved:
                return True
        return self.name is not None and any(self.name(n) for n in peer.names)


def compile_entries(
    knob: str, value: str, resolve: Callable[[str], Sequence[str]] | None = None
) -> tuple[Entry, ...]:
    """Every entry of one ``ALLOW_*``/``DENY_*`` value (comma or blank separated)."""
    entries = []
    for text in value.replace(",", " ").split():
        if text.startswith("+"):
            raise AuthzConfigError(knob, text, "netgroups are not supported")
        user, host = split_entry(text)
        if not user or not host:
            raise AuthzConfigError(knob, text, "empty user or host part")
        matcher = wildcard_matcher(user)
        if host in ("*", "*/*"):
            entries.append(Entry(text, knob, matcher, any_host=True))
            continue
        if host.casefold() == LOCAL_IPS:
            entries.append(Entry(text, knob, matcher, local=True))
            continue
        network = parse_network(host)
        if network is not None:
            entries.append(Entry(text, knob, matcher, network=network))
            continue
        if "/" in host:
            raise AuthzConfigError(knob, text, f"{host!r} is not a network (address/bits or address/mask)")
        resolved: frozenset[IPAddress] = frozenset()
        if resolve is not None and "*" not in host:
            resolved = frozenset(_addresses(resolve(host)))
        entries.append(Entry(text, knob, matcher, name=wildcard_matcher(host), resolved=resolved))
    return tuple(entries)


def _addresses(texts: Iterable[str]) -> Iterable[IPAddress]:
    for text in texts:
        try:
            addr = ipaddress.ip_address(text)
        except ValueError:
            continue
        if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
            addr = addr.ipv4_mapped
        yield addr


def local_addresses(texts: Iterable[str]) -> frozenset[IPAddress]:
    """The addresses ``{:local_ips:}`` stands for, from text."""
    return frozenset(_addresses(texts))
