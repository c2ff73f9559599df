"""A real mouse click over WebDriver BiDi: by CSS selector or at a point, in the page
or any frame (``click()``'s arguments and the dialog rules are in
``cdpnb.drivers.cdp.actions``; refs come from CDP's accessibility tree, so a ref click
is CDP's); typing into a field (``fill``) and one look at a selector
(``wait_for_selector``). Every script runs in cdpnb's sandbox realm of the frame
(``target.sandbox``), where the page's own script cannot reach: an element's
``sharedId`` found there is the same node for ``input.performActions``.

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

from cdpnb.errors import CDPError, CommandTimeout, ElementNotClickable, TargetGone
from cdpnb.protocol import bidi_error_name
from cdpnb.session.actions import (
    ELEMENT_STATE,
    FILL_PREPARE,
    FILL_VALUE,
    FIND_ELEMENT,
    WORLD,
    ClickSpec,
    ElementState,
    bad_selector,
    check_not_blocked,
    no_element,
    not_fillable,
    not_visible,
    out_of_view,
    send_or_dialog,
)
from cdpnb.session.budget import Budget
from cdpnb.session.core import Core
from cdpnb.session.results import ClickResult

__all__ = ["KEYBOARD_ID", "POINTER_ID", "click", "fill", "frame_box", "query"]

#: The input source of cdpnb's clicks (a mouse; its state is kept per top-level context).
POINTER_ID = "cdpnb-mouse"
#: The input source of cdpnb's typing.
KEYBOARD_ID = "cdpnb-keyboard"
#: WebDriver's key values for what is not typed as itself: a line break is Enter, and
#: an empty fill deletes the selection (Delete), as Playwright's does.
_ENTER, _DELETE = "\ue007", "\ue017"

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
#: Scroll the i-th frame element into view unless its box is in view already; its
#: content box then (x, y, width, height in this viewport: where the frame's own
#: viewport is), or null.
_SCROLL_FRAME = """i => {
  const owner = document.querySelectorAll("iframe, frame")[i];
  if (!owner) return null;
  let r = owner.getBoundingClientRect();
  if (!(r.left >= 0 && r.top >= 0 && r.right <= innerWidth && r.bottom <= innerHeight)) {
    owner.scrollIntoView({block: "center", inline: "center", behavior: "instant"});
    r = owner.getBoundingClientRect();
  }
  const style = getComputedStyle(owner);
  const left = parseFloat(style.paddingLeft), top = parseFloat(style.paddingTop);
  return [r.left + owner.clientLeft + left, r.top + owner.clientTop + top,
          owner.clientWidth - left - parseFloat(style.paddingRight),
          owner.clientHeight - top - parseFloat(style.paddingBottom)];
}"""


async def click(core: Core, spec: ClickSpec, context: str, budget: Budget) -> ClickResult:
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
            raise not_visible(spec)
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
                                   budget: Budget) -> tuple[float, float, float, float] | None:
    """Scroll each frame element from ``context`` up to the tab into view in its parent;
    the frame's box in the tab's viewport then (x, y, width, height; None for the tab
    itself, or a frame whose element is not listed).

    Needed: measured on Firefox ESR 153 and chromium-bidi 17, a click in a same-site
    frame scrolled out of the tab's view replies success and reaches nobody (one in a
    cross-site frame still arrives); an element's ``scrollIntoView`` in its own frame
    does not scroll the tab when it is in view in that frame.
    """
    state = core.state
    child = context
    frame = state.frames.get(child)
    box: list[float] | None = None
    while frame is not None and frame.parent_frame_id is not None:
        parent = frame.parent_frame_id
        windows = _items(await _call(core, spec, _FRAME_WINDOWS, [], parent, budget))
        index = next((i for i, window in enumerate(windows)
                      if isinstance(window.get("value"), dict)
                      and window["value"].get("context") == child), None)
        if index is None:  # (a frame in a shadow root is not listed: left as it is)
            box = None
            break
        found = await _call(core, spec, _SCROLL_FRAME, [{"type": "number", "value": index}],
                            parent, budget)
        if found.get("type") != "array":
            box = None
            break
        x, y, width, height = (_number(v) for v in _items(found))
        # The box is in the parent's viewport; the parent's own box adds up above it.
        box = [x, y, width, height] if box is None else [box[0] + x, box[1] + y, *box[2:]]
        child, frame = parent, state.frames.get(parent)
    return None if box is None else (box[0], box[1], box[2], box[3])


async def frame_box(core: Core, context: str,
                    budget: Budget) -> tuple[float, float, float, float] | None:
    """Frame ``context`` scrolled into view: its box in the tab's viewport (x, y,
    width, height), or None when its element cannot be found from its parent."""
    return await _scroll_frames_into_view(core, ClickSpec(frame_id=context), context, budget)


async def _call(core: Core, spec: ClickSpec, function: str, arguments: list[dict[str, Any]],
                context: str, budget: Budget, *, query: bool = False) -> dict[str, Any]:
    """``script.callFunction`` in ``context``'s window: the result's RemoteValue. An
    exception in the selector ``query`` is a bad selector."""
    try:
        reply = await core.send("script.callFunction", {
            "functionDeclaration": function, "arguments": arguments, "awaitPromise": False,
            "target": {"context": context, "sandbox": WORLD}, "resultOwnership": "none",
            "serializationOptions": {"maxDomDepth": 0, "maxObjectDepth": 2}},
            timeout=budget.left())
    except CommandTimeout:
        raise CommandTimeout(f"looking for {spec.describe()}: the frame did not run a query "
                             f"within the {budget.seconds:g} s budget (is the page busy?)"
                             ) from None
    except CDPError as exc:
        if bidi_error_name(exc) == "no such frame":  # (gone, or navigating, between looks)
            error = TargetGone(f"looking for {spec.describe()}: frame {context} is gone "
                               f"({exc.message})")
            error.not_yet = True  # type: ignore[attr-defined]
            raise error from None
        raise
    if reply.get("type") == "exception":
        details = reply.get("exceptionDetails") or {}
        text = str(details.get("text") or "it threw").splitlines()[0]
        if query:
            raise bad_selector(spec, text)
        raise ElementNotClickable(f"clicking {spec.describe()}: the page's script in frame "
                                  f"{context} failed: {text}")
    result: dict[str, Any] = reply.get("result") or {}
    return result


async def query(core: Core, spec: ClickSpec, context: str, budget: Budget) -> ElementState:
    """One look at ``spec.selector`` in browsing context ``context``, from the sandbox."""
    assert spec.selector is not None
    found = await _call(core, spec, f"selector => ({ELEMENT_STATE})(({FIND_ELEMENT})(selector))",
                        [{"type": "string", "value": spec.selector}], context, budget,
                        query=True)
    state = found.get("value")
    if state not in ("absent", "hidden", "visible"):
        raise TypeError(f"expected an element state from the page, got {found!r}")
    return state  # type: ignore[no-any-return]


async def fill(core: Core, spec: ClickSpec, text: str, context: str, budget: Budget) -> None:
    """Focus the element ``spec.selector`` matches in ``context``, select what it holds
    and type ``text`` over it, key by key (``input.performActions``: BiDi has no
    insertText, so each character is a key down and up, with its ``input`` event; a
    line break is Enter; ``""`` presses Delete)."""
    assert spec.selector is not None
    check_not_blocked(core.state, context, spec)
    found = await _call(core, spec, FIND_ELEMENT,
                        [{"type": "string", "value": spec.selector}], context, budget,
                        query=True)
    shared_id = found.get("sharedId")
    if found.get("type") == "null" or not isinstance(shared_id, str):
        raise no_element(spec)
    element = [{"sharedId": shared_id}]
    why = (await _call(core, spec, FILL_PREPARE, element, context, budget)).get("value")
    if why == "value":
        why = (await _call(core, spec, FILL_VALUE,
                           [*element, {"type": "string", "value": text}], context,
                           budget)).get("value")
        if not why:
            return
    if why:
        raise not_fillable(spec, str(why))
    keys = [_ENTER if c in "\r\n" else c for c in text.replace("\r\n", "\n")] or [_DELETE]
    actions = [{"type": kind, "value": key} for key in keys for kind in ("keyDown", "keyUp")]
    try:
        await core.send("input.performActions", {"context": context, "actions": [{
            "type": "key", "id": KEYBOARD_ID, "actions": actions}]}, timeout=budget.left())
    except CommandTimeout:
        raise CommandTimeout(f"typing into {spec.describe()}: input.performActions got no "
                             f"reply within the {budget.seconds:g} s budget (is the page "
                             "busy?)") from None


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
