"""Probe checks: each drives a live supervisor through one scenario and says what happened.

A check returns ``(status, detail, value)``: status ``ok`` / ``fail`` / ``partial``;
``detail`` says why in words; ``value`` is a measurement where there is one.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from cdpnb.errors import CdpnbError
from cdpnb.probes.server import ScenarioServer
from cdpnb.supervisor import Supervisor

__all__ = ["CHECKS", "Check", "Outcome"]

Outcome = tuple[str, str, float | None]
Driver = Callable[[Supervisor, ScenarioServer], Awaitable[Outcome]]

FRAMES = ("main", "srcdoc", "oopif")
# (dialog call, answer, prompt text, expected [typeof, value] in page JS)
DIALOG_ROUND_TRIPS: dict[str, tuple[str, str, str | None, list[Any]]] = {
    "alert": ("alert('probe')", "accept", None, ["undefined", None]),
    "confirm": ("confirm('probe')", "accept", None, ["boolean", True]),
    "prompt": ("prompt('probe', 'default')", "accept", "answer-42", ["string", "answer-42"]),
}


@dataclass(frozen=True)
class Check:
    name: str
    capability: str
    description: str
    driver: Driver


async def _frame_ids(sup: Supervisor, site: ScenarioServer) -> dict[str, str]:
    await sup.navigate(site.url("/two-site"), timeout=10)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        tree = sup.frame_tree()
        oopif = next((c for c in tree.children if c.is_oopif and c.url.endswith("/child")), None)
        srcdoc = next((c for c in tree.children if c.url == "about:srcdoc"), None)
        if tree.top is not None and oopif is not None and srcdoc is not None:
            return {"main": tree.top.frame_id, "srcdoc": srcdoc.frame_id,
                    "oopif": oopif.frame_id}
        await asyncio.sleep(0.02)
    raise CdpnbError("the two-site page never showed a srcdoc frame and an OOPIF: "
                     f"{sup.frame_tree().model_dump()}")


async def oopif_stitched(sup: Supervisor, site: ScenarioServer) -> Outcome:
    ids = await _frame_ids(sup, site)
    node = sup.frame_tree().find(ids["oopif"])
    assert node is not None
    if node.parent_frame_id != ids["main"] or node.session_id is None:
        return "partial", f"OOPIF seen but not stitched under the main frame: {node}", None
    return "ok", f"OOPIF {node.url} on session {node.session_id[:8]}…", None


async def oopif_evaluate(sup: Supervisor, site: ScenarioServer) -> Outcome:
    ids = await _frame_ids(sup, site)
    title = await sup.evaluate("document.title", frame_id=ids["oopif"], timeout=5)
    if title != "child":
        return "fail", f"evaluate in the OOPIF returned {title!r}, expected 'child'", None
    return "ok", "Runtime.evaluate routed to the OOPIF session", None


def dialog_check(kind: str, frame: str) -> Driver:
    call, action, text, expected = DIALOG_ROUND_TRIPS[kind]

    async def drive(sup: Supervisor, site: ScenarioServer) -> Outcome:
        ids = await _frame_ids(sup, site)
        frame_id = ids[frame]
        await sup.evaluate(f"setTimeout(() => {{ window.__r = {call}; }}, 0); 0",
                           frame_id=frame_id, timeout=5)
        began = time.monotonic()
        dialog = await sup.wait_for_dialog(timeout=5)
        seen_ms = (time.monotonic() - began) * 1000
        if dialog.frame_id != frame_id:
            return "partial", f"seen with frame_id {dialog.frame_id}, not {frame_id}", seen_ms
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


async def beforeunload(sup: Supervisor, site: ScenarioServer) -> Outcome:
    await sup.navigate(site.url("/beforeunload"), timeout=10)
    await sup.cdp("Runtime.evaluate", {"expression": "1", "userGesture": True})
    leaving = asyncio.ensure_future(sup.navigate(site.url("/blank"), timeout=10))
    try:
        dialog = await sup.wait_for_dialog(timeout=5)
    except CdpnbError as exc:
        leaving.cancel()
        return "fail", f"no beforeunload dialog after a user gesture: {exc}", None
    await sup.respond("accept", dialog_id=dialog.id)
    await leaving
    return "ok", "beforeunload seen after a gesture; accepting let the navigation go on", None


async def command_round_trip(sup: Supervisor, site: ScenarioServer) -> Outcome:
    samples = []
    for _ in range(30):
        began = time.perf_counter()
        await sup.cdp("Runtime.evaluate", {"expression": "1"})
        samples.append((time.perf_counter() - began) * 1000)
    median = statistics.median(samples)
    return "ok", f"median of {len(samples)} Runtime.evaluate round trips", median


CHECKS: tuple[Check, ...] = (
    Check("frames.oopif_stitched", "frame tree + OOPIF",
          "the cross-site iframe appears as an OOPIF under the main frame", oopif_stitched),
    Check("evaluate.oopif", "evaluate in OOPIF",
          "Runtime.evaluate with frame_id reaches the OOPIF", oopif_evaluate),
    *(Check(f"dialog.{kind}.{frame}", f"dialogs {frame}",
            f"{kind}() in the {frame} frame is seen, answered and round-trips into page JS",
            dialog_check(kind, frame))
      for frame in FRAMES for kind in DIALOG_ROUND_TRIPS),
    Check("dialog.beforeunload.main", "beforeunload",
          "beforeunload after a user gesture is seen and answered", beforeunload),
    Check("latency.command_rtt", "command RTT ms",
          "median raw CDP round trip of Runtime.evaluate('1')", command_round_trip),
)
