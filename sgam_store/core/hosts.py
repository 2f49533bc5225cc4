"""Host names: which ones stay on this machine. Shared by `sgam ui`'s Host check and the
commands that warn before serving beyond loopback (`sgam ui`, `sgam mcp`), with no web
framework needed to ask."""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    """True for `localhost` and loopback addresses (127.0.0.0/8, ::1), brackets allowed."""
    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False
