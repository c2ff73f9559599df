"""``Supervisor.click`` by CSS selector and at a point, as well as by ref: the same
clicks on every path (chromium, headless-shell: CDP; firefox, chromium+bidi: WebDriver
BiDi), in the page, an in-process frame and a cross-site frame, with one supervisor
per path; the arguments and the races (a dialog that ends the click, a dialog that
blocks it, an input command that never replies) on scripted peers, no browser."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from conftest import settle

import cdpnb
import cdpnb.sync
from cdpnb import BlockedByDialog, ElementNotClickable, NoSuchElement, ProtocolMismatch
from cdpnb.probes import ScenarioServer
from cdpnb.session.actions import ClickSpec, click_spec
from cdpnb.session.results import ClickResult
from cdpnb.testing import HOLD, ScriptedBiDiBrowser, ScriptedBrowser, ScriptedCommand

#: Nameless divs (no role, no accessible name: no ref can reach them), a handler that
#: asks, one far below the fold, one not rendered, and the same-site frame (in the
#: page's process on Chromium) and the cross-site one (an OOPIF) of INNER.
PAGE = """<!doctype html><title>click</title><body style="margin:0">
<div id=plain style="width:120px;height:60px;background:#ccc"
     onclick="window.clicked = (window.clicked || 0) + 1;
              window.at = [event.clientX, event.clientY, event.isTrusted]"></div>
<div id=ask style="width:120px;height:60px;background:#eee"
     onclick="window.answer = confirm('sure?')"></div>
<div id=hidden style="display:none" onclick="window.hiddenClicked = true"></div>
<iframe id=same style="border:5px solid;padding:2px;margin-left:20px" width=300 height=150
        src="/click-inner"></iframe>
<iframe id=cross style="border:0" width=300 height=150 src="{B}/click-inner"></iframe>
<div id=far style="margin-top:3000px;width:50px;height:50px"
     onclick="window.farClicked = true"></div>
</body>"""
#: A frame's target: its centre is (70, 60) in the frame's own viewport.
INNER = """<!doctype html><title>inner</title><body style="margin:0">
<div style="height:40px"></div>
<div id=target style="margin-left:30px;width:80px;height:40px;background:#ccc"
     onclick="window.clicked = (window.clicked || 0) + 1;
              window.at = [event.clientX, event.clientY, event.isTrusted]"></div>
</body>"""

#: The same two frames, below the fold.
LOW = """<!doctype html><title>low</title><body style="margin:0">
<div style="height:3000px"></div>
<iframe id=same width=300 height=150 src="/click-inner"></iframe>
<iframe id=cross width=300 height=150 src="{B}/click-inner"></iframe>
<div style="height:3000px"></div></body>"""


@pytest.fixture(scope="module")
def shared(every_path: cdpnb.Backend, site: ScenarioServer) -> Iterator[cdpnb.Supervisor]:
    """One supervisor per path for the module (its calls work from any test's loop)."""
    site.add("/click", PAGE)
    site.add("/click-inner", INNER)
    site.add("/click-low", LOW)
    with cdpnb.sync.Supervisor.start(every_path, dialog_timeout_s=60) as blocking:
        yield blocking.aio


@pytest.fixture
async def sup(shared: cdpnb.Supervisor, site: ScenarioServer
              ) -> AsyncIterator[cdpnb.Supervisor]:
    """The shared supervisor on a fresh /click page; a dialog a failed test left open
    is dismissed, so the next test starts clean."""
    await shared.navigate(site.url("/click"))
    await settle(shared, lambda s: sum(f.url.endswith("/click-inner")
                                       for f in s.frames.values()) == 2)
    yield shared
    for dialog in shared.state.pending_dialogs:
        with contextlib.suppress(cdpnb.CdpnbError):
            await shared.respond("dismiss", dialog_id=dialog.id)


def frame_on(sup: cdpnb.Supervisor, host: str) -> str:
    """The frame id of the /click-inner frame served from ``host``."""
    return next(c.frame_id for c in sup.frame_tree().children
                if c.url.endswith("/click-inner") and f"//{host}:" in c.url)


FRAMES = {"same-site": "127.0.0.1", "cross-site": "localhost"}


# -- every path ---------------------------------------------------------------------


async def test_a_nameless_div_is_clicked_by_selector(sup: cdpnb.Supervisor) -> None:
    done = await sup.click(selector="#plain")
    top = sup.frame_tree().top
    assert top is not None
    assert done == ClickResult(top.frame_id, 60, 30, None, selector="#plain")
    assert done["x"] == 60  # (still read as the dict it was)
    assert await sup.evaluate("[window.clicked, window.at]") == [1, [60, 30, True]]
    assert sup.stats()["clicks"] >= 1


async def test_a_point_is_clicked_where_it_is(sup: cdpnb.Supervisor) -> None:
    done = await sup.click(x=10, y=75.0)  # on #ask, below #plain
    assert (done["x"], done["y"], done["dialog_id"] is not None) == (10, 75, True)
    await sup.respond("accept", dialog_id=done["dialog_id"])
    done = await sup.click(x=100, y=5)
    assert (done.selector, done.ref, done.dialog_id) == (None, None, None)
    assert await sup.evaluate("[window.clicked, window.at]") == [1, [100, 5, True]]


async def test_an_element_below_the_fold_is_scrolled_into_view(sup: cdpnb.Supervisor) -> None:
    await sup.click(selector="#far")
    assert await sup.evaluate("[window.farClicked, scrollY > 2000]") == [True, True]


@pytest.mark.parametrize("which", list(FRAMES))
async def test_a_frame_is_clicked_by_selector_and_at_a_point(
        sup: cdpnb.Supervisor, which: str) -> None:
    frame = frame_on(sup, FRAMES[which])
    done = await sup.click(selector="#target", frame_id=frame)
    assert done == ClickResult(frame, 70, 60, None, selector="#target")
    assert await sup.evaluate("[window.clicked, window.at]", frame_id=frame) == [
        1, [70, 60, True]]
    # A point is in the frame's own viewport, wherever the frame is on the page.
    done = await sup.click(x=35, y=45, frame_id=frame)
    assert (done["frame_id"], done["x"], done["y"]) == (frame, 35, 45)
    assert await sup.evaluate("[window.clicked, window.at]", frame_id=frame) == [
        2, [35, 45, True]]
    assert await sup.evaluate("window.clicked ?? 0") == 0  # the page got none


@pytest.mark.parametrize("how", ["selector", "point"])
@pytest.mark.parametrize("which", list(FRAMES))
async def test_a_frame_below_the_fold_is_scrolled_into_view_first(
        sup: cdpnb.Supervisor, site: ScenarioServer, which: str, how: str) -> None:
    """Unscrolled, a click in a same-site frame out of view replies and reaches nobody
    (measured on every path), so the frames are scrolled into view first."""
    await sup.navigate(site.url("/click-low"))
    await settle(sup, lambda s: sum(f.url.endswith("/click-inner")
                                    for f in s.frames.values()) == 2)
    frame = frame_on(sup, FRAMES[which])
    if how == "selector":
        await sup.click(selector="#target", frame_id=frame)
    else:
        await sup.click(x=70, y=60, frame_id=frame)
    assert await sup.evaluate("window.clicked", frame_id=frame) == 1
    assert await sup.evaluate("scrollY > 2000") is True


async def test_a_click_that_opens_confirm_returns_it_and_a_click_waits_for_the_answer(
        sup: cdpnb.Supervisor) -> None:
    began = time.monotonic()
    done = await sup.click(selector="#ask", timeout=10)
    assert done["dialog_id"] is not None and time.monotonic() - began < 5
    [dialog] = sup.state.pending_dialogs
    assert (dialog.id, dialog.type, dialog.message) == (done["dialog_id"], "confirm", "sure?")
    # While it is open, a click would be dropped or held by the browser: refused at once.
    with pytest.raises(BlockedByDialog, match="respond") as caught:
        await sup.click(selector="#plain", timeout=10)
    assert caught.value.dialog_id == dialog.id
    record = await sup.respond("accept", dialog_id=dialog.id)
    assert (record.type, record.closed_by) == ("confirm", "agent")
    assert await sup.evaluate("window.answer") is True
    await sup.click(selector="#plain")
    assert await sup.evaluate("window.clicked") == 1


async def test_a_click_is_the_user_activation_beforeunload_needs(
        sup: cdpnb.Supervisor, site: ScenarioServer) -> None:
    await sup.navigate(site.url("/beforeunload"))
    await sup.click(selector="p")
    leaving = asyncio.ensure_future(sup.navigate(site.url("/blank"), timeout=20))
    try:
        dialog = await sup.wait_for_dialog(timeout=10)
        assert dialog.type == "beforeunload" and not leaving.done()
        await sup.respond("accept", dialog_id=dialog.id)
        await leaving
    finally:
        leaving.cancel()
        await asyncio.gather(leaving, return_exceptions=True)
    assert await sup.evaluate("document.title") == "blank"


async def test_what_cannot_be_clicked_says_why(sup: cdpnb.Supervisor) -> None:
    with pytest.raises(NoSuchElement, match="#nothing.* within 0.5 s") as caught:
        await sup.click("#nothing", timeout=0.5)
    assert (caught.value.selector, caught.value.frame_id) == ("#nothing", None)
    frame = frame_on(sup, "localhost")
    with pytest.raises(NoSuchElement, match=f"frame {frame}"):
        await sup.click(selector="#plain", frame_id=frame, timeout=0.5)
    with pytest.raises(ValueError, match="selector 'div\\[' is not a CSS selector"):
        await sup.click(selector="div[")
    with pytest.raises(ElementNotClickable, match="#hidden.* still after 0.5 s"):
        await sup.click(selector="#hidden", timeout=0.5)
    with pytest.raises(ValueError, match="outside the viewport"):
        await sup.click(x=100_000, y=5)
    with pytest.raises(ValueError, match="outside the viewport"):
        await sup.click(x=5, y=-1, frame_id=frame)
    with pytest.raises(cdpnb.UnknownFrame):
        await sup.click(selector="p", frame_id="no-such-frame")
    assert await sup.evaluate("[window.hiddenClicked ?? 0, window.clicked ?? 0]") == [0, 0]


async def test_a_ref_click_is_cdps(sup: cdpnb.Supervisor, site: ScenarioServer) -> None:
    await sup.navigate(site.url("/form"))
    if sup.protocol == "bidi":
        with pytest.raises(ProtocolMismatch, match="click\\(selector=...\\)"):
            await sup.click(ref="button:Go")
        return
    await sup.accessibility()
    done = await sup.click(ref="button:Go")
    assert done.ref == "button:Go" and done.dialog_id is None
    assert await sup.evaluate("window.went") == "go"


# -- the arguments (no browser) --------------------------------------------------------


def test_one_of_ref_selector_or_a_point() -> None:
    assert click_spec(ref="button:OK") == ClickSpec(ref="button:OK")
    assert click_spec("#a", frame_id="F") == ClickSpec(selector="#a", frame_id="F")
    assert click_spec(selector="#a") == ClickSpec(selector="#a")
    assert click_spec(None, x=1, y=2.5) == ClickSpec(point=(1.0, 2.5))
    bad: list[tuple[dict[str, Any], type[Exception], str]] = [
        ({}, TypeError, "needs what to click"),
        ({"ref": "button:OK", "selector": "#a"}, TypeError, "got selector and ref"),
        ({"selector": "#a", "x": 1, "y": 2}, TypeError, "got selector and x, y"),
        ({"x": 1}, TypeError, "got x without y"),
        ({"y": 1}, TypeError, "got y without x"),
        ({"x": "1", "y": 2}, TypeError, "x must be a number"),
        ({"x": True, "y": 2}, TypeError, "x must be a number"),
        ({"x": 1, "y": float("nan")}, ValueError, "y must be a finite number"),
        ({"ref": 5}, TypeError, "ref must be a ref str"),
        # A selector given as a ref: the error says where a selector goes.
        ({"ref": "#b"}, ValueError, "ref must look like 'role:name'.*click\\('#b'\\) or "
                                    "click\\(selector='#b'\\)"),
        ({"selector": b"#a"}, TypeError, "selector must be a CSS selector str"),
        ({"selector": "  "}, ValueError, "selector must be a CSS selector"),
        ({"selector": "#a", "frame_id": 3}, TypeError, "frame_id must be a str"),
        ({"ref": "button:OK", "frame_id": "F"}, TypeError, "a ref names its frame"),
    ]
    for kwargs, error, words in bad:
        selector = kwargs.pop("selector", None)
        with pytest.raises(error, match=words):
            click_spec(selector, **kwargs)


async def test_bad_arguments_send_nothing_on_either_protocol() -> None:
    for peer in (ScriptedBrowser(), ScriptedBiDiBrowser()):
        async with await cdpnb.Supervisor.start(peer, dialog_timeout_s=30) as sup:
            sent = len(peer.commands())
            with pytest.raises(TypeError, match="got selector and ref"):
                await sup.click("#a", ref="button:OK")
            with pytest.raises(TypeError, match="needs what to click"):
                await sup.click()
            with pytest.raises(TypeError, match="x without y"):
                await sup.click(x=3)
            with pytest.raises(ValueError, match="timeout"):
                await sup.click(selector="#a", timeout=-1)
            if peer.protocol == "bidi":
                with pytest.raises(ProtocolMismatch, match="accessibility tree"):
                    await sup.click(ref="button:OK")
            assert len(peer.commands()) == sent


# -- the races (scripted peers) -----------------------------------------------------------


def viewport(b: ScriptedBrowser) -> None:
    """The page's viewport is 800 × 600, over either protocol."""
    def bidi_size(command: ScriptedCommand) -> dict[str, Any]:
        return {"type": "success", "realm": "R", "result": {"type": "array", "value": [
            {"type": "number", "value": 800}, {"type": "number", "value": 600}]}}

    def cdp_size(command: ScriptedCommand) -> dict[str, Any]:
        return {"result": {"type": "object", "value": [800, 600]}}

    if isinstance(b, ScriptedBiDiBrowser):
        b.on("script.callFunction", bidi_size)
    else:
        b.on("Runtime.evaluate", cdp_size)


async def test_a_dialog_that_opens_before_the_release_is_answered_ends_the_click() -> None:
    cdp = ScriptedBrowser()
    viewport(cdp)

    def mouse(command: ScriptedCommand) -> Any:
        return HOLD if command.params["type"] == "mouseReleased" else {}

    cdp.on("Input.dispatchMouseEvent", mouse)
    bidi = ScriptedBiDiBrowser()
    viewport(bidi)
    bidi.on("input.performActions", lambda command: HOLD)
    for peer, method, count in ((cdp, "Input.dispatchMouseEvent", 3),
                                (bidi, "input.performActions", 1)):
        async with await cdpnb.Supervisor.start(peer, dialog_timeout_s=30) as sup:
            clicking = asyncio.ensure_future(sup.click(x=10, y=20, timeout=10))
            await peer.wait_for_command(method, count=count)
            assert not clicking.done()
            if isinstance(peer, ScriptedBiDiBrowser):
                await peer.open_prompt("confirm", "sure?")
            else:
                await peer.open_dialog("confirm", "sure?")
            done = await asyncio.wait_for(clicking, 2)
            [dialog] = sup.state.pending_dialogs
            assert (done.dialog_id, done.x, done.y) == (dialog.id, 10, 20)
            # An open dialog refuses the next click before anything is sent.
            sent = len(peer.commands(method))
            with pytest.raises(BlockedByDialog, match=dialog.id):
                await sup.click(x=10, y=20)
            assert len(peer.commands(method)) == sent


async def test_an_input_command_that_never_replies_ends_within_the_budget() -> None:
    """An input command a prompt holds (chromium-bidi 17 never replies to one sent to
    the tab whose prompt is open) must not hang the caller: the budget ends it."""
    bidi = ScriptedBiDiBrowser()
    viewport(bidi)
    bidi.on("input.performActions", lambda command: HOLD)
    async with await cdpnb.Supervisor.start(bidi, dialog_timeout_s=30) as sup:
        began = time.monotonic()
        with pytest.raises(cdpnb.CommandTimeout, match="input.performActions got no reply"):
            await sup.click(x=1, y=1, timeout=0.5)
        assert time.monotonic() - began < 2
