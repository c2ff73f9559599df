"""``stats()`` is a view of what the stream holds: a replay of a supervisor's trace
rebuilds it key by key (``Trace.stats()``, ``cdpnb.state.stats.replay_stats``), the
folded counters and the wire counts alike. A scripted peer covers what a browser does
not do on demand (a late reply, an orphaned command, a garbage frame, giving up); a
real headless-shell the rest (dialogs, evaluates that throw and time out, a click, a
reconnect through a proxy)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from cdp_proxy import CDPProxy
from conftest import settle

import cdpnb
from cdpnb.probes import ScenarioServer
from cdpnb.testing import HOLD, ScriptedBrowser, ScriptedCommand, ScriptedError
from cdpnb.trace import Trace


def assert_replayed(live: dict[str, int], path: Path) -> None:
    """The trace's replay gives ``live`` key by key (naming each key that differs), and
    its final state holds the folded counters among them."""
    trace = Trace.load(path)
    replayed = trace.stats()
    differ = {k: (live.get(k), replayed.get(k)) for k in live.keys() | replayed.keys()
              if live.get(k) != replayed.get(k)}
    assert differ == {}, f"(live, replayed) by key: {differ}"
    wire = {"sent", "received", "in_flight"}
    assert dict(trace.final_state().counters) == {
        k: v for k, v in live.items() if k not in wire and not k.startswith("fault:")}


async def _until(condition: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "never came"
        await asyncio.sleep(0.01)


@pytest.mark.logs_warnings  # a frame that is not JSON is worth a warning
async def test_a_replay_rebuilds_the_wire_counts_and_the_connection_counters(
        tmp_path: Path) -> None:
    path = tmp_path / "scripted.jsonl"
    b = ScriptedBrowser()
    held: list[ScriptedCommand] = []

    @b.on("DOM.getDocument")
    def hold(command: ScriptedCommand) -> Any:
        held.append(command)
        return HOLD

    @b.on("Target.getTargets")
    def targets(command: ScriptedCommand) -> Any:
        if b.connections > 2:  # the second drop's attempt fails: reconnecting gives up
            raise ScriptedError(-32000, "not today")
        return {"targetInfos": [{"targetId": b.page_target_id, "type": "page"}]}

    sup = await cdpnb.Supervisor.start(b, record=path, reconnect_attempts=1)
    try:
        # A command that times out, whose reply then comes late.
        with pytest.raises(cdpnb.CommandTimeout):
            await sup.cdp("DOM.getDocument", timeout=0.2)
        await b.reply(held[0], {"root": {}})
        # A command on a child session that ends before its reply: orphaned.
        await b.emit("Target.attachedToTarget", {
            "sessionId": "CHILD", "waitingForDebugger": False,
            "targetInfo": {"targetId": "C", "type": "worker", "url": ""}}, b.page_session_id)
        pending = asyncio.ensure_future(sup.cdp("DOM.getDocument", session_id="CHILD"))
        await b.wait_for_command("DOM.getDocument", count=2)
        await b.emit("Target.detachedFromTarget", {"sessionId": "CHILD", "targetId": "C"},
                     b.page_session_id)
        with pytest.raises(cdpnb.TargetGone):
            await pending
        # A frame that is not JSON, and an event the reducers cannot read.
        b._deliver("{not json")
        await b.emit("Page.frameNavigated", {"frame": {"id": None}}, b.page_session_id)
        # A drop and a reconnect made good, then a drop nothing comes back from.
        await b.drop()
        await _until(lambda: sup.stats().get("reconnects") == 1 and sup.connected)
        await b.drop()
        await _until(lambda: sup.stats().get("reconnect-gave-up") == 1)
    finally:
        with pytest.warns(cdpnb.CdpnbWarning, match="ended for good"):
            await sup.stop()
    live = sup.stats()
    for key in ("command-timeouts", "fault:late-reply", "commands-orphaned",
                "fault:malformed-json", "malformed:Page.frameNavigated", "reconnects",
                "reconnect-gave-up"):
        assert live.get(key) == 1, (key, live)
    assert live["in_flight"] == 0 and live["sent"] > 10
    assert_replayed(live, path)


@pytest.mark.browser
@pytest.mark.logs_warnings  # a handler that raises is logged as an error on purpose
async def test_a_replayed_trace_gives_the_stats_of_the_live_run(
        headless_shell: cdpnb.Backend, site: ScenarioServer, tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    proxy = await CDPProxy(headless_shell.cdp_url).start()
    sup = await cdpnb.Supervisor.start(proxy.url, record=path, reconnect_attempts=3,
                                       policy="must_respond", dialog_timeout_s=30)
    try:
        await sup.navigate(site.url("/blank"))
        # Evaluates: a value, a handle, a throw, a timeout the in-page timer ends.
        assert await sup.evaluate("6 * 7") == 42
        assert isinstance(await sup.evaluate("document.body"), cdpnb.RemoteObject)
        with pytest.raises(cdpnb.EvaluateError):
            await sup.evaluate("throw new Error('boom')")
        with pytest.raises(cdpnb.EvaluateTimeout):
            await sup.evaluate("while (true) {}", timeout=1)
        # Dialogs, one of them through a handler that raises.
        def broken(ev: cdpnb.SupervisorEvent) -> None:
            raise RuntimeError("a handler's bug")

        sup.on("dialog", broken)
        await sup.evaluate("setTimeout(() => { window.r = confirm('sure?') }, 0)")
        dialog = await sup.wait_for_dialog(timeout=10)
        await sup.respond("accept", dialog_id=dialog.id)
        await _until(lambda: sup.stats().get("handler-errors") == 1)
        sup.off("dialog")
        await sup.evaluate("setTimeout(() => { window.p = prompt('name?', 'x') }, 0)")
        dialog = await sup.wait_for_dialog(timeout=10)
        await sup.respond("accept", prompt_text="Ada", dialog_id=dialog.id)
        assert await sup.evaluate("[window.r, window.p]") == [True, "Ada"]
        # A click.
        await sup.set_content("<button id=b onclick=\"document.title = 'clicked'\">b</button>")
        await sup.click(selector="#b")
        assert await sup.evaluate("document.title") == "clicked"
        # A reconnect: the proxy drops the link, the supervisor takes its page back.
        await proxy.drop()
        await settle(sup, lambda s: sup.stats().get("reconnects") == 1 and s.connected)
        assert await sup.evaluate("1 + 1") == 2
    finally:
        await sup.stop()
        await proxy.close()
    live = sup.stats()
    for key in ("evaluate-calls", "evaluate-errors", "evaluate-timeouts",
                "evaluate-by-reference", "handler-errors", "clicks", "reconnects"):
        assert live.get(key, 0) >= 1, (key, live)
    # (the loop ran until the in-page timeout, a share of its 1 s budget, ended it)
    assert live["evaluate-ms-max"] >= 500 and live["in_flight"] == 0
    assert_replayed(live, path)
