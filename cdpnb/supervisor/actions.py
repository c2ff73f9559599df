"""Acting on an element as a user would: a real mouse click at its centre.

Measured on Chromium 156: ``DOM.getContentQuads`` on an OOPIF's own session gives
coordinates in that OOPIF's viewport, and ``Input.dispatchMouseEvent`` on the same
session with those coordinates clicks it (the page session with translated
coordinates does too). An in-process frame's quads, read on the page session, are
already in page coordinates. The click counts as a user activation (what
``beforeunload`` needs). A click whose handler opens a dialog gets no
``mouseReleased`` reply until the dialog is answered, so the click ends when
either the reply or the dialog arrives.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import Any

from cdpnb.errors import CDPError, CommandTimeout, ElementNotClickable, StaleRef
from cdpnb.state import PendingDialog
from cdpnb.state.changes import DialogOpened
from cdpnb.supervisor.accessibility import RefTarget
from cdpnb.supervisor.core import Core
from cdpnb.supervisor.evaluation import Budget

__all__ = ["click", "quad_centre"]


def quad_centre(quads: Sequence[Sequence[float]]) -> tuple[float, float] | None:
    """The centre of the first quad with an area of at least one pixel."""
    for quad in quads:
        if len(quad) != 8:
            continue
        xs, ys = quad[0::2], quad[1::2]
        area = abs(sum(xs[i] * ys[(i + 1) % 4] - xs[(i + 1) % 4] * ys[i] for i in range(4))) / 2
        if area >= 1:
            return sum(xs) / 4, sum(ys) / 4
    return None


async def _send_or_dialog(core: Core, params: dict[str, Any], session: str | None,
                          budget: Budget) -> PendingDialog | None:
    """Dispatch one mouse event; the dialog it opened, if one opened before its reply."""
    with core.first_change(DialogOpened) as opened:
        sending = asyncio.ensure_future(core.send("Input.dispatchMouseEvent", params,
                                                  session, budget.left()))
        try:
            either: set[asyncio.Future[Any]] = {sending, opened}
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
            if opened.done() and not opened.cancelled() and opened.exception() is None:
                return opened.result().dialog
            if sending.done():
                sending.result()
                return None
            opened.result()  # the stop or loss that ended the wait
            raise CommandTimeout("no reply")
        finally:
            if not sending.done():
                sending.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await sending


async def click(core: Core, target: RefTarget, budget: Budget) -> dict[str, Any]:
    node = {"backendNodeId": target.backend_node_id}
    session = target.session_id
    try:
        with contextlib.suppress(CDPError):  # not every node scrolls (e.g. in a fixed layer)
            await core.send("DOM.scrollIntoViewIfNeeded", node, session, budget.left())
        reply = await core.send("DOM.getContentQuads", node, session, budget.left())
    except CDPError as exc:
        if "detached" in exc.message or "No node" in exc.message:
            raise StaleRef(target.ref, f"its node is gone ({exc.message})") from None
        raise ElementNotClickable(f"ref {target.ref!r} has no box to click: {exc.message}"
                                  ) from None
    centre = quad_centre(reply.get("quads") or [])
    if centre is None:
        raise ElementNotClickable(f"ref {target.ref!r} has no visible area to click")
    x, y = centre
    base = {"x": x, "y": y, "button": "left", "clickCount": 1}
    dialog: PendingDialog | None = None
    for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
        params = {**base, "type": kind, **({"button": "none"} if kind == "mouseMoved" else {})}
        try:
            dialog = await _send_or_dialog(core, params, session, budget)
        except CommandTimeout:
            raise CommandTimeout(f"clicking {target.ref!r}: Input.dispatchMouseEvent "
                                 f"({kind}) got no reply within the {budget.seconds:g} s "
                                 "budget (is the page busy?)") from None
        if dialog is not None:
            if kind == "mousePressed":
                # The renderer handles the release once the dialog is answered, as it
                # would a user's; not awaited, the click has done its part.
                core.spawn(core.send("Input.dispatchMouseEvent",
                                     {**base, "type": "mouseReleased"}, session),
                           name="cdpnb-click-release")
            break
    return {"ref": target.ref, "frame_id": target.frame_id, "x": x, "y": y,
            "dialog_id": dialog.id if dialog is not None else None}
