"""``cdpnb.sync``: the same names as plain blocking calls.

Works in a script and in a notebook cell (where the kernel's loop is running):
the work runs on cdpnb's engine thread and this thread just waits for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cdpnb.backends import Backend, launch
from cdpnb.state import DialogRecord, FrameTree, PendingDialog, Snapshot
from cdpnb.supervisor import Policy
from cdpnb.supervisor import Supervisor as AsyncSupervisor
from cdpnb.supervisor.registry import registry as async_registry
from cdpnb.supervisor.values import RemoteObject
from cdpnb.transport.engine import engine

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Backend", "Supervisor", "launch", "registry"]


class Supervisor:
    """Blocking face of :class:`cdpnb.Supervisor`; ``.aio`` is the async one."""

    def __init__(self, supervisor: AsyncSupervisor) -> None:
        self.aio = supervisor

    @classmethod
    def start(
        cls,
        url: str,
        *,
        policy: Policy = "must_respond",
        dialog_timeout_s: float = 300.0,
        command_timeout_s: float = 30.0,
        connect_timeout_s: float = 10.0,
        reconnect_attempts: int = 3,
    ) -> Supervisor:
        return cls(engine.run_sync(AsyncSupervisor.start(
            url, policy=policy, dialog_timeout_s=dialog_timeout_s,
            command_timeout_s=command_timeout_s, connect_timeout_s=connect_timeout_s,
            reconnect_attempts=reconnect_attempts)))

    def stop(self) -> None:
        engine.run_sync(self.aio.stop())

    def __enter__(self) -> Supervisor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def snapshot(self) -> Snapshot:
        return self.aio.snapshot()

    def frame_tree(self, full: bool = True) -> FrameTree:
        return self.aio.frame_tree(full)

    @property
    def connected(self) -> bool:
        return self.aio.connected

    @property
    def page_target_id(self) -> str | None:
        return self.aio.page_target_id

    def stats(self) -> dict[str, int]:
        return self.aio.stats()

    def cdp(self, method: str, params: dict[str, Any] | None = None,
            frame_id: str | None = None, timeout: float | None = None, *,
            browser: bool = False, session_id: str | None = None) -> dict[str, Any]:
        return engine.run_sync(self.aio.cdp(method, params, frame_id, timeout, browser=browser,
                                            session_id=session_id))

    def evaluate(self, expression: str, frame_id: str | None = None,
                 timeout: float | None = None, *, await_promise: bool = True,
                 user_gesture: bool = False) -> Any:
        return engine.run_sync(self.aio.evaluate(expression, frame_id, timeout,
                                                 await_promise=await_promise,
                                                 user_gesture=user_gesture))

    def evaluate_on(self, ref: str | RemoteObject, function: str, *args: Any,
                    timeout: float | None = None, await_promise: bool = True,
                    user_gesture: bool = False) -> Any:
        return engine.run_sync(self.aio.evaluate_on(ref, function, *args, timeout=timeout,
                                                    await_promise=await_promise,
                                                    user_gesture=user_gesture))

    def accessibility(self, frame_id: str | None = None,
                      timeout: float | None = None) -> pd.DataFrame:
        return engine.run_sync(self.aio.accessibility(frame_id, timeout))

    def click(self, ref: str, timeout: float | None = None) -> dict[str, Any]:
        return engine.run_sync(self.aio.click(ref, timeout))

    def release_objects(self) -> None:
        engine.run_sync(self.aio.release_objects())

    def navigate(self, url: str, timeout: float = 30.0) -> dict[str, Any]:
        return engine.run_sync(self.aio.navigate(url, timeout))

    def wait_for_dialog(self, timeout: float | None = None) -> PendingDialog:
        return engine.run_sync(self.aio.wait_for_dialog(timeout))

    def respond(self, action: str, prompt_text: str | None = None,
                dialog_id: str | None = None) -> DialogRecord:
        return engine.run_sync(self.aio.respond(action, prompt_text, dialog_id))

    def __repr__(self) -> str:
        return repr(self.aio).replace("<Supervisor", "<sync.Supervisor", 1)


class _SyncRegistry:
    def get_or_start(self, task_id: str, url: str, **options: Any) -> Supervisor:
        return Supervisor(engine.run_sync(async_registry.get_or_start(task_id, url, **options)))

    def stop(self, task_id: str) -> bool:
        return engine.run_sync(async_registry.stop(task_id))

    def stop_all(self) -> int:
        return engine.run_sync(async_registry.stop_all())

    def __contains__(self, task_id: object) -> bool:
        return task_id in async_registry

    def __repr__(self) -> str:
        return repr(async_registry)


registry = _SyncRegistry()
