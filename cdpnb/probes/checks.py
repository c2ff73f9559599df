"""Probe checks: each drives a live supervisor through one scenario and says what happened.

A check returns ``(status, detail, value)``: status ``ok`` / ``fail`` / ``partial``;
``detail`` says why in words; ``value`` is a measurement where there is one (ms), or
for a check with ``answers`` the word it found (site isolation: ``yes`` / ``no`` /
``unknown``). Each check names the supervisor it needs: ``native`` (no dialog bridge,
to see what the backend itself does) or ``bridge`` (dialogs answered through the
bridge).

The checks test what a user can do, over any of the four protocols (CDP, WebDriver
BiDi, WebDriver classic, WIP), not how Chromium does it: a dialog in a cross-site frame
seen with that frame and answered, whether or not the frame runs out of process. How
the engine places cross-site frames is a check of its own (``frames.site_isolation``),
not a condition of the others.
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import time
import urllib.parse
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from cdpnb.errors import CdpnbError, DialogError, WaitTimeout
from cdpnb.probes.basics import (
    FRAMES_WAIT_S,
    NotSupported,
    Outcome,
    Site,
    frame_at,
    needs_page,
    stretched,
    until,
    within,
)
from cdpnb.probes.page_checks import LATE_MS, fill, screenshot, wait_for_selector
from cdpnb.protocol import protocol_spec
from cdpnb.runtime.first_of import FirstOf
from cdpnb.state import BrowserState, DialogRecord, PendingDialog, build_frame_tree
from cdpnb.state.engines import NON_BLOCKING
from cdpnb.supervisor import Supervisor
from cdpnb.supervisor.dialogs import DialogAction

__all__ = ["CHECKS", "RENAMED", "Check", "DialogSeen", "Latency", "NotSupported", "Outcome",
           "Site", "stretched", "within"]

class Latency(float):
    """A measured median (ms) that keeps the samples it is the median of."""

    samples: tuple[float, ...]

    def __new__(cls, samples: list[float]) -> Latency:
        value = super().__new__(cls, statistics.median(samples))
        value.samples = tuple(samples)
        return value


class DialogSeen(float):
    """How long a dialog took to be seen (ms), and who closed it how long after it
    opened: the record of a race between the supervisor and another client (a client
    that auto-dismisses, such as Playwright with no dialog handler)."""

    closed_by: str | None
    open_ms: float | None

    def __new__(cls, seen_ms: float, closed_by: str | None = None,
                open_ms: float | None = None) -> DialogSeen:
        value = super().__new__(cls, seen_ms)
        value.closed_by = closed_by
        value.open_ms = open_ms
        return value


Driver = Callable[[Supervisor, Site], Awaitable[Outcome]]

#: The probe page's frames (``/probe``): the main frame, an in-process srcdoc frame, a
#: cross-site frame (site b) and a cross-site frame nested in that one (site a again).
FRAMES = ("main", "srcdoc", "cross_site", "nested")
#: How each frame is told apart (its URL: path and site) and whose child it is.
PROBE_FRAMES: dict[str, tuple[str, str, str | None]] = {
    "main": ("/probe", "a", None),
    "srcdoc": ("about:srcdoc", "", "main"),
    "cross_site": ("/nest?depth=1", "b", "main"),
    "nested": ("/nest?depth=0", "a", "cross_site"),
}
_SAID = {"main": "main frame", "srcdoc": "srcdoc frame", "cross_site": "cross-site frame",
         "nested": "cross-site frame nested in the cross-site frame"}
# (dialog call, answer, prompt text, expected [typeof, value] in page JS)
DIALOG_ROUND_TRIPS: dict[str, tuple[str, DialogAction, str | None, list[Any]]] = {
    "alert": ("alert('probe')", "accept", None, ["undefined", None]),
    "confirm": ("confirm('probe')", "accept", None, ["boolean", True]),
    "prompt": ("prompt('probe', 'default')", "accept", "answer-42", ["string", "answer-42"]),
}
#: Page JS that opens a dialog after the evaluate returns, keeping what it returned.
LATER = "window.__r = 'unset'; setTimeout(() => {{ window.__r = {0}; }}); 0"
#: An agent takes a moment to decide; an auto-dismisser does not wait for it.
ANSWER_AFTER_S = 0.05
#: How long a check waits for a dialog to show up.
DIALOG_WAIT_S = 3.0
#: How a dialog check's detail starts when the dialog was seen and answered but its
#: protocol names no frame for it (WebDriver classic): the matrix says it in words.
FRAME_UNKNOWN = "seen, frame unknown"

#: Check names that changed meaning (and name) when the checks stopped requiring
#: out-of-process iframes: old name -> new name (campaign scenarios accept the old).
RENAMED = {
    "frames.oopif_stitched": "frames.complete",
    "evaluate.oopif": "evaluate.cross_site",
    **{f"{area}.{kind}.oopif": f"{area}.{kind}.cross_site"
       for area in ("dialog", "bridge") for kind in DIALOG_ROUND_TRIPS},
}


@dataclass(frozen=True)
class Check:
    name: str
    capability: str
    description: str
    driver: Driver
    mode: Literal["native", "bridge"] = "native"
    #: The words a check finds instead of ✓ (its cell shows the word), e.g. site
    #: isolation's ``yes`` / ``no`` / ``unknown``; empty for a pass/fail check.
    answers: tuple[str, ...] = ()


def _probe_frames(state: BrowserState, site: Site) -> tuple[dict[str, str], list[str]]:
    """The probe page's frames found in ``state`` (name -> frame id), and what is
    missing or misplaced, in words. Frames are told apart by URL, not by process."""
    tree = build_frame_tree(state, None, None)
    found: dict[str, str] = {}
    problems: list[str] = []
    if tree.top is None or tree.top.url != site.url("/probe"):
        return found, ["the main frame is not the probe page"]
    found["main"] = tree.top.frame_id
    for name, (path, where, parent) in PROBE_FRAMES.items():
        if parent is None:
            continue
        url = site.url(path, where) if where else path
        nodes = [c for c in tree.children if c.url == url]
        if not nodes:
            problems.append(f"no {_SAID[name]}")
            continue
        node = nodes[0]
        found[name] = node.frame_id
        if parent in found and node.parent_frame_id != found[parent]:
            problems.append(f"the {_SAID[name]} is not under the {_SAID[parent]}")
    return found, problems


async def frame_ids(sup: Supervisor, site: Site) -> dict[str, str]:
    """Open the probe page and wait for its frames: main, srcdoc, a cross-site frame
    and a cross-site frame nested in that one (each name -> its frame id)."""
    needs_page(sup)
    await sup.navigate(site.url("/probe"), timeout=within(10))
    try:
        await sup.wait_for(lambda s: not _probe_frames(s, site)[1]
                           and len(_probe_frames(s, site)[0]) == len(FRAMES), within(FRAMES_WAIT_S))
    except WaitTimeout:
        problems = _probe_frames(sup.state, site)[1]
        raise CdpnbError(f"the probe page's frames did not all appear within "
                         f"{within(FRAMES_WAIT_S):g} s: {'; '.join(problems)}") from None
    return _probe_frames(sup.state, site)[0]


async def runtime_evaluate(sup: Supervisor, site: Site) -> Outcome:
    value = await sup.evaluate("6 * 7", timeout=within(5))
    if value != 42:
        return "fail", f"evaluate('6 * 7') returned {value!r}", None
    return "ok", "evaluate answers in the page", None


async def frames_complete(sup: Supervisor, site: Site) -> Outcome:
    needs_page(sup)
    try:
        await frame_ids(sup, site)
    except CdpnbError as exc:
        found, _ = _probe_frames(sup.state, site)
        # Partial only when some frame besides the main one came.
        return ("partial" if len(found) > 1 else "fail"), str(exc), None
    return "ok", ("every frame of the page in the tree under its parent: main, srcdoc, "
                  "cross-site, and cross-site nested in cross-site"), None


async def site_isolation(sup: Supervisor, site: Site) -> Outcome:
    """How the engine runs cross-site frames: a finding, not a capability."""
    ids = await frame_ids(sup, site)
    spec = protocol_spec(sup.protocol)
    if not spec.reports_site_isolation:
        return ("ok", f"unknown: {spec.title} does not say which frames run out of process",
                "unknown")
    state = sup.state
    own = [state.frames[ids[name]].is_oopif
           and state.frames[ids[name]].session_id != state.page_session_id
           for name in ("cross_site", "nested")]
    if all(own):
        return ("ok", "yes: each cross-site frame runs out of process, attached as a "
                "session of its own (OOPIF)", "yes")
    if not any(own):
        return ("ok", "no: cross-site frames run in the page's own session (no OOPIFs)",
                "no")
    return "partial", "partly: one cross-site frame is out of process, one is not", "partly"


async def evaluate_cross_site(sup: Supervisor, site: Site) -> Outcome:
    ids = await frame_ids(sup, site)
    for frame in ("cross_site", "nested"):
        title = await sup.evaluate("document.title", frame_id=ids[frame], timeout=within(5))
        if not str(title).startswith("nest"):
            return "fail", f"evaluate in the {_SAID[frame]} returned {title!r}", None
    return "ok", "evaluate with frame_id reaches the cross-site frame and the nested one", None


def _dialog_after(state: BrowserState, after_seq: int) -> PendingDialog | DialogRecord | None:
    """The first dialog opened after ``after_seq`` (open or closed), if there is one."""
    wanted = f"d-{after_seq + 1}"
    dialogs: list[PendingDialog | DialogRecord] = [*state.pending_dialogs,
                                                   *state.recent_dialogs]
    return next((d for d in dialogs if d.id == wanted), None)


async def _next_dialog(sup: Supervisor, after_seq: int) -> PendingDialog | DialogRecord:
    """The first dialog opened after ``after_seq``, open or already closed."""
    def find(state: BrowserState) -> PendingDialog | DialogRecord | None:
        return _dialog_after(state, after_seq)

    found = find(await until(sup, lambda s: find(s) is not None, DIALOG_WAIT_S, "a dialog"))
    assert found is not None
    return found


def _not_blocking(record: DialogRecord) -> str:
    return f"dialogs do not block: page JS got {record.page_value} at once, before any answer"


def _closed_early(record: DialogRecord) -> str:
    """Why nobody could answer a dialog that was closed when we saw it."""
    if record.reason == NON_BLOCKING:
        return _not_blocking(record)
    return (f"seen, but closed by {record.closed_by} {record.open_ms:.1f} ms after it "
            "opened, before we could answer")


#: How long page JS may take to go on after an answer reached the browser.
PAGE_GOES_ON_S = 2.0


async def _page_got(sup: Supervisor, frame_id: str) -> Any:
    """``[typeof, value]`` of what the dialog call returned in page JS, once it returned.

    Measured on Firefox ESR 153: ``network.provideResponse`` is acknowledged before the
    frame's synchronous XHR hands the answer to page JS, so one look right after a
    bridged answer can still see ``'unset'``; a native answer's close event comes after
    the page went on. So look until the page went on, or ``PAGE_GOES_ON_S`` passed.
    """
    deadline = time.monotonic() + within(PAGE_GOES_ON_S)
    while True:
        got = await sup.evaluate("[typeof window.__r, window.__r ?? null]", frame_id=frame_id,
                                 timeout=within(5))
        if got != ["string", "unset"] or time.monotonic() > deadline:
            return got
        await asyncio.sleep(0.02)


async def _answer(sup: Supervisor, dialog: PendingDialog | DialogRecord, seen_ms: float,
                  action: DialogAction, text: str | None = None
                  ) -> tuple[str | None, DialogSeen]:
    """Answer ``dialog`` ANSWER_AFTER_S after it was seen, as an agent deciding would:
    (None, our close) when our answer closed it, else (why not, whose close). Who
    closed it, and when, is the record of a race with another client where one is."""
    if isinstance(dialog, DialogRecord):
        return _closed_early(dialog), DialogSeen(seen_ms, dialog.closed_by, dialog.open_ms)
    await asyncio.sleep(ANSWER_AFTER_S)
    try:
        record = await sup.respond(action, prompt_text=text, dialog_id=dialog.id)
    except CdpnbError as exc:
        closed = next((d for d in sup.state.recent_dialogs if d.id == dialog.id), None)
        if closed is not None and closed.closed_by != "agent":  # the other one was first
            return (f"{_closed_early(closed)}; answering failed: {exc}",
                    DialogSeen(seen_ms, closed.closed_by, closed.open_ms))
        return f"seen, but answering failed: {exc}", DialogSeen(seen_ms)
    return None, DialogSeen(seen_ms, record.closed_by, record.open_ms)


def dialog_check(kind: str, frame: str, via: str) -> Driver:
    call, action, text, expected = DIALOG_ROUND_TRIPS[kind]

    async def drive(sup: Supervisor, site: Site) -> Outcome:
        ids = await frame_ids(sup, site)
        spec = protocol_spec(sup.protocol)
        frame_id = ids[frame]
        mark = sup.state.dialog_seq
        began = time.monotonic()
        await sup.evaluate(LATER.format(call), frame_id=frame_id, timeout=within(5))
        try:
            dialog = await _next_dialog(sup, mark)
        except CdpnbError:
            return ("fail", f"no dialog seen: no {spec.dialog_seen_by or 'dialog'} within "
                    f"{within(DIALOG_WAIT_S):g} s", None)
        seen_ms = (time.monotonic() - began) * 1000
        if dialog.via != via:
            return "partial", f"seen via {dialog.via}, not {via}", seen_ms
        # WebDriver classic names no frame for a dialog (None): seen, frame unknown; it
        # is still answered, and what page JS got says whether the answer reached it.
        frame_unknown = dialog.frame_id is None and not spec.knows_dialog_frame
        if dialog.frame_id != frame_id and not frame_unknown:
            return "partial", f"seen with frame_id {dialog.frame_id}, not {frame_id}", seen_ms
        missed, outcome = await _answer(sup, dialog, seen_ms, action, text)
        if missed is not None:
            return "partial", missed, outcome
        got = await _page_got(sup, frame_id)
        if got != expected:
            return ("partial", f"answered, but page JS got {got!r}, expected {expected!r}",
                    outcome)
        if frame_unknown:
            return ("partial", f"{FRAME_UNKNOWN} ({spec.title} names no frame for a "
                    f"dialog) and answered (closed {outcome.open_ms:.0f} ms after it "
                    f"opened); page JS got {got[1]!r}", outcome)
        return ("ok", f"seen with its frame and answered (closed {outcome.open_ms:.0f} ms "
                f"after it opened); page JS got {got[1]!r}", outcome)

    return drive


#: A left click near the page's top-left corner, as WebDriver BiDi input actions.
_CLICK = [{"type": "pointer", "id": "cdpnb-probe-mouse", "actions": [
    {"type": "pointerMove", "x": 20, "y": 20},
    {"type": "pointerDown", "button": 0}, {"type": "pointerUp", "button": 0}]}]


async def user_activation(sup: Supervisor) -> str:
    """Give the page a user activation, the way its protocol can; says how."""
    gesture = protocol_spec(sup.protocol).user_gesture
    if gesture == "pointer-actions":
        # Measured: Firefox ESR 153 asks beforeunload only after real input (a
        # script.evaluate with userActivation: true is not enough); chromium-bidi 17
        # takes either, so both get the click.
        await sup.bidi("input.performActions",
                       {"context": sup.page_target_id, "actions": _CLICK})
        return "a click (input.performActions)"
    if gesture == "element-click":
        # (WebDriver classic has no user gesture for a script: a click on the page.)
        await sup.click(selector="body", timeout=within(5))
        return "a click (element click)"
    await sup.evaluate("1", user_gesture=True, timeout=within(5))
    return "a user gesture (evaluate with userGesture)"


async def beforeunload(sup: Supervisor, site: Site) -> Outcome:
    needs_page(sup)
    await sup.navigate(site.url("/beforeunload"), timeout=within(10))
    how = await user_activation(sup)
    mark = sup.state.dialog_seq
    began = time.monotonic()
    seen = asyncio.ensure_future(_next_dialog(sup, mark))
    # Cancelled (the check's time ran out) or done: neither task outlives the check.
    async with FirstOf(sup.navigate(site.url("/blank"), timeout=within(10)), seen,
                       owns_condition=True) as first:
        return await _answer_beforeunload(sup, how, mark, began, first)


async def _answer_beforeunload(sup: Supervisor, how: str, mark: int, began: float,
                               first: FirstOf[Any, PendingDialog | DialogRecord]) -> Outcome:
    leaving, seen = first.command, first.condition
    await first.wait(None)
    if (not seen.done() and first.command_error is None
            and _dialog_after(sup.state, mark) is None):
        # Gone without asking: no dialog can come for a page that is no more.
        spec = protocol_spec(sup.protocol)
        why = (f" ({spec.title} never shows one: the browser accepts it itself)"
               if not spec.shows_beforeunload else "")
        return ("fail", f"no beforeunload dialog after {how}: the navigation went on{why}",
                None)
    try:
        dialog = await seen
    except CdpnbError as exc:
        return "fail", f"no beforeunload dialog after {how}: {exc}", None
    missed, outcome = await _answer(sup, dialog, (time.monotonic() - began) * 1000, "accept")
    if missed is not None:
        await asyncio.gather(leaving, return_exceptions=True)
        return "partial", missed, outcome
    await leaving
    return ("ok", f"beforeunload seen after {how}; accepting let the navigation go on",
            outcome)


#: The sandboxed frame's prompt, reporting what it returned by navigating itself: a
#: frame navigation reaches the supervisor's state over either protocol (and is in the
#: trace), so a prompt the browser blocks is known at once, not after a timeout.
_BOXED = ("setTimeout(() => {{ const r = prompt('boxed'); location.replace('/child?returned=' "
          "+ encodeURIComponent(r === undefined ? 'undefined' : JSON.stringify(r))); }}); 0")


async def sandboxed_frame(sup: Supervisor, site: Site) -> Outcome:
    """A finding, not a pass/fail: the bridge answers where the browser blocks natively."""
    needs_page(sup)
    await sup.navigate(site.url("/sandboxed"), timeout=within(10))
    frame_id = await frame_at(sup, site.url("/child", "b"), "the sandboxed frame")
    mark = sup.state.dialog_seq

    def returned(state: BrowserState) -> str | None:
        frame = state.frames.get(frame_id)
        if frame is None or "?returned=" not in frame.url:
            return None
        return urllib.parse.unquote(frame.url.partition("?returned=")[2])

    def moved(state: BrowserState) -> bool:
        return returned(state) is not None or _dialog_after(state, mark) is not None

    await sup.evaluate(_BOXED.format(), frame_id=frame_id, timeout=within(5))
    try:
        state = await until(sup, moved, DIALOG_WAIT_S, "a dialog or prompt() returning")
    except CdpnbError:
        return "fail", ("no dialog, and prompt() did not return within "
                         f"{within(DIALOG_WAIT_S):g} s"), None
    dialog = _dialog_after(state, mark)
    if dialog is None:
        return "fail", f"no dialog: the browser blocked prompt() (page got {returned(state)})", None
    if isinstance(dialog, DialogRecord) and dialog.reason == NON_BLOCKING:
        return ("partial", f"the sandbox did not stop prompt() (no allow-modals), but "
                f"{_not_blocking(dialog)}", None)
    if isinstance(dialog, PendingDialog):
        with contextlib.suppress(DialogError):
            await sup.respond("accept", prompt_text="boxed-answer", dialog_id=dialog.id)
    state = await until(sup, lambda s: returned(s) is not None, DIALOG_WAIT_S,
                         "prompt() returning")
    return "ok", (f"prompt() in a sandbox without allow-modals reached us via {dialog.via}; "
                  f"page got {returned(state)}"), None


async def csp_fallback(sup: Supervisor, site: Site) -> Outcome:
    """Under a strict connect-src the bridge's XHR is blocked: the native dialog must show."""
    needs_page(sup)
    await sup.navigate(site.url("/csp"), timeout=within(10))
    mark = sup.state.dialog_seq
    await sup.evaluate(LATER.format("confirm('csp')"), timeout=within(5))
    try:
        dialog = await _next_dialog(sup, mark)
    except CdpnbError:
        return "fail", "no dialog at all: the bridge failed silently", None
    if isinstance(dialog, DialogRecord) and dialog.reason == NON_BLOCKING:
        return ("partial", f"CSP blocked the bridge; fell back to native, but "
                f"{_not_blocking(dialog)}", None)
    await asyncio.sleep(ANSWER_AFTER_S)
    if isinstance(dialog, PendingDialog):
        with contextlib.suppress(DialogError):
            await sup.respond("accept", dialog_id=dialog.id)
    got = await sup.evaluate("window.__r", timeout=within(5))
    if dialog.via == "native":
        return "ok", f"CSP blocked the bridge; fell back to native (page got {got!r})", None
    return ("partial", f"connect-src not enforced: answered via the bridge (page got {got!r})",
            None)


async def https_bridge(sup: Supervisor, site: Site) -> Outcome:
    """On an https page the bridge must call an https URL (mixed content otherwise)."""
    needs_page(sup)
    spec = protocol_spec(sup.protocol)
    if not spec.ignores_certificate_errors_live:
        new_session = spec.session_command or "New Session"
        return ("fail", f"cannot accept the probe's self-signed certificate: over "
                f"{spec.title} that is {new_session}'s acceptInsecureCerts, which the "
                "supervisor does not ask for", None)
    try:
        await sup.cdp("Security.setIgnoreCertificateErrors", {"ignore": True}, browser=True)
    except CdpnbError as exc:
        return "fail", f"cannot accept the probe's self-signed certificate: {exc}", None
    try:
        try:
            await sup.navigate(site.url("/blank", "https"), timeout=within(10))
        except CdpnbError as exc:
            return "fail", f"the self-signed https page did not load: {exc}", None
        mark = sup.state.dialog_seq
        await sup.evaluate(LATER.format("prompt('secure?')"), timeout=within(5))
        dialog = await _next_dialog(sup, mark)
        if isinstance(dialog, PendingDialog):
            with contextlib.suppress(DialogError):
                await sup.respond("accept", prompt_text="tls", dialog_id=dialog.id)
        got = await sup.evaluate("window.__r", timeout=within(5))
    finally:
        with contextlib.suppress(CdpnbError):
            await sup.cdp("Security.setIgnoreCertificateErrors", {"ignore": False},
                          browser=True)
    if dialog.via != "bridge" or got != "tls":
        return "partial", f"on https the dialog came via {dialog.via}; page got {got!r}", None
    return "ok", "answered through the https bridge URL on a self-signed https page", None


#: Raw round trips a latency check times.
ROUND_TRIPS = 30


#: How each protocol's round-trip command (``ProtocolSpec.round_trip``) evaluates '1',
#: as sent through the supervisor's raw call for it.
_ROUND_TRIP_SENDS: dict[str, Callable[[Supervisor], Awaitable[dict[str, Any]]]] = {
    "Runtime.evaluate": lambda sup: sup.cdp("Runtime.evaluate", {"expression": "1"}),
    "script.evaluate": lambda sup: sup.bidi("script.evaluate", {
        "expression": "1", "target": {"context": sup.page_target_id},
        "awaitPromise": False}),
    "classic.executeScript": lambda sup: sup.classic(
        "classic.executeScript", {"script": "return 1", "args": []}),
}


async def command_round_trip(sup: Supervisor, site: Site) -> Outcome:
    """The raw protocol round trip: no value conversion, no frame lookup."""
    spec = protocol_spec(sup.protocol)
    send = _ROUND_TRIP_SENDS[spec.round_trip]
    samples = []
    for _ in range(ROUND_TRIPS):
        began = time.perf_counter()
        await send(sup)
        samples.append((time.perf_counter() - began) * 1000)
    return ("ok", f"median of {len(samples)} {spec.round_trip_named}('1') round trips",
            Latency(samples))


async def debugger_round_trip(sup: Supervisor, site: Site) -> Outcome:
    """The raw ``Runtime.evaluate`` round trip with the ``Debugger`` domain on, where a
    runtime writes a ``Debugger.scriptParsed`` event before each reply (node 20, Deno
    2.9.8: on a socket without TCP_NODELAY, which a client that delays its ACK waits
    44 ms for; cdpnb acknowledges at once, ``cdpnb.transport.wire``)."""
    spec = protocol_spec(sup.protocol)
    if not spec.debugger_domain:
        raise NotSupported(f"no Debugger domain over {spec.title}")
    await sup.cdp("Debugger.enable")
    try:
        samples = []
        for _ in range(ROUND_TRIPS):
            began = time.perf_counter()
            await sup.cdp("Runtime.evaluate", {"expression": "1"})
            samples.append((time.perf_counter() - began) * 1000)
    finally:
        with contextlib.suppress(CdpnbError):
            await sup.cdp("Debugger.disable")
    return ("ok", f"median of {len(samples)} Runtime.evaluate('1') round trips after "
                  "Debugger.enable", Latency(samples))


async def _dialog_latencies(sup: Supervisor) -> tuple[list[float], list[float], list[str]]:
    """(open → seen, answer → closed) in ms for 10 alerts in the main frame, and why
    each alert we could not answer had closed."""
    seen_ms: list[float] = []
    closed_ms: list[float] = []
    missed: list[str] = []
    for _ in range(10):
        mark = sup.state.dialog_seq
        began = time.monotonic()
        calling = asyncio.ensure_future(sup.evaluate("alert('timed'); 1", timeout=within(10)))
        try:
            dialog = await _next_dialog(sup, mark)
            seen_ms.append((time.monotonic() - began) * 1000)
            await asyncio.sleep(ANSWER_AFTER_S)
            if any(d.id == dialog.id for d in sup.state.pending_dialogs):
                answered = time.time()
                with contextlib.suppress(DialogError):
                    record = await sup.respond("accept", dialog_id=dialog.id)
                    if record.closed_by == "agent":
                        closed_ms.append((record.closed_at - answered) * 1000)
            else:
                gone = next((r for r in sup.state.recent_dialogs if r.id == dialog.id), None)
                missed.append(_closed_early(gone) if gone is not None else "gone")
            await calling
        finally:
            # Left early (the connection went, the check's time ran out): the alert's
            # call must not outlive the check, nor its error go unretrieved (a Lightpanda
            # killed mid-probe printed "Task exception was never retrieved").
            calling.cancel()
            await asyncio.gather(calling, return_exceptions=True)
    return seen_ms, closed_ms, missed


async def dialog_seen_latency(sup: Supervisor, site: Site) -> Outcome:
    needs_page(sup)
    await sup.navigate(site.url("/blank"), timeout=within(10))
    seen, _, _ = await _dialog_latencies(sup)
    return ("ok", f"median of {len(seen)}: evaluate('alert()') sent → dialog in state",
            Latency(seen))


async def dialog_closed_latency(sup: Supervisor, site: Site) -> Outcome:
    needs_page(sup)
    await sup.navigate(site.url("/blank"), timeout=within(10))
    _, closed, missed = await _dialog_latencies(sup)
    if not closed:
        if missed and all(m.startswith("dialogs do not block") for m in missed):
            return "fail", "dialogs do not block: nothing is left to answer", None
        return "fail", "every dialog was closed by someone else before we answered", None
    return "ok", f"median of {len(closed)}: respond() → dialog closed", Latency(closed)


_FRAME_WORDS = {"main": "main", "srcdoc": "srcdoc", "cross_site": "cross-site",
                "nested": "nested"}

CHECKS: tuple[Check, ...] = (
    Check("runtime.evaluate", "evaluate", "evaluate answers in the page", runtime_evaluate),
    Check("frames.complete", "frame tree complete",
          "every frame of the probe page (main, srcdoc, a cross-site frame and a cross-site "
          "frame nested in it) is in the frame tree under its parent", frames_complete),
    Check("frames.site_isolation", "site isolation",
          "whether cross-site frames run out of process (OOPIFs): yes, no, or unknown "
          "(WebDriver BiDi does not say)", site_isolation,
          answers=("yes", "no", "partly", "unknown")),
    Check("evaluate.cross_site", "evaluate cross-site",
          "evaluate with frame_id reaches the cross-site frame and the one nested in it",
          evaluate_cross_site),
    Check("page.screenshot", "screenshot",
          "a PNG of the page's viewport, then of its cross-site frame alone, each decoded: "
          "its size the viewport's (the frame's box), the page's and the frame's colours "
          "where they are", screenshot),
    Check("page.fill", "fill",
          "fill types over a field's text, in the page and in a cross-site frame; the "
          "page's own input listener reads it back", fill),
    Check("page.wait_for_selector", "wait for selector",
          "wait_for_selector raises WaitTimeout for an element the page has not added, then "
          f"waits for it until the page adds it, {LATE_MS / 1000:g} s after its load",
          wait_for_selector),
    *(Check(f"dialog.{kind}.{frame}", f"dialogs {_FRAME_WORDS[frame]}",
            f"{kind}() in the {_SAID[frame]} is seen with its frame, answered natively and "
            "round-trips into page JS", dialog_check(kind, frame, "native"))
      for frame in FRAMES for kind in DIALOG_ROUND_TRIPS),
    Check("dialog.beforeunload.main", "beforeunload",
          "beforeunload after a user activation is seen and answered", beforeunload),
    *(Check(f"bridge.{kind}.{frame}", f"bridge {_FRAME_WORDS[frame]}",
            f"{kind}() in the {_SAID[frame]} is answered through the dialog bridge",
            dialog_check(kind, frame, "bridge"), "bridge")
      for frame in ("main", "cross_site") for kind in DIALOG_ROUND_TRIPS),
    Check("finding.sandbox.native", "sandbox native",
          "prompt() in a sandboxed iframe without allow-modals, natively", sandboxed_frame),
    Check("finding.sandbox.bridge", "sandbox bridge",
          "prompt() in a sandboxed iframe without allow-modals, through the bridge",
          sandboxed_frame, "bridge"),
    Check("finding.csp.bridge", "bridge under CSP",
          "with a strict connect-src the bridge falls back to the native dialog", csp_fallback,
          "bridge"),
    Check("bridge.https", "bridge on https",
          "a prompt on a self-signed https page is answered through the https bridge URL",
          https_bridge, "bridge"),
    Check("latency.command_rtt", "command RTT ms",
          "median raw protocol round trip of evaluating '1' (Runtime.evaluate or "
          "script.evaluate)", command_round_trip),
    Check("latency.debugger_rtt", "evaluate RTT with Debugger on ms",
          "median raw Runtime.evaluate('1') round trip with the Debugger domain enabled "
          "(a runtime writes a scriptParsed event before each reply)", debugger_round_trip),
    Check("latency.dialog_seen", "dialog seen ms",
          "median time from sending alert() to the dialog in the supervisor's state",
          dialog_seen_latency),
    Check("latency.dialog_closed", "dialog closed ms",
          "median time from respond() to the dialog closed", dialog_closed_latency),
)
