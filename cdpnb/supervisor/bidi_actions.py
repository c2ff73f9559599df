"""A real mouse click over WebDriver BiDi: by CSS selector or at a point, in the page
or any frame (``click()``'s arguments and the dialog rules are in
``cdpnb.supervisor.actions``; refs come from CDP's accessibility tree, so a ref click
is CDP's).

One ``input.performActions`` (pointer move, press, release) on the frame's own
browsing context. Measured on Firefox ESR 153 and chromium-bidi 17 (Chromium 156):

* The context may be a child frame, same-site or cross-site: a ``viewport`` origin is
  that frame's viewport on both (the spec leaves it open, w3c/webdriver#1840; older
  chromium-bidi took the top frame's, chromium-bidi#2630), and an ``element`` origin
  works there with the element's ``sharedId``; naming the tab with an element of a
  frame fails ("no such node" / "no such element").
* The click is a user activation (``navigator.userActivation.isActive`` in the frame):
  Firefox then asks beforeunload.
* ``input.performActions`` replies once the click's handlers ran: a handler in
  ``confirm()`` holds the reply until the prompt is answered (it comes then, with the
  answer's reply), so the click ends at the ``userPromptOpened`` instead. A prompt
  opened on ``mousedown`` holds it too; the release and the click event follow the
  answer.
* A point outside the viewport: Firefox fails with "move target out of bounds"
  (either side), chromium-bidi only below zero (x = 5000 goes out as a click), so the
  point is checked against the frame's viewport first.
"""

from __future__ import annotations

from typing import Any

from cdpnb.errors import CDPError, CommandTimeout, ElementNotClickable
from cdpnb.protocol import bidi_error_name
from cdpnb.supervisor.actions import (
    FIND_ELEMENT,
    ClickSpec,
    bad_selector,
    check_not_blocked,
    no_element,
    out_of_view,
    send_or_dialog,
)
from cdpnb.supervisor.core import Core
from cdpnb.supervisor.evaluation import Budget

__all__ = ["POINTER_ID", "click"]

#: The input source of cdpnb's clicks (a mouse; its state is kept per top-level context).
POINTER_ID = "cdpnb-mouse"

#: [element, [x, y] | null]: the first match, scrolled into view unless its first box
#: is in view already, and the in-view centre point of that box (WebDriver's: the part
#: inside the viewport, floored), which is where an ``element`` origin moves to.
_FIND_IN_VIEW = f"""selector => {{
  const element = ({FIND_ELEMENT})(selector);
  if (element === null) return null;
  const box = () => Array.from(element.getClientRects()).find(r => r.width * r.height >= 1);
  const first = box();
  if (first && !(first.left >= 0 && first.top >= 0 && first.right <= innerWidth
                 && first.bottom <= innerHeight))
    element.scrollIntoView({{block: "center", inline: "center", behavior: "instant"}});
  const rect = box();
  if (!rect) return [element, null];
  const left = Math.max(0, rect.left), right = Math.min(innerWidth, rect.right);
  const top = Math.max(0, rect.top), bottom = Math.min(innerHeight, rect.bottom);
  if (left >= right || top >= bottom) return [element, null];
  return [element, [Math.floor((left + right) / 2), Math.floor((top + bottom) / 2)]];
}}"""
_VIEWPORT = "() => [innerWidth, innerHeight]"
#: The windows of the document's frame elements, in order: each serialises as
#: ``{"type": "window", "value": {"context": id}}``, which names the child frame.
_FRAME_WINDOWS = ('() => Array.from(document.querySelectorAll("iframe, frame"), '
                  'f => f.contentWindow)')
#: Scroll the i-th frame element into view unless its box is in view already.
_SCROLL_FRAME = """i => {
  const owner = document.querySelectorAll("iframe, frame")[i];
  if (!owner) return;
  const r = owner.getBoundingClientRect();
  if (!(r.left >= 0 && r.top >= 0 && r.right <= innerWidth && r.bottom <= innerHeight))
    owner.scrollIntoView({block: "center", inline: "center", behavior: "instant"});
}"""


async def click(core: Core, spec: ClickSpec, context: str, budget: Budget) -> dict[str, Any]:
    """Click by selector or at a point in browsing context ``context`` (the frame)."""
    page = check_not_blocked(core.state, context, spec)
    await _scroll_frames_into_view(core, spec, context, budget)
    if spec.point is not None:
        width, height = (_number(v) for v in _items(
            await _call(core, spec, _VIEWPORT, [], context, budget)))
        x, y = spec.point
        if not (0 <= x < width and 0 <= y < height):
            raise out_of_view(spec, width, height)
        move: dict[str, Any] = {"type": "pointerMove", "x": x, "y": y, "origin": "viewport"}
    else:
        assert spec.selector is not None
        found = await _call(core, spec, _FIND_IN_VIEW,
                            [{"type": "string", "value": spec.selector}], context, budget,
                            query=True)
        if found.get("type") == "null":
            raise no_element(spec)
        element, centre = _items(found)
        shared_id = element.get("sharedId")
        if centre.get("type") == "null" or not isinstance(shared_id, str):
            raise ElementNotClickable(f"{spec.describe()} has no visible area to click")
        x, y = (_number(v) for v in _items(centre))
        move = {"type": "pointerMove", "x": 0, "y": 0,
                "origin": {"type": "element", "element": {"sharedId": shared_id}}}
    params = {"context": context, "actions": [{
        "type": "pointer", "id": POINTER_ID, "parameters": {"pointerType": "mouse"},
        "actions": [move, {"type": "pointerDown", "button": 0},
                    {"type": "pointerUp", "button": 0}]}]}
    core.note("cdpnb.clicked", {"context": context})
    try:
        dialog = await send_or_dialog(core, "input.performActions", params, None, budget, page,
                                      spec.frame_id)
    except CommandTimeout:
        raise CommandTimeout(f"clicking {spec.describe()}: input.performActions got no reply "
                             f"within the {budget.seconds:g} s budget (is the page busy?)"
                             ) from None
    except CDPError as exc:
        if bidi_error_name(exc) in ("move target out of bounds", "no such node",
                                    "no such element"):
            # It moved out of view, or went, between finding it and the click.
            raise ElementNotClickable(f"{spec.describe()} could not be clicked: "
                                      f"{exc.message}") from None
        raise
    return spec.result(context, x, y, dialog)


async def _scroll_frames_into_view(core: Core, spec: ClickSpec, context: str,
                                   budget: Budget) -> None:
    """Scroll each frame element from ``context`` up to the tab into view in its parent.

    Needed: measured on Firefox ESR 153 and chromium-bidi 17, a click in a same-site
    frame scrolled out of the tab's view replies success and reaches nobody (one in a
    cross-site frame still arrives); an element's ``scrollIntoView`` in its own frame
    does not scroll the tab when it is in view in that frame.
    """
    state = core.state
    child = context
    frame = state.frames.get(child)
    while frame is not None and frame.parent_frame_id is not None:
        parent = frame.parent_frame_id
        windows = _items(await _call(core, spec, _FRAME_WINDOWS, [], parent, budget))
        index = next((i for i, window in enumerate(windows)
                      if isinstance(window.get("value"), dict)
                      and window["value"].get("context") == child), None)
        if index is not None:  # (a frame in a shadow root is not listed: left as it is)
            await _call(core, spec, _SCROLL_FRAME, [{"type": "number", "value": index}],
                        parent, budget)
        child, frame = parent, state.frames.get(parent)


async def _call(core: Core, spec: ClickSpec, function: str, arguments: list[dict[str, Any]],
                context: str, budget: Budget, *, query: bool = False) -> dict[str, Any]:
    """``script.callFunction`` in ``context``'s window: the result's RemoteValue. An
    exception in the selector ``query`` is a bad selector."""
    try:
        reply = await core.send("script.callFunction", {
            "functionDeclaration": function, "arguments": arguments, "awaitPromise": False,
            "target": {"context": context}, "resultOwnership": "none",
            "serializationOptions": {"maxDomDepth": 0, "maxObjectDepth": 2}},
            timeout=budget.left())
    except CommandTimeout:
        raise CommandTimeout(f"clicking {spec.describe()}: the frame did not run a query "
                             f"within the {budget.seconds:g} s budget (is the page busy?)"
                             ) from None
    if reply.get("type") == "exception":
        details = reply.get("exceptionDetails") or {}
        text = str(details.get("text") or "it threw").splitlines()[0]
        if query:
            raise bad_selector(spec, text)
        raise ElementNotClickable(f"clicking {spec.describe()}: the page's script in frame "
                                  f"{context} failed: {text}")
    result: dict[str, Any] = reply.get("result") or {}
    return result


def _items(value: dict[str, Any]) -> list[dict[str, Any]]:
    items = value.get("value")
    if value.get("type") != "array" or not isinstance(items, list):
        raise TypeError(f"expected an array from the page, got {value!r}")
    return items


def _number(value: dict[str, Any]) -> float:
    number = value.get("value")
    if value.get("type") != "number" or not isinstance(number, int | float):
        raise TypeError(f"expected a number from the page, got {value!r}")
    return float(number)
