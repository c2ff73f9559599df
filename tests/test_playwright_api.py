"""Issue 39, the API a Playwright user expects, the same on every protocol: evaluate
that calls a function with its argument, click(selector) that waits and that a page
cannot steer, fill, wait_for_selector, screenshot, dialog events that read like a
dialog, wait_for_event, typed results, ``sup.url`` the page's; on chromium (CDP),
firefox and chromium+bidi (WebDriver BiDi) and webkit (WebDriver classic), one launch
and one supervisor per backend for the module. Then what needs no browser page: timeouts
that refuse milliseconds, a Ctrl-C told in one line (both faces, and in a kernel)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import signal
import stat
import struct
import threading
import time
import traceback
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import nbformat
import pytest
from conftest import settle
from nbclient import NotebookClient

import cdpnb
import cdpnb.sync
from cdpnb import (
    BlockedByDialog,
    ClickResult,
    ElementNotClickable,
    NavigateResult,
    NoSuchElement,
    SetContentResult,
)
from cdpnb.probes import ScenarioServer
from cdpnb.testing import ScriptedBrowser

#: One of each protocol: CDP, WebDriver BiDi (two engines), WebDriver classic.
BACKENDS = ("chromium", "firefox", "chromium+bidi", "webkit")

PAGE = """<!doctype html><title>api</title><body style="margin:0">
<button id=buy onclick="window.hit = 'buy'">Buy</button>
<button id=safe onclick="window.hit = 'safe'">Safe</button>
<button id=ask onclick="window.answer = confirm('sure?')">Ask</button>
<input id=name value="old"><textarea id=area>x</textarea><div id=ed contenteditable>zz</div>
<input id=when type=date><input id=box type=checkbox><input id=off disabled>
<div id=later></div>
<iframe id=f src="/api-inner" style="border:0;display:block" width=200 height=100></iframe>
</body>"""
INNER = """<!doctype html><title>inner</title>
<body style="margin:0;background:#f00"><input id=inner></body>"""
#: Issue 38's page: its own script answers every query with #buy.
HOSTILE = PAGE.replace("</body>", """<script>
const buy = document.getElementById("buy");
Document.prototype.querySelector = function () { return buy; };
Document.prototype.querySelectorAll = function () { return [buy]; };
</script></body>""")


@pytest.fixture(scope="module", params=BACKENDS)
def shared(request: pytest.FixtureRequest, site: ScenarioServer) -> Iterator[cdpnb.Supervisor]:
    site.add("/api", PAGE)
    site.add("/api-inner", INNER)
    site.add("/api-hostile", HOSTILE)
    with cdpnb.sync.launch(request.param) as backend, \
            cdpnb.sync.Supervisor.start(backend, dialog_timeout_s=60) as blocking:
        yield blocking.aio


@pytest.fixture
async def sup(shared: cdpnb.Supervisor, site: ScenarioServer
              ) -> AsyncIterator[cdpnb.Supervisor]:
    """The shared supervisor on a fresh /api page (its frame in the tree); a dialog a
    failed test left open is dismissed."""
    await shared.navigate(site.url("/api"))
    await settle(shared, lambda s: any(f.url.endswith("/api-inner") for f in s.frames.values()))
    yield shared
    for dialog in shared.state.pending_dialogs:
        with contextlib.suppress(cdpnb.CdpnbError):
            await shared.respond("dismiss", dialog_id=dialog.id)


def inner_frame(sup: cdpnb.Supervisor) -> str:
    return next(c.frame_id for c in sup.frame_tree().children if c.url.endswith("/api-inner"))


# -- item 3: evaluate calls a function ------------------------------------------------------


@pytest.mark.browser
async def test_a_function_is_called_with_its_argument(sup: cdpnb.Supervisor) -> None:
    assert await sup.evaluate("() => document.title") == "api"
    assert await sup.evaluate("(x) => x * 2", 21) == 42
    assert await sup.evaluate("x => x.a + x.b.length", {"a": 1, "b": [1, 2]}) == 3
    assert await sup.evaluate("function (a) { return a.toUpperCase() }", "ada") == "ADA"
    assert await sup.evaluate("async (ms) => { await new Promise(r => setTimeout(r, ms)); "
                              "return 'late' }", 20) == "late"
    assert await sup.evaluate("(x = 5) => x") == 5  # no arg: called with none
    # The values JSON loses go in as they are, at any depth.
    assert await sup.evaluate(
        "(v) => [typeof v[0], Number.isNaN(v[1]), Object.is(v[2], -0), v[3] === Infinity, "
        "typeof v[4], v[5].x === null]",
        [cdpnb.Undefined, math.nan, -0.0, math.inf, 2**70, {"x": None}]) == [
        "undefined", True, True, True, "bigint", True]
    # A script that declares a function and calls it is a script, not a function.
    assert await sup.evaluate("function f() { return 7 }\nf()") == 7
    assert await sup.evaluate("(() => 8)()") == 8
    frame = inner_frame(sup)
    assert await sup.evaluate("() => document.title", frame_id=frame) == "inner"
    with pytest.raises(TypeError, match="got arg=21, but 'document.title' is not a function"):
        await sup.evaluate("document.title", 21)
    with pytest.raises(cdpnb.EvaluateError, match="boom"):
        await sup.evaluate("(x) => { throw new Error('boom ' + x) }", 1)


# -- item 4: click(selector), waiting, refs by keyword --------------------------------------


@pytest.mark.browser
async def test_click_takes_a_selector_first_and_waits_for_it(sup: cdpnb.Supervisor) -> None:
    done = await sup.click("#safe")
    assert isinstance(done, ClickResult) and done.selector == "#safe" and done.x > 0
    assert done.frame_id == sup.page_target_id and done.dialog_id is None
    assert await sup.evaluate("window.hit") == "safe"
    # Playwright's click waits for the element: one that comes 0.5 s later is clicked.
    await sup.evaluate("() => { setTimeout(() => { const b = document.createElement('button');"
                       " b.id = 'late'; b.textContent = 'late'; b.onclick = () => "
                       "window.hit = 'late'; document.getElementById('later').append(b) }, "
                       "500) }")
    await sup.click("#late", timeout=20)
    assert await sup.evaluate("window.hit") == "late"
    with pytest.raises(NoSuchElement, match="'#nothing' in the page within 0.5 s"):
        await sup.click("#nothing", timeout=0.5)
    with pytest.raises(ValueError, match="pass it as ref='button:Go'"):
        await sup.click("button:Go")
    with pytest.raises(ValueError, match=r"click\('#b'\) or click\(selector='#b'\)"):
        await sup.click(ref="#b")


@pytest.mark.browser
async def test_a_click_returns_the_dialog_it_opened_and_one_open_blocks_the_next(
        sup: cdpnb.Supervisor) -> None:
    done = await sup.click("#ask", timeout=10)
    if done.dialog_id is None:  # (over classic a dialog may open after the click's poll)
        done = ClickResult(done.frame_id, done.x, done.y,
                           (await sup.wait_for_dialog(timeout=5)).id, done.selector)
    [dialog] = sup.state.pending_dialogs
    assert dialog.id == done.dialog_id and dialog.message == "sure?"
    with pytest.raises(BlockedByDialog, match="respond") as caught:
        await sup.click("#safe", timeout=5)
    assert caught.value.dialog_id == dialog.id
    await sup.respond("accept", dialog_id=dialog.id)
    assert await sup.evaluate("window.answer") is True


@pytest.mark.browser
async def test_a_page_cannot_steer_a_selector(sup: cdpnb.Supervisor, site: ScenarioServer
                                             ) -> None:
    """Issue 38: a page that makes every querySelector answer #buy. Over CDP and BiDi
    the selector is resolved where the page cannot reach; over classic, where the
    server's search runs in the page's realm (measured on WebKitWebDriver 2.50 and
    chromedriver 156), the page's replacement is refused, never acted on."""
    await sup.navigate(site.url("/api-hostile"))
    assert await sup.evaluate("document.querySelector('#safe').id") == "buy"  # its realm
    if sup.protocol == "classic":
        for act in (lambda: sup.click("#safe", timeout=2),
                    lambda: sup.fill("#name", "x", timeout=2)):
            with pytest.raises(ElementNotClickable,
                               match="replaced Document.prototype.querySelector"):
                await act()
        assert await sup.evaluate("window.hit ?? null") is None  # nothing was clicked
        return
    await sup.click("#safe")
    assert await sup.evaluate("window.hit") == "safe"
    await sup.fill("#name", "not buy")
    assert await sup.evaluate("[document.getElementById('name').value, "
                              "document.getElementById('buy').value]") == ["not buy", ""]
    await sup.wait_for_selector("#area", timeout=5)


# -- fill, wait_for_selector, screenshot ------------------------------------------------------


@pytest.mark.browser
async def test_fill_types_over_what_a_field_holds(sup: cdpnb.Supervisor) -> None:
    values = "() => ['name', 'area', 'when'].map(id => document.getElementById(id).value)" \
             ".concat([document.getElementById('ed').textContent])"
    await sup.fill("#name", "Ada Lovelace")
    await sup.fill("#area", "line 1\nline 2")
    await sup.fill("#when", "2024-05-06")
    await sup.fill("#ed", "edited")
    assert await sup.evaluate(values) == ["Ada Lovelace", "line 1\nline 2", "2024-05-06",
                                          "edited"]
    await sup.fill("#name", "")
    assert await sup.evaluate("document.getElementById('name').value") == ""
    with pytest.raises(ElementNotClickable, match="input type=checkbox"):
        await sup.fill("#box", "x", timeout=2)
    with pytest.raises(ElementNotClickable, match="disabled.*still after 0.5 s"):
        await sup.fill("#off", "x", timeout=0.5)
    frame = inner_frame(sup)
    await sup.fill("#inner", "in the frame", frame_id=frame)
    assert await sup.evaluate("document.getElementById('inner').value",
                              frame_id=frame) == "in the frame"


@pytest.mark.browser
async def test_wait_for_selector_waits_for_each_state(sup: cdpnb.Supervisor) -> None:
    await sup.wait_for_selector("#safe")
    await sup.wait_for_selector("#nothing", state="detached", timeout=2)
    await sup.evaluate("() => { document.getElementById('safe').style.visibility = 'hidden' }")
    await sup.wait_for_selector("#safe", state="hidden", timeout=5)
    await sup.wait_for_selector("#safe", state="attached", timeout=5)
    with pytest.raises(cdpnb.WaitTimeout, match="'#safe' was not visible .* one matched, not "
                                                "visible"):
        await sup.wait_for_selector("#safe", timeout=0.5)
    await sup.evaluate("() => { setTimeout(() => { document.getElementById('safe').style"
                       ".visibility = 'visible' }, 300) }")
    await sup.wait_for_selector("#safe", timeout=20)
    await sup.wait_for_selector("#inner", frame_id=inner_frame(sup), timeout=5)
    with pytest.raises(ValueError, match="state must be one of"):
        await sup.wait_for_selector("#safe", state="shown")  # type: ignore[arg-type]


def png_size(png: bytes) -> tuple[int, int]:
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    width, height = struct.unpack(">II", png[16:24])
    return width, height


@pytest.mark.browser
async def test_a_screenshot_is_a_png_of_the_page_or_of_a_frame(
        sup: cdpnb.Supervisor, tmp_path: Path) -> None:
    width, height = png_size(await sup.screenshot())
    view = await sup.evaluate("() => [innerWidth, innerHeight]")
    assert (width, height) == (view[0], view[1])  # (device pixel ratio 1 on each)
    path = tmp_path / "shots" / "frame.png"
    png = await sup.screenshot(inner_frame(sup), path=path)
    assert png_size(png) == (200, 100)  # the frame's box, not the page
    assert path.read_bytes() == png
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


# -- item 6: dialog events, wait_for_event, typed results, sup.url -----------------------


@pytest.mark.browser
async def test_a_dialog_event_reads_like_a_dialog(sup: cdpnb.Supervisor) -> None:
    waiting = asyncio.ensure_future(sup.wait_for_event(
        "dialog", lambda ev: ev.message == "name?", timeout=20))
    anyone = asyncio.ensure_future(sup.wait_for_event("dialog", timeout=20))
    await asyncio.sleep(0.1)  # (each collects from its call on)
    # (Not awaited before the answer: over classic an evaluate that a dialog interrupts
    # may wait for the dialog's answer, to read what the page got.)
    asking = asyncio.ensure_future(sup.evaluate(
        "() => { setTimeout(() => { window.r = prompt('other?') }, 0) }"))
    ev = await anyone
    assert ev.message == "other?" and not waiting.done()
    await ev.dismiss()
    await asking
    asking = asyncio.ensure_future(sup.evaluate(
        "() => { setTimeout(() => { window.r = prompt('name?', 'Bob') }, 0) }"))
    ev = await waiting
    # WebDriver classic tells a dialog's message only: its type is "unknown" until an
    # answer shows it took text, and its default text is not told.
    classic = sup.protocol == "classic"
    assert (ev.type, ev.message, ev.default_value) == (
        ("unknown", "name?", "") if classic else ("prompt", "name?", "Bob"))
    closing = asyncio.ensure_future(sup.wait_for_event("dialogclosed", timeout=20))
    await asyncio.sleep(0.1)
    record = await ev.accept("Ada")
    closed = await closing
    await asking
    assert (closed.type, closed.message, record.prompt_text) == ("prompt", "name?", "Ada")
    assert await sup.evaluate("window.r") == "Ada"
    with pytest.raises(cdpnb.WaitTimeout, match="no dialog event for which <lambda> held"):
        await sup.wait_for_event("dialog", lambda ev: False, timeout=0.3)


@pytest.mark.browser
async def test_page_calls_return_typed_results_and_url_is_the_pages(
        sup: cdpnb.Supervisor, site: ScenarioServer) -> None:
    assert sup.url == site.url("/api")
    assert sup.endpoint.startswith(("ws://", "http://")) and sup.endpoint != sup.url
    done = await sup.navigate(site.url("/blank"))
    assert isinstance(done, NavigateResult) and done.url == site.url("/blank")
    assert done.frame_id == sup.page_target_id and done["frame_id"] == done.frame_id
    await settle(sup, lambda s: sup.url == site.url("/blank"))
    content = await sup.set_content("<title>set</title><button id=b>b</button>")
    assert content == SetContentResult(sup.page_target_id, loaded=True)
    with pytest.raises(KeyError, match="'closed'.*frame_id, loaded, dialog_id"):
        content["closed"]


# -- item 7: timeouts in seconds (no browser) -------------------------------------------------


async def test_a_timeout_in_milliseconds_is_refused_naming_seconds() -> None:
    peer = ScriptedBrowser()
    async with await cdpnb.Supervisor.start(peer) as sup:
        sent = len(peer.commands())
        for call in (lambda: sup.navigate("about:blank", timeout=30000),
                     lambda: sup.evaluate("1", timeout=5000),
                     lambda: sup.click("#a", timeout=30000),
                     lambda: sup.wait_for_dialog(timeout=10000),
                     lambda: sup.wait_for_event("dialog", timeout=10000)):
            with pytest.raises(ValueError, match=r"timeout is in seconds: \d+ s is over \d+ "
                                                 r"hours?; did you mean \d+"):
                await call()
        with pytest.raises(ValueError, match="30000 s is over 8 hours; did you mean 30?"):
            await sup.navigate("about:blank", timeout=30000)
        assert len(peer.commands()) == sent  # refused before anything was sent
        with pytest.raises(ValueError, match="timeout is in seconds"):
            sup.events(timeout=60_000)
    with pytest.raises(ValueError, match="dialog_timeout_s is in seconds: 300000 s is over "
                                         "83 hours; did you mean 300"):
        await cdpnb.Supervisor.start(ScriptedBrowser(), dialog_timeout_s=300_000)
    async with await cdpnb.Supervisor.start(ScriptedBrowser(), dialog_timeout_s=3600) as sup:
        assert sup.options.dialog_timeout_s == 3600  # an hour is the most, and allowed


# -- item 8: Ctrl-C while waiting ---------------------------------------------------------------

LINE = "cdpnb: interrupted while waiting for a dialog"


async def test_a_cancelled_wait_says_so_in_one_line_and_the_supervisor_goes_on() -> None:
    """A notebook cell awaiting a dialog is cancelled by ipykernel on Ctrl-C: the
    CancelledError stays one (asyncio's timeouts rely on it) and renders as one line."""
    peer = ScriptedBrowser()
    async with await cdpnb.Supervisor.start(peer) as sup:
        waiting = asyncio.ensure_future(sup.wait_for_dialog(timeout=60))
        await asyncio.sleep(0.1)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError) as caught:
            await waiting
        assert caught.value._render_traceback_() == [LINE]  # type: ignore[attr-defined]
        with pytest.raises(TimeoutError):  # (still a timeout, as asyncio makes it)
            async with asyncio.timeout(0.1):
                await sup.wait_for_dialog(timeout=60)
        await peer.open_dialog("alert", "after")
        assert (await sup.wait_for_dialog(timeout=5)).message == "after"


@pytest.mark.browser
def test_ctrl_c_in_a_blocking_wait_is_one_line_and_the_supervisor_goes_on(
        site: ScenarioServer) -> None:
    assert threading.current_thread() is threading.main_thread()
    with cdpnb.sync.launch("headless-shell") as backend, \
            cdpnb.sync.Supervisor.start(backend) as sup:
        sup.navigate(site.url("/blank"))
        timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
        timer.start()
        began = time.monotonic()
        try:
            with pytest.raises(KeyboardInterrupt) as caught:
                sup.wait_for_dialog(timeout=60)
        finally:
            timer.cancel()
        assert time.monotonic() - began < 30
        assert str(caught.value) == LINE
        assert caught.value._render_traceback_() == [LINE]  # type: ignore[attr-defined]
        # The traceback is the caller's line and cdpnb's raise, not the engine's frames.
        frames = traceback.extract_tb(caught.value.__traceback__)
        assert len(frames) <= 3, frames
        assert sup.evaluate("(x) => x + 1", 41) == 42
        sup.evaluate("() => { setTimeout(() => alert('still here'), 0) }")
        assert sup.wait_for_dialog(timeout=10).message == "still here"
        sup.respond("accept")


#: Cells of a kernel: a cell interrupted while it awaits a dialog (nbclient interrupts a
#: cell past its time), the same with the blocking face, then the supervisor at work.
KERNEL_CELLS = [
    """import cdpnb, cdpnb.sync
from cdpnb.probes import ScenarioServer
site = ScenarioServer().start()
launcher = cdpnb.launch("headless-shell")
backend = await launcher.__aenter__()
sup = await cdpnb.Supervisor.start(backend)
await sup.navigate(site.url("/blank"))""",
    "# interrupted\nawait sup.wait_for_dialog(timeout=60)",
    "# interrupted\ncdpnb.sync.Supervisor.of(sup).wait_for_dialog(timeout=60)",
    """print(await sup.evaluate("(x) => x * 2", 21))
await sup.stop()
await launcher.__aexit__(None, None, None)
site.close()""",
]


@pytest.mark.browser
def test_ctrl_c_in_a_notebook_cell_is_one_line(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in KERNEL_CELLS])

    def cell_timeout(cell: nbformat.NotebookNode) -> int:
        return 3 if cell.source.startswith("# interrupted") else 120

    NotebookClient(nb, kernel_name="python3", timeout_func=cell_timeout,
                   interrupt_on_timeout=True, allow_errors=True,
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    errors = [[o for o in c.outputs if o.output_type == "error"] for c in nb.cells]
    assert [len(e) for e in errors] == [0, 1, 1, 0], json.dumps(
        [c.outputs for c in nb.cells], default=str)[:2000]
    for error in (errors[1][0], errors[2][0]):
        assert error.traceback == [LINE]  # one line: no engine, asyncio or futures frames
    assert errors[1][0].ename == "CancelledError"
    assert errors[2][0].ename == "KeyboardInterrupt"
    assert [o.text for o in nb.cells[3].outputs if o.output_type == "stream"] == ["42\n"]
