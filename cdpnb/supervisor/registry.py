"""``cdpnb.registry``: one supervisor per task id, started on demand.

All bookkeeping runs on the engine loop, so concurrent callers from different
loops or threads see one consistent table.
"""

from __future__ import annotations

import asyncio
from typing import Any

from cdpnb.supervisor.supervisor import Supervisor
from cdpnb.transport.engine import engine

__all__ = ["Registry", "registry"]


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

    async def get_or_start(self, /, task_id: str, url: str, **options: Any) -> Supervisor:
        """The live supervisor for ``task_id`` on ``url``; starts one if there is none,
        restarts a dead one, and rebinds (stop + start) when ``url`` changed."""
        if not isinstance(task_id, str) or not task_id:
            raise TypeError(f"task_id must be a non-empty str, got {task_id!r}")
        if not isinstance(url, str) or not url:
            raise TypeError(f"url must be a CDP URL string, got {url!r}")
        return await engine.run(self._get_or_start(task_id, url, options))

    async def _get_or_start(self, task_id: str, url: str, options: dict[str, Any]) -> Supervisor:
        lock = self._locks.setdefault(task_id, asyncio.Lock())
        async with lock:
            current = self._supervisors.get(task_id)
            if current is not None:
                if current.url == url and current.alive:
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


registry = Registry()
