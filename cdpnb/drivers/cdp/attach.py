"""The attach sequence: our own page target, then every child while it waits.

Each child (an OOPIF, a worker) is paused by ``waitForDebuggerOnStart`` until we
release it, so nothing it does (a dialog at load, a nested iframe) escapes us. Pages
a supervised page opens are the page attacher's (``cdpnb.drivers.cdp.pages``).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from cdpnb.drivers.cdp.browser_log import enable_browser_log
from cdpnb.drivers.cdp.pages import PageAttacher
from cdpnb.errors import (
    COMMAND_FAILURES,
    CDPError,
    CommandTimeout,
    PageBlocked,
    TargetGone,
)
from cdpnb.protocol import Event, Message
from cdpnb.runtime.waits import wait_for
from cdpnb.session.bridge import DialogBridge
from cdpnb.session.core import Core
from cdpnb.state import Change
from cdpnb.state.pages import METHOD_NOT_FOUND

__all__ = ["AUTO_ATTACH", "METHOD_NOT_FOUND", "ChildAttacher", "attach_existing_page",
           "attach_page", "create_page"]

log = logging.getLogger("cdpnb.supervisor")

AUTO_ATTACH: dict[str, Any] = {"autoAttach": True, "waitForDebuggerOnStart": True,
                               "flatten": True}
#: How long a re-attached page may take to answer Page/Runtime.enable before we call it
#: wedged (its renderer is blocked by a dialog no session can answer any more).
WEDGED_PAGE_TIMEOUT_S = 3.0
#: Session types that have a Page domain and can host frames.
FRAME_HOSTS = ("page", "iframe")


async def _enable_frame_host(core: Core, session_id: str, *, lifecycle: bool,
                             bridge: DialogBridge | None) -> None:
    installing = bridge is not None and bridge.enabled
    calls = [
        # First, before anything can run in it (a child still waits for the debugger
        # here), yet sent with the rest (see DialogBridge.install_commands).
        *(bridge.install_commands(session_id) if bridge is not None and installing else ()),
        core.send("Page.enable", session_id=session_id),
        core.send("Runtime.enable", session_id=session_id),
        enable_browser_log(core, session_id),  # the browser's own console messages
        core.send("Target.setAutoAttach", AUTO_ATTACH, session_id=session_id),
    ]
    if lifecycle:
        calls.append(core.send("Page.setLifecycleEventsEnabled", {"enabled": True},
                               session_id=session_id))
    await asyncio.gather(*calls)
    if bridge is not None and installing:
        bridge.installed.add(session_id)
    # After Page.enable, so the tree and the events that follow it line up.
    await core.send("Page.getFrameTree", session_id=session_id)


async def _attach(core: Core, target_id: str, setup_timeout: float | None,
                  bridge: DialogBridge | None) -> None:
    reply = await core.send("Target.attachToTarget", {"targetId": target_id, "flatten": True})
    session_id = reply["sessionId"]
    core.note("cdpnb.pageTarget", {"target_id": target_id, "session_id": session_id})
    await wait_for(_enable_frame_host(core, session_id, lifecycle=True, bridge=bridge),
                   setup_timeout)


async def create_page(core: Core, pages: PageAttacher) -> str:
    """A fresh page of our own while the browser-level auto-attach is on: the page
    comes paused on an auto-attached session, which becomes ours. Its target id."""
    async with pages.creating():
        created = await core.send("Target.createTarget", {"url": "about:blank"})
        target_id = created["targetId"]
        session_id, waiting = await pages.claim(target_id)
    core.note("cdpnb.pageTarget", {"target_id": target_id, "session_id": session_id})
    await pages.set_up(session_id, waiting, strict=True)
    return str(target_id)


#: How long a page cdpnb did not create may take to answer its set-up before it counts
#: as blocked (a busy page's Page.enable takes well under a second).
BLOCKED_PAGE_TIMEOUT_S = 5.0


async def attach_existing_page(core: Core, target_id: str,
                               bridge: DialogBridge | None = None) -> None:
    """Attach to a page cdpnb did not create (``Supervisor.start(page=...)``) and set
    it up as a page of its own: its frames, OOPIFs and documents already there come
    with the set-up (see ``cdpnb.drivers.cdp.existing_pages``). PageBlocked if the page does
    not answer: a dialog opened before we attached blocks it, and (measured on
    Chromium 156 and headless-shell) a session attached later is never told of that
    dialog and cannot answer it."""
    if bridge is not None:
        bridge.forget_sessions()
    core.note("cdpnb.pageAdopted", {"target_id": target_id})
    try:
        await _attach(core, target_id, BLOCKED_PAGE_TIMEOUT_S, bridge)
    except TimeoutError:
        raise PageBlocked(
            f"page {target_id} did not answer its set-up (Page.enable, Runtime.enable) "
            f"within {BLOCKED_PAGE_TIMEOUT_S:g} s: its renderer is blocked, most likely by "
            "a JavaScript dialog that opened before cdpnb attached. A CDP session attached "
            "later is never told of such a dialog and cannot answer it (measured on "
            "Chromium 156); only the client attached when it opened can. cdpnb left the "
            "page as it was: answer the dialog there and start again, or supervise a page "
            "of cdpnb's own (page='new')", target_id=target_id) from None


async def attach_page(core: Core, reuse_target_id: str | None = None,
                      bridge: DialogBridge | None = None,
                      pages: PageAttacher | None = None, *,
                      replace_wedged: bool = True) -> None:
    """Create (or re-attach to) the supervisor's own page target and set it up. A
    re-attached page that no longer answers is replaced by a fresh one, or, with
    ``replace_wedged=False`` (a page cdpnb did not create), PageBlocked."""
    if pages is not None and pages.active:
        await create_page(core, pages)
        return
    if bridge is not None:
        bridge.forget_sessions()
    if reuse_target_id is not None:
        targets = (await core.send("Target.getTargets")).get("targetInfos", [])
        if any(t.get("targetId") == reuse_target_id for t in targets):
            try:
                await _attach(core, reuse_target_id, WEDGED_PAGE_TIMEOUT_S, bridge)
                return
            except TimeoutError:
                if not replace_wedged:
                    raise PageBlocked(
                        f"page {reuse_target_id} did not answer after reconnecting: a dialog "
                        "left open over the lost connection blocks it, and no session "
                        "attached later can answer it (measured on Chromium 156). It is "
                        "not cdpnb's page to close, so it is left as it is",
                        target_id=reuse_target_id) from None
                await _replace_wedged_page(core, reuse_target_id)
    try:
        created = await core.send("Target.createTarget", {"url": "about:blank"})
    except CDPError as exc:
        if exc.code != METHOD_NOT_FOUND:
            raise
        # A target-level endpoint (Node's inspector, a page's own WebSocket): the
        # connection itself is the page, with whatever domains it has.
        await _attach_direct(core, exc)
        return
    await _attach(core, created["targetId"], None, bridge)


async def _attach_direct(core: Core, why: CDPError) -> None:
    core.note("cdpnb.directTarget", {"reason": str(why)})
    await core.send("Runtime.enable")
    optional = [("Page.enable", {}), ("Page.setLifecycleEventsEnabled", {"enabled": True}),
                ("Target.setAutoAttach", AUTO_ATTACH), ("Page.getFrameTree", {})]
    for method, params in optional:
        try:
            await core.send(method, params)
        except CDPError as exc:
            # -32601 is folded into state.unsupported by the reducers.
            if exc.code != METHOD_NOT_FOUND:
                raise


async def _replace_wedged_page(core: Core, target_id: str) -> None:
    # Measured: a dialog that opened before the connection dropped blocks the renderer,
    # and a session attached afterwards cannot answer it ("No dialog is showing"), so
    # that tab can never be used again. Close it and start over on a fresh page.
    core.note("cdpnb.pageReplaced", {"target_id": target_id,
                                     "reason": "wedged by a dialog left open"})
    if core.state.page_target_id == target_id and core.state.page_session_id is not None:
        # Ours to close: its end is a replacement, not someone else closing it.
        core.note("cdpnb.pageReplacing", {"session_id": core.state.page_session_id,
                                          "reason": "wedged by a dialog left open"})
    log.warning("cdpnb: page %s did not answer after reconnecting (a dialog left open over "
                "the lost connection blocks it); replacing it with a new page", target_id)
    try:
        await core.send("Target.closeTarget", {"targetId": target_id}, timeout=5.0)
    except (CDPError, CommandTimeout) as exc:
        log.info("cdpnb: closing wedged page %s failed: %s", target_id, exc)


class ChildAttacher:
    """Sets up each auto-attached child off the reader, then lets it run."""

    def __init__(self, core: Core, bridge: DialogBridge | None = None) -> None:
        self.core = core
        self.bridge = bridge

    def __call__(self, message: Message, changes: tuple[Change, ...]) -> None:
        if type(message) is not Event or message.method != "Target.attachedToTarget":
            return
        if message.session_id is None:
            # Pages (ours, popups, others') are announced on the browser connection:
            # the page attacher's.
            return
        params = message.params
        session_id = params.get("sessionId")
        info = params.get("targetInfo") or {}
        if not isinstance(session_id, str):
            return
        self.core.spawn(
            self._setup(session_id, str(info.get("type", "")),
                        bool(params.get("waitingForDebugger"))),
            name=f"cdpnb-child-setup-{session_id[:8]}",
        )

    async def _setup(self, session_id: str, kind: str, waiting: bool) -> None:
        core = self.core
        try:
            if kind in FRAME_HOSTS:
                await _enable_frame_host(core, session_id, lifecycle=False, bridge=self.bridge)
            core.note("cdpnb.childSetUp", {}, session_id)
        except (CDPError, CommandTimeout, TargetGone) as exc:
            # The child may have gone already (iframe removed mid-setup).
            core.note("cdpnb.childSetupFailed", {}, session_id)
            log.info("cdpnb: setting up child session %s failed: %s", session_id, exc)
        finally:
            if waiting:
                try:
                    await core.send("Runtime.runIfWaitingForDebugger", session_id=session_id)
                except COMMAND_FAILURES as exc:
                    log.info("cdpnb: releasing child session %s failed: %s", session_id, exc)
