"""The evaluate engine on real Chromium: one budget end to end, faithful values, JS
errors, and the page (and every other session) usable after a hang."""

from __future__ import annotations

import asyncio
import math
import time
from typing import Any

import pytest
from conftest import open_two_site

import cdpnb
from cdpnb import EvaluateError, EvaluateTimeout, RemoteObject, Undefined
from cdpnb.probes import ScenarioServer
from cdpnb.session.budget import HEADROOM_S, reply_margin

pytestmark = pytest.mark.browser

#: Scheduling noise on a loaded 2-core machine, on top of the documented headroom.
SLACK_S = 0.35
#: The budget where the outcome says the in-page timeout ended a synchronous hang. Its
#: reply must come back inside the budget's reply margin, and how late it comes does not
#: shrink with the budget (Chromium 156 on 2 cores beside 2-4 busy processes: over 50 ms
#: in 1 call in 20, up to 170 ms, at a 0.45 s timeout as at 1.95 s). At 2.5 s the margin
#: is HEADROOM_S, three times the worst seen; at 0.5 s it was 50 ms, and the sync face's
#: hang was ended by terminateExecution 1 run in 15 beside 4 busy processes.
SYNC_HANG_BUDGET_S = 2.5
#: Budgets for calls that must finish while something else is still under way: long
#: enough for a loaded machine's round trips, and what the test measures against.
ROOMY_S = 3.0


async def timed_out(call: Any, budget: float) -> tuple[EvaluateTimeout, float]:
    started = time.monotonic()
    with pytest.raises(EvaluateTimeout) as caught:
        await call
    elapsed = time.monotonic() - started
    assert elapsed < budget + HEADROOM_S + SLACK_S, f"{elapsed:.2f} s for a {budget} s budget"
    # Load only makes a call later: none ends before its in-page timeout could fire.
    in_page_s = budget - reply_margin(budget)
    assert elapsed >= in_page_s, f"gave up early: {elapsed:.2f} s of {budget} s"
    return caught.value, elapsed


@pytest.mark.parametrize("where", ["main", "oopif"])
async def test_a_synchronous_hang_ends_within_the_budget(
        sup: cdpnb.Supervisor, site: ScenarioServer, where: str) -> None:
    frames = await open_two_site(sup, site)
    frame_id = None if where == "main" else frames["oopif"]
    exc, _ = await timed_out(sup.evaluate("while (true) {}", frame_id=frame_id,
                                          timeout=SYNC_HANG_BUDGET_S), SYNC_HANG_BUDGET_S)
    # Runtime.evaluate's own timeout ends a synchronous hang in the page itself.
    assert exc.ended_by == "in-page timeout", exc
    assert exc.budget == SYNC_HANG_BUDGET_S and "2.5 s budget" in str(exc)
    assert await sup.evaluate("document.title", frame_id=frame_id, timeout=2) in (
        "two sites", "child")
    stats = sup.stats()
    assert stats["evaluate-timeouts"] == 1 and stats["evaluate-calls"] >= 2


@pytest.mark.parametrize("where", ["main", "oopif"])
async def test_a_hang_after_await_is_terminated(
        sup: cdpnb.Supervisor, site: ScenarioServer, where: str) -> None:
    # The in-page timeout does not reach script that runs after an await: no reply
    # ever comes, so cdpnb sends Runtime.terminateExecution to that session.
    frames = await open_two_site(sup, site)
    frame_id = None if where == "main" else frames["oopif"]
    exc, _ = await timed_out(
        sup.evaluate("(async () => { await null; while (true) {} })()", frame_id=frame_id,
                     timeout=1.0), 1.0)
    assert exc.ended_by == "terminateExecution"
    assert await sup.evaluate("6 * 7", frame_id=frame_id, timeout=2) == 42
    # The page's own timers still run after the termination.
    assert await sup.evaluate("new Promise(r => setTimeout(() => r('tick'), 20))",
                              frame_id=frame_id, timeout=2) == "tick"
    assert sup.stats()["evaluate-terminations"] == 1


async def test_a_promise_that_outlives_the_budget(sup: cdpnb.Supervisor,
                                                  site: ScenarioServer) -> None:
    await sup.navigate(site.url("/blank"))
    exc, _ = await timed_out(sup.evaluate("new Promise(r => setTimeout(() => r(1), 5000))",
                                          timeout=0.8), 0.8)
    assert exc.ended_by in ("in-page timeout", "terminateExecution")
    assert await sup.evaluate("new Promise(r => setTimeout(() => r('in time'), 100))",
                              timeout=2) == "in time"


async def test_a_hung_oopif_blocks_neither_the_page_nor_the_supervisor(
        sup: cdpnb.Supervisor, site: ScenarioServer) -> None:
    frames = await open_two_site(sup, site)
    hang = asyncio.ensure_future(sup.evaluate(
        "(async () => { await null; while (true) {} })()", frame_id=frames["oopif"],
        timeout=ROOMY_S + 1))
    await asyncio.sleep(0.2)
    # The main frame is another process: it answers, and its dialog is seen and answered,
    # while the OOPIF still hangs. Measured against the hang, not the clock: a main frame
    # blocked behind it would answer only once the hang ended (at ROOMY_S + 1 s), so each
    # step's ROOMY_S budget would run out first, and the hang would be done.
    assert await sup.evaluate("1 + 1", timeout=ROOMY_S) == 2
    await sup.evaluate("setTimeout(() => { window.r = confirm('meanwhile') }, 0)",
                       timeout=ROOMY_S)
    dialog = await sup.wait_for_dialog(timeout=ROOMY_S)
    await sup.respond("accept", dialog_id=dialog.id)
    assert await sup.evaluate("window.r", timeout=ROOMY_S) is True
    assert not hang.done()
    with pytest.raises(EvaluateTimeout):
        await hang
    assert await sup.evaluate("document.title", frame_id=frames["oopif"]) == "child"


async def test_raw_cdp_runtime_evaluate_gets_the_same_budget(
        sup: cdpnb.Supervisor, site: ScenarioServer) -> None:
    frames = await open_two_site(sup, site)
    exc, _ = await timed_out(sup.cdp("Runtime.evaluate", {"expression": "while (true) {}"},
                                     frame_id=frames["oopif"], timeout=1.0), 1.0)
    assert exc.ended_by == "terminateExecution"
    reply = await sup.cdp("Runtime.evaluate", {"expression": "'alive'"},
                          frame_id=frames["oopif"], timeout=2)
    assert reply["result"]["value"] == "alive"


async def test_a_script_waiting_on_a_dialog_is_not_terminated(
        sup: cdpnb.Supervisor, site: ScenarioServer) -> None:
    await sup.navigate(site.url("/blank"))
    # The budget must outlast the dialog's way into the supervisor's state (else nothing
    # says the script waits on one): ROOMY_S, whatever the load.
    exc, _ = await timed_out(sup.evaluate("window.got = prompt('wait'); 'done'",
                                          timeout=ROOMY_S), ROOMY_S)
    assert exc.ended_by == "not terminated" and "respond()" in str(exc)
    dialog = await sup.wait_for_dialog(timeout=1)
    await sup.respond("accept", prompt_text="later", dialog_id=dialog.id)
    # The script carried on once answered, as a user's answer would let it.
    assert await sup.evaluate("window.got", timeout=2) == "later"


VALUES: list[tuple[str, Any]] = [
    ("1 + 1", 2),
    ("0.5", 0.5),
    ("'text ☃'", "text ☃"),
    ("true", True),
    ("null", None),
    ("[1, 'a', null, {b: [true]}]", [1, "a", None, {"b": [True]}]),
    ("({nested: {deep: {deeper: [1, 2]}}})", {"nested": {"deep": {"deeper": [1, 2]}}}),
    ("2n ** 70n", 2**70),
    ("-(2n ** 70n)", -(2**70)),
    ("Infinity", math.inf),
    ("-Infinity", -math.inf),
    ("({a: Infinity, b: [-0, 5n]})", {"a": math.inf, "b": [-0.0, 5]}),
    ("Promise.resolve({ok: 1})", {"ok": 1}),
]


async def test_every_value_kind_comes_back_faithfully(sup: cdpnb.Supervisor,
                                                      site: ScenarioServer) -> None:
    await sup.navigate(site.url("/blank"))
    for expression, expected in VALUES:
        got = await sup.evaluate(expression)
        assert got == expected and type(got) is type(expected), (expression, got)
    assert await sup.evaluate("undefined") is Undefined
    assert await sup.evaluate("[undefined, null]") == [Undefined, None]
    assert math.isnan(await sup.evaluate("NaN"))
    negative_zero = await sup.evaluate("-0")
    assert negative_zero == 0 and math.copysign(1.0, negative_zero) == -1.0
    assert math.isnan((await sup.evaluate("({x: NaN})"))["x"])


async def test_what_is_not_data_comes_back_described(sup: cdpnb.Supervisor,
                                                     site: ScenarioServer) -> None:
    await sup.navigate(site.url("/child"))
    node = await sup.evaluate("document.getElementById('who')")
    assert isinstance(node, RemoteObject)
    assert node.subtype == "node" and node.description == "p#who"
    assert node.object_id and node.backend_node_id is not None
    # The handle works: pass it back to the page.
    assert await sup.evaluate_on(node, "function (el) { return el.textContent }") == "child"
    function = await sup.evaluate("(function named() {})")
    assert isinstance(function, RemoteObject) and function.type == "function"
    mapping = await sup.evaluate("new Map([[1, 2]])")
    assert isinstance(mapping, RemoteObject) and mapping.subtype == "map"
    cyclic = await sup.evaluate("(() => { const o = {}; o.self = o; return o })()")
    assert isinstance(cyclic, RemoteObject) and cyclic.class_name == "Object"
    assert "RemoteObject" in repr(node)
    await sup.release_objects()
    with pytest.raises(cdpnb.CDPError):
        await sup.cdp("Runtime.callFunctionOn", {"objectId": node.object_id,
                                                 "functionDeclaration": "function () {}"})


async def test_javascript_exceptions_carry_message_and_stack(sup: cdpnb.Supervisor,
                                                             site: ScenarioServer) -> None:
    await sup.navigate(site.url("/blank"))
    with pytest.raises(EvaluateError) as caught:
        await sup.evaluate("function inner() { throw new TypeError('bad thing') }\n"
                           "function outer() { inner() }\nouter()")
    text = str(caught.value)
    assert text.startswith("TypeError: bad thing")
    assert "at inner" in text and "at outer" in text
    with pytest.raises(EvaluateError, match="Uncaught not an Error"):
        await sup.evaluate("throw 'not an Error'")
    with pytest.raises(EvaluateError, match="rejected"):
        await sup.evaluate("Promise.reject(new Error('rejected'))")
    with pytest.raises(EvaluateError, match="SyntaxError"):
        await sup.evaluate("this is not javascript")
    assert sup.stats()["evaluate-errors"] == 4


async def test_bad_arguments_name_themselves(sup: cdpnb.Supervisor) -> None:
    with pytest.raises(TypeError, match="expression"):
        await sup.evaluate(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="timeout"):
        await sup.evaluate("1", timeout=0)
    with pytest.raises(TypeError, match="user_gesture"):
        await sup.evaluate("1", user_gesture="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="method"):
        await sup.cdp(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="params"):
        await sup.cdp("Runtime.evaluate", ["1"])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="function"):
        await sup.evaluate_on("button:Go", None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"args\[0\]"):
        await sup.evaluate_on("button:Go", "function (el, x) {}", object())
    with pytest.raises(cdpnb.UnknownFrame, match="nope"):
        await sup.accessibility(frame_id="nope")


async def test_sync_face_has_the_same_engine(chromium: cdpnb.Backend,
                                             site: ScenarioServer) -> None:
    def run() -> tuple[Any, str]:
        with cdpnb.sync.Supervisor.start(chromium.cdp_url) as blocking:
            blocking.navigate(site.url("/blank"))
            value = blocking.evaluate("[undefined, 2n ** 64n]")
            try:
                blocking.evaluate("while (true) {}", timeout=SYNC_HANG_BUDGET_S)
            except EvaluateTimeout as exc:
                return value, exc.ended_by
            raise AssertionError("no timeout")

    value, ended_by = await asyncio.to_thread(run)
    assert value == [Undefined, 2**64] and ended_by == "in-page timeout"
