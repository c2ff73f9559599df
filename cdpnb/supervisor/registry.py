"""``cdpnb.registry``: one supervisor per task id, started on demand.

All bookkeeping runs on the engine loop, so concurrent callers from different
loops or threads see one consistent table.

What hermes-agent's browser supervisor does (``SupervisorRegistry.get_or_start``),
with whatever ``Supervisor.start`` takes: a backend from ``cdpnb.launch`` as well as
a URL (so that a backend known to auto-dismiss dialogs gets the bridge from the
first dialog on), and ``page="first"`` to supervise the page an agent's browser
already has rather than a page of cdpnb's own.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable
from typing import Any, Literal, TypedDict, Unpack

from cdpnb.runtime.engine import engine
from cdpnb.session.options import PAGE_CHOICES, Policy
from cdpnb.supervisor.endpoint import endpoint_of as resolve_endpoint
from cdpnb.supervisor.supervisor import HasCdpUrl, Supervisor
from cdpnb.transport import Connector

__all__ = ["Registry", "StartOptions", "endpoint_of", "registry"]


class StartOptions(TypedDict, total=False):
    """The keyword arguments of ``Supervisor.start`` (tests/test_attach_existing.py
    holds the two equal), for ``registry.get_or_start``."""

    policy: Policy
    dialog_timeout_s: float
    command_timeout_s: float
    connect_timeout_s: float
    reconnect_attempts: int
    bridge: bool | Literal["auto"]
    bypass_csp: bool
    record: str | os.PathLike[str] | None
    redact: bool | Iterable[str]
    record_meta: dict[str, Any] | None
    popups: bool
    reopen_page: bool
    transport: Connector | None
    page: str


def endpoint_of(url: str | HasCdpUrl) -> str:
    """The endpoint URL a supervisor started on ``url`` connects to: the string
    itself, or a backend's ``cdp_url``; TypeError naming ``url`` for anything else."""
    return resolve_endpoint(url, None).url


class Registry:
    def __init__(self) -> None:
        self._supervisors: dict[str, Supervisor] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    def __contains__(self, task_id: object) -> bool:
        return task_id in self._supervisors

    def __len__(self) -> int:
        return len(self._supervisors)

    def get(self, task_id: str) -> Supervisor | None:
        return self._supervisors.get(task_id)

    def task_ids(self) -> list[str]:
        return list(self._supervisors)

    async def get_or_start(self, /, task_id: str, url: str | HasCdpUrl,
                           **options: Unpack[StartOptions]) -> Supervisor:
        """The live supervisor for ``task_id`` on ``url`` (a URL, or a backend from
        ``cdpnb.launch``); starts one with ``options`` (``Supervisor.start``'s) if there
        is none, restarts a dead one, and rebinds (stop + start) when the endpoint
        changed (the URL, or the backend's ``cdp_url``) or ``page`` names another page
        than the one it supervises. A live one keeps the options it was started with."""
        if not isinstance(task_id, str) or not task_id:
            raise TypeError(f"task_id must be a non-empty str, got {task_id!r}")
        endpoint_of(url)
        return await engine.run(self._get_or_start(task_id, url, options))

    async def _get_or_start(self, task_id: str, url: str | HasCdpUrl,
                            options: StartOptions) -> Supervisor:
        lock = self._locks.setdefault(task_id, asyncio.Lock())
        async with lock:
            current = self._supervisors.get(task_id)
            if current is not None:
                if current.endpoint == endpoint_of(url) and current.alive \
                        and _same_page(current, options.get("page")):
                    return current
                del self._supervisors[task_id]
                await current.stop()
            supervisor = await Supervisor.start(url, **options)
            self._supervisors[task_id] = supervisor
            return supervisor

    async def stop(self, task_id: str) -> bool:
        """Stop the supervisor of ``task_id``; False if there was none."""
        return await engine.run(self._stop(task_id))

    async def _stop(self, task_id: str) -> bool:
        lock = self._locks.setdefault(task_id, asyncio.Lock())
        async with lock:
            supervisor = self._supervisors.pop(task_id, None)
            if supervisor is None:
                return False
            await supervisor.stop()
            return True

    async def stop_all(self) -> int:
        """Stop every supervisor; returns how many were stopped."""
        return await engine.run(self._stop_all())

    async def _stop_all(self) -> int:
        ids = list(self._supervisors)
        results = await asyncio.gather(*(self._stop(i) for i in ids))
        return sum(results)

    def __repr__(self) -> str:
        return f"<Registry {len(self)} supervisors: {', '.join(self._supervisors) or '-'}>"


def _same_page(supervisor: Supervisor, page: object) -> bool:
    """Whether a call's ``page`` asks for the page ``supervisor`` has: ``"new"`` and
    ``"first"`` are satisfied by any; a target id by that page only."""
    if page is None or page in PAGE_CHOICES:
        return True
    return page in (supervisor.options.page, supervisor.page_target_id)


registry = Registry()
