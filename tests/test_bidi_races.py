"""WebDriver BiDi races and engine quirks played exactly against a scripted BiDi peer
(``cdpnb.testing.ScriptedBiDiBrowser``): what Firefox ESR 153 and Chromium behind
chromium-bidi 17 were measured to do (``cdpnb/state/bidi.py``), at the moment a real
browser does it only by timing. The real browsers prove the same in
``tests/test_conformance.py``.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
from typing import Any

import pytest

import cdpnb
from cdpnb.session.bridge import BRIDGE_HEADER
from cdpnb.testing import ScriptedBiDiBrowser, ScriptedCommand, ScriptedError
from tests.test_dialog_races import hinted, settle

FIREFOX = "Firefox/153.7.0esr"
CHROME = "Chrome/156.0.8078.108"
FRAME = "CONTEXT-FRAME"


def peer(product: str = FIREFOX) -> ScriptedBiDiBrowser:
    """A BiDi browser that closes the prompt an answer names, as both engines do
    (``accepted`` as Firefox reports it: an alert is always accepted)."""
    b = ScriptedBiDiBrowser(product=product)
    kinds: dict[str, str] = {}

    @b.on("browsingContext.handleUserPrompt")
    def answer(command: ScriptedCommand) -> dict[str, Any]:
        context = command.params["context"]
        kind = kinds.get(context, "prompt")
        accepted = True if kind == "alert" and product == FIREFOX else command.params["accept"]
        closed: dict[str, Any] = {"context": context, "type": kind, "accepted": accepted}
        if accepted and "userText" in command.params:
            closed["userText"] = command.params["userText"]
        b.push("browsingContext.userPromptClosed", closed)
        return {}

    original = b.open_prompt

    async def open_prompt(type: str = "alert", message: str = "", **more: Any) -> None:
        kinds[more.get("context") or b.page_frame_id] = type
        await original(type, message, **more)

    b.open_prompt = open_prompt  # type: ignore[method-assign]
    return b


async def test_a_scripted_bidi_peer_is_a_page_with_prompts_answered() -> None:
    b = peer()
    async with await cdpnb.Supervisor.start(b, dialog_timeout_s=30) as sup:
        assert sup.protocol == "bidi" and sup.state.engine == FIREFOX
        assert sup.page_target_id == b.page_target_id
        await b.open_prompt("prompt", "name?", default_value="d")
        dialog = await sup.wait_for_dialog(1)
        assert (dialog.type, dialog.message, dialog.default_prompt, dialog.frame_id) == (
            "prompt", "name?", "d", b.page_target_id)
        record = await sup.respond("accept", prompt_text="Ada")
        [answer] = b.commands("browsingContext.handleUserPrompt")
        assert answer.params == {"context": b.page_target_id, "accept": True,
                                 "userText": "Ada"}
        assert (record.closed_by, record.prompt_text, record.accepted) == ("agent", "Ada", True)
    assert b.commands("session.end")


async def test_firefoxs_accepted_alert_is_still_the_dismissers() -> None:
    """Firefox reports every alert closed ``accepted: true``: a dismissal (the agent's,
    the policy's) stays the dismisser's, the record holds the dismissal with the
    browser's word beside it, and no client is suspected."""
    b = peer()
    async with await cdpnb.Supervisor.start(b, dialog_timeout_s=30) as sup:
        await b.open_prompt("alert", "hi")
        record = await sup.respond("dismiss")
        assert (record.closed_by, record.accepted, record.browser_accepted) == (
            "agent", False, True)
        assert sup.hints == [] and not sup.bridge_enabled
        await b.open_prompt("alert", "again")
        record = await sup.respond("accept")  # the browser agrees: nothing beside it
        assert (record.accepted, record.browser_accepted) == (True, None)


async def test_a_frames_prompt_closed_as_its_parent_navigates_it_is_the_navigations() -> None:
    """Firefox closes a frame's prompt 50-70 ms after its parent navigates the frame;
    Chromium (behind chromium-bidi) keeps it open and answerable."""
    for product, closes in ((FIREFOX, True), (CHROME, False)):
        b = peer(product)
        async with await cdpnb.Supervisor.start(b, dialog_timeout_s=30) as sup:
            await b.add_frame(FRAME)
            await b.open_prompt("prompt", "stay?", context=FRAME)
            await b.emit("browsingContext.navigationStarted", {
                "context": FRAME, "navigation": "N-1", "url": "http://x.test/"})
            [dialog] = sup.state.pending_dialogs
            assert dialog.answerable is not closes
            if closes:
                await b.emit("browsingContext.userPromptClosed",
                             {"context": FRAME, "type": "prompt", "accepted": False})
                [record] = sup.state.recent_dialogs
                assert (record.closed_by, record.reason) == ("browser", "navigation")
            else:
                record = await sup.respond("accept", prompt_text="yes")
                assert record.closed_by == "agent"


@pytest.mark.parametrize("close_after_s", [0.0, 0.05, None])
async def test_navigate_returns_once_the_browser_closed_the_prompt_it_navigated_over(
        close_after_s: float | None) -> None:
    """Firefox ESR 153 (4 runs in 20): the ``userPromptClosed`` of an alert the
    navigation closed comes a few ms *after* ``navigate``'s reply. navigate() returns
    with it recorded; a close that never comes is a stuck page, freed as any other."""
    b = peer()

    @b.on("browsingContext.navigate")
    def navigate(command: ScriptedCommand) -> dict[str, Any]:
        b.push("browsingContext.navigationStarted", {
            "context": b.page_frame_id, "navigation": "N-1", "url": command.params["url"]})
        closed = {"context": b.page_frame_id, "type": "alert", "accepted": True}
        if close_after_s is not None:
            asyncio.get_running_loop().call_later(
                close_after_s, b.push, "browsingContext.userPromptClosed", closed)
        return {"navigation": "N-1", "url": command.params["url"]}

    async with await cdpnb.Supervisor.start(b, dialog_timeout_s=30) as sup:
        await b.open_prompt("alert", "navigated away")
        if close_after_s is None:
            # (the page is freed when navigate returns, or soon after under load)
            with pytest.warns(cdpnb.CdpnbWarning, match="replaced by a fresh"):
                await sup.navigate("http://x.test/next")
                await hinted(sup, "replaced by a fresh", timeout=30)
            [record] = sup.state.recent_dialogs  # recorded, not lost
            assert (record.message, record.closed_by) == ("navigated away", "cdpnb")
        else:
            await sup.navigate("http://x.test/next")
            [record] = sup.state.recent_dialogs
            assert (record.message, record.closed_by, record.reason) == (
                "navigated away", "browser", "navigation")
            assert sup.state.pending_dialogs == ()


async def test_a_prompt_closed_before_it_was_announced_is_recorded() -> None:
    b = peer()
    async with await cdpnb.Supervisor.start(b, dialog_timeout_s=30) as sup:
        await b.add_frame(FRAME)
        await b.emit("browsingContext.userPromptClosed",
                     {"context": FRAME, "type": "confirm", "accepted": False})
        [record] = sup.state.recent_dialogs
        assert (record.type, record.frame_id, record.closed_by, record.reason) == (
            "confirm", FRAME, "browser", "unannounced")
        assert sup.state.pending_dialogs == ()


async def test_a_navigation_lets_a_bridged_call_go_over_bidi_before_the_next_message() -> None:
    """Over BiDi too: ``navigationStarted`` of the frame (or an ancestor) ends a bridged
    dialog in it, and ``network.provideResponse`` with a dismissal is on the wire before
    the browser's next message is read."""
    b = peer()
    async with await cdpnb.Supervisor.start(b, bridge=True, dialog_timeout_s=30) as sup:
        await b.add_frame(FRAME)
        script = b.commands("script.addPreloadScript")[0].params["functionDeclaration"]
        key = re.search(r'const key = "([^"]+)"', script).group(1)  # type: ignore[union-attr]
        call = json.dumps({"key": key, "type": "prompt", "message": "m",
                           "defaultPrompt": ""}).encode()
        await b.emit("network.beforeRequestSent", {
            "context": FRAME, "isBlocked": True, "navigation": None, "redirectCount": 0,
            "request": {"request": "R-1", "url": "http://cdpnb-bridge.invalid/dialog",
                        "method": "POST", "headers": [{"name": BRIDGE_HEADER, "value": {
                            "type": "string", "value": base64.b64encode(call).decode()}}]},
            "timestamp": 0})
        [dialog] = sup.state.pending_dialogs
        assert (dialog.via, dialog.frame_id, dialog.request_id) == ("bridge", FRAME, "R-1")
        b.push("browsingContext.navigationStarted",
               {"context": b.page_target_id, "navigation": "N-1", "url": "http://x.test/"})
        [release] = b.commands("network.provideResponse")
        assert release.params["request"] == "R-1" and release.params["statusCode"] == 200
        assert json.loads(release.params["body"]["value"]) == {"accept": False,
                                                               "promptText": None}
        [record] = sup.state.recent_dialogs
        assert (record.closed_by, record.reason, record.via) == ("browser", "navigation",
                                                                 "bridge")


async def test_chromium_behind_bidi_overlap_is_released_through_goog_cdp() -> None:
    """Chromium behind chromium-bidi: a frame's prompt over the page's supersedes it and
    loses its own handle (answers fail "no such alert"); cdpnb releases it with a
    same-document navigation sent through ``goog:cdp.sendCommand``."""
    b = peer(CHROME)
    sent: list[tuple[str, dict[str, Any]]] = []

    @b.on("goog:cdp.getSession")
    def session(command: ScriptedCommand) -> dict[str, Any]:
        return {"session": "CDP-SESSION"}

    @b.on("goog:cdp.sendCommand")
    def cdp(command: ScriptedCommand) -> dict[str, Any]:
        method, params = command.params["method"], command.params.get("params", {})
        sent.append((method, params))
        if method == "Page.getNavigationHistory":
            return {"result": {"currentIndex": 0, "entries": [
                {"id": 1, "url": "http://x.test/page", "title": ""}]}}
        if method == "Page.navigate":  # Chromium: closes the orphaned dialog
            b.push("browsingContext.userPromptClosed",
                   {"context": FRAME, "type": "prompt", "accepted": False})
        return {"result": {}}

    @b.on("browsingContext.handleUserPrompt")
    def lost(command: ScriptedCommand) -> dict[str, Any]:
        raise ScriptedError(-32000, "no such alert: No dialog is showing")

    with pytest.warns(cdpnb.CdpnbWarning, match="released it"):
        async with await cdpnb.Supervisor.start(b, dialog_timeout_s=30) as sup:
            await b.add_frame(FRAME)
            await b.open_prompt("prompt", "page?")
            await b.open_prompt("prompt", "frame?", context=FRAME)
            first, second = sup.state.pending_dialogs
            assert (first.unanswerable, second.unanswerable) == ("superseded", "orphaned")
            await b.emit("browsingContext.userPromptClosed",
                         {"context": b.page_target_id, "type": "prompt", "accepted": False})
            await settle(sup, lambda s: not s.pending_dialogs)
            await hinted(sup, "released it")
            records = {r.id: r for r in sup.state.recent_dialogs}
            assert (records[first.id].closed_by, records[first.id].reason) == (
                "browser", "superseded")
            assert (records[second.id].closed_by, records[second.id].reason) == (
                "cdpnb", "released")
            assert [m for m, _ in sent] == ["Page.getNavigationHistory", "Page.navigate",
                                            "Runtime.evaluate"]
            assert sent[1][1] == {"url": "http://x.test/page#"}
            assert b.commands("browsingContext.handleUserPrompt") == []


async def test_a_ghost_behind_bidi_freezes_and_abandons_the_page_never_closes_it() -> None:
    """Chromium behind chromium-bidi keeps a removed frame's dialog dangling: the page
    is frozen through ``goog:cdp``, abandoned, and a fresh tab becomes the supervisor's;
    nothing ever closes the hazardous tab."""
    b = peer(CHROME)

    @b.on("goog:cdp.getSession")
    def session(command: ScriptedCommand) -> dict[str, Any]:
        return {"session": "CDP-SESSION"}

    with pytest.warns(cdpnb.CdpnbWarning, match="crashes|replaced by a fresh"):
        async with await cdpnb.Supervisor.start(b, dialog_timeout_s=30) as sup:
            first = sup.page_target_id
            await b.add_frame(FRAME)
            await b.open_prompt("prompt", "ghost?", context=FRAME)
            await b.emit("browsingContext.contextDestroyed", {
                "context": FRAME, "parent": first, "url": "about:blank", "children": None,
                "userContext": "default", "originalOpener": None})
            await hinted(sup, "froze it at once")
            await settle(sup, lambda s: s.page_target_id not in (None, first))
            frozen = [c.params for c in b.commands("goog:cdp.sendCommand")]
            assert {"method": "Page.setWebLifecycleState", "params": {"state": "frozen"},
                    "session": "CDP-SESSION"} in frozen
    closed = [c.params["context"] for c in b.commands("browsingContext.close")]
    assert first not in closed and closed  # the fresh tab was closed at stop, not this one
