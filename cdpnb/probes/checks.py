"""Probe checks: each drives a live supervisor through one scenario and says what happened.

A check returns ``(status, detail, value)``: status ``ok`` / ``fail`` / ``partial``;
``detail`` says why in words; ``value`` is a measurement where there is one. Each
check names the supervisor it needs: ``native`` (no dialog bridge, to see what the
backend itself does) or ``bridge`` (dialogs answered through the bridge).
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from cdpnb.errors import CdpnbError, DialogError, WaitTimeout
from cdpnb.state import BrowserState, DialogRecord, FrameInfo, PendingDialog, build_frame_tree
from cdpnb.supervisor import Supervisor

__all__ = ["CHECKS", "Check", "Latency", "Outcome", "Site"]

Outcome = tuple[str, str, float | None]


class Latency(float):
    """A measured median (ms) that keeps the samples it is the median of."""

    samples: tuple[float, ...]

    def __new__(cls, samples: list[float]) -> Latency:
        value = super().__new__(cls, statistics.median(samples))
        value.samples = tuple(samples)
        return value


class Site(Protocol):
    """Where the scenario pages are: a live ScenarioServer, or the recorded origins."""

    def url(self, path: str, site: str = "a") -> str: ...


Driver = Callable[[Supervisor, Site], Awaitable[Outcome]]

FRAMES = ("main", "srcdoc", "oopif", "nested")
# (dialog call, answer, prompt text, expected [typeof, value] in page JS)
DIALOG_ROUND_TRIPS: dict[str, tuple[str, str, str | None, list[Any]]] = {
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


class NotSupported(CdpnbError):
    """The backend lacks a domain the check needs."""


@dataclass(frozen=True)
class Check:
    name: str
    capability: str
    description: str
    driver: Driver
    mode: Literal["native", "bridge"] = "native"


def _needs_page(sup: Supervisor) -> None:
    if "Page.enable" in sup.unsupported:
        raise NotSupported(f"no Page domain ({sup.unsupported['Page.enable']})")


async def _until(sup: Supervisor, predicate: Callable[[BrowserState], bool],
                 timeout: float, what: str) -> BrowserState:
    try:
        return await sup.wait_for(predicate, timeout)
    except WaitTimeout:
        raise CdpnbError(f"{what} did not happen within {timeout:g} s") from None


async def frame_ids(sup: Supervisor, site: Site) -> dict[str, str]:
    """Open the scenario: main page, srcdoc frame, OOPIF, and an OOPIF inside an OOPIF."""
    _needs_page(sup)
    await sup.navigate(site.url("/probe"), timeout=10)

    def ready(state: BrowserState) -> bool:
        tree = build_frame_tree(state, None, None)
        return (tree.top is not None and any(c.url == "about:srcdoc" for c in tree.children)
                and any(c.oopif_depth == 2 for c in tree.children))

    await _until(sup, ready, 5, "the two-site page showing a srcdoc frame and nested OOPIFs")
    tree = sup.frame_tree()
    assert tree.top is not None
    return {"main": tree.top.frame_id,
            "srcdoc": next(c.frame_id for c in tree.children if c.url == "about:srcdoc"),
            "oopif": next(c.frame_id for c in tree.children if c.oopif_depth == 1),
            "nested": next(c.frame_id for c in tree.children if c.oopif_depth == 2)}


async def runtime_evaluate(sup: Supervisor, site: Site) -> Outcome:
    value = await sup.evaluate("6 * 7", timeout=5)
    if value != 42:
        return "fail", f"Runtime.evaluate('6 * 7') returned {value!r}", None
    return "ok", "Runtime.evaluate answers on the default session", None


async def oopif_stitched(sup: Supervisor, site: Site) -> Outcome:
    ids = await frame_ids(sup, site)
    node = sup.frame_tree().find(ids["oopif"])
    nested = sup.frame_tree().find(ids["nested"])
    assert node is not None and nested is not None
    if node.parent_frame_id != ids["main"] or node.session_id is None:
        return "partial", f"OOPIF seen but not stitched under the main frame: {node}", None
    if nested.parent_frame_id != ids["oopif"] or nested.session_id is None:
        return "partial", "OOPIF stitched, but the nested OOPIF is not under it", None
    return "ok", "OOPIF and nested OOPIF stitched under their parents", None


async def oopif_evaluate(sup: Supervisor, site: Site) -> Outcome:
    ids = await frame_ids(sup, site)
    for frame in ("oopif", "nested"):
        title = await sup.evaluate("document.title", frame_id=ids[frame], timeout=5)
        if not str(title).startswith(("child", "nest")):
            return "fail", f"evaluate in the {frame} frame returned {title!r}", None
    return "ok", "Runtime.evaluate routed to the OOPIF and nested OOPIF sessions", None


async def _next_dialog(sup: Supervisor, after_seq: int) -> PendingDialog | DialogRecord:
    """The first dialog opened after ``after_seq``, open or already closed."""
    wanted = f"d-{after_seq + 1}"

    def find(state: BrowserState) -> PendingDialog | DialogRecord | None:
        dialogs: list[PendingDialog | DialogRecord] = [*state.pending_dialogs,
                                                       *state.recent_dialogs]
        return next((d for d in dialogs if d.id == wanted), None)

    found = find(await _until(sup, lambda s: find(s) is not None, DIALOG_WAIT_S, "a dialog"))
    assert found is not None
    return found


def dialog_check(kind: str, frame: str, via: str) -> Driver:
    call, action, text, expected = DIALOG_ROUND_TRIPS[kind]

    async def drive(sup: Supervisor, site: Site) -> Outcome:
        ids = await frame_ids(sup, site)
        frame_id = ids[frame]
        mark = sup.state.dialog_seq
        began = time.monotonic()
        await sup.evaluate(LATER.format(call), frame_id=frame_id, timeout=5)
        try:
            dialog = await _next_dialog(sup, mark)
        except CdpnbError:
            return "fail", "no dialog seen", None
        seen_ms = (time.monotonic() - began) * 1000
        if dialog.via != via:
            return "partial", f"seen via {dialog.via}, not {via}", seen_ms
        if dialog.frame_id != frame_id:
            return "partial", f"seen with frame_id {dialog.frame_id}, not {frame_id}", seen_ms
        if isinstance(dialog, DialogRecord):
            return ("partial", f"seen, but closed by {dialog.closed_by} "
                    f"{dialog.open_ms:.1f} ms after it opened, before we could answer", seen_ms)
        await asyncio.sleep(ANSWER_AFTER_S)
        try:
            await sup.respond(action, prompt_text=text, dialog_id=dialog.id)
        except CdpnbError as exc:
            return "partial", f"seen, but answering failed: {exc}", seen_ms
        got = await sup.evaluate("[typeof window.__r, window.__r ?? null]", frame_id=frame_id,
                                 timeout=5)
        if got != expected:
            return "partial", f"answered, but page JS got {got!r}, expected {expected!r}", seen_ms
        return "ok", f"seen and answered; page JS got {got[1]!r}", seen_ms

    return drive


async def beforeunload(sup: Supervisor, site: Site) -> Outcome:
    _needs_page(sup)
    await sup.navigate(site.url("/beforeunload"), timeout=10)
    await sup.cdp("Runtime.evaluate", {"expression": "1", "userGesture": True})
    mark = sup.state.dialog_seq
    leaving = asyncio.ensure_future(sup.navigate(site.url("/blank"), timeout=10))
    try:
        dialog = await _next_dialog(sup, mark)
    except CdpnbError as exc:
        leaving.cancel()
        return "fail", f"no beforeunload dialog after a user gesture: {exc}", None
    if isinstance(dialog, DialogRecord):
        await asyncio.gather(leaving, return_exceptions=True)
        return ("partial", f"seen, but closed by {dialog.closed_by} {dialog.open_ms:.1f} ms "
                "after it opened, before we could answer", None)
    await asyncio.sleep(ANSWER_AFTER_S)
    try:
        await sup.respond("accept", dialog_id=dialog.id)
    except CdpnbError as exc:
        await asyncio.gather(leaving, return_exceptions=True)
        return "partial", f"seen, but answering failed: {exc}", None
    await leaving
    return "ok", "beforeunload seen after a gesture; accepting let the navigation go on", None


async def sandboxed_frame(sup: Supervisor, site: Site) -> Outcome:
    """A finding, not a pass/fail: the bridge answers where the browser blocks natively."""
    _needs_page(sup)
    await sup.navigate(site.url("/sandboxed"), timeout=10)
    def boxed(state: BrowserState) -> list[FrameInfo]:
        return [f for f in state.frames.values() if f.url.endswith("/child") and f.parent_frame_id]

    frame = boxed(await _until(sup, lambda s: bool(boxed(s)), 5, "the sandboxed frame"))[0]
    mark = sup.state.dialog_seq
    await sup.evaluate(LATER.format("prompt('boxed')"), frame_id=frame.frame_id, timeout=5)
    try:
        dialog = await _next_dialog(sup, mark)
    except CdpnbError:
        got = await sup.evaluate("window.__r", frame_id=frame.frame_id, timeout=5)
        return "fail", f"no dialog: the browser blocked prompt() (page got {got!r})", None
    if isinstance(dialog, PendingDialog):
        await sup.respond("accept", prompt_text="boxed-answer", dialog_id=dialog.id)
    got = await sup.evaluate("window.__r", frame_id=frame.frame_id, timeout=5)
    return "ok", (f"prompt() in a sandbox without allow-modals reached us via {dialog.via}; "
                  f"page got {got!r}"), None


async def csp_fallback(sup: Supervisor, site: Site) -> Outcome:
    """Under a strict connect-src the bridge's XHR is blocked: the native dialog must show."""
    _needs_page(sup)
    await sup.navigate(site.url("/csp"), timeout=10)
    mark = sup.state.dialog_seq
    await sup.evaluate(LATER.format("confirm('csp')"), timeout=5)
    try:
        dialog = await _next_dialog(sup, mark)
    except CdpnbError:
        return "fail", "no dialog at all: the bridge failed silently", None
    await asyncio.sleep(ANSWER_AFTER_S)
    if isinstance(dialog, PendingDialog):
        with contextlib.suppress(DialogError):
            await sup.respond("accept", dialog_id=dialog.id)
    got = await sup.evaluate("window.__r", timeout=5)
    if dialog.via == "native":
        return "ok", f"CSP blocked the bridge; fell back to native (page got {got!r})", None
    return "partial", f"answered via the bridge despite connect-src (page got {got!r})", None


async def https_bridge(sup: Supervisor, site: Site) -> Outcome:
    """On an https page the bridge must call an https URL (mixed content otherwise)."""
    _needs_page(sup)
    try:
        await sup.cdp("Security.setIgnoreCertificateErrors", {"ignore": True}, browser=True)
    except CdpnbError as exc:
        return "fail", f"cannot accept the probe's self-signed certificate: {exc}", None
    try:
        try:
            await sup.navigate(site.url("/blank", "https"), timeout=10)
        except CdpnbError as exc:
            return "fail", f"the self-signed https page did not load: {exc}", None
        mark = sup.state.dialog_seq
        await sup.evaluate(LATER.format("prompt('secure?')"), timeout=5)
        dialog = await _next_dialog(sup, mark)
        if isinstance(dialog, PendingDialog):
            with contextlib.suppress(DialogError):
                await sup.respond("accept", prompt_text="tls", dialog_id=dialog.id)
        got = await sup.evaluate("window.__r", timeout=5)
    finally:
        with contextlib.suppress(CdpnbError):
            await sup.cdp("Security.setIgnoreCertificateErrors", {"ignore": False},
                          browser=True)
    if dialog.via != "bridge" or got != "tls":
        return "partial", f"on https the dialog came via {dialog.via}; page got {got!r}", None
    return "ok", "answered through the https bridge URL on a self-signed https page", None


async def command_round_trip(sup: Supervisor, site: Site) -> Outcome:
    samples = []
    for _ in range(30):
        began = time.perf_counter()
        await sup.cdp("Runtime.evaluate", {"expression": "1"})
        samples.append((time.perf_counter() - began) * 1000)
    return "ok", f"median of {len(samples)} Runtime.evaluate round trips", Latency(samples)


async def _dialog_latencies(sup: Supervisor) -> tuple[list[float], list[float]]:
    """(open → seen, answer → closed) in ms for 10 alerts in the main frame."""
    seen_ms: list[float] = []
    closed_ms: list[float] = []
    for _ in range(10):
        mark = sup.state.dialog_seq
        began = time.monotonic()
        calling = asyncio.ensure_future(sup.evaluate("alert('timed'); 1", timeout=10))
        dialog = await _next_dialog(sup, mark)
        seen_ms.append((time.monotonic() - began) * 1000)
        await asyncio.sleep(ANSWER_AFTER_S)
        if sup.state.pending_dialogs:
            answered = time.time()
            with contextlib.suppress(DialogError):
                record = await sup.respond("accept", dialog_id=dialog.id)
                if record.closed_by == "agent":
                    closed_ms.append((record.closed_at - answered) * 1000)
        await calling
    return seen_ms, closed_ms


async def dialog_seen_latency(sup: Supervisor, site: Site) -> Outcome:
    _needs_page(sup)
    await sup.navigate(site.url("/blank"), timeout=10)
    seen, _ = await _dialog_latencies(sup)
    return ("ok", f"median of {len(seen)}: evaluate('alert()') sent → dialog in state",
            Latency(seen))


async def dialog_closed_latency(sup: Supervisor, site: Site) -> Outcome:
    _needs_page(sup)
    await sup.navigate(site.url("/blank"), timeout=10)
    _, closed = await _dialog_latencies(sup)
    if not closed:
        return "fail", "every dialog was closed by someone else before we answered", None
    return "ok", f"median of {len(closed)}: respond() → dialog closed", Latency(closed)


CHECKS: tuple[Check, ...] = (
    Check("runtime.evaluate", "Runtime", "Runtime.evaluate answers", runtime_evaluate),
    Check("frames.oopif_stitched", "frame tree + OOPIF",
          "the cross-site iframe (and one nested in it) appear as OOPIFs under their parents",
          oopif_stitched),
    Check("evaluate.oopif", "evaluate in OOPIF",
          "Runtime.evaluate with frame_id reaches the OOPIF and the nested OOPIF", oopif_evaluate),
    *(Check(f"dialog.{kind}.{frame}", f"dialogs {frame}",
            f"{kind}() in the {frame} frame is seen, answered natively and round-trips into "
            "page JS", dialog_check(kind, frame, "native"))
      for frame in FRAMES for kind in DIALOG_ROUND_TRIPS),
    Check("dialog.beforeunload.main", "beforeunload",
          "beforeunload after a user gesture is seen and answered", beforeunload),
    *(Check(f"bridge.{kind}.{frame}", f"bridge {frame}",
            f"{kind}() in the {frame} frame is answered through the dialog bridge",
            dialog_check(kind, frame, "bridge"), "bridge")
      for frame in ("main", "oopif") for kind in DIALOG_ROUND_TRIPS),
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
          "median raw CDP round trip of Runtime.evaluate('1')", command_round_trip),
    Check("latency.dialog_seen", "dialog seen ms",
          "median time from sending alert() to the dialog in the supervisor's state",
          dialog_seen_latency),
    Check("latency.dialog_closed", "dialog closed ms",
          "median time from respond() to the dialog closed", dialog_closed_latency),
)
