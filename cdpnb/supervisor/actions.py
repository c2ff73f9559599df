"""Acting on the page as a user would: a real mouse click on an element (by
accessibility ref or CSS selector) or at a point, over CDP. What both protocols share
(the arguments, the dialog that blocks or ends a click, the selector script) is here
too; the WebDriver BiDi click is ``cdpnb.supervisor.bidi_actions``.

Measured on Chromium 156: ``DOM.getContentQuads`` on an OOPIF's own session gives
coordinates in that OOPIF's viewport, and ``Input.dispatchMouseEvent`` on the same
session with those coordinates clicks it (the page session with translated
coordinates does too). An in-process frame's quads (``DOM.getContentQuads``,
``DOM.getBoxModel``), read on the session that renders it, are already in that
session's viewport: so is the content box of its ``<iframe>`` (``DOM.getFrameOwner``),
which is where the frame's own viewport starts. The click counts as a user activation
(what ``beforeunload`` needs). A click whose handler opens a dialog gets no
``mouseReleased`` reply until the dialog is answered, so the click ends when either
the reply or the dialog arrives.

A click while a dialog is open in the page is refused (``BlockedByDialog``), because
no path handles it alike (measured with a ``confirm()`` open, then a click on another
element of the page): Chromium 156 replies to each mouse event at once and drops the
click, also on an element of another frame than the dialog's; headless-shell 156 runs
it when the dialog is in another frame; Firefox ESR 153 drops it; chromium-bidi 17
drops it when the dialog is in another frame and never replies to
``input.performActions`` when it is in the same one.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cdpnb.errors import (
    BlockedByDialog,
    CDPError,
    CommandTimeout,
    ElementNotClickable,
    NoSuchElement,
    StaleRef,
    TargetGone,
)
from cdpnb.state import BrowserState, PendingDialog
from cdpnb.state.bidi import page_of_context
from cdpnb.state.changes import DialogOpened
from cdpnb.state.frames import descendants
from cdpnb.supervisor.accessibility import RefTarget
from cdpnb.supervisor.core import Core
from cdpnb.supervisor.evaluation import Budget

__all__ = ["ClickSpec", "bad_selector", "check_not_blocked", "click_in_frame", "click_ref",
           "click_spec", "no_element", "out_of_view", "quad_centre", "send_or_dialog",
           "top_frame_id"]


@dataclass(frozen=True)
class ClickSpec:
    """What ``click()`` was asked to click: exactly one of ``ref``, ``selector`` or
    ``point`` (x, y in CSS pixels of ``frame_id``'s viewport); ``frame_id`` only with
    a selector or a point (None: the supervisor's page)."""

    ref: str | None = None
    selector: str | None = None
    point: tuple[float, float] | None = None
    frame_id: str | None = None

    def describe(self) -> str:
        """``ref 'button:OK'``, ``selector '#go'`` or ``point (10, 20)``, for messages."""
        if self.ref is not None:
            return f"ref {self.ref!r}"
        if self.selector is not None:
            return f"selector {self.selector!r}"
        assert self.point is not None
        return f"point ({self.point[0]:g}, {self.point[1]:g})"

    def result(self, frame_id: str | None, x: float, y: float,
               dialog: PendingDialog | None) -> dict[str, Any]:
        """What ``click()`` returns: what was clicked, where (x, y in the viewport of
        ``frame_id``'s document) and the dialog the click opened, if one did."""
        what: dict[str, Any] = ({"ref": self.ref} if self.ref is not None else
                                {"selector": self.selector} if self.selector is not None
                                else {})
        return {**what, "frame_id": frame_id, "x": x, "y": y,
                "dialog_id": dialog.id if dialog is not None else None}


def _coordinate(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number of CSS pixels, got {type(value).__name__}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number of CSS pixels, got {value!r}")
    return float(value)


def click_spec(ref: object, *, selector: object = None, x: object = None, y: object = None,
               frame_id: object = None) -> ClickSpec:
    """Check ``click()``'s arguments before anything is sent: exactly one of ``ref``,
    ``selector``, or ``x`` and ``y``; ``frame_id`` only with a selector or a point."""
    if ref is not None and not isinstance(ref, str):
        raise TypeError(f"ref must be a ref str (from sup.accessibility()), got "
                        f"{type(ref).__name__}")
    if selector is not None and not isinstance(selector, str):
        raise TypeError(f"selector must be a CSS selector str, got {type(selector).__name__}")
    if isinstance(selector, str) and not selector.strip():
        raise ValueError("selector must be a CSS selector such as '#submit', got an empty str")
    if (x is None) != (y is None):
        given, missing = ("x", "y") if y is None else ("y", "x")
        raise TypeError(f"click() got {given} without {missing}: a point needs both x and y")
    point = None if x is None else (_coordinate("x", x), _coordinate("y", y))
    chosen = [name for name, value in (("ref", ref), ("selector", selector), ("x, y", point))
              if value is not None]
    if not chosen:
        raise TypeError("click() needs what to click: a ref (from sup.accessibility()), "
                        "selector='css', or x= and y=")
    if len(chosen) > 1:
        raise TypeError(f"click() takes one of ref, selector, or x and y; got "
                        f"{' and '.join(chosen)}")
    if frame_id is not None:
        if not isinstance(frame_id, str):
            raise TypeError(f"frame_id must be a str, got {type(frame_id).__name__}")
        if ref is not None:
            raise TypeError("frame_id goes with selector= or x=, y=; a ref names its "
                            "frame itself")
    assert ref is None or isinstance(ref, str)
    assert selector is None or isinstance(selector, str)
    assert frame_id is None or isinstance(frame_id, str)
    return ClickSpec(ref=ref, selector=selector, point=point, frame_id=frame_id)


# -- what both protocols share -------------------------------------------------------

def top_frame_id(state: BrowserState) -> str | None:
    """The frame id of the supervisor's page's top frame."""
    page = state.page_session_id
    return next((f.frame_id for f in state.frames.values()
                 if f.parent_frame_id is None and f.session_id == page),
                state.page_target_id)


def _page_of_frame(state: BrowserState, frame_id: str | None) -> str | None:
    """The page session (the tab, over BiDi) whose frame ``frame_id`` is."""
    if frame_id is None:
        return state.page_session_id
    if state.protocol == "bidi":
        page = page_of_context(state, frame_id)
        return page.session_id if page is not None else None
    frame = state.frames.get(frame_id)
    session = frame.session_id if frame is not None else None
    seen: set[str] = set()
    while session is not None and session not in state.pages and session not in seen:
        seen.add(session)
        info = state.sessions.get(session)
        session = info.parent_session_id if info is not None else None
    return session


def _ours(dialog: PendingDialog, page: str | None) -> bool:
    # A dialog whose page is not known counts: clicking past a dialog that may block
    # the page would be dropped or left waiting, so doubt refuses.
    return dialog.page_session_id is None or page is None or dialog.page_session_id == page


def check_not_blocked(state: BrowserState, frame_id: str | None, spec: ClickSpec) -> str | None:
    """The page session of ``frame_id``; BlockedByDialog if a dialog is open there."""
    page = _page_of_frame(state, frame_id)
    dialog = next((d for d in state.pending_dialogs if _ours(d, page)), None)
    if dialog is not None:
        raise BlockedByDialog(
            f"cannot click {spec.describe()}: the {dialog.type} dialog {dialog.id} "
            f"({dialog.message[:60]!r}) is open in the page, and the browser drops or holds "
            f"a click until it is answered; answer it with respond(dialog_id="
            f"{dialog.id!r}) first", dialog_id=dialog.id)
    return page


def _caused_by(state: BrowserState, dialog: PendingDialog, page: str | None,
               frame_id: str | None) -> bool:
    """Whether ``dialog`` can be what an input to ``frame_id`` (None: the page's top)
    caused: a dialog of that frame or of a frame inside it. Another frame's dialog that
    opens meanwhile (an ad's prompt) is never handed back as the click's, so an answer
    meant for what the click opened cannot be given to it."""
    if not _ours(dialog, page):
        return False
    if frame_id is None or dialog.frame_id is None:
        return frame_id is None
    return dialog.frame_id in descendants(
        {k: f.parent_frame_id for k, f in state.frames.items()}, {frame_id})


async def send_or_dialog(core: Core, method: str, params: dict[str, Any], session: str | None,
                         budget: Budget, page: str | None,
                         frame_id: str | None = None) -> PendingDialog | None:
    """Send one input command; the dialog of page ``page`` it opened, if one opened
    before its reply (the reply then comes only once the dialog is answered, so it is
    left to come: a late reply is dropped). CommandTimeout if neither came in time."""
    with core.first_change(
            DialogOpened, lambda c: _caused_by(core.state, c.dialog, page, frame_id)) as opened:
        sending = asyncio.ensure_future(core.send(method, params, session, budget.left()))
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


#: The first element ``selector`` matches in the document it runs in, or null. A bad
#: selector throws the DOM's SyntaxError, which reads "… is not a valid selector".
FIND_ELEMENT = "selector => document.querySelector(selector)"


def _where(spec: ClickSpec) -> str:
    return f"frame {spec.frame_id}" if spec.frame_id is not None else "the page"


def bad_selector(spec: ClickSpec, why: str) -> ValueError:
    return ValueError(f"selector {spec.selector!r} is not a CSS selector the browser takes "
                      f"(in {_where(spec)}): {why}")


def no_element(spec: ClickSpec) -> NoSuchElement:
    assert spec.selector is not None
    return NoSuchElement(f"no element matches selector {spec.selector!r} in {_where(spec)} "
                         "(nothing waits for one to appear: click when it is there)",
                         selector=spec.selector, frame_id=spec.frame_id)


def out_of_view(spec: ClickSpec, width: float, height: float) -> ValueError:
    assert spec.point is not None
    x, y = spec.point
    return ValueError(f"x, y ({x:g}, {y:g}) is outside the viewport of {_where(spec)} "
                      f"({width:g} × {height:g} CSS pixels): nothing there to click")


# -- over CDP --------------------------------------------------------------------------

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


async def _frame_offset(core: Core, frame_id: str | None, session: str | None,
                        budget: Budget) -> tuple[float, float]:
    """Where ``frame_id``'s viewport starts in the viewport of ``session`` (the page or
    the OOPIF that renders it): (0, 0) for a top frame or an OOPIF; for an in-process
    frame, the content box of its ``<iframe>``."""
    frame = core.state.frames.get(frame_id or "")
    if frame is None or frame.is_oopif or frame.parent_frame_id is None:
        return 0.0, 0.0
    try:
        owner = await core.send("DOM.getFrameOwner", {"frameId": frame.frame_id}, session,
                                budget.left())
        box = await core.send("DOM.getBoxModel", {"backendNodeId": owner["backendNodeId"]},
                              session, budget.left())
    except CDPError as exc:
        raise ElementNotClickable(f"frame {frame.frame_id} has no box on its page to click "
                                  f"in ({exc.message})") from None
    content = box["model"]["content"]
    return float(content[0]), float(content[1])


async def _scroll_frames_into_view(core: Core, frame_id: str | None, budget: Budget) -> None:
    """Scroll each ``<iframe>`` from ``frame_id`` up to the page into view in its parent,
    for a point. Measured on Chromium 156: a point of an in-process frame scrolled out
    of view replies and reaches nobody (an OOPIF's still arrives); an element's
    ``DOM.scrollIntoViewIfNeeded`` scrolls its frames too, so a selector needs none of
    this. The owner of an OOPIF is read on its parent's session, where it lives."""
    state = core.state
    frame = state.frames.get(frame_id or "")
    while frame is not None and frame.parent_frame_id is not None:
        parent = state.frames.get(frame.parent_frame_id)
        if parent is None:
            return
        with contextlib.suppress(CDPError):  # gone, or not rendered: the click says so
            owner = await core.send("DOM.getFrameOwner", {"frameId": frame.frame_id},
                                    parent.session_id, budget.left())
            await core.send("DOM.scrollIntoViewIfNeeded",
                            {"backendNodeId": owner["backendNodeId"]}, parent.session_id,
                            budget.left())
        frame = parent


async def _press(core: Core, spec: ClickSpec, session: str | None, x: float, y: float,
                 budget: Budget, page: str | None) -> PendingDialog | None:
    """Mouse move, press and release at (x, y) of ``session``'s viewport; the dialog
    the click opened, if one did."""
    core.note("cdpnb.clicked", {"x": x, "y": y}, session)
    base = {"x": x, "y": y, "button": "left", "clickCount": 1}
    for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
        params = {**base, "type": kind, **({"button": "none"} if kind == "mouseMoved" else {})}
        try:
            dialog = await send_or_dialog(core, "Input.dispatchMouseEvent", params, session,
                                          budget, page, spec.frame_id)
        except CommandTimeout:
            raise CommandTimeout(f"clicking {spec.describe()}: Input.dispatchMouseEvent "
                                 f"({kind}) got no reply within the {budget.seconds:g} s "
                                 "budget (is the page busy?)") from None
        if dialog is not None:
            if kind == "mousePressed":
                # The renderer handles the release once the dialog is answered, as it
                # would a user's; not awaited, the click has done its part.
                core.spawn(core.send("Input.dispatchMouseEvent",
                                     {**base, "type": "mouseReleased"}, session),
                           name="cdpnb-click-release")
            return dialog
    return None


async def _click_node(core: Core, spec: ClickSpec, node: dict[str, Any], frame_id: str | None,
                      session: str | None, budget: Budget, page: str | None) -> dict[str, Any]:
    """Scroll the node (``backendNodeId`` or ``objectId``) into view and click the
    centre of its box."""
    try:
        with contextlib.suppress(CDPError):  # not every node scrolls (e.g. in a fixed layer)
            await core.send("DOM.scrollIntoViewIfNeeded", node, session, budget.left())
        reply = await core.send("DOM.getContentQuads", node, session, budget.left())
    except CDPError as exc:
        if spec.ref is not None and ("detached" in exc.message or "No node" in exc.message):
            raise StaleRef(spec.ref, f"its node is gone ({exc.message})") from None
        raise ElementNotClickable(f"{spec.describe()} has no box to click: {exc.message}"
                                  ) from None
    centre = quad_centre(reply.get("quads") or [])
    if centre is None:
        raise ElementNotClickable(f"{spec.describe()} has no visible area to click")
    dx, dy = await _frame_offset(core, frame_id, session, budget)
    dialog = await _press(core, spec, session, *centre, budget, page)
    return spec.result(frame_id, centre[0] - dx, centre[1] - dy, dialog)


async def click_ref(core: Core, spec: ClickSpec, target: RefTarget,
                    budget: Budget) -> dict[str, Any]:
    """Click the element an accessibility ref names (its frame and session are known)."""
    page = check_not_blocked(core.state, target.frame_id, spec)
    return await _click_node(core, spec, {"backendNodeId": target.backend_node_id},
                             target.frame_id, target.session_id, budget, page)


async def click_in_frame(core: Core, spec: ClickSpec, session: str | None, context: int | None,
                         budget: Budget) -> dict[str, Any]:
    """Click by selector or at a point in ``spec.frame_id`` (the page's top frame when
    None), rendered by ``session``; ``context`` runs script there (None: the session's
    default)."""
    frame_id = spec.frame_id if spec.frame_id is not None else top_frame_id(core.state)
    page = check_not_blocked(core.state, spec.frame_id, spec)
    where: dict[str, Any] = {"contextId": context} if context is not None else {}
    if spec.point is not None:
        await _scroll_frames_into_view(core, frame_id, budget)
        size = await _run(core, spec, "[innerWidth, innerHeight]", where, session, budget,
                          frame_id, by_value=True)
        width, height = (float(v) for v in size["value"])
        x, y = spec.point
        if not (0 <= x < width and 0 <= y < height):
            raise out_of_view(spec, width, height)
        dx, dy = await _frame_offset(core, frame_id, session, budget)
        dialog = await _press(core, spec, session, x + dx, y + dy, budget, page)
        return spec.result(frame_id, x, y, dialog)
    found = await _run(core, spec, f"({FIND_ELEMENT})({json.dumps(spec.selector)})", where,
                       session, budget, frame_id, by_value=False)
    object_id = found.get("objectId")
    if found.get("subtype") != "node" or not isinstance(object_id, str):
        raise no_element(spec)
    try:
        return await _click_node(core, spec, {"objectId": object_id}, frame_id, session,
                                 budget, page)
    finally:
        # The handle is only the way to the node; released off the caller's path.
        core.spawn(core.send("Runtime.releaseObject", {"objectId": object_id}, session),
                   name="cdpnb-release-object")


async def _run(core: Core, spec: ClickSpec, expression: str, where: dict[str, Any],
               session: str | None, budget: Budget, frame_id: str | None, *,
               by_value: bool) -> dict[str, Any]:
    """Runtime.evaluate for the click (a query, a size): its RemoteObject."""
    try:
        reply = await core.send("Runtime.evaluate", {
            "expression": expression, "returnByValue": by_value, "silent": True, **where},
            session, budget.left())
    except CommandTimeout:
        raise CommandTimeout(f"clicking {spec.describe()}: the frame did not run a query "
                             f"within the {budget.seconds:g} s budget (is the page busy?)"
                             ) from None
    except CDPError as exc:
        if "Cannot find context" in exc.message:
            raise TargetGone(f"clicking {spec.describe()}: frame {frame_id} navigated away "
                             "while the click was looking for it; try again") from None
        raise
    details = reply.get("exceptionDetails")
    if details:
        thrown = (details.get("exception") or {}).get("description") or details.get("text")
        text = str(thrown).splitlines()[0]
        if spec.selector is not None:
            raise bad_selector(spec, text)
        raise ElementNotClickable(f"clicking {spec.describe()}: the page's script in frame "
                                  f"{frame_id} failed: {text}")
    result: dict[str, Any] = reply.get("result") or {}
    return result
