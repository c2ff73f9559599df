"""Pages the supervised page opens (popups, ``target=_blank`` links) and the browser-level
auto-attach that reports them.

Measured on Chromium 156: the page session's own ``Target.setAutoAttach`` never reports
a popup; a browser-level ``Target.setAutoAttach{waitForDebuggerOnStart, flatten,
filter: page}`` does, on the browser connection, with ``openerId``, paused before its
first script (so a ``prompt()`` at load is not missed, and a same-origin popup's
dialog, which blocks its opener's renderer too, is seen). It also attaches every page
that exists when it is turned on, and every page created later by anyone (other
clients, our own replacements): those are let go at once (released if paused, then
detached). The state decides which pages are ours (``cdpnb.state.pages``); this acts
on its ``PageOpened`` changes.

A popup is set up pipelined: its enables and ``Runtime.runIfWaitingForDebugger`` go
out together, because some replies only come once it runs (measured: awaiting
``Runtime.enable`` before releasing a ``noopener`` popup waits forever).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from cdpnb.drivers.cdp.browser_log import enable_browser_log
from cdpnb.errors import COMMAND_FAILURES, CDPError
from cdpnb.protocol import Event, Message
from cdpnb.runtime.waits import wait_for
from cdpnb.session.bridge import DialogBridge
from cdpnb.session.core import Core, settle
from cdpnb.state import Change
from cdpnb.state.changes import PageOpened

__all__ = ["BROWSER_AUTO_ATTACH", "PageAttacher"]

log = logging.getLogger("cdpnb.supervisor")

BROWSER_AUTO_ATTACH: dict[str, Any] = {
    "autoAttach": True, "waitForDebuggerOnStart": True, "flatten": True,
    "filter": [{"type": "page"}],
}
PAGE_AUTO_ATTACH: dict[str, Any] = {"autoAttach": True, "waitForDebuggerOnStart": True,
                                    "flatten": True}
#: How long a page we create may take to be announced by the auto-attach.
CLAIM_TIMEOUT_S = 5.0


class PageAttacher:
    """Adopts the pages supervised pages open; lets every other page go."""

    def __init__(self, core: Core, bridge: DialogBridge | None = None) -> None:
        self.core = core
        self.bridge = bridge
        #: True once the browser-level auto-attach is on for this connection.
        self.active = False
        #: True while turning it on: the pages announced then existed before (let go).
        self._initial = False
        self._creating = 0
        self._parked: dict[str, tuple[str, bool]] = {}  # target -> (session, waiting)
        self._claims: dict[str, asyncio.Future[tuple[str, bool]]] = {}

    def reset(self) -> None:
        """A new connection: nothing is attached yet."""
        self.active = False
        self._parked.clear()
        for claim in self._claims.values():
            claim.cancel()
        self._claims.clear()

    async def enable(self) -> None:
        """Turn the browser-level auto-attach on (after the page of our own is set up)."""
        if self.active:
            return
        self.active = self._initial = True
        try:
            await self.core.send("Target.setAutoAttach", BROWSER_AUTO_ATTACH)
        except CDPError as exc:
            # A proxy or a target-level endpoint may refuse it: no popups then.
            self.active = False
            log.info("cdpnb: browser-level auto-attach refused (%s): pages opened by the "
                     "supervised page will not be supervised", exc)
        finally:
            self._initial = False

    # -- the stream (called by Core.apply, must not block) -------------------------

    def __call__(self, message: Message, changes: tuple[Change, ...]) -> None:
        if (type(message) is not Event or message.method != "Target.attachedToTarget"
                or message.session_id is not None or not self.active):
            return
        params = message.params
        info = params.get("targetInfo") or {}
        session_id = params.get("sessionId")
        target_id = info.get("targetId")
        if info.get("type") != "page" or not isinstance(session_id, str) \
                or not isinstance(target_id, str):
            return
        waiting = bool(params.get("waitingForDebugger"))
        if any(isinstance(c, PageOpened) and c.page.session_id == session_id for c in changes):
            self.core.spawn(self.set_up(session_id, waiting), name=f"cdpnb-popup-{target_id[:8]}")
            return
        claim = self._claims.pop(target_id, None)
        if claim is not None and not claim.done():
            settle(claim, (session_id, waiting))
        elif self._creating:
            self._parked[target_id] = (session_id, waiting)
        elif waiting or self._initial:
            # A page created by anyone else waits for us too: let it run, and let go. A
            # page attached without waiting later is someone's explicit attach (a user's
            # Target.attachToTarget through cdp()): not ours to end.
            self.core.spawn(self._let_go(session_id, waiting), name=f"cdpnb-let-go-{target_id[:8]}")

    # -- adopting and letting go ---------------------------------------------------

    async def set_up(self, session_id: str, waiting: bool, *, strict: bool = False) -> None:
        """A page joins the supervision: bridge, Page, Runtime, its own auto-attach,
        then it may run; its frame tree last. ``strict`` raises what fails (our own
        page); otherwise a page that went meanwhile is only counted."""
        core = self.core
        try:
            bridge = self.bridge if self.bridge is not None and self.bridge.enabled else None
            # Before anything can run in it, all sent at once (see install_commands).
            calls = [*(bridge.install_commands(session_id) if bridge is not None else ()),
                     core.send("Page.enable", session_id=session_id),
                     core.send("Runtime.enable", session_id=session_id),
                     enable_browser_log(core, session_id),
                     core.send("Page.setLifecycleEventsEnabled", {"enabled": True},
                               session_id=session_id),
                     core.send("Target.setAutoAttach", PAGE_AUTO_ATTACH, session_id=session_id)]
            if waiting:
                calls.append(core.send("Runtime.runIfWaitingForDebugger", session_id=session_id))
            await asyncio.gather(*calls)
            if bridge is not None:
                bridge.installed.add(session_id)
            await core.send("Page.getFrameTree", session_id=session_id)
            core.note("cdpnb.pageAdopted", {}, session_id)
        except COMMAND_FAILURES as exc:
            core.note("cdpnb.pageSetupFailed", {}, session_id)
            if strict:
                raise
            log.info("cdpnb: setting up page session %s failed: %s", session_id, exc)
            if waiting:
                with contextlib.suppress(*COMMAND_FAILURES):
                    await core.send("Runtime.runIfWaitingForDebugger", session_id=session_id)

    async def _let_go(self, session_id: str, waiting: bool) -> None:
        core = self.core
        with contextlib.suppress(*COMMAND_FAILURES):
            if waiting:
                await core.send("Runtime.runIfWaitingForDebugger", session_id=session_id)
            await core.send("Target.detachFromTarget", {"sessionId": session_id})

    # -- pages we create while the auto-attach is on -------------------------------

    @contextlib.asynccontextmanager
    async def creating(self) -> Any:
        """Around ``Target.createTarget``: pages announced meanwhile wait to be claimed."""
        self._creating += 1
        try:
            yield
        finally:
            self._creating -= 1
            if not self._creating:
                parked, self._parked = self._parked, {}
                for session_id, waiting in parked.values():
                    self.core.spawn(self._let_go(session_id, waiting), name="cdpnb-let-go")

    async def claim(self, target_id: str) -> tuple[str, bool]:
        """The auto-attached session of a page we just created: (session, waiting)."""
        parked = self._parked.pop(target_id, None)
        if parked is not None:
            return parked
        claim: asyncio.Future[tuple[str, bool]] = asyncio.get_running_loop().create_future()
        self._claims[target_id] = claim
        try:
            return await wait_for(claim, CLAIM_TIMEOUT_S)
        finally:
            self._claims.pop(target_id, None)
