"""Clicks, typing and selector looks over WebDriver classic: the server finds the
element (``POST /element``) and acts on it (``/click``, ``/clear`` and ``/value``), as
the other protocols' actions do in ``cdpnb.drivers.cdp.actions`` (the arguments, the
dialog rules, the wait for an element to be there).

The page can steer that search: measured on WebKitWebDriver 2.50 and chromedriver 156,
both run it as script in the page's own realm, so a page that replaces
``Document.prototype.querySelector`` to return another element made ``click("#safe")``
click ``#buy``. Classic has no realm of cdpnb's own (CDP's isolated world, BiDi's
sandbox), so every script cdpnb runs with a found element first checks that the DOM's
search functions are the browser's own, and a page that replaced one is refused
(ElementNotClickable naming them) instead of acted on. A page that hides its
replacement well (a Proxy of the native function) is not caught: over classic, the
page's script can reach whatever cdpnb's does.

What classic tells differs: a click's point is read before it (the element scrolled
into view, the centre of its in-view box, as BiDi's ``element`` origin moves to), and
the dialog it opened is looked for by one poll right after it (classic's click returns
when a dialog opens: measured on WebKitWebDriver 2.50 and chromedriver 156 with
``unhandledPromptBehavior`` "ignore").

Typing into a field of a frame of another origin takes a click on WebKit: measured on
WebKitWebDriver 2.50.6, ``element.focus()`` there leaves the focus where it was (its
``document.activeElement`` stays ``<body>``, ``navigator.userActivation.isActive``
false; focusing the ``<iframe>`` from its parent first changes nothing), and Element
Send Keys fails "element not interactable: Element is not focusable"; after W3C's
Element Click on the field (a user activation in that frame) ``focus()`` takes and the
keys are typed. So where the focus was refused in a frame of another origin, fill
clicks the field (its mouse events fire before the typing's) and focuses it again;
elsewhere (the page, a same-origin frame, chromedriver, where ``focus()`` takes) fill
clicks nothing.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from cdpnb.errors import BlockedByDialog, CDPError, ElementNotClickable
from cdpnb.protocol.classic import ELEMENT_KEY, classic_error_name
from cdpnb.session.actions import (
    ELEMENT_STATE,
    FILL_PREPARE,
    FILL_VALUE,
    ClickSpec,
    ElementState,
    bad_selector,
    check_not_blocked,
    no_element,
    not_fillable,
    not_visible,
)
from cdpnb.session.budget import Budget
from cdpnb.session.core import Core
from cdpnb.session.results import ClickResult
from cdpnb.state import PendingDialog

__all__ = ["click", "fill", "query"]

#: The element scrolled into view (unless its first box is in view already) and the
#: centre of the part of that box inside the viewport, floored, or null: where a
#: classic click lands (W3C's "in-view centre point").
_CENTRE = """const element = arguments[0];
const box = () => Array.from(element.getClientRects()).find(r => r.width * r.height >= 1);
const first = box();
if (first && !(first.left >= 0 && first.top >= 0 && first.right <= innerWidth
               && first.bottom <= innerHeight))
  element.scrollIntoView({block: "center", inline: "center", behavior: "instant"});
const rect = box();
if (!rect) return null;
const left = Math.max(0, rect.left), right = Math.min(innerWidth, rect.right);
const top = Math.max(0, rect.top), bottom = Math.min(innerHeight, rect.bottom);
if (left >= right || top >= bottom) return null;
return [Math.floor((left + right) / 2), Math.floor((top + bottom) / 2)];"""

#: The DOM's search functions a page replaced (their names), or none: script run before
#: each of cdpnb's on a found element (see the module's doc).
_TAMPERED = """(() => {
  const shown = Function.prototype.toString;
  const native = f => typeof f === "function"
    && /\\{\\s*\\[native code\\]\\s*\\}\\s*$/.test(shown.call(f));
  const found = native(shown) ? [] : ["Function.prototype.toString"];
  const names = ["querySelector", "querySelectorAll", "matches", "closest", "evaluate",
                 "getElementById", "getElementsByTagName", "getElementsByClassName"];
  for (const [kind, proto] of [["Document", Document.prototype],
                               ["Element", Element.prototype],
                               ["DocumentFragment", DocumentFragment.prototype]])
    for (const name of names)
      if (Object.prototype.hasOwnProperty.call(proto, name) && !native(proto[name]))
        found.push(`${kind}.prototype.${name}`);
  return found;
})()"""
#: Whether this document is in a frame of another origin than the top's (where WebKit
#: refuses a script's focus: see the module's doc).
_FOREIGN_FRAME = """if (window === top) return false;
try { return typeof top.location.href !== "string"; } catch (e) { return true; }"""
#: What FILL_PREPARE says of a field that did not take the focus.
_NO_FOCUS = "later: it did not take the focus"
#: WebDriver's key value of Enter.
_ENTER = "\ue007"
#: The key of a script's answer that says what was replaced.
_STEERED = "cdpnb:tampered"


def _checked(script: str) -> str:
    """``script`` (a classic function body) run only where the search is the DOM's own."""
    return (f"const tampered = {_TAMPERED};\n"
            f"if (tampered.length) return {{{json.dumps(_STEERED)}: tampered}};\n{script}")


#: The errors a classic action may end with, and what they are here: not there or not
#: shown yet (the wait goes on), a click that something else would receive.
_NOT_YET = frozenset({"element not interactable", "stale element reference"})


def _name(exc: CDPError) -> str | None:
    return classic_error_name(exc.message, exc.data)


async def _blocked(core: Core, spec: ClickSpec, window: str | None) -> BlockedByDialog:
    """The BlockedByDialog of a command refused "unexpected alert open": the window is
    polled once, so the dialog is in the state and named."""
    with contextlib.suppress(CDPError):
        await core.send("classic.getAlertText", {"window": window})
    dialog = next((d for d in core.state.pending_dialogs if d.page_session_id == window), None)
    ident = dialog.id if dialog is not None else "unknown"
    return BlockedByDialog(f"cannot act on {spec.describe()}: a dialog is open in the page "
                           f"({ident}), and WebDriver classic refuses every command until it "
                           f"is answered; answer it with respond(dialog_id={ident!r}) first",
                           dialog_id=ident)


async def _send(core: Core, spec: ClickSpec, method: str, params: dict[str, Any],
                window: str | None, budget: Budget) -> dict[str, Any]:
    try:
        return await core.send(method, params, timeout=budget.left())
    except CDPError as exc:
        name = _name(exc)
        if name == "unexpected alert open":
            raise await _blocked(core, spec, window) from None
        if name == "invalid selector":
            # (chromedriver 156: "invalid selector: invalid selector: An invalid or
            # illegal selector was specified\n  (Session info: chrome=156…)")
            why = exc.message.splitlines()[0] if exc.message else name
            while why.startswith(f"{name}: "):
                why = why.removeprefix(f"{name}: ")
            raise bad_selector(spec, why) from None
        if name == "no such element":
            raise no_element(spec) from None
        if name in _NOT_YET:
            raise not_visible(spec) from None
        if name == "element click intercepted":
            raise ElementNotClickable(f"{spec.describe()} could not be clicked: "
                                      f"{exc.message}") from None
        raise


async def _script(core: Core, spec: ClickSpec, script: str, args: list[Any],
                  route: dict[str, Any], budget: Budget) -> Any:
    """``script`` (a function body) with ``args`` in the frame ``route`` names, once the
    search is known to be the DOM's own: its value."""
    value = (await _send(core, spec, "classic.executeScript", {
        "script": _checked(script), "args": args, **route}, route.get("window"),
        budget)).get("value")
    if isinstance(value, dict) and _STEERED in value:
        replaced = ", ".join(map(str, value[_STEERED]))
        raise ElementNotClickable(
            f"cannot trust what {spec.describe()} matches: the page's script replaced "
            f"{replaced}, and WebDriver classic's element search runs in the page's own "
            "realm (a page can make it return another element); over CDP and WebDriver "
            "BiDi cdpnb looks where the page cannot reach")
    return value


async def _find(core: Core, spec: ClickSpec, route: dict[str, Any], budget: Budget) -> str:
    found = await _send(core, spec, "classic.findElement", {
        "using": "css selector", "value": spec.selector, **route}, route.get("window"),
        budget)
    element = (found.get("value") or {}).get(ELEMENT_KEY)
    if not isinstance(element, str):
        raise no_element(spec)
    return element


def _reference(element: str) -> dict[str, str]:
    return {ELEMENT_KEY: element}


async def click(core: Core, spec: ClickSpec, route: dict[str, Any], frame_id: str,
                budget: Budget) -> ClickResult:
    """Click the first element ``spec.selector`` matches in the frame ``route`` names
    (``frame_id``: its id)."""
    window = route.get("window")
    page = check_not_blocked(core.state, spec.frame_id, spec)
    element = await _find(core, spec, route, budget)
    centre = await _script(core, spec, _CENTRE, [_reference(element)], route, budget)
    if not isinstance(centre, list) or len(centre) != 2:
        raise not_visible(spec)
    x, y = float(centre[0]), float(centre[1])
    before = {d.id for d in core.state.pending_dialogs}
    core.note("cdpnb.clicked", {"window": window})
    await _send(core, spec, "classic.elementClick", {"elementId": element, **route}, window,
                budget)
    return spec.result(frame_id, x, y, await _opened(core, window, page, before))


async def _opened(core: Core, window: str | None, page: str | None,
                  before: set[str]) -> PendingDialog | None:
    """The dialog the click opened: one poll right after it (the dialog may open a
    moment later still: then the poller finds it, unnamed here)."""
    with contextlib.suppress(CDPError):
        await core.send("classic.getAlertText", {"window": window})
    return next((d for d in core.state.pending_dialogs if d.id not in before
                 and d.page_session_id in (page, window)), None)


async def query(core: Core, spec: ClickSpec, route: dict[str, Any],
                budget: Budget) -> ElementState:
    """One look at ``spec.selector``: the server's search, then the element's box."""
    window = route.get("window")
    found = await _send(core, spec, "classic.findElements", {
        "using": "css selector", "value": spec.selector, **route}, window, budget)
    elements = found.get("value") or []
    first = elements[0].get(ELEMENT_KEY) if elements and isinstance(elements[0], dict) else None
    if not isinstance(first, str):
        return "absent"
    try:
        state = await _script(core, spec, f"return ({ELEMENT_STATE})(arguments[0]);",
                              [_reference(first)], route, budget)
    except ElementNotClickable as exc:  # (stale: it went between the two requests)
        if not getattr(exc, "not_yet", False):
            raise
        return "absent"
    if state not in ("absent", "hidden", "visible"):
        raise TypeError(f"expected an element state from the page, got {state!r}")
    return state  # type: ignore[no-any-return]


async def fill(core: Core, spec: ClickSpec, text: str, route: dict[str, Any],
               budget: Budget) -> None:
    """Type ``text`` over the field ``spec.selector`` matches: W3C's Element Clear, then
    Element Send Keys (keys typed one by one)."""
    window = route.get("window")
    check_not_blocked(core.state, spec.frame_id, spec)
    element = await _find(core, spec, route, budget)
    reference = [_reference(element)]
    prepare = f"return ({FILL_PREPARE})(arguments[0]);"
    why = await _script(core, spec, prepare, reference, route, budget)
    if why == _NO_FOCUS and route.get("frame") and await _script(
            core, spec, _FOREIGN_FRAME, [], route, budget) is True:
        # (WebKit: focus in a frame of another origin takes a user activation)
        await _send(core, spec, "classic.elementClick", {"elementId": element, **route},
                    window, budget)
        why = await _script(core, spec, prepare, reference, route, budget)
    if why == "value":
        why = await _script(core, spec, f"return ({FILL_VALUE})(arguments[0], arguments[1]);",
                            [*reference, text], route, budget)
        if not why:
            return
    if why:
        raise not_fillable(spec, str(why))
    await _send(core, spec, "classic.elementClear", {"elementId": element, **route}, window,
                budget)
    if text:
        # A line break is typed as Enter (measured: WebKitWebDriver 2.50 drops "\n").
        keys = text.replace("\r\n", "\n").replace("\r", "\n").replace("\n", _ENTER)
        await _send(core, spec, "classic.elementSendKeys",
                    {"elementId": element, "text": keys, **route}, window, budget)
