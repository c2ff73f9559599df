"""The dialog bridge against real Chromium: every frame, policies, CSP, fallbacks."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
import websockets

import cdpnb
from cdpnb.probes import ScenarioServer
from cdpnb.session.bridge import BRIDGE_HOST
from tests.conftest import open_two_site, settle

CASES = [
    ("alert('a')", "accept", None, ["undefined", None]),
    ("confirm('c')", "accept", None, ["boolean", True]),
    ("confirm('c')", "dismiss", None, ["boolean", False]),
    ("prompt('p', 'd')", "accept", "bridged <b>ü</b>", ["string", "bridged <b>ü</b>"]),
    ("prompt('p', 'd')", "accept", None, ["string", "d"]),  # OK without text: the default
    ("prompt('p', 'd')", "dismiss", None, ["object", None]),
]


@pytest.fixture
async def bridged(chromium: cdpnb.Backend) -> AsyncIterator[cdpnb.Supervisor]:
    supervisor = await cdpnb.Supervisor.start(chromium, bridge=True, dialog_timeout_s=30)
    yield supervisor
    await supervisor.stop()


async def _open(sup: cdpnb.Supervisor, frame_id: str, call: str) -> cdpnb.PendingDialog:
    await sup.evaluate(f"setTimeout(() => {{ window.__r = {call}; }}, 0); 0", frame_id=frame_id)
    return await sup.wait_for_dialog(timeout=5)


async def _result(sup: cdpnb.Supervisor, frame_id: str) -> Any:
    return await sup.evaluate("[typeof window.__r, window.__r ?? null]", frame_id=frame_id)


@pytest.mark.parametrize("frame", ["main", "srcdoc", "oopif"])
async def test_bridged_dialogs_round_trip_in_every_frame(bridged: cdpnb.Supervisor,
                                                         site: ScenarioServer,
                                                         frame: str) -> None:
    ids = await open_two_site(bridged, site)
    for call, action, text, expected in CASES:
        dialog = await _open(bridged, ids[frame], call)
        assert dialog.via == "bridge"
        assert dialog.frame_id == ids[frame]
        assert dialog.message in ("a", "c", "p")
        record = await bridged.respond(action, prompt_text=text, dialog_id=dialog.id)
        assert (record.via, record.closed_by) == ("bridge", "agent")
        assert await _result(bridged, ids[frame]) == expected, (call, action, text)
    assert bridged.stats().get("fast-remote-dismissals") is None


async def test_bridged_prompt_default_is_shown_and_policies_apply(chromium: cdpnb.Backend,
                                                                  site: ScenarioServer) -> None:
    async with await cdpnb.Supervisor.start(chromium, bridge=True,
                                            policy="auto_accept") as sup:
        ids = await open_two_site(sup, site)
        await sup.evaluate("window.__r = prompt('name?', 'the default')", frame_id=ids["oopif"])
        record = sup.snapshot().recent_dialogs[-1]
        assert (record.via, record.closed_by, record.default_prompt) == \
            ("bridge", "auto_policy", "the default")
        assert await sup.evaluate("window.__r", frame_id=ids["oopif"]) == "the default"


async def test_the_watchdog_answers_a_forgotten_bridged_dialog(chromium: cdpnb.Backend,
                                                               site: ScenarioServer) -> None:
    async with await cdpnb.Supervisor.start(chromium, bridge=True, dialog_timeout_s=0.3) as sup:
        ids = await open_two_site(sup, site)
        # The page is blocked inside confirm() until the watchdog dismisses it.
        assert await sup.evaluate("confirm('anyone?')", frame_id=ids["main"], timeout=5) is False
        assert sup.snapshot().recent_dialogs[-1].closed_by == "watchdog"


async def test_a_strict_csp_falls_back_to_native_unless_bypassed(chromium: cdpnb.Backend,
                                                                 site: ScenarioServer) -> None:
    for bypass, via in ((False, "native"), (True, "bridge")):
        async with await cdpnb.Supervisor.start(chromium, bridge=True,
                                                bypass_csp=bypass) as sup:
            await sup.navigate(site.url("/csp"))
            dialog = await _open(sup, sup.frame_tree().top.frame_id, "prompt('csp?')")  # type: ignore[union-attr]
            assert dialog.via == via, f"bypass_csp={bypass}"
            await sup.respond("accept", prompt_text="through", dialog_id=dialog.id)
            assert await sup.evaluate("window.__r") == "through"


async def test_a_sandboxed_frame_without_allow_modals(chromium: cdpnb.Backend,
                                                      site: ScenarioServer) -> None:
    """The bridge answers where the browser blocks a native prompt: a finding."""
    outcomes = {}
    for bridge in (False, True):
        async with await cdpnb.Supervisor.start(chromium, bridge=bridge) as sup:
            await sup.navigate(site.url("/sandboxed"))
            await settle(sup, lambda s: any(f.url.endswith("/child") for f in s.frames.values()))
            frame = next(c for c in sup.frame_tree().children if c.url.endswith("/child"))
            expression = "setTimeout(() => { window.__r = prompt('boxed', 'd'); }, 0); 0"
            await sup.evaluate(expression, frame_id=frame.frame_id)
            try:
                dialog = await sup.wait_for_dialog(timeout=1)
                await sup.respond("accept", prompt_text="answered", dialog_id=dialog.id)
            except cdpnb.WaitTimeout:
                pass
            outcomes[bridge] = await _result(sup, frame.frame_id)
    assert outcomes == {False: ["object", None], True: ["string", "answered"]}


async def test_other_paused_requests_are_let_through(bridged: cdpnb.Supervisor,
                                                     site: ScenarioServer) -> None:
    # Widen interception to every request on the page: the bridge must continue the
    # ones that are not its own, or the page would never load.
    await bridged.cdp("Fetch.enable", {"patterns": [{"urlPattern": "*"}]})
    await bridged.navigate(site.url("/blank"), timeout=10)
    assert await bridged.evaluate("document.title") == "blank"


async def test_the_bridge_host_is_never_asked_for(bridged: cdpnb.Supervisor,
                                                  site: ScenarioServer) -> None:
    ids = await open_two_site(bridged, site)
    dialog = await _open(bridged, ids["main"], "alert('x')")
    await bridged.respond("accept", dialog_id=dialog.id)
    assert not any(BRIDGE_HOST in host or BRIDGE_HOST in path for host, path in site.requests)


async def _auto_dismisser(backend: cdpnb.Backend, target_id: str,
                          ready: asyncio.Event) -> None:
    """A second CDP client that closes every dialog at once, like Playwright does."""
    async with websockets.connect(backend.cdp_url) as ws:
        await ws.send(json.dumps({"id": 1, "method": "Target.attachToTarget",
                                  "params": {"targetId": target_id, "flatten": True}}))
        session = None
        next_id = 2
        async for raw in ws:
            msg = json.loads(raw)
            if msg.get("id") == 1:
                session = msg["result"]["sessionId"]
                await ws.send(json.dumps({"id": next_id, "method": "Page.enable",
                                          "sessionId": session}))
                next_id += 1
            elif msg.get("id") == 2:
                ready.set()
            elif msg.get("method") == "Page.javascriptDialogOpening":
                await ws.send(json.dumps({"id": next_id, "method": "Page.handleJavaScriptDialog",
                                          "params": {"accept": False}, "sessionId": session}))
                next_id += 1


async def test_auto_turns_the_bridge_on_when_dialogs_are_closed_remotely(
        chromium: cdpnb.Backend, site: ScenarioServer) -> None:
    async with await cdpnb.Supervisor.start(chromium.cdp_url, bridge="auto") as sup:
        assert not sup.bridge_enabled
        ids = await open_two_site(sup, site)
        ready = asyncio.Event()
        other = asyncio.create_task(_auto_dismisser(chromium, sup.page_target_id or "", ready))
        try:
            await asyncio.wait_for(ready.wait(), 5)
            with pytest.warns(cdpnb.CdpnbWarning, match="auto-dismisses native dialogs"):
                await sup.evaluate("window.__r = prompt('lost?')", frame_id=ids["main"])
                assert await sup.evaluate("window.__r") is None  # dismissed by the other client
                lost = sup.snapshot().recent_dialogs[-1]
                assert (lost.via, lost.closed_by) == ("native", "remote")
                await settle(sup, lambda _: sup.bridge_enabled and len(sup.hints) == 1)
                sup.snapshot()  # the hint is issued as a warning at the next call
            assert "auto-dismisses native dialogs" in sup.hints[0]
            with pytest.raises(cdpnb.NoPendingDialog, match="auto-dismisses"):
                await sup.respond("accept")
            # From now on the bridge answers, in the document already loaded and in the OOPIF.
            for frame in ("main", "oopif"):
                dialog = await _open(sup, ids[frame], "prompt('kept?')")
                await sup.respond("accept", prompt_text=f"kept {frame}", dialog_id=dialog.id)
                assert await sup.evaluate("window.__r", frame_id=ids[frame]) == f"kept {frame}"
        finally:
            other.cancel()


async def test_bridge_false_only_hints(chromium: cdpnb.Backend, site: ScenarioServer) -> None:
    async with await cdpnb.Supervisor.start(chromium.cdp_url, bridge=False) as sup:
        await sup.navigate(site.url("/blank"))
        ready = asyncio.Event()
        other = asyncio.create_task(_auto_dismisser(chromium, sup.page_target_id or "", ready))
        try:
            await asyncio.wait_for(ready.wait(), 5)
            with pytest.warns(cdpnb.CdpnbWarning, match="bridge=True"):
                await sup.evaluate("alert('gone')")
                await settle(sup, lambda _: len(sup.hints) == 1)
                sup.snapshot()  # the hint is issued as a warning at the next call
            assert "bridge=True" in sup.hints[0] and not sup.bridge_enabled
        finally:
            other.cancel()


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"bridge": "sometimes"}, "bridge must be True, False or 'auto'"),
    ({"bypass_csp": "yes"}, "bypass_csp must be True or False"),
])
async def test_bad_bridge_arguments_name_themselves(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises((ValueError, TypeError), match=message):
        await cdpnb.Supervisor.start("http://127.0.0.1:9", **kwargs)


@pytest.mark.browser
async def test_fifty_prompts_behind_playwright_all_answered_through_the_bridge(
        site: ScenarioServer) -> None:
    """Playwright dismisses every native dialog within milliseconds; bridged ones are ours."""
    async with cdpnb.launch("chromium+playwright") as backend:
        sup = await cdpnb.Supervisor.start(backend, dialog_timeout_s=30)
        async with sup:
            assert sup.bridge_enabled  # "auto" knows this backend auto-dismisses
            ids = await open_two_site(sup, site)
            answers: list[str] = []
            for n in range(50):
                frame = ids["oopif"] if n % 2 else ids["main"]
                dialog = await _open(sup, frame, f"prompt('question {n}', 'd{n}')")
                assert (dialog.via, dialog.message) == ("bridge", f"question {n}")
                await sup.respond("accept", prompt_text=f"answer {n}", dialog_id=dialog.id)
                answers.append(await sup.evaluate("window.__r", frame_id=frame))
            assert answers == [f"answer {n}" for n in range(50)]
            history = sup.state
            assert history.dialog_seq == 50 and history.dialogs_closed_total == 50
            assert {r.closed_by for r in history.recent_dialogs} == {"agent"}
            assert sup.stats().get("fast-remote-dismissals") is None
