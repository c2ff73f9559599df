"""The refs of the last accessibility snapshot (``role:name``, ``#n`` for the n-th
duplicate), for ``evaluate_on`` and ``click(ref)``: CDP's accessibility tree only."""

from __future__ import annotations

from typing import Any

from cdpnb.drivers.cdp.accessibility import AXSnapshot, RefTarget, resolve, take_snapshot
from cdpnb.drivers.cdp.evaluation import OBJECT_GROUP, Evaluator
from cdpnb.errors import StaleRef
from cdpnb.protocol.js_values import RemoteObject
from cdpnb.session.budget import Budget
from cdpnb.session.core import Core
from cdpnb.session.ref_names import make_ref, parse_ref

__all__ = ["AccessibilityRefs"]


class AccessibilityRefs:
    """One supervisor's refs: handed out by ``take``, looked up by the calls on them."""

    def __init__(self, core: Core, evaluator: Evaluator) -> None:
        self.core = core
        self.evaluator = evaluator
        self._refs: dict[str, RefTarget] = {}

    async def take(self, budget: Budget) -> AXSnapshot:
        """A new snapshot of every frame; its refs replace those handed out before."""
        snap = await take_snapshot(self.core, budget)
        self._refs = snap.targets()
        self.core.note("cdpnb.accessibilitySnapshot", {})
        return snap

    def forget(self) -> None:
        """Forget the refs handed out: each is looked up on the page as it is now."""
        self._refs.clear()

    async def target(self, ref: str, budget: Budget) -> RefTarget:
        ref = make_ref(*parse_ref(ref))  # one spelling: 'button:OK#1' is 'button:OK'
        target = self._refs.get(ref)
        if target is None:
            # Refs are derived from the page, so one not seen yet may be there now. The
            # refs already handed out stay as they were: only the missing one is added.
            snap = await take_snapshot(self.core, budget)
            if snap.skipped:
                raise StaleRef(ref, "it is not in the last accessibility snapshot, and a "
                                    f"new one could not read every frame ({snap.skipped})")
            target = snap.targets().get(ref)
            if target is not None:
                self._refs[ref] = target
        if target is None:
            raise StaleRef(ref, "no element on the page has it now (sup.accessibility() "
                                "lists the refs there are)")
        return target

    async def still_there(self, ref: str, budget: Budget) -> RefTarget:
        """``ref``'s target, once its element is proved to be there (the handle that
        proves it is not kept)."""
        target = await self.target(ref, budget)
        self.evaluator.release(target.session_id,
                               await resolve(self.core, target, budget, OBJECT_GROUP))
        return target

    async def call_on(self, ref: str | RemoteObject, function: str,
                      arguments: list[dict[str, Any]], budget: Budget, *,
                      await_promise: bool, user_gesture: bool) -> Any:
        """``function`` called with the element behind ``ref`` first, then ``arguments``."""
        if isinstance(ref, RemoteObject):
            assert ref.object_id is not None
            session, element = ref.session_id, ref.object_id
        else:
            target = await self.target(ref, budget)
            element = await resolve(self.core, target, budget, OBJECT_GROUP)
            session = target.session_id
        # The element goes in as the first argument; `this` is the element as well. The
        # newline ends a trailing `//` comment in the caller's source.
        wrapped = f"function (...a) {{ return ({function}\n).apply(this, [this, ...a]); }}"
        try:
            return await self.evaluator.call_on(session, element, wrapped, arguments, budget,
                                                await_promise=await_promise,
                                                user_gesture=user_gesture)
        finally:
            if not isinstance(ref, RemoteObject):  # the caller's own handle stays theirs
                self.evaluator.release(session, element)
