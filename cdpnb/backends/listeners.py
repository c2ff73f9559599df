"""Which TCP ports a process listens on, read from ``/proc`` (Linux).

WebKitWebDriver 2.50 takes ``--port=0`` and binds a port the kernel chooses, but says
nothing about which (measured: no output at all); cdpnb finds it here, among the
listening sockets the driver's own file descriptors hold. The tests use the same to
hold every server cdpnb starts to loopback.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Iterable
from typing import NamedTuple

__all__ = ["Listener", "is_loopback", "listeners"]

#: ``st`` of a socket in LISTEN state, in /proc/net/tcp{,6}.
_LISTEN = "0A"


class Listener(NamedTuple):
    """One listening TCP socket: who holds it, and where."""

    pid: int
    host: str
    port: int


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address as :func:`listeners` gives it) is a loopback one."""
    return ipaddress.ip_address(host).is_loopback


def _socket_inodes(pid: int) -> set[str]:
    inodes: set[str] = set()
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return inodes
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    return inodes


def _address(hex_host: str) -> str:
    """/proc/net/tcp's address (little-endian 32-bit words) as text."""
    raw = bytes.fromhex(hex_host)
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    return str(ipaddress.ip_address(words))


def listeners(pids: Iterable[int]) -> list[Listener]:
    """The TCP sockets in LISTEN state that ``pids`` hold (IPv4 and IPv6), each once per
    pid; nothing for a pid that is gone or not ours to read."""
    found: list[Listener] = []
    for pid in pids:
        inodes = _socket_inodes(pid)
        if not inodes:
            continue
        for table in ("tcp", "tcp6"):
            try:
                with open(f"/proc/{pid}/net/{table}") as lines:
                    rows = lines.read().splitlines()[1:]
            except OSError:
                continue
            for row in rows:
                fields = row.split()
                if len(fields) < 10 or fields[3] != _LISTEN or fields[9] not in inodes:
                    continue
                host, port = fields[1].rsplit(":", 1)
                found.append(Listener(pid, _address(host), int(port, 16)))
    return found
