"""Acting on the page as a user would: a real mouse click on an element (by
accessibility ref or CSS selector) or at a point, typing into a field (``fill``) and
looking for an element (``wait_for_selector``), over CDP. What every protocol shares
(the arguments, the dialog that blocks or ends a click, the selector scripts, the wait
for an element to be there) is here too; WebDriver BiDi's are
``cdpnb.drivers.bidi.actions``, WebDriver classic's ``cdpnb.drivers.classic.actions``.

Selectors are resolved where the page's own script cannot reach: over CDP in cdpnb's
isolated world (``Page.createIsolatedWorld``), over BiDi in a sandbox realm
(``script.callFunction`` with ``sandbox``); WebDriver classic's element search is the
server's own. Measured (Chromium 156, Firefox ESR 153, chromium-bidi 17): a page that
replaces ``Document.prototype.querySelector`` to return another element steers a query
run in its own realm (a click on ``#safe`` clicked ``#buy``), not one run in the
isolated world or the sandbox, which have the DOM's own prototypes. Chromium 156 answers
``Page.createIsolatedWorld`` for the same frame and world name with the same context
while the document lives, so asking again costs one round trip and no new world.

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

import contextlib
import json
from typing import Any

from cdpnb.drivers.cdp.accessibility import RefTarget
from cdpnb.errors import (
    CDPError,
    CommandTimeout,
    ElementNotClickable,
    StaleRef,
    TargetGone,
)
from cdpnb.session.actions import (
    ELEMENT_STATE,
    FILL_PREPARE,
    FILL_VALUE,
    FIND_ELEMENT,
    WORLD,
    ClickSpec,
    ElementState,
    _not_yet,
    bad_selector,
    check_not_blocked,
    no_element,
    not_fillable,
    not_visible,
    out_of_view,
    quad_centre,
    send_or_dialog,
    top_frame_id,
)
from cdpnb.session.budget import Budget
from cdpnb.session.core import Core
from cdpnb.session.results import ClickResult
from cdpnb.state import PendingDialog

__all__ = ["click_in_frame", "click_ref", "fill_in_frame", "isolated_world", "query_in_frame",
           "scroll_frames_into_view"]



















# -- what both protocols share -------------------------------------------------------





























# -- over CDP --------------------------------------------------------------------------



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


async def scroll_frames_into_view(core: Core, frame_id: str | None, budget: Budget) -> None:
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
                      session: str | None, budget: Budget, page: str | None) -> ClickResult:
    """Scroll the node (``backendNodeId`` or ``objectId``) into view and click the
    centre of its box."""
    try:
        with contextlib.suppress(CDPError):  # not every node scrolls (e.g. in a fixed layer)
            await core.send("DOM.scrollIntoViewIfNeeded", node, session, budget.left())
        reply = await core.send("DOM.getContentQuads", node, session, budget.left())
    except CDPError as exc:
        if spec.ref is not None and ("detached" in exc.message or "No node" in exc.message):
            raise StaleRef(spec.ref, f"its node is gone ({exc.message})") from None
        # (Chromium 156 for a display:none element: "Could not compute content quads")
        raise _not_yet(ElementNotClickable(f"{spec.describe()} has no box to click: "
                                           f"{exc.message}")) from None
    centre = quad_centre(reply.get("quads") or [])
    if centre is None:
        raise not_visible(spec)
    dx, dy = await _frame_offset(core, frame_id, session, budget)
    dialog = await _press(core, spec, session, *centre, budget, page)
    return spec.result(frame_id, centre[0] - dx, centre[1] - dy, dialog)


async def click_ref(core: Core, spec: ClickSpec, target: RefTarget,
                    budget: Budget) -> ClickResult:
    """Click the element an accessibility ref names (its frame and session are known)."""
    page = check_not_blocked(core.state, target.frame_id, spec)
    return await _click_node(core, spec, {"backendNodeId": target.backend_node_id},
                             target.frame_id, target.session_id, budget, page)


async def isolated_world(core: Core, frame_id: str | None, session: str | None,
                         budget: Budget, fallback: int | None) -> int | None:
    """The execution context of cdpnb's isolated world in ``frame_id`` (rendered by
    ``session``), where the page's own script cannot reach; ``fallback`` (the frame's
    own context) on an endpoint without isolated worlds."""
    if frame_id is None:
        return fallback
    try:
        reply = await core.send("Page.createIsolatedWorld",
                                {"frameId": frame_id, "worldName": WORLD}, session,
                                budget.left())
    except CommandTimeout:
        raise CommandTimeout(f"frame {frame_id} did not make cdpnb's isolated world within "
                             f"the {budget.seconds:g} s budget (is the page busy?)") from None
    except CDPError as exc:
        if exc.code == -32601:  # (an endpoint without it: the frame's own realm)
            return fallback
        if "No frame" in exc.message:  # (navigated away, or gone, between two looks)
            raise _not_yet(TargetGone(f"frame {frame_id} is gone ({exc.message})")) from None
        raise
    context = reply.get("executionContextId")
    return context if isinstance(context, int) else fallback


async def click_in_frame(core: Core, spec: ClickSpec, session: str | None, context: int | None,
                         budget: Budget) -> ClickResult:
    """Click by selector or at a point in ``spec.frame_id`` (the page's top frame when
    None), rendered by ``session``; ``context`` runs script there (None: the session's
    default). The selector is resolved, and the viewport read, in cdpnb's isolated
    world."""
    frame_id = spec.frame_id if spec.frame_id is not None else top_frame_id(core.state)
    page = check_not_blocked(core.state, spec.frame_id, spec)
    world = await isolated_world(core, frame_id, session, budget, context)
    where: dict[str, Any] = {"contextId": world} if world is not None else {}
    if spec.point is not None:
        await scroll_frames_into_view(core, frame_id, budget)
        size = await _run(core, spec, "[innerWidth, innerHeight]", where, session, budget,
                          frame_id, by_value=True)
        width, height = (float(v) for v in size["value"])
        x, y = spec.point
        if not (0 <= x < width and 0 <= y < height):
            raise out_of_view(spec, width, height)
        dx, dy = await _frame_offset(core, frame_id, session, budget)
        dialog = await _press(core, spec, session, x + dx, y + dy, budget, page)
        return spec.result(frame_id, x, y, dialog)
    object_id = await _find(core, spec, where, session, budget, frame_id)
    try:
        return await _click_node(core, spec, {"objectId": object_id}, frame_id, session,
                                 budget, page)
    finally:
        _release(core, session, object_id)


async def _find(core: Core, spec: ClickSpec, where: dict[str, Any], session: str | None,
                budget: Budget, frame_id: str | None) -> str:
    """The handle of the first element ``spec.selector`` matches (NoSuchElement)."""
    found = await _run(core, spec, f"({FIND_ELEMENT})({json.dumps(spec.selector)})", where,
                       session, budget, frame_id, by_value=False)
    object_id = found.get("objectId")
    if found.get("subtype") != "node" or not isinstance(object_id, str):
        if isinstance(object_id, str):
            _release(core, session, object_id)
        raise no_element(spec)
    return object_id


def _release(core: Core, session: str | None, object_id: str) -> None:
    # The handle is only the way to the node; released off the caller's path.
    core.spawn(core.send("Runtime.releaseObject", {"objectId": object_id}, session),
               name="cdpnb-release-object")


async def query_in_frame(core: Core, spec: ClickSpec, session: str | None,
                         context: int | None, budget: Budget) -> ElementState:
    """One look at ``spec.selector`` in its frame, from the isolated world."""
    frame_id = spec.frame_id if spec.frame_id is not None else top_frame_id(core.state)
    world = await isolated_world(core, frame_id, session, budget, context)
    where: dict[str, Any] = {"contextId": world} if world is not None else {}
    found = await _run(core, spec, f"({ELEMENT_STATE})(({FIND_ELEMENT})("
                                   f"{json.dumps(spec.selector)}))", where, session, budget,
                       frame_id, by_value=True)
    state = found.get("value")
    if state not in ("absent", "hidden", "visible"):
        raise TypeError(f"expected an element state from the page, got {found!r}")
    return state  # type: ignore[no-any-return]


#: The keys that delete a selection (Playwright's fill of "" presses Delete).
_DELETE = {"key": "Delete", "code": "Delete", "windowsVirtualKeyCode": 46,
           "nativeVirtualKeyCode": 46}


async def fill_in_frame(core: Core, spec: ClickSpec, text: str, session: str | None,
                        context: int | None, budget: Budget) -> None:
    """Focus the element ``spec.selector`` matches, select what it holds and type
    ``text`` over it (``Input.insertText``: one ``input`` event, as Playwright's fill;
    ``""`` deletes it with the Delete key)."""
    frame_id = spec.frame_id if spec.frame_id is not None else top_frame_id(core.state)
    check_not_blocked(core.state, spec.frame_id, spec)
    world = await isolated_world(core, frame_id, session, budget, context)
    where: dict[str, Any] = {"contextId": world} if world is not None else {}
    object_id = await _find(core, spec, where, session, budget, frame_id)
    try:
        why = await _call_on(core, spec, FILL_PREPARE, object_id, [], session, budget)
        if why == "value":
            why = await _call_on(core, spec, FILL_VALUE, object_id, [{"value": text}],
                                 session, budget)
            if not why:
                return
    finally:
        _release(core, session, object_id)
    if why:
        raise not_fillable(spec, str(why))
    if text:
        await core.send("Input.insertText", {"text": text}, session, budget.left())
        return
    for kind in ("rawKeyDown", "keyUp"):
        await core.send("Input.dispatchKeyEvent", {"type": kind, **_DELETE}, session,
                        budget.left())


async def _call_on(core: Core, spec: ClickSpec, function: str, object_id: str,
                   arguments: list[dict[str, Any]], session: str | None,
                   budget: Budget) -> Any:
    """``function(element, ...arguments)`` on the element ``object_id``: its value."""
    reply = await core.send("Runtime.callFunctionOn", {
        "functionDeclaration": function, "objectId": object_id,
        "arguments": [{"objectId": object_id}, *arguments], "returnByValue": True,
        "silent": True}, session, budget.left())
    details = reply.get("exceptionDetails")
    if details:
        raise ElementNotClickable(f"{spec.describe()}: cdpnb's script on it failed: "
                                  f"{details.get('text')}")
    return (reply.get("result") or {}).get("value")


async def _run(core: Core, spec: ClickSpec, expression: str, where: dict[str, Any],
               session: str | None, budget: Budget, frame_id: str | None, *,
               by_value: bool) -> dict[str, Any]:
    """Runtime.evaluate for an action (a query, a size): its RemoteObject."""
    try:
        reply = await core.send("Runtime.evaluate", {
            "expression": expression, "returnByValue": by_value, "silent": True, **where},
            session, budget.left())
    except CommandTimeout:
        raise CommandTimeout(f"looking for {spec.describe()}: the frame did not run a query "
                             f"within the {budget.seconds:g} s budget (is the page busy?)"
                             ) from None
    except CDPError as exc:
        if "Cannot find context" in exc.message:
            raise _not_yet(TargetGone(
                f"looking for {spec.describe()}: frame {frame_id} navigated away while "
                "cdpnb looked in it")) from None
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
