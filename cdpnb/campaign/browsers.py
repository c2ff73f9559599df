"""Backends kept alive between cells on one worker; a dead one is replaced, not fatal.

A launch costs 0.1 s (headless-shell) to over a second (chromium+playwright), often
more than the check it serves, so a worker keeps what it launched for its next cells.
At most ``keep`` backends stay alive per worker, least recently used ended first;
``keep=0`` launches a fresh one for every cell (to measure cold starts). How many run
checks at once is the worker's thread count (or its ``browser`` resource): this pool
only bounds how many wait idle.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from cdpnb.backends import Backend, launch
from cdpnb.errors import EndpointError
from cdpnb.probes import BackendSpec
from cdpnb.protocol import protocol_spec
from cdpnb.transport import get_json

__all__ = ["BrowserPool", "Lease", "answers"]


@dataclass
class Lease:
    """A backend lent to one cell: where to connect, and how fresh it is."""

    connect: Any  # a launched Backend, or the CDP URL of an endpoint cdpnb did not start
    kind: str | None
    version: str
    launched: bool  # launched for this cell (else it served earlier cells)
    cells_before: int  # cells it served before this one

    @property
    def alive(self) -> bool:
        return not isinstance(self.connect, Backend) or answers(self.connect)


def answers(backend: Backend) -> bool:
    """Whether ``backend`` is alive: its process runs and its endpoint answers (a
    browser just killed can look running for a moment; its closed port cannot)."""
    if not backend.running:
        return False
    liveness = protocol_spec(backend.protocol).liveness
    if liveness == "webdriver-status":
        # A WebDriver server: its GET /status answers while it runs.
        from cdpnb.transport.webdriver_http import WebDriverServer

        server = WebDriverServer(backend.http_url)
        try:
            server.status(2.0)
        except EndpointError:
            return False
        finally:
            server.close()
        return True
    if liveness == "port":
        # A WebDriver BiDi endpoint has no /json/version (Firefox answers it 404), and
        # a WebSocket handshake would not say more: its port taking a connection does.
        parts = urlsplit(backend.http_url)
        try:
            socket.create_connection((parts.hostname, parts.port), timeout=2.0).close()
        except OSError:
            return False
        return True
    try:
        get_json(backend.http_url + "/json/version", timeout=2.0)
    except EndpointError:
        return False
    return True


@dataclass
class _Kept:
    backend: Backend
    cells: int


class BrowserPool:
    """The backends one worker launched, lent one cell at a time."""

    def __init__(self, keep: int, launch_timeout: float = 20.0) -> None:
        self.keep = max(0, keep)
        self.launch_timeout = launch_timeout
        self._idle: list[_Kept] = []  # least recently used first
        self._lock = threading.Lock()
        self._closed = False
        #: Backends found dead when a cell wanted them (then replaced by a new launch).
        self.replaced = 0
        self.launched = 0

    @contextmanager
    def lease(self, spec: BackendSpec) -> Iterator[Lease]:
        """A backend for ``spec`` for the ``with`` block. One the block ends with an
        exception is ended rather than kept: it may be why the cell failed."""
        if spec.kind == "url":
            yield Lease(spec.url, "url", "", launched=False, cells_before=0)
            return
        kept = self._take(spec.name)
        if kept is None:
            kept = _Kept(launch(spec.name, timeout=self.launch_timeout).start_blocking(), 0)
            with self._lock:
                self.launched += 1
        lease = Lease(kept.backend, spec.name, kept.backend.version,
                      launched=kept.cells == 0, cells_before=kept.cells)
        try:
            yield lease
        except BaseException:
            kept.backend.close()
            raise
        kept.cells += 1
        self._give_back(kept)

    def _take(self, kind: str) -> _Kept | None:
        """An idle backend of ``kind`` that still answers; dead ones are ended."""
        while True:
            with self._lock:
                kept = next((k for k in self._idle if k.backend.kind == kind), None)
                if kept is None:
                    return None
                self._idle.remove(kept)
            if answers(kept.backend):
                return kept
            with self._lock:  # crashed or killed while idle: end what is left of it
                self.replaced += 1
            kept.backend.close()

    def _give_back(self, kept: _Kept) -> None:
        ended = []
        with self._lock:
            if self._closed or self.keep == 0 or not kept.backend.running:
                ended.append(kept)
            else:
                self._idle.append(kept)
                while len(self._idle) > self.keep:
                    ended.append(self._idle.pop(0))
        for old in ended:
            old.backend.close()

    def pids(self) -> list[int]:
        """The pids of the backends waiting idle (each ended by its own pid on close)."""
        with self._lock:
            return [kept.backend.pid for kept in self._idle]

    def close(self) -> None:
        """End every idle backend; a backend still lent out is ended when it comes back."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for kept in idle:
            kept.backend.close()
