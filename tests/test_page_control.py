"""Page and frame control: ``navigate(frame_id=...)``, ``set_content``, ``reload`` and
``close_page`` on every path (chromium, headless-shell: CDP; firefox, chromium+bidi:
WebDriver BiDi), Lightpanda where it can, and the state rules that make a close asked
for never "someone else's" (``cdpnb.supervisor.page_control``, ``cdpnb.state.pages``).
"""

from __future__ import annotations

import asyncio
import json
import time
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

import cdpnb
from cdpnb import ClosePageResult, NavigateResult, SetContentResult
from cdpnb.drivers.cdp.driver import CDPDriver
from cdpnb.probes import ScenarioServer
from cdpnb.probes.checks import user_activation
from cdpnb.protocol import Event, Note
from cdpnb.state import BrowserState, fold
from cdpnb.state.changes import PageClosed
from cdpnb.state.pages import CLOSED_ON_REQUEST
from cdpnb.supervisor import page_control
from cdpnb.testing import HOLD, ScriptedBiDiBrowser, ScriptedBrowser, ScriptedCommand
from tests.conftest import settle

#: A top page with a same-site (in-process) and a cross-site (OOPIF on CDP) child.
TOP = """<!doctype html><title>top</title><body>
<iframe id=same src="/pc-kid"></iframe><iframe id=cross src="{B}/pc-kid"></iframe>
<script>window.marker = 'kept'</script></body>"""
KID = "<!doctype html><title>kid</title><p>kid</p>"
OTHER = "<!doctype html><title>other</title><p>other</p>"
#: A popup that asks before it goes (no user activation: it never shows) and prompts.
POPUP = """<!doctype html><title>popup</title><script>
addEventListener('beforeunload', e => { e.preventDefault(); e.returnValue = ''; });
setTimeout(() => prompt('closing?'), 50)</script>"""

#: Paths on Chromium: an open native dialog anywhere on the page holds every navigation
#: of its frames (measured), so navigate(frame_id=...) dismisses it first. Firefox
#: navigates the frame at once and leaves the page's other dialogs open.
HOLDS_FRAME_NAVIGATIONS = {"chromium", "headless-shell", "chromium+bidi"}


@pytest.fixture(scope="module")
def pages(site: ScenarioServer) -> ScenarioServer:
    site.add("/pc-top", TOP)
    site.add("/pc-kid", KID)
    site.add("/pc-other", OTHER)
    site.add("/pc-popup", POPUP)
    return site


async def open_top(sup: cdpnb.Supervisor, site: ScenarioServer) -> tuple[str, str]:
    """Navigate to /pc-top; the ids of its same-site and cross-site children."""
    await sup.navigate(site.url("/pc-top"))
    kids = (site.url("/pc-kid"), site.url("/pc-kid", "b"))
    await settle(sup, lambda s: {f.url for f in s.frames.values()} >= set(kids))
    same, cross = (next(f.frame_id for f in sup.state.frames.values() if f.url == url)
                   for url in kids)
    return same, cross


def url_of(sup: cdpnb.Supervisor, frame_id: str) -> str:
    node = sup.frame_tree().find(frame_id)
    assert node is not None, f"{frame_id} is not in {sup.frame_tree()}"
    return node.url


async def test_a_frame_is_navigated_alone_in_process_or_out(
        every_path: cdpnb.Backend, pages: ScenarioServer) -> None:
    """``navigate(url, frame_id=...)`` navigates that frame and waits for its load: a
    same-site child, a cross-site OOPIF, an in-process child sent cross-site (on CDP it
    becomes an OOPIF mid-way) and back; the parent's document is untouched."""
    site = pages
    async with await cdpnb.Supervisor.start(every_path, dialog_timeout_s=60) as sup:
        same, cross = await open_top(sup, site)
        top = sup.page_target_id
        assert top is not None
        steps = [(same, site.url("/pc-other"), False), (cross, site.url("/pc-other", "b"), True),
                 (same, site.url("/pc-kid", "b"), True), (same, site.url("/pc-kid"), False)]
        for frame_id, url, out_of_process in steps:
            done = await sup.navigate(url, frame_id=frame_id, timeout=20)
            assert (done["url"], done["frame_id"]) == (url, frame_id)
            assert url_of(sup, frame_id) == url  # (no wait: the load came after the commit)
            assert sup.state.frames[frame_id].is_oopif == (out_of_process and
                                                           sup.protocol == "cdp")
            title = url.rsplit("/", 1)[1].removeprefix("pc-")
            assert await sup.evaluate("document.title", frame_id=frame_id) == title
        # the parent: same document (its script's marker), same address
        assert await sup.evaluate("window.marker") == "kept"
        assert url_of(sup, top) == site.url("/pc-top")
        # navigating the page's own top frame by id is navigate(url)
        done = await sup.navigate(site.url("/pc-top"), frame_id=top)
        assert done["frame_id"] == top and await sup.evaluate("window.marker") == "kept"

        # An alert open in the top frame: where it would hold the child's navigation
        # (Chromium), cdpnb dismisses it first; Firefox navigates and leaves it open.
        same, _ = await open_top(sup, site)
        await sup.evaluate("setTimeout(() => alert('in the way'), 0); 0")
        dialog = await sup.wait_for_dialog(20)
        await sup.navigate(site.url("/pc-other"), frame_id=same, timeout=20)
        assert url_of(sup, same) == site.url("/pc-other")
        if every_path.kind in HOLDS_FRAME_NAVIGATIONS:
            [record] = [r for r in sup.state.recent_dialogs if r.id == dialog.id]
            assert (record.closed_by, record.reason) == ("cdpnb", "navigation")
        else:
            assert [d.id for d in sup.state.pending_dialogs] == [dialog.id]
            await sup.respond("dismiss", dialog_id=dialog.id)

        with pytest.raises(cdpnb.UnknownFrame, match="'no-such-frame' is not in the frame"):
            await sup.navigate(site.url("/pc-kid"), frame_id="no-such-frame")
        with pytest.raises(TypeError, match="frame_id must be a str"):
            await sup.navigate(site.url("/pc-kid"), frame_id=7)  # type: ignore[arg-type]
        assert sup.hints == [] and sup.state.pending_dialogs == ()


async def test_set_content_replaces_the_document_and_a_dialog_in_it_does_not_hang(
        every_path: cdpnb.Backend, pages: ScenarioServer) -> None:
    """``set_content(html)`` is Playwright's ``setContent``: evaluate then sees the new
    DOM, its frames load; in a child frame it replaces that frame's document alone. New
    content whose script calls ``alert()`` returns at once with the dialog's id (the
    document loads once it is answered), never stuck behind it."""
    site = pages
    kid = site.url("/pc-kid", "b")
    async with await cdpnb.Supervisor.start(every_path, dialog_timeout_s=60) as sup:
        await sup.navigate(site.url("/blank"))
        top = sup.page_target_id
        done = await sup.set_content(f'<!doctype html><title>new</title><p id=p>hello</p>'
                                     f'<iframe src="{kid}"></iframe>', timeout=20)
        assert done == SetContentResult(top, loaded=True)
        assert await sup.evaluate("[document.title, document.getElementById('p').textContent,"
                                  " document.querySelectorAll('iframe').length]") == [
            "new", "hello", 1]
        await settle(sup, lambda s: any(f.url == kid for f in s.frames.values()))
        child = next(f.frame_id for f in sup.state.frames.values() if f.url == kid)
        # its load waited for the written frame's (Chromium says readyState "complete"
        # before that: the load event is what counts)
        assert await sup.evaluate("document.title", frame_id=child) == "kid"

        done = await sup.set_content("<title>inside</title><b>in the frame</b>",
                                     frame_id=child)
        assert done == SetContentResult(child, loaded=True)
        assert await sup.evaluate("document.body.textContent", frame_id=child) == "in the frame"
        assert await sup.evaluate("document.title") == "new"  # the parent's stays

        began = time.monotonic()
        done = await sup.set_content("<title>asks</title><script>alert('hi')</script>"
                                     "<p>after</p>", timeout=20)
        assert time.monotonic() - began < 10
        [dialog] = sup.state.pending_dialogs
        assert done == SetContentResult(top, loaded=False, dialog_id=dialog.id)
        assert (dialog.type, dialog.message, dialog.frame_id) == ("alert", "hi", top)
        await sup.respond("accept", dialog_id=dialog.id)
        assert await sup.evaluate(
            "new Promise(done => { const look = () => document.readyState === 'complete' "
            "? done(document.body.textContent) : setTimeout(look, 20); look(); })",
            timeout=10) == "after"
        with pytest.raises(TypeError, match="html must be a str"):
            await sup.set_content(b"<p>bytes</p>")  # type: ignore[arg-type]
        assert sup.hints == []


async def test_reload_loads_a_new_document_and_beforeunload_can_stop_it(
        every_path: cdpnb.Backend, pages: ScenarioServer) -> None:
    """``reload()`` waits for the new document's load; after a user activation a
    beforeunload handler asks first, as on a navigation: dismissed, the reload is a
    NavigationError and the page keeps its document; accepted, it reloads."""
    site = pages
    async with await cdpnb.Supervisor.start(every_path, dialog_timeout_s=60) as sup:
        await open_top(sup, site)
        await sup.evaluate("window.marker = 'set since'; 0")
        done = await sup.reload(timeout=20)
        assert (done["url"], done["frame_id"]) == (site.url("/pc-top"), sup.page_target_id)
        assert await sup.evaluate("window.marker") == "kept"  # the document's own, again

        await sup.navigate(site.url("/beforeunload"))
        await user_activation(sup)
        await sup.evaluate("window.marker = 'this document'; 0")
        for action in ("dismiss", "accept"):
            reloading = asyncio.ensure_future(sup.reload(timeout=20))
            try:
                dialog = await sup.wait_for_dialog(20)
                assert dialog.type == "beforeunload" and not reloading.done()
                await sup.respond(action, dialog_id=dialog.id)
                if action == "dismiss":
                    with pytest.raises(cdpnb.NavigationError,
                                       match=f"its beforeunload dialog {dialog.id} was "
                                             "dismissed"):
                        await reloading
                    assert await sup.evaluate("window.marker") == "this document"
                else:
                    await reloading
                    assert await sup.evaluate("typeof window.marker") == "undefined"
            finally:
                reloading.cancel()
                await asyncio.gather(reloading, return_exceptions=True)
        assert sup.state.pending_dialogs == () and sup.hints == []


async def test_a_popup_closed_at_once_is_a_close_asked_for_and_the_own_page_reopens(
        every_path: cdpnb.Backend, pages: ScenarioServer) -> None:
    """``close_page(popup)`` closes it at once (no beforeunload), its open prompt goes
    with it as the browser's close (not someone else's: no auto-dismisser concluded, the
    bridge stays off); a wrong id names the pages there are. With ``reopen_page=True``
    the supervisor's own page closed is replaced by a fresh one, without advice."""
    site = pages
    async with await cdpnb.Supervisor.start(every_path, dialog_timeout_s=60,
                                            reopen_page=True) as sup:
        await sup.navigate(site.url("/blank"))
        await sup.evaluate(f"window.open({json.dumps(site.url('/pc-popup'))}, '_blank'); 0",
                           user_gesture=True)
        dialog = await sup.wait_for_dialog(20)
        popup = sup.state.pages[dialog.page_session_id or ""]
        assert not popup.main
        done = await sup.close_page(popup.target_id)
        assert done == ClosePageResult(popup.target_id, closed=True)
        assert [p.target_id for p in sup.pages] == [sup.page_target_id]
        await asyncio.sleep(0.5)  # past the moment a fast close is judged
        [record] = [r for r in sup.state.recent_dialogs if r.id == dialog.id]
        assert (record.closed_by, record.reason) == ("browser", "page_closed"), record
        assert sup.hints == [] and not sup.bridge_enabled
        assert sup.stats().get("fast-remote-dismissals", 0) == 0

        with pytest.raises(cdpnb.UnknownFrame, match=f"no supervised page has target id "
                                                     f"'{popup.target_id}' \\(pages: "
                                                     f"{sup.page_target_id}"):
            await sup.close_page(popup.target_id)
        with pytest.raises(TypeError, match="page must be a page target id"):
            await sup.close_page(3)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="run_beforeunload must be True or False"):
            await sup.close_page(run_beforeunload="yes")  # type: ignore[arg-type]

        own = sup.page_target_id
        done = await sup.close_page()
        assert done == ClosePageResult(own, closed=True)
        assert sup.page_target_id not in (None, own) and sup.alive
        await sup.navigate(site.url("/blank"))
        assert await sup.evaluate("document.title") == "blank"
        assert sup.hints == []


async def test_the_own_page_closed_with_beforeunload_asks_and_the_answer_decides(
        every_path: cdpnb.Backend, pages: ScenarioServer) -> None:
    """``close_page(run_beforeunload=True)`` on a page whose beforeunload handler asks
    (after a user activation): the call returns with the dialog's id; dismissing keeps
    the page, accepting closes it. Then the supervisor has no page (``alive`` False,
    calls raise TargetGone saying why) and says nothing of "someone else"."""
    site = pages
    async with await cdpnb.Supervisor.start(every_path, dialog_timeout_s=60) as sup:
        own = sup.page_target_id
        await sup.navigate(site.url("/beforeunload"))
        await user_activation(sup)
        for action in ("dismiss", "accept"):
            began = time.monotonic()
            done = await sup.close_page(run_beforeunload=True, timeout=20)
            assert time.monotonic() - began < 10
            [dialog] = sup.state.pending_dialogs
            assert dialog.type == "beforeunload"
            assert done == ClosePageResult(own, closed=False, dialog_id=dialog.id)
            await sup.respond(action, dialog_id=dialog.id)
            if action == "dismiss":
                assert await sup.evaluate("document.title") == "beforeunload"
                assert not sup.state.pages[sup.page_session_id or ""].closing
        await settle(sup, lambda s: s.page_target_id is None)
        assert not sup.alive and sup.state.page_gone == CLOSED_ON_REQUEST
        assert sup.hints == []
        with pytest.raises(cdpnb.TargetGone, match="closed by close_page"):
            await sup.evaluate("1")
        with pytest.raises(cdpnb.TargetGone, match="closed by close_page"):
            await sup.close_page()


# -- Lightpanda: what it can do -------------------------------------------------------------


@pytest.fixture(scope="module")
def lightpanda() -> Iterator[cdpnb.Backend]:
    with cdpnb.launch("lightpanda") as backend:
        yield backend


async def test_lightpanda_sets_content_reloads_and_closes_but_navigates_no_frame(
        lightpanda: cdpnb.Backend, pages: ScenarioServer) -> None:
    """Lightpanda 1.0: set_content (its dialogs never block), reload and close_page work;
    navigate(frame_id=...) is refused, since its Page.navigate ignores frameId and would
    navigate the top frame (measured)."""
    site = pages
    async with await cdpnb.Supervisor.start(lightpanda) as sup:
        same, _ = await open_top(sup, site)
        with pytest.raises(cdpnb.NavigationError, match="not possible on Lightpanda"):
            await sup.navigate(site.url("/pc-other"), frame_id=same)
        assert url_of(sup, sup.page_target_id or "") == site.url("/pc-top")
        done = await sup.set_content("<title>asks</title><script>alert('x')</script>")
        assert done["loaded"] and done["dialog_id"] is None
        assert sup.state.recent_dialogs[-1].reason == "non_blocking"
        assert await sup.evaluate("document.title") == "asks"
        await sup.evaluate("window.marker = 'set since'; 0")
        await sup.reload(timeout=20)  # /pc-top again, not the content set
        assert await sup.evaluate("[document.title, window.marker]") == ["top", "kept"]
        assert (await sup.close_page())["closed"] and not sup.alive
        assert sup.state.page_gone == CLOSED_ON_REQUEST and sup.hints == []


# -- the state rules (no browser) -------------------------------------------------------------


def _fold(state: BrowserState, *messages: Event | Note) -> tuple[BrowserState, list[object]]:
    changes: list[object] = []
    for message in messages:
        state, made = fold(state, message)
        changes.extend(made)
    return state, changes


def _page(session: str = "S1", target: str = "T1") -> BrowserState:
    state, _ = _fold(BrowserState(), Note("cdpnb.connected", {}),
                     Note("cdpnb.pageTarget", {"target_id": target, "session_id": session}))
    return state


def test_a_close_asked_for_ends_the_page_as_requested_not_as_someone_elses() -> None:
    state, _ = _fold(_page(), Note("cdpnb.pageClosing", {"session_id": "S1", "closing": True}))
    assert state.pages["S1"].closing
    state, changes = _fold(state, Event("Target.detachedFromTarget",
                                        {"sessionId": "S1", "targetId": "T1"}, wall=1.0))
    [closed] = [c for c in changes if isinstance(c, PageClosed)]
    assert closed.reason == "requested"
    assert (state.page_target_id, state.page_gone) == (None, CLOSED_ON_REQUEST)
    # without the note, the same end is someone else's
    state, changes = _fold(_page(), Event("Target.detachedFromTarget",
                                          {"sessionId": "S1", "targetId": "T1"}, wall=1.0))
    assert [c.reason for c in changes if isinstance(c, PageClosed)] == ["closed"]
    assert state.page_gone == "the page target was closed (not by cdpnb)"


def test_a_dismissed_beforeunload_or_a_failed_close_keeps_the_page_unclaimed() -> None:
    asking = Event("Page.javascriptDialogOpening",
                   {"type": "beforeunload", "message": "", "frameId": "T1",
                    "hasBrowserHandler": True}, "S1", wall=1.0)
    closing = Note("cdpnb.pageClosing", {"session_id": "S1", "closing": True})
    for accepted, still_closing in ((False, False), (True, True)):
        state, _ = _fold(_page(), closing, asking, Event(
            "Page.javascriptDialogClosed", {"frameId": "T1", "result": accepted}, "S1",
            wall=1.1))
        assert state.pages["S1"].closing is still_closing
    state, _ = _fold(_page(), closing, Note("cdpnb.pageClosing",
                                            {"session_id": "S1", "closing": False}))
    assert not state.pages["S1"].closing


def test_over_bidi_a_context_closed_as_asked_is_requested_too() -> None:
    state, _ = _fold(BrowserState(), Note("cdpnb.connected", {"protocol": "bidi"}),
                     Note("cdpnb.pageTarget", {"target_id": "C1", "session_id": "C1"}),
                     Event("browsingContext.contextCreated",
                           {"context": "C1", "url": "about:blank", "children": None}),
                     Note("cdpnb.pageClosing", {"session_id": "C1", "closing": True}))
    state, changes = _fold(state, Event("browsingContext.contextDestroyed",
                                        {"context": "C1", "url": "about:blank"}, wall=2.0))
    assert [c.reason for c in changes if isinstance(c, PageClosed)] == ["requested"]
    assert state.page_gone == CLOSED_ON_REQUEST


# -- exact races, on scripted browsers ---------------------------------------------------------


async def test_a_frame_that_changes_process_mid_navigation_is_followed_to_its_load() -> None:
    """As Chromium 156 does it: an in-process frame sent cross-site moves to a new
    process (an ``iframe`` target attaches), its new document commits and stops loading
    on that new session, and only then the reply to ``Page.navigate`` (sent on the page
    session) comes. navigate() listens from before it sends, so it has the load."""
    browser = ScriptedBrowser()
    sup = await cdpnb.Supervisor.start(browser)
    try:
        page, session = browser.page_frame_id, browser.page_session_id
        kid = {"id": "KID", "parentId": page, "loaderId": "L0", "url": "http://a.test/kid",
               "securityOrigin": "http://a.test", "mimeType": "text/html"}
        moved = {**kid, "loaderId": "L1", "url": "http://b.test/kid",
                 "securityOrigin": "http://b.test"}
        await browser.emit("Page.frameAttached", {"frameId": "KID", "parentFrameId": page},
                           session)
        await browser.emit("Page.frameNavigated", {"frame": kid}, session)

        def tree(command: ScriptedCommand) -> dict[str, Any]:
            if command.session_id == "SESSION-KID":
                return {"frameTree": {"frame": moved}}
            return ScriptedBrowser._frame_tree(browser, command)

        def navigate(command: ScriptedCommand) -> dict[str, Any]:
            browser.push("Target.attachedToTarget", {
                "sessionId": "SESSION-KID", "waitingForDebugger": True,
                "targetInfo": {"targetId": "KID", "type": "iframe", "url": "",
                               "attached": True}}, session)
            browser.push("Page.frameNavigated", {"frame": moved}, "SESSION-KID")
            browser.push("Page.frameDetached", {"frameId": "KID", "reason": "swap"}, session)
            browser.push("Page.frameStoppedLoading", {"frameId": "KID"}, "SESSION-KID")
            return {"frameId": "KID", "loaderId": "L1"}

        browser.on("Page.getFrameTree", tree)
        browser.on("Page.navigate", navigate)
        done = await sup.navigate("http://b.test/kid", frame_id="KID", timeout=5)
        assert done == NavigateResult("http://b.test/kid", "KID", "L1")
        [sent] = browser.commands("Page.navigate")
        assert (sent.session_id, sent.params) == (session, {"url": "http://b.test/kid",
                                                            "frameId": "KID"})
        frame = sup.state.frames["KID"]
        assert (frame.url, frame.is_oopif, frame.parent_frame_id) == (
            "http://b.test/kid", True, page)
    finally:
        await sup.stop()


async def test_over_bidi_a_dismissed_close_returns_though_its_command_never_replies() -> None:
    """chromium-bidi 17 never replies to ``browsingContext.close {promptUnload: true}``
    whose beforeunload was dismissed (measured): close_page returns with the dialog, the
    dismissal keeps the page (no longer closing), and nothing waits on the reply."""
    browser = ScriptedBiDiBrowser(product="Chrome/156.0.7000.0")

    def close(command: ScriptedCommand) -> Any:
        if not command.params.get("promptUnload"):
            return ScriptedBiDiBrowser._close(browser, command)
        browser.push("browsingContext.userPromptOpened", {
            "context": command.params["context"], "type": "beforeunload", "message": "",
            "handler": "ignore"})
        return HOLD

    def answer(command: ScriptedCommand) -> dict[str, Any]:
        browser.push("browsingContext.userPromptClosed", {
            "context": command.params["context"], "type": "beforeunload",
            "accepted": command.params["accept"]})
        return {}

    browser.on("browsingContext.close", close)
    browser.on("browsingContext.handleUserPrompt", answer)
    sup = await cdpnb.Supervisor.start(browser)
    try:
        own = sup.page_target_id
        done = await sup.close_page(run_beforeunload=True, timeout=5)
        assert done == ClosePageResult(own, closed=False, dialog_id="d-1")
        await sup.respond("dismiss", dialog_id="d-1")
        assert sup.alive and not sup.state.pages[own or ""].closing and sup.hints == []
        done = await sup.close_page(timeout=5)  # at once, this time
        assert done == ClosePageResult(own, closed=True)
        assert sup.state.page_gone == CLOSED_ON_REQUEST and sup.hints == []
    finally:
        await sup.stop()


async def test_a_trapped_page_whose_navigation_failed_too_is_navigated_afresh(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Both sides of navigate()'s race had failed by the time it looked (chromium, a
    dialog loop's reload beside two busy processes, 1 run in 72): the recovery had
    replaced the trapped page and the navigation it held failed as its frame went away.
    The trap is the cause: the call goes on with the fresh page instead of failing."""
    async def trapped_at_once(self: page_control._OldDocumentWatch) -> None:
        raise page_control._Trapped("cdpnb's recovery replaced it meanwhile", freed=True)

    navigated: list[str] = []
    real = CDPDriver.navigate_page

    async def navigate_page(self: CDPDriver, url: str, page: Any,
                            timeout: float) -> NavigateResult:
        navigated.append(url)
        if len(navigated) == 1:  # fails at once: done as the race looks, as the watch is
            raise cdpnb.NavigationError(f"frame {page.target_id} went away")
        return await real(self, url, page, timeout)

    monkeypatch.setattr(page_control._OldDocumentWatch, "run", trapped_at_once)
    monkeypatch.setattr(CDPDriver, "navigate_page", navigate_page)
    browser = ScriptedBrowser()
    sup = await cdpnb.Supervisor.start(browser)
    try:
        done = await sup.navigate("http://a.test/next", timeout=5)
        assert done.url == "http://a.test/next"
        assert navigated == ["http://a.test/next"] * 2
        assert [c.params["url"] for c in browser.commands("Page.navigate")] == [
            "http://a.test/next"]
    finally:
        await sup.stop()


#: A page whose onload answers every closed alert with another (issue 38: "a page is
#: never left stuck"); it loops only the first time it loads in a browser profile, so a
#: reload that frees it then loads it in peace.
ALERT_LOOP = """<!doctype html><title>loop</title><script>
onload = () => { const key = 'looped ' + location.pathname;
  if (localStorage.getItem(key) === null) {
    localStorage.setItem(key, '1'); for (;;) alert('again'); } }</script>"""


@pytest.mark.parametrize("call", ["navigate", "reload"])
async def test_a_dialog_loop_never_traps_the_page(
        every_path: cdpnb.Backend, pages: ScenarioServer, call: str) -> None:
    """A document that opens an alert each time one closes holds a navigation away for
    good on Chromium (``Page.navigate`` never replies, measured on 156, CDP and
    chromium-bidi) and on Firefox (``browsingContext.navigate`` never replies).
    navigate()/reload() dismiss what the document they leave opens, and a loop gets the
    page replaced by a fresh one that is navigated instead, with a hint that says so;
    the caller's call succeeds."""
    loop = pages.add(f"/loop-{call}-{time.monotonic_ns()}", ALERT_LOOP)
    async with await cdpnb.Supervisor.start(every_path, dialog_timeout_s=60) as sup:
        with pytest.raises(cdpnb.WaitTimeout):  # its onload waits for the answer
            await sup.navigate(loop, timeout=3)
        await settle(sup, lambda s: len(s.pending_dialogs) == 1)
        trapped_page = sup.page_target_id
        leave = (sup.navigate(pages.url("/pc-other"), timeout=20) if call == "navigate"
                 else sup.reload(timeout=20))
        # Freed by the trap's rule ("found the page trapped") or, when Chromium refused
        # a dismissal of the loop's alert, by the recovery ("cannot answer"): replaced.
        # On Firefox the loop's alerts stop opening once the page is being left, but the
        # left document's onload never returns and holds the new document's load
        # (navigate never replied, measured 30 s): the same trap, told by its load.
        # Chromium 156 sometimes closes one of the loop's alerts itself within ms, which
        # reads as someone else's fast close (its hint, the bridge on): let it be.
        with warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always", cdpnb.CdpnbWarning)
            result = await leave
            assert sup.page_target_id != trapped_page
            assert result.url == (pages.url("/pc-other") if call == "navigate" else loop)
            assert await sup.evaluate("document.title") == ("other" if call == "navigate"
                                                            else "loop")
            await settle(sup, lambda s: s.pending_dialogs == ())
        assert any("replaced by a fresh" in str(w.message) for w in warned), [
            str(w.message) for w in warned]
        closes = [(r.closed_by, r.reason) for r in sup.state.recent_dialogs]
        assert all(by in ("browser", "cdpnb") for by, _ in closes), closes
