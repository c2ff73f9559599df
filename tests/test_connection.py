"""Endpoints, connection loss, reconnect, and bad input from the wire.

Real Chromium behind a proxy: the proxy only adds faults a browser will not
produce on demand (a dropped link, garbage frames, a refused dialog answer).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
import warnings
from collections.abc import AsyncIterator

import pytest
from cdp_proxy import CDPProxy
from conftest import hint_saying, open_two_site, settle, until_hinted

import cdpnb
from cdpnb.probes import ScenarioServer


@pytest.fixture
async def proxy(chromium: cdpnb.Backend) -> AsyncIterator[CDPProxy]:
    p = await CDPProxy(chromium.cdp_url).start()
    yield p
    await p.close()


async def test_start_resolves_an_http_endpoint(chromium: cdpnb.Backend) -> None:
    async with await cdpnb.Supervisor.start(chromium.http_url) as sup:
        assert sup.connected
        assert sup.snapshot().page_target_id is not None
        assert await sup.evaluate("1 + 1") == 2


async def test_bad_endpoints_and_arguments_fail_clearly(site: ScenarioServer) -> None:
    with pytest.raises(TypeError, match="url must be a CDP URL string"):
        await cdpnb.Supervisor.start(123)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="ws://, wss:// or http://"):
        await cdpnb.Supervisor.start("ftp://127.0.0.1/x")
    with pytest.raises(ValueError, match="policy must be one of"):
        await cdpnb.Supervisor.start("ws://127.0.0.1:1/x", policy="sometimes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="dialog_timeout_s must be a positive number"):
        await cdpnb.Supervisor.start("ws://127.0.0.1:1/x", dialog_timeout_s=0)
    began = time.monotonic()
    with pytest.raises(cdpnb.EndpointError, match="cannot open WebSocket"):
        await cdpnb.Supervisor.start("ws://127.0.0.1:1/devtools/browser/x")
    # A plain HTTP server is not a CDP endpoint.
    with pytest.raises(cdpnb.EndpointError, match="cannot reach|json/version"):
        await cdpnb.Supervisor.start(site.site_a)
    assert time.monotonic() - began < 5


async def test_credentials_in_urls_never_reach_errors() -> None:
    with pytest.raises(cdpnb.EndpointError) as info:
        await cdpnb.Supervisor.start("ws://user:hunter2@127.0.0.1:1/devtools/browser/x?token=s3cret")
    assert "hunter2" not in str(info.value) and "s3cret" not in str(info.value)


@pytest.mark.browser
async def test_browser_killed_mid_command_fails_fast_and_says_so(site: ScenarioServer) -> None:
    # (The "ended for good" hint: told once, at whichever call follows it; see
    # tests/test_faults.py.)
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always", cdpnb.CdpnbWarning)
        async with cdpnb.launch("headless-shell") as backend:
            sup = await cdpnb.Supervisor.start(backend.cdp_url, reconnect_attempts=0)
            await sup.navigate(site.url("/blank"))
            hanging = asyncio.ensure_future(sup.evaluate("new Promise(() => {})"))
            await asyncio.sleep(0.1)
            os.kill(backend.pid, signal.SIGKILL)
            began = time.monotonic()
            with pytest.raises(cdpnb.ConnectionLost, match="Runtime.evaluate failed"):
                await asyncio.wait_for(hanging, 5)
            assert time.monotonic() - began < 1.0
            assert sup.snapshot().connected is False
            assert not sup.alive
            with pytest.raises(cdpnb.ConnectionLost, match="is down"):
                await sup.evaluate("1")
            await until_hinted(sup, "ended for good")
            await sup.stop()
        assert not backend.running
    assert [str(w.message) for w in warned].count(hint_saying(sup, "ended for good")) == 1


async def test_dropped_connection_reconnects_to_the_same_page_with_fresh_state(
    proxy: CDPProxy, site: ScenarioServer
) -> None:
    async with await cdpnb.Supervisor.start(proxy.url, reconnect_attempts=3) as sup:
        ids = await open_two_site(sup, site)
        target = sup.page_target_id
        hanging = asyncio.ensure_future(sup.evaluate("new Promise(() => {})"))
        await asyncio.sleep(0.05)
        await proxy.drop()
        with pytest.raises(cdpnb.ConnectionLost, match="lost"):
            await asyncio.wait_for(hanging, 2)
        await settle(sup, lambda s: sup.stats().get("reconnects") == 1)
        # The OOPIF re-attaches (setAutoAttach) before the page's frame tree reply lands,
        # and is known under its parent once that reply has (beside two busy processes
        # the tree was read in between once: the frame known, not yet the page's child).
        children = {ids["srcdoc"], ids["oopif"]}
        await settle(sup, lambda s: s.connected and set(s.frames) >= set(ids.values())
                     and {c.frame_id for c in sup.frame_tree().children} == children)
        assert sup.page_target_id == target
        tree = sup.frame_tree()
        assert tree.top is not None and tree.top.frame_id == ids["main"]
        assert {c.frame_id for c in tree.children} == children
        assert await sup.evaluate("document.title", frame_id=ids["oopif"]) == "child"
        assert "pages-replaced" not in sup.stats()


@pytest.mark.logs_warnings  # the page replaced after a reconnect is worth a warning
async def test_dialog_open_across_a_dropped_connection_gets_a_fresh_page(
    proxy: CDPProxy, site: ScenarioServer
) -> None:
    async with await cdpnb.Supervisor.start(proxy.url, reconnect_attempts=3) as sup:
        await open_two_site(sup, site)
        target = sup.page_target_id
        await sup.evaluate("setTimeout(() => { window.r = confirm('across') }, 0)")
        dialog = await sup.wait_for_dialog(timeout=5)
        await proxy.drop()
        # Nothing stale: the dialog we can no longer answer is history, not pending.
        await settle(sup, lambda s: not s.pending_dialogs)
        assert sup.snapshot().recent_dialogs[-1].id == dialog.id
        last = sup.snapshot().recent_dialogs[-1]
        assert (last.closed_by, last.reason) == ("cdpnb", "disconnected")
        await settle(sup, lambda s: sup.stats().get("reconnects") == 1, timeout=10)
        assert sup.stats()["pages-replaced"] == 1
        assert sup.page_target_id != target
        assert await sup.evaluate("1 + 1") == 2
        await sup.navigate(site.url("/blank"))
        assert sup.snapshot().frame_tree.top is not None


@pytest.mark.logs_warnings  # a peer sending bad frames is worth a warning
async def test_garbage_from_the_wire_is_counted_and_never_ends_the_reader(
    proxy: CDPProxy, site: ScenarioServer
) -> None:
    async with await cdpnb.Supervisor.start(proxy.url) as sup:
        await sup.navigate(site.url("/blank"))
        frames_before = dict(sup.state.frames)
        page = sup.page_session_id
        for frame in [
            "{not json",
            b"\x00\x01binary",
            "[1, 2, 3]",
            json.dumps({"id": 987654, "result": {}}),
            json.dumps({"method": "Page.frameNavigated", "params": {"frame": {"id": "X"}},
                        "sessionId": "NO-SUCH-SESSION"}),
            json.dumps({"method": "Page.frameNavigated", "params": {"frame": {"id": None}},
                        "sessionId": page}),
            json.dumps({"method": "Page.javascriptDialogOpening", "params": {"type": "nope"},
                        "sessionId": page}),
        ]:
            await proxy.inject(frame)
        assert await sup.evaluate("6 * 7") == 42
        stats = sup.stats()
        for key in ["fault:malformed-json", "fault:binary-frame", "fault:not-an-object",
                    "fault:unknown-id", "fault:unknown-session",
                    "malformed:Page.frameNavigated", "malformed:Page.javascriptDialogOpening"]:
            assert stats.get(key) == 1, (key, stats)
        assert dict(sup.state.frames) == frames_before
        assert sup.snapshot().pending_dialogs == ()


async def test_endpoint_that_never_answers_times_out_cleanly(proxy: CDPProxy) -> None:
    proxy.mute = True
    began = time.monotonic()
    with pytest.raises(cdpnb.CommandTimeout, match="got no reply within 0.5 s"):
        await cdpnb.Supervisor.start(proxy.url, command_timeout_s=0.5)
    assert time.monotonic() - began < 3
    proxy.mute = False
    async with await cdpnb.Supervisor.start(proxy.url) as sup:
        proxy.mute = True
        # A script-running command is then ended; on a mute endpoint that fails too, and
        # the target that answers nothing is said held (alive False) until it answers.
        with pytest.warns(cdpnb.CdpnbWarning, match="could not end holds the target"), \
                pytest.raises(cdpnb.CommandTimeout, match="Runtime.evaluate") as caught:
            await sup.cdp("Runtime.evaluate", {"expression": "1"}, timeout=0.3)
        assert isinstance(caught.value, cdpnb.EvaluateTimeout)
        assert caught.value.ended_by == "terminate failed"
        assert not sup.alive
        proxy.mute = False
        assert await sup.evaluate("2") == 2  # still usable afterwards
        await settle(sup, lambda s: sup.alive)  # (the probe held back was answered)
        stats = sup.stats()
        assert stats["command-timeouts"] == 2  # the evaluate and its terminateExecution
        assert stats["evaluate-timeouts"] == 1


async def test_failed_dialog_answer_is_never_recorded_as_answered(
    proxy: CDPProxy, site: ScenarioServer
) -> None:
    async with await cdpnb.Supervisor.start(proxy.url) as sup:
        await sup.navigate(site.url("/blank"))
        await sup.evaluate("setTimeout(() => { window.r = confirm('refused') }, 0)")
        dialog = await sup.wait_for_dialog(timeout=5)
        proxy.fail_methods["Page.handleJavaScriptDialog"] = {"code": -32000,
                                                             "message": "injected refusal"}
        with pytest.raises(cdpnb.DialogResponseFailed, match="injected refusal"):
            await sup.respond("accept")
        snap = sup.snapshot()
        assert [d.id for d in snap.pending_dialogs] == [dialog.id]
        assert snap.pending_dialogs[0].answering is None
        assert snap.recent_dialogs == ()
        del proxy.fail_methods["Page.handleJavaScriptDialog"]
        record = await sup.respond("accept")
        assert record.closed_by == "agent" and record.accepted is True
        assert await sup.evaluate("window.r") is True


async def test_several_pending_dialogs_need_an_id(chromium: cdpnb.Backend,
                                                  site: ScenarioServer) -> None:
    # One native dialog per page is answerable, but bridged ones are one per frame: two
    # frames, two open dialogs, and respond() needs to be told which.
    async with await cdpnb.Supervisor.start(chromium, bridge=True) as sup:
        frames = await open_two_site(sup, site)
        await sup.evaluate("setTimeout(() => { window.r = confirm('first') }, 0)")
        first = await sup.wait_for_dialog(timeout=5)
        await sup.evaluate("setTimeout(() => { window.r = alert('second') }, 0)",
                           frame_id=frames["oopif"])
        await settle(sup, lambda s: len(s.pending_dialogs) == 2)
        with pytest.raises(cdpnb.SeveralPendingDialogs, match=r"d-1 \(confirm 'first'\); "
                                                              r"d-2 \(alert 'second'\)"):
            await sup.respond("accept")
        record = await sup.respond("dismiss", dialog_id=first.id)
        assert record.id == first.id and record.accepted is False
        assert await sup.evaluate("window.r") is False
        await sup.respond("accept")  # one left: no id needed
