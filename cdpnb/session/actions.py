"""What every driver's click, fill and wait_for_selector share: the arguments
(``ClickSpec``), the dialog that blocks or ends an action, the selector scripts run in
the page, and the wait for an element to be there. The protocol's own input is in its
room (``cdp.actions``, ``bidi.actions``, ``classic.actions``)."""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from cdpnb.errors import (
    BlockedByDialog,
    CdpnbError,
    CommandTimeout,
    ElementNotClickable,
    NoSuchElement,
    TargetGone,
)
from cdpnb.protocol import protocol_spec
from cdpnb.runtime.first_of import FirstOf
from cdpnb.session.budget import Budget
from cdpnb.session.core import Core
from cdpnb.session.ref_names import parse_ref
from cdpnb.session.results import ClickResult
from cdpnb.state import BrowserState, PendingDialog
from cdpnb.state.bidi import page_of_context
from cdpnb.state.changes import DialogOpened
from cdpnb.state.frames import descendants

__all__ = ["ELEMENT_STATE", "FILL_PREPARE", "FILL_VALUE", "FIND_ELEMENT", "POLL_DELAYS_S",
           "SELECTOR_STATES", "WORLD", "ClickSpec", "ElementState", "SelectorState",
           "bad_selector", "check_fill", "check_not_blocked", "check_selector", "click_spec",
           "no_element", "not_fillable", "not_visible", "out_of_view", "page_of_frame",
           "quad_centre", "send_or_dialog", "state_holds", "top_frame_id", "until_there"]


T = TypeVar("T")


#: What ``wait_for_selector`` waits for (Playwright's states): an element that matches
#: (``attached``), one that is visible (``visible``: a box with an area, not
#: ``visibility: hidden``), none (``detached``), none visible (``hidden``).
SelectorState = Literal["attached", "detached", "visible", "hidden"]


SELECTOR_STATES: tuple[str, ...] = ("attached", "detached", "visible", "hidden")


#: What one look at a selector found: no element, an element not visible, a visible one.
ElementState = Literal["absent", "hidden", "visible"]


#: cdpnb's isolated world (CDP) and sandbox (BiDi): where selectors are resolved.
WORLD = "cdpnb"
#: The pauses between two looks for an element that is not there (yet), in seconds:
#: quick at first, then every quarter of a second (Playwright polls 0, 20, 50, 100,
#: 100, 500 ms). Each look is one or two round trips.
POLL_DELAYS_S = (0.0, 0.02, 0.05, 0.1, 0.1, 0.25)


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
        if self.point is None:  # (a frame itself: its screenshot)
            return f"frame {self.frame_id}" if self.frame_id is not None else "the page"
        return f"point ({self.point[0]:g}, {self.point[1]:g})"

    def result(self, frame_id: str | None, x: float, y: float,
               dialog: PendingDialog | None) -> ClickResult:
        """What ``click()`` returns: what was clicked, where (x, y in the viewport of
        ``frame_id``'s document) and the dialog the click opened, if one did."""
        return ClickResult(frame_id, x, y, dialog.id if dialog is not None else None,
                           selector=self.selector, ref=self.ref)


def _coordinate(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number of CSS pixels, got {type(value).__name__}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number of CSS pixels, got {value!r}")
    return float(value)


def check_selector(selector: object, name: str = "selector") -> str:
    """A CSS selector str, or a TypeError/ValueError naming ``name``."""
    if not isinstance(selector, str):
        raise TypeError(f"{name} must be a CSS selector str such as '#submit', got "
                        f"{type(selector).__name__}")
    if not selector.strip():
        raise ValueError(f"{name} must be a CSS selector such as '#submit', got an empty str")
    return selector


def click_spec(selector: object = None, *, ref: object = None, x: object = None,
               y: object = None, frame_id: object = None) -> ClickSpec:
    """Check ``click()``'s arguments before anything is sent: exactly one of
    ``selector`` (CSS, the first positional argument), ``ref=`` (from
    ``accessibility()``), or ``x=`` and ``y=``; ``frame_id`` only with a selector or a
    point."""
    if selector is not None:
        check_selector(selector)
    if ref is not None:
        if not isinstance(ref, str):
            raise TypeError(f"ref must be a ref str (from sup.accessibility()), got "
                            f"{type(ref).__name__}")
        try:
            parse_ref(ref)
        except ValueError as exc:
            raise ValueError(f"{exc}: a ref comes from sup.accessibility(); a CSS selector "
                             f"goes first, click({ref!r}) or click(selector={ref!r})"
                             ) from None
    if (x is None) != (y is None):
        given, missing = ("x", "y") if y is None else ("y", "x")
        raise TypeError(f"click() got {given} without {missing}: a point needs both x and y")
    point = None if x is None else (_coordinate("x", x), _coordinate("y", y))
    chosen = [name for name, value in (("selector", selector), ("ref", ref), ("x, y", point))
              if value is not None]
    if not chosen:
        raise TypeError("click() needs what to click: a CSS selector (click('#submit')), "
                        "ref= (from sup.accessibility()), or x= and y=")
    if len(chosen) > 1:
        raise TypeError(f"click() takes one of selector, ref=, or x= and y=; got "
                        f"{' and '.join(chosen)}")
    if frame_id is not None:
        if not isinstance(frame_id, str):
            raise TypeError(f"frame_id must be a str, got {type(frame_id).__name__}")
        if ref is not None:
            raise TypeError("frame_id goes with a selector or x=, y=; a ref names its "
                            "frame itself")
    assert ref is None or isinstance(ref, str)
    assert selector is None or isinstance(selector, str)
    assert frame_id is None or isinstance(frame_id, str)
    return ClickSpec(ref=ref, selector=selector, point=point, frame_id=frame_id)


def check_fill(selector: object, text: object, frame_id: object) -> ClickSpec:
    """``fill()``'s arguments: a selector, a str to type, a frame id or None."""
    check_selector(selector)
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    if frame_id is not None and not isinstance(frame_id, str):
        raise TypeError(f"frame_id must be a str, got {type(frame_id).__name__}")
    assert isinstance(selector, str) and (frame_id is None or isinstance(frame_id, str))
    return ClickSpec(selector=selector, frame_id=frame_id)


def state_holds(state: SelectorState, found: ElementState) -> bool:
    """Whether what one look ``found`` is what ``wait_for_selector(state=...)`` waits for."""
    if state == "attached":
        return found != "absent"
    if state == "visible":
        return found == "visible"
    if state == "detached":
        return found == "absent"
    return found != "visible"  # hidden: none, or none visible


async def until_there(attempt: Callable[[], Awaitable[T]], budget: Budget) -> T:
    """``attempt()``, again while it finds no element, or one not yet visible (its
    error says so: ``not_visible``), or its frame navigated mid-look, until ``budget``
    runs out; then the last of those errors, saying how long it waited. Each retried
    error is raised before anything reached the page (no input was sent), so trying
    again cannot act twice."""
    looks = 0
    last: CdpnbError | None = None
    while True:
        try:
            return await attempt()
        except (NoSuchElement, ElementNotClickable, TargetGone) as exc:
            if not getattr(exc, "not_yet", False):
                raise
            last = exc
        except CommandTimeout:
            # A look that the budget's end cut short: the wait's end, told as such.
            if last is None or budget.left() > 0:
                raise
            raise _waited(last, budget) from None
        delay = POLL_DELAYS_S[min(looks, len(POLL_DELAYS_S) - 1)]
        looks += 1
        if budget.left() <= delay:
            raise _waited(last, budget) from None
        await asyncio.sleep(delay)


def _waited(exc: CdpnbError, budget: Budget) -> CdpnbError:
    """``exc`` as the end of a wait of ``budget``: the same class, saying so."""
    waited = f"within {budget.seconds:g} s"
    if isinstance(exc, NoSuchElement):
        text = str(exc).split(" (", 1)[0]
        return NoSuchElement(f"{text} {waited} (timeout= sets how long to wait)",
                             selector=exc.selector, frame_id=exc.frame_id)
    return type(exc)(f"{exc}, still after {budget.seconds:g} s (timeout= sets how long "
                     "to wait)")


def top_frame_id(state: BrowserState) -> str | None:
    """The frame id of the supervisor's page's top frame."""
    page = state.page_session_id
    return next((f.frame_id for f in state.frames.values()
                 if f.parent_frame_id is None and f.session_id == page),
                state.page_target_id)


def page_of_frame(state: BrowserState, frame_id: str | None) -> str | None:
    """The page session (the tab, over BiDi) whose frame ``frame_id`` is."""
    if frame_id is None:
        return state.page_session_id
    if protocol_spec(state.protocol).browsing_contexts:
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
    page = page_of_frame(state, frame_id)
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
        async with FirstOf(core.send(method, params, session, budget.left()),
                           opened) as first:
            await first.wait(None)  # (the command's own budget bounds it)
            if first.condition_met:
                return opened.result().dialog
            if first.command_done:
                await first.command_result(0)  # its error, if it failed
                return None
            opened.result()  # the stop or loss that ended the wait
            raise CommandTimeout("no reply")


#: The first element ``selector`` matches in the document it runs in, or null. A bad
#: selector throws the DOM's SyntaxError, which reads "… is not a valid selector".
FIND_ELEMENT = "selector => document.querySelector(selector)"


#: What one look at an element (or null) finds: "absent", "hidden" or "visible", as
#: Playwright tells a visible element (a box with an area, not ``visibility: hidden``).
ELEMENT_STATE = """element => {
  if (element === null) return "absent";
  const box = element.getBoundingClientRect();
  const shown = box.width > 0 && box.height > 0
    && getComputedStyle(element).visibility !== "hidden";
  return shown ? "visible" : "hidden";
}"""


#: Make ``element`` ready for typed text, as Playwright's fill does: focus it and select
#: what it holds, so that typing replaces it. Returns "" (type the text now), "value" (a
#: date or time input, which takes no keys: set its value with FILL_VALUE), "later: why"
#: (disabled, read-only, not visible, not focused: may change, so the wait goes on) or
#: why it takes no typed text at all. The text itself is never an argument of a script
#: (it goes as typed input, which ``redact=`` hides), but for a date or time.
FILL_PREPARE = """function (element) {
  const name = element.localName;
  const kind = name === "input" ? element.type : null;
  const none = ["checkbox", "radio", "file", "button", "submit", "reset", "image", "hidden",
                "range", "color"];
  if (kind !== null && none.includes(kind))
    return `it is an <input type=${kind}>, which takes no typed text`;
  if (kind === null && name !== "textarea" && !element.isContentEditable)
    return `it is a <${name}>, not an <input>, <textarea> or contenteditable element`;
  if (element.disabled) return `later: it is a disabled <${name}>`;
  if (element.readOnly) return `later: it is a read-only <${name}>`;
  const box = element.getBoundingClientRect();
  if (!(box.width > 0 && box.height > 0) || getComputedStyle(element).visibility === "hidden")
    return `later: it is not visible`;
  if (["date", "time", "datetime-local", "month", "week"].includes(kind)) return "value";
  element.focus();
  const active = element.getRootNode().activeElement;
  if (active !== element && !element.contains(active))
    return `later: it did not take the focus`;
  if (kind !== null || name === "textarea") {
    element.select();
  } else {
    const range = document.createRange();
    range.selectNodeContents(element);
    const selection = element.ownerDocument.defaultView.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
  }
  return "";
}"""


#: A date or time input's value set, with the ``input`` and ``change`` events typing
#: would give (as Playwright does: such inputs take no keys); "" or why not.
FILL_VALUE = """function (element, text) {
  element.focus();
  element.value = text;
  if (element.value !== text)
    return `it is an <input type=${element.type}>, which refused ${JSON.stringify(text)}`;
  element.dispatchEvent(new Event("input", {bubbles: true, composed: true}));
  element.dispatchEvent(new Event("change", {bubbles: true}));
  return "";
}"""


def _where(spec: ClickSpec) -> str:
    return f"frame {spec.frame_id}" if spec.frame_id is not None else "the page"


def bad_selector(spec: ClickSpec, why: str) -> ValueError:
    hint = ""
    with contextlib.suppress(ValueError, TypeError):
        if spec.selector is not None and ":" in spec.selector:
            parse_ref(spec.selector)
            hint = (f"; if it is a ref from sup.accessibility(), pass it as "
                    f"ref={spec.selector!r}")
    return ValueError(f"selector {spec.selector!r} is not a CSS selector the browser takes "
                      f"(in {_where(spec)}): {why}{hint}")


def _not_yet(exc: CdpnbError) -> CdpnbError:
    """Mark ``exc`` as one a wait for the element may outlast (``until_there``)."""
    exc.not_yet = True  # type: ignore[attr-defined]
    return exc


def no_element(spec: ClickSpec) -> NoSuchElement:
    assert spec.selector is not None
    return _not_yet(NoSuchElement(f"no element matches selector {spec.selector!r} in "
                                  f"{_where(spec)}", selector=spec.selector,
                                  frame_id=spec.frame_id))  # type: ignore[return-value]


def not_visible(spec: ClickSpec) -> ElementNotClickable:
    return _not_yet(ElementNotClickable(  # type: ignore[return-value]
        f"{spec.describe()} has no visible area to click"))


def not_fillable(spec: ClickSpec, why: str) -> ElementNotClickable:
    """``why`` from FILL_PREPARE: "later: …" may change (the wait goes on)."""
    later = why.startswith("later: ")
    error = ElementNotClickable(f"{spec.describe()} in {_where(spec)} cannot be filled: "
                                f"{why.removeprefix('later: ')}")
    return _not_yet(error) if later else error  # type: ignore[return-value]


def out_of_view(spec: ClickSpec, width: float, height: float) -> ValueError:
    assert spec.point is not None
    x, y = spec.point
    return ValueError(f"x, y ({x:g}, {y:g}) is outside the viewport of {_where(spec)} "
                      f"({width:g} × {height:g} CSS pixels): nothing there to click")


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
