"""Lightpanda's CDP quirks, handled honestly: the existing dialog, frame and evaluate
scenarios run against a real ``lightpanda serve`` through ``cdpnb.Supervisor``.

Measured (lightpanda 1.0.2; ``cdpnb/state/engines.py`` has the whole account): no site
isolation (every frame, cross-site ones included, in the page's one session); dialogs
never block (page JS gets undefined / false / null at once, ``javascriptDialogOpening``
has no ``frameId``, nothing closes it, ``Page.handleJavaScriptDialog`` always fails);
``LP.handleJavaScriptDialog`` arms one answer; a DOM node deep-serialises as an empty
object; ``Browser.getVersion`` claims to be Chrome 124.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from conftest import settle

import cdpnb
from cdpnb.probes import ScenarioServer

#: (call, what page JS gets: [typeof, value])
CALLS = [
    ("alert('A')", ["undefined", None], "undefined"),
    ("confirm('C')", ["boolean", False], "false"),
    ("prompt('P', 'def')", ["object", None], "null"),
]


@pytest.fixture(scope="module")
def lightpanda() -> Iterator[cdpnb.Backend]:
    with cdpnb.launch("lightpanda") as backend:
        yield backend


@pytest.fixture
async def lp(lightpanda: cdpnb.Backend) -> AsyncIterator[cdpnb.Supervisor]:
    # A short watchdog: a dialog left pending would be dismissed (and fail) within the test.
    supervisor = await cdpnb.Supervisor.start(lightpanda, dialog_timeout_s=0.3)
    yield supervisor
    await supervisor.stop()


async def open_probe(sup: cdpnb.Supervisor, site: ScenarioServer) -> dict[str, str]:
    """The probe page: main, srcdoc, a cross-site frame and one nested in it; frame ids."""
    await sup.navigate(site.url("/probe"))
    await settle(sup, lambda s: any(f.url.endswith("/nest?depth=0") for f in s.frames.values()))
    frames = {f.url: f.frame_id for f in sup.state.frames.values()}
    return {"main": frames[site.url("/probe")], "srcdoc": frames["about:srcdoc"],
            "cross": frames[site.url("/nest?depth=1", site="b")],
            "nested": frames[site.url("/nest?depth=0")]}


async def test_the_engine_is_known_from_the_backend_or_json_version(
        lightpanda: cdpnb.Backend) -> None:
    # Browser.getVersion does not say so (measured): it claims to be Chrome 124
    for target in (lightpanda, lightpanda.url, lightpanda.http_url):
        sup = await cdpnb.Supervisor.start(target)
        try:
            assert sup.browser_version["product"].startswith("Chrome/")
            assert sup.state.dialogs_block is False
            assert sup.state.engine == "Lightpanda/1.0"
        finally:
            await sup.stop()


async def test_no_site_isolation_every_frame_in_the_page_session(
        lp: cdpnb.Supervisor, site: ScenarioServer) -> None:
    frames = await open_probe(lp, site)
    tree = lp.frame_tree()
    assert tree.top is not None and tree.top.frame_id == frames["main"]
    for frame in lp.state.frames.values():
        assert frame.session_id == lp.page_session_id and not frame.is_oopif
    # evaluate reaches each frame, the cross-site ones too
    for name, frame_id in frames.items():
        href = await lp.evaluate("location.href", frame_id=frame_id)
        assert lp.state.frames[frame_id].url == href, name


@pytest.mark.parametrize("frame", ["main", "srcdoc", "cross", "nested"])
async def test_dialogs_never_block_and_are_recorded_closed_with_what_the_page_got(
        lp: cdpnb.Supervisor, site: ScenarioServer, frame: str,
        caplog: pytest.LogCaptureFixture) -> None:
    frames = await open_probe(lp, site)
    for call, page_got, js_value in CALLS:
        # synchronous: the call returns at once, with nothing answered
        got = await lp.evaluate(f"window.__r = {call}; [typeof window.__r, window.__r ?? null]",
                                frame_id=frames[frame])
        assert got == page_got, call
        await settle(lp, lambda s, call=call: bool(s.recent_dialogs)
                     and s.recent_dialogs[-1].message == call.split("'")[1])
        record = lp.state.recent_dialogs[-1]
        assert record.type == call.split("(")[0]
        assert (record.closed_by, record.reason) == ("browser", "non_blocking")
        assert record.page_value == js_value
        assert record.accepted is (None if record.type == "alert" else False)
        assert record.frame_id == frames[frame]
        assert lp.state.pending_dialogs == ()
    # the watchdog (0.3 s here) had nothing to dismiss, and nothing failed
    await asyncio.sleep(0.5)
    assert lp.stats().get("watchdog-dismissals", 0) == 0
    assert [r.closed_by for r in lp.state.recent_dialogs[-3:]] == ["browser"] * 3
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


async def test_waiting_and_answering_say_the_dialog_did_not_block(
        lp: cdpnb.Supervisor, site: ScenarioServer) -> None:
    await lp.navigate(site.url("/blank"))
    waiting = asyncio.ensure_future(lp.wait_for_dialog(timeout=5))
    await asyncio.sleep(0.05)
    assert await lp.evaluate("setTimeout(() => { window.__r = confirm('sure?'); }, 0); 1") == 1
    dialog = await waiting
    assert dialog.type == "confirm" and dialog.unanswerable == "non_blocking"
    assert not dialog.answerable
    with pytest.raises(cdpnb.NoPendingDialog, match=r"closed by browser \(non_blocking\)"):
        await lp.respond("accept")
    with pytest.raises(cdpnb.UnknownDialog, match=r"closed by browser \(non_blocking\)"):
        await lp.respond("accept", dialog_id=dialog.id)
    assert await lp.evaluate("window.__r") is False


@pytest.mark.parametrize("policy", ["auto_accept", "auto_dismiss"])
async def test_auto_policies_send_nothing_for_a_dialog_that_did_not_block(
        lightpanda: cdpnb.Backend, site: ScenarioServer, policy: str) -> None:
    async with await cdpnb.Supervisor.start(lightpanda, policy=policy) as sup:  # type: ignore[arg-type]
        await sup.navigate(site.url("/blank"))
        assert await sup.evaluate("prompt('x', 'y')") is None
        await settle(sup, lambda s: bool(s.recent_dialogs))
        await asyncio.sleep(0.2)
        record = sup.state.recent_dialogs[-1]
        assert (record.closed_by, record.reason, record.page_value) == (
            "browser", "non_blocking", "null")
        assert "answers-failed" not in sup.stats()


async def test_an_answer_armed_in_advance_is_what_the_page_gets(
        lp: cdpnb.Supervisor, site: ScenarioServer) -> None:
    await lp.navigate(site.url("/blank"))
    await lp.cdp("LP.handleJavaScriptDialog", {"accept": True, "promptText": "armed"})
    assert await lp.evaluate("prompt('name?')") == "armed"
    await settle(lp, lambda s: bool(s.recent_dialogs))
    record = lp.state.recent_dialogs[-1]
    assert (record.closed_by, record.reason) == ("agent", "prearmed")
    assert record.accepted is True and record.prompt_text == "armed"
    assert record.page_value == '"armed"'
    # one dialog only: the next gets nothing again
    assert await lp.evaluate("prompt('again?')") is None
    await settle(lp, lambda s: len(s.recent_dialogs) >= 2)
    assert lp.state.recent_dialogs[-1].reason == "non_blocking"
    await lp.cdp("LP.handleJavaScriptDialog", {"accept": True})
    assert await lp.evaluate("confirm('ok?')") is True
    await settle(lp, lambda s: len(s.recent_dialogs) >= 3)
    assert lp.state.recent_dialogs[-1].page_value == "true"


async def test_evaluate_timeouts_terminate_after_a_dialog(lp: cdpnb.Supervisor,
                                                          site: ScenarioServer) -> None:
    """Before: the dialog stayed pending, and every later timeout skipped
    terminateExecution "because a dialog is open"."""
    await lp.navigate(site.url("/blank"))
    await lp.evaluate("alert('first')")
    await settle(lp, lambda s: bool(s.recent_dialogs))
    with pytest.raises(cdpnb.EvaluateTimeout) as hung:
        await lp.evaluate("while (true) {}", timeout=1.0)
    assert hung.value.ended_by != "not terminated"
    with pytest.raises(cdpnb.EvaluateTimeout) as waiting:
        await lp.evaluate("new Promise(() => {})", timeout=1.0)
    assert waiting.value.ended_by != "not terminated", waiting.value
    assert await lp.evaluate("1 + 1") == 2


async def test_a_dom_node_is_a_remote_object(lp: cdpnb.Supervisor, site: ScenarioServer) -> None:
    """Lightpanda deep-serialises a node as an empty object: not ``{}`` but a handle."""
    await lp.navigate(site.url("/form"))
    body = await lp.evaluate("document.body")
    assert isinstance(body, cdpnb.RemoteObject)
    assert (body.subtype, body.class_name) == ("node", "HTMLBodyElement")
    assert body.object_id and body.session_id == lp.page_session_id
    assert await lp.evaluate_on(body, "function () { return this.tagName }") == "BODY"
    assert await lp.evaluate("({a: [1, null, -0]})") == {"a": [1, None, -0.0]}


async def test_the_bridge_answers_in_every_frame(lightpanda: cdpnb.Backend,
                                                  site: ScenarioServer) -> None:
    async with await cdpnb.Supervisor.start(lightpanda, bridge=True,
                                            dialog_timeout_s=30) as sup:
        frames = await open_probe(sup, site)
        for name in ("main", "cross", "nested"):
            await sup.evaluate("setTimeout(() => { window.__r = prompt('who', 'x'); }, 0); 0",
                               frame_id=frames[name])
            dialog = await sup.wait_for_dialog(timeout=5)
            assert dialog.via == "bridge" and dialog.answerable
            assert dialog.frame_id == frames[name]
            record = await sup.respond("accept", prompt_text=f"to {name}")
            assert record.closed_by == "agent"
            assert await sup.evaluate("window.__r", frame_id=frames[name]) == f"to {name}"


async def test_navigate_over_a_bridged_prompt_dismisses_it_first(
        lightpanda: cdpnb.Backend, site: ScenarioServer) -> None:
    """A bridged call blocks Lightpanda's one thread: ``Page.navigate`` sent over it
    never replied (measured). navigate() dismisses the page's bridged dialogs first."""
    async with await cdpnb.Supervisor.start(lightpanda, bridge=True,
                                            dialog_timeout_s=30) as sup:
        await sup.navigate(site.url("/blank"))
        await sup.evaluate("setTimeout(() => prompt('stay?'), 0); 0")
        dialog = await sup.wait_for_dialog(timeout=5)
        assert dialog.via == "bridge"
        await sup.navigate(site.url("/child"), timeout=10)
        [record] = sup.state.recent_dialogs
        assert (record.id, record.closed_by, record.reason) == (dialog.id, "cdpnb",
                                                                "navigation")
        assert await sup.evaluate("document.title") == "child"


async def test_a_recorded_trace_replays_the_non_blocking_dialogs(
        lightpanda: cdpnb.Backend, site: ScenarioServer, tmp_path: Path) -> None:
    path = tmp_path / "lightpanda.jsonl"
    async with await cdpnb.Supervisor.start(lightpanda, record=path) as sup:
        await sup.navigate(site.url("/blank"))
        await sup.evaluate("confirm('kept?')")
        await settle(sup, lambda s: bool(s.recent_dialogs))
        live = sup.state.recent_dialogs[-1]
    final = cdpnb.Trace.load(path).final_state()
    assert final.dialogs_block is False and final.engine == "Lightpanda/1.0"
    assert final.recent_dialogs[-1] == live
