"""The supervisor over WebDriver BiDi, against real Firefox ESR: the same public API as
over CDP (dialogs in every kind of frame, beforeunload, popups, policies, evaluate,
navigate, the frame tree), recorded and replayed.

Page JS reports what its dialog call returned to the scenario server, so each test
checks the value that reached the page, not only what cdpnb believes it sent.
"""

from __future__ import annotations

import asyncio
import json
import urllib.parse
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

import cdpnb
from cdpnb.probes import ScenarioServer
from cdpnb.protocol import Command, Event
from cdpnb.state import fold_all
from tests.conftest import settle, wait_report

pytestmark = pytest.mark.browser

REPORTING = ("setTimeout(() => {{ const r = {call}; "
             "fetch('/report?frame={name}&value=' + "
             "encodeURIComponent(JSON.stringify(r === undefined ? null : r))); }}, 0); 0")


@pytest.fixture(scope="module")
def firefox() -> Iterator[cdpnb.Backend]:
    with cdpnb.launch("firefox") as backend:
        yield backend


@pytest.fixture
async def sup(firefox: cdpnb.Backend, site: ScenarioServer,
              tmp_path: Path) -> AsyncIterator[cdpnb.Supervisor]:
    site.requests.clear()
    supervisor = await cdpnb.Supervisor.start(firefox, dialog_timeout_s=30,
                                              record=tmp_path / "firefox.jsonl")
    yield supervisor
    await supervisor.stop()



async def open_probe_page(sup: cdpnb.Supervisor, site: ScenarioServer) -> dict[str, str]:
    """The probe page: main, srcdoc, a cross-site frame and a frame nested in it."""
    await sup.navigate(site.url("/probe"))
    await settle(sup, lambda s: any(f.url.startswith(site.url("/nest?depth=0"))
                                    for f in s.frames.values()))
    tree = sup.frame_tree()
    assert tree.top is not None
    by_url = {c.url: c for c in tree.children}
    cross = by_url[site.url("/nest?depth=1", "b")]
    nested = by_url[site.url("/nest?depth=0")]
    assert nested.parent_frame_id == cross.frame_id
    return {"main": tree.top.frame_id, "srcdoc": by_url["about:srcdoc"].frame_id,
            "cross": cross.frame_id, "nested": nested.frame_id}


async def test_start_detects_bidi_from_every_spelling_of_the_endpoint(
        firefox: cdpnb.Backend) -> None:
    assert firefox.protocol == "bidi"
    port = urllib.parse.urlsplit(firefox.url).port
    for url in (f"http://127.0.0.1:{port}", f"ws://127.0.0.1:{port}", firefox.url):
        sup = await cdpnb.Supervisor.start(url)
        try:
            assert sup.protocol == "bidi"
            assert sup.browser_version["product"].startswith("Firefox/")
            assert sup.state.protocol == "bidi"
            assert await sup.evaluate("1 + 1") == 2
        finally:
            await sup.stop()


async def test_the_frame_tree_has_every_frame_and_evaluate_reaches_each(
        sup: cdpnb.Supervisor, site: ScenarioServer) -> None:
    frames = await open_probe_page(sup, site)
    tree = sup.frame_tree()
    assert len(tree.children) == 3
    origins = {c.frame_id: c.origin for c in tree.children}
    assert origins[frames["cross"]] == site.site_b
    assert origins[frames["srcdoc"]] == site.site_a  # srcdoc runs with its parent's origin
    for name, frame_id in frames.items():
        where = await sup.evaluate("location.href", frame_id=frame_id)
        assert where == sup.state.frames[frame_id].url, name
    with pytest.raises(cdpnb.UnknownFrame):
        await sup.evaluate("1", frame_id="no-such-frame")


@pytest.mark.parametrize("frame", ["main", "srcdoc", "cross", "nested"])
async def test_a_prompt_in_any_frame_is_answered_and_the_value_reaches_page_js(
        sup: cdpnb.Supervisor, site: ScenarioServer, frame: str) -> None:
    frames = await open_probe_page(sup, site)
    await sup.evaluate(REPORTING.format(call="prompt('name?', 'x')", name=frame),
                       frame_id=frames[frame])
    dialog = await sup.wait_for_dialog(timeout=5)
    assert (dialog.type, dialog.message, dialog.default_prompt) == ("prompt", "name?", "x")
    assert dialog.frame_id == frames[frame]
    assert dialog.url == sup.state.frames[frames[frame]].url
    record = await sup.respond("accept", prompt_text=f"hello {frame}", dialog_id=dialog.id)
    assert (record.closed_by, record.accepted, record.prompt_text) == (
        "agent", True, f"hello {frame}")
    assert await wait_report(site, frame) == f"hello {frame}"
    assert sup.snapshot().pending_dialogs == ()


async def test_confirm_dismissed_and_alert_accepted(sup: cdpnb.Supervisor,
                                                    site: ScenarioServer) -> None:
    frames = await open_probe_page(sup, site)
    await sup.evaluate(REPORTING.format(call="confirm('sure?')", name="c"),
                       frame_id=frames["cross"])
    dialog = await sup.wait_for_dialog(timeout=5)
    record = await sup.respond("dismiss", dialog_id=dialog.id)
    assert (record.type, record.accepted) == ("confirm", False)
    assert await wait_report(site, "c") is False
    await sup.evaluate(REPORTING.format(call="alert('hi')", name="a"))
    dialog = await sup.wait_for_dialog(timeout=5)
    await sup.respond("accept")
    assert await wait_report(site, "a") is None


async def test_beforeunload_after_real_input_waits_for_the_answer(
        sup: cdpnb.Supervisor, site: ScenarioServer) -> None:
    await sup.navigate(site.url("/beforeunload"))
    # Firefox asks only after a user activation: a real click (BiDi's input module).
    await sup.click(x=20, y=20)
    leaving = asyncio.ensure_future(sup.navigate(site.url("/blank")))
    dialog = await sup.wait_for_dialog(timeout=5)
    assert dialog.type == "beforeunload"
    assert not leaving.done()  # the navigation waits for the answer
    await sup.respond("accept", dialog_id=dialog.id)
    await asyncio.wait_for(leaving, 10)
    assert await sup.evaluate("document.title") == "blank"


async def test_popups_are_supervised_with_their_opener_and_their_prompts_answered(
        sup: cdpnb.Supervisor, site: ScenarioServer) -> None:
    await sup.navigate(site.url("/blank"))
    await sup.evaluate(f"window.open({json.dumps(site.url('/two-site'))}); 0",
                       user_gesture=True)
    await settle(sup, lambda s: len(s.pages) == 2 and any(
        f.url.endswith("/child") for f in s.frames.values()), timeout=10)
    popup = next(p for p in sup.pages if not p.main)
    assert popup.opener_target_id == sup.page_target_id
    tree = sup.frame_tree(page=popup.target_id)
    assert tree.top is not None and tree.top.url == site.url("/two-site")
    child = next(c for c in tree.children if c.url.endswith("/child"))
    await sup.evaluate(REPORTING.format(call="prompt('from the popup')", name="popup"),
                       frame_id=child.frame_id)
    dialog = await sup.wait_for_dialog(timeout=5)
    assert dialog.page_session_id == popup.target_id
    await sup.respond("accept", prompt_text="popup answer")
    assert await wait_report(site, "popup") == "popup answer"


async def test_policies_and_the_watchdog_answer_by_themselves(
        firefox: cdpnb.Backend, site: ScenarioServer) -> None:
    site.requests.clear()
    async with await cdpnb.Supervisor.start(firefox, policy="auto_accept") as sup:
        await sup.navigate(site.url("/two-site"))
        await sup.evaluate(REPORTING.format(call="prompt('auto', 'the default')", name="auto"))
        assert await wait_report(site, "auto") == "the default"
        assert sup.snapshot().recent_dialogs[-1].closed_by == "auto_policy"
    async with await cdpnb.Supervisor.start(firefox, dialog_timeout_s=0.3) as sup:
        await sup.navigate(site.url("/blank"))
        await sup.evaluate(REPORTING.format(call="confirm('nobody answers')", name="dog"))
        assert await wait_report(site, "dog") is False
        assert sup.snapshot().recent_dialogs[-1].closed_by == "watchdog"


async def test_the_browser_closes_a_prompt_when_its_frame_goes_or_the_page_navigates(
        sup: cdpnb.Supervisor, site: ScenarioServer) -> None:
    frames = await open_probe_page(sup, site)
    await sup.evaluate("setTimeout(() => alert('doomed'), 0); 0", frame_id=frames["cross"])
    await sup.wait_for_dialog(timeout=5)
    await sup.evaluate("document.getElementById('oopif').remove(); 0")
    await settle(sup, lambda s: not s.pending_dialogs)
    record = sup.snapshot().recent_dialogs[-1]
    assert (record.closed_by, record.reason) == ("browser", "frame_removed")
    await sup.evaluate("setTimeout(() => alert('navigated away'), 0); 0")
    await sup.wait_for_dialog(timeout=5)
    await sup.navigate(site.url("/blank"))
    record = sup.snapshot().recent_dialogs[-1]
    assert (record.message, record.closed_by, record.reason) == (
        "navigated away", "browser", "navigation")
    assert await sup.evaluate("document.title") == "blank"
    sent = [r for r in sup.snapshot().recent_dialogs if r.closed_by == "agent"]
    assert sent == []  # nothing was answered for either


async def test_evaluate_values_errors_and_timeouts(sup: cdpnb.Supervisor,
                                                   site: ScenarioServer) -> None:
    await sup.navigate(site.url("/blank"))
    value = await sup.evaluate("({a: [1, NaN, -0, 2n ** 70n], u: undefined, n: null})")
    assert value["a"][0] == 1 and value["a"][1] != value["a"][1]
    assert str(value["a"][2]) == "-0.0" and value["a"][3] == 2**70
    assert value["u"] is cdpnb.Undefined and value["n"] is None
    node = await sup.evaluate("document.body")
    assert isinstance(node, cdpnb.RemoteObject) and node.subtype == "node"
    assert await sup.evaluate("Promise.resolve(41).then(x => x + 1)") == 42
    with pytest.raises(cdpnb.EvaluateError, match="boom"):
        await sup.evaluate("throw new Error('boom')")
    with pytest.raises(cdpnb.EvaluateTimeout, match="BiDi has no way to end"):
        await sup.evaluate("new Promise(() => {})", timeout=0.5)
    assert await sup.evaluate("document.title") == "blank"  # the page is still usable


async def test_cdp_only_calls_say_what_to_use_instead(sup: cdpnb.Supervisor) -> None:
    with pytest.raises(cdpnb.ProtocolMismatch, match=r"sup\.bidi"):
        await sup.cdp("Runtime.evaluate", {"expression": "1"})
    with pytest.raises(cdpnb.ProtocolMismatch, match="accessibility"):
        await sup.accessibility()
    tree = await sup.bidi("browsingContext.getTree", {"root": sup.page_target_id})
    assert tree["contexts"][0]["context"] == sup.page_target_id
    with pytest.raises(cdpnb.CDPError, match="no such frame"):
        await sup.bidi("browsingContext.handleUserPrompt", {"context": "nope"})


async def test_a_second_client_is_told_firefox_holds_one_session(
        sup: cdpnb.Supervisor, firefox: cdpnb.Backend) -> None:
    with pytest.raises(cdpnb.EndpointError, match="one session per browser"):
        await cdpnb.Supervisor.start(firefox)
    assert await sup.evaluate("1") == 1  # the first one is unharmed


async def test_a_bidi_trace_replays_offline_to_the_same_final_state(
        firefox: cdpnb.Backend, site: ScenarioServer, tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    site.requests.clear()
    sup = await cdpnb.Supervisor.start(firefox, record=path)
    try:
        frames = await open_probe_page(sup, site)
        await sup.evaluate(REPORTING.format(call="prompt('q')", name="r"),
                           frame_id=frames["nested"])
        await sup.wait_for_dialog(timeout=5)
        await sup.respond("accept", prompt_text="recorded")
        await wait_report(site, "r")
        await sup.evaluate("console.error('bad <b>thing</b>'); 0", frame_id=frames["cross"])
        await settle(sup, lambda s: any("bad" in e.text for e in s.console_errors))
        live = sup.state
    finally:
        await sup.stop()
    trace = cdpnb.Trace.load(path)
    assert trace.protocol == "bidi"
    # stop() keeps the state it had when asked; the trace goes on with the closing.
    messages = list(trace.messages)
    closing = next(i for i, m in enumerate(messages)
                   if isinstance(m, Command) and m.method == "browsingContext.close")
    assert fold_all(messages[:closing]) == live
    assert trace.final_state().recent_dialogs == live.recent_dialogs
    dialogs = trace.dialogs()
    assert list(dialogs["answer"]) == ["recorded"]
    table = trace.frames()
    attached = set(table.loc[table["event"] == "attached", "frame_id"])
    assert set(frames.values()) <= attached
    assert set(frames.values()) <= set(table.loc[table["event"] == "detached", "frame_id"])
    console = trace.console()
    assert list(console["text"]) == ["bad <b>thing</b>"]
    assert list(console["level"]) == ["error"]
    # And served as a BiDi endpoint: a supervisor starts on it and sees BiDi.
    async with cdpnb.replay(trace) as backend:
        again = await cdpnb.Supervisor.start(backend)
        try:
            assert again.protocol == "bidi"
        finally:
            await again.stop()



FORGED = ("(() => {{ const x = new XMLHttpRequest(); "
          "x.open('POST', 'http://cdpnb-bridge.invalid/dialog', false); "
          "x.setRequestHeader('X-Cdpnb-Bridge', btoa(JSON.stringify({{key: {key}, "
          "type: 'prompt', message: 'forged', defaultPrompt: ''}}))); x.send(''); "
          "return x.status; }})()")


async def test_the_dialog_bridge_answers_in_every_frame_and_refuses_forgeries(
        firefox: cdpnb.Backend, site: ScenarioServer) -> None:
    site.requests.clear()
    async with await cdpnb.Supervisor.start(firefox, bridge=True) as sup:
        assert sup.bridge_enabled
        frames = await open_probe_page(sup, site)
        for name, frame_id in frames.items():
            await sup.evaluate(REPORTING.format(call=f"prompt('bridged {name}', 'd')",
                                                name=name), frame_id=frame_id)
            dialog = await sup.wait_for_dialog(timeout=5)
            assert (dialog.via, dialog.frame_id, dialog.message) == (
                "bridge", frame_id, f"bridged {name}")
            assert dialog.url == sup.state.frames[frame_id].url  # from the frame table
            await sup.respond("accept", prompt_text=f"via the bridge: {name}")
            assert await wait_report(site, name) == f"via the bridge: {name}"
        # A page that makes the bridge's request itself, without the secret: refused with
        # an error status (the script would fall back to the native dialog), never a dialog.
        status = await sup.evaluate(FORGED.format(key=json.dumps("guessed")),
                                    frame_id=frames["cross"])
        assert status == 403
        assert sup.snapshot().pending_dialogs == ()
        assert sup.state.counters["bridge-refused"] == 1


async def test_another_tabs_bridge_call_is_answered_and_its_requests_are_not_recorded(
        firefox: cdpnb.Backend, site: ScenarioServer, tmp_path: Path) -> None:
    # The bridge's intercept covers every context (so no tab is left with a paused
    # request); a tab the supervisor does not supervise gets an error status for a
    # bridge call and none of its plain requests (their cookies) go into the trace.
    path = tmp_path / "bridged.jsonl"
    async with await cdpnb.Supervisor.start(firefox, bridge=True, record=path) as sup:
        await sup.navigate(site.url("/blank"))
        ours = sup.page_target_id
        other = str((await sup.bidi("browsingContext.create", {"type": "tab"}))["context"])
        try:
            await sup.bidi("browsingContext.navigate", {
                "context": other, "url": site.url("/blank", "b"), "wait": "complete"})
            status = await sup.bidi("script.evaluate", {
                "expression": FORGED.format(key=json.dumps("guessed")),
                "target": {"context": other}, "awaitPromise": False})
            assert status["result"] == {"type": "number", "value": 403}
            assert sup.snapshot().pending_dialogs == ()
        finally:
            await sup.bidi("browsingContext.close", {"context": other})
    requests = [m.params for m in cdpnb.Trace.load(path).messages
                if isinstance(m, Event) and m.method == "network.beforeRequestSent"]
    assert any(r["context"] == ours for r in requests)  # the supervised page's, kept
    theirs = [r for r in requests if r["context"] == other]
    assert theirs and all(r["isBlocked"] for r in theirs)  # only the paused bridge call



async def test_a_dropped_connection_cannot_be_resumed_and_says_so_at_once(
        site: ScenarioServer) -> None:
    """Measured on Firefox ESR 153: a BiDi-only session outlives its dropped connection
    (no /session/<id> path serves it) and session.new is refused until the browser
    ends. The supervisor makes one attempt, then gives up with a reason that says so,
    closes the connection it opened, and warns; nothing is left open or half set up.
    (A browser of its own: the module's Firefox must keep taking sessions.)"""
    from tests.cdp_proxy import CDPProxy

    with cdpnb.launch("firefox") as firefox:
        proxy = await CDPProxy(firefox.cdp_url).start()
        try:
            sup = await cdpnb.Supervisor.start(proxy.url, bridge=True, reconnect_attempts=3)
            await sup.navigate(site.url("/blank"))
            await proxy.drop()
            await settle(sup, lambda s: sup.stats().get("reconnect-gave-up") == 1, timeout=10)
            await settle(sup, lambda s: not s.connected)
            assert not sup.alive and "reconnects" not in sup.stats()
            assert proxy.opened == 2  # the first connection and one attempt, not three
            # The attempt's connection was closed: the proxy sees the close when its own
            # task next runs (beside two CPU-bound processes, after this line once).
            for _ in range(200):
                if not proxy.connections:
                    break
                await asyncio.sleep(0.05)
            assert not proxy.connections
            with pytest.warns(cdpnb.CdpnbWarning, match="cannot resume; launch the browser"), \
                    pytest.raises(cdpnb.ConnectionLost, match="Firefox keeps the session of "
                                                              "a dropped connection"):
                await sup.evaluate("1")
            await sup.stop()
            assert firefox.running  # the browser outlives the session it holds
        finally:
            await proxy.close()


async def test_a_start_that_fails_after_its_session_began_ends_it(
        site: ScenarioServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Firefox keeps the one BiDi session of a connection closed without session.end
    and refuses every later one: a start that failed after session.new (here its tab
    never came, as under heavy load) must end its session, or the browser is lost."""
    from cdpnb.drivers.bidi.session import BiDiSession

    async def no_tab(self: BiDiSession, reuse_context: str | None = None) -> str:
        raise cdpnb.CommandTimeout("browsingContext.create got no reply within 20 s")

    async with cdpnb.launch("firefox") as firefox:  # its own: a lost one spoils no other
        with monkeypatch.context() as patched:
            patched.setattr(BiDiSession, "open_page", no_tab)
            with pytest.raises(cdpnb.CommandTimeout, match="browsingContext.create"):
                await cdpnb.Supervisor.start(firefox, dialog_timeout_s=30)
        sup = await cdpnb.Supervisor.start(firefox, dialog_timeout_s=30)
        try:
            await sup.navigate(site.url("/blank"))
            assert await sup.evaluate("6 * 7") == 42
        finally:
            await sup.stop()
