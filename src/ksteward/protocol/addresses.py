"""Client addresses in Java's text form, as Kafka's authorizer sees them.

ACL host entries are compared with ``InetAddress.getHostAddress()``: IPv4 in dotted quads, IPv6 as
eight uncompressed, unpadded lower-case hex groups (``0:0:0:0:0:0:0:1``), and an IPv4-mapped IPv6
address as the IPv4 address it maps (Java turns it into an ``Inet4Address``).
"""

from __future__ import annotations

import ipaddress


def java_host_address(address: str) -> str:
    """``address`` (as asyncio reports a peer) in Java's ``getHostAddress()`` form."""
    host = address.split("%", 1)[0]  # Java prints the scope id too, but ACLs never carry one
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return address
    return java_ip_text(ip)


def java_ip_text(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
    """``ip`` in Java's ``getHostAddress()`` form (also for an Envelope's raw client address bytes)."""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return ":".join(format(int(group, 16), "x") for group in ip.exploded.split(":"))
    return str(ip)
