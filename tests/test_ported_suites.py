"""Scenarios of the public test suites, ported onto cdpnb's public API and run on every
path (chromium, headless-shell, firefox, chromium+bidi; the ``every_path`` fixture).

Sources (each test names the one it ports): Playwright ``tests/page/page-dialog.spec.ts``,
``tests/library/beforeunload.spec.ts``, ``tests/page/page-event-popup.spec.ts``,
``tests/page/frame-hierarchy.spec.ts`` and ``tests/library/browsercontext-events.spec.ts``;
Puppeteer ``test/src/dialog.spec.ts``; WPT ``webdriver/tests/bidi/browsing_context/
user_prompt_opened/``, ``user_prompt_closed/``, ``handle_user_prompt/``; hermes-agent
``tests/tools/test_browser_supervisor.py``. Where a suite never looked (a dialog in a
cross-site frame, the value the page got), the port asks too. An engine that cannot do
a step is an explicit expectation with its reason, never a skip; the dialog contract's
own cells are in ``tests/test_conformance.py``.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid

import pytest

import cdpnb
from cdpnb.probes import ScenarioServer
from tests.conftest import settle

#: Reads ``window[name]`` once the page has set it (a dialog's call returns later).
SETTLED = ("new Promise(done => {{ const look = () => window[{name}] === undefined ? "
           "setTimeout(look, 20) : done(window[{name}]); look(); }})")


async def settled(sup: cdpnb.Supervisor, name: str, frame_id: str | None = None) -> object:
    return await sup.evaluate(SETTLED.format(name=json.dumps(name)), frame_id=frame_id,
                              timeout=15)


@pytest.mark.parametrize(("kind", "action", "text", "got"), [
    ("alert", "accept", None, "undefined"),
    ("alert", "dismiss", None, "undefined"),
    ("confirm", "accept", None, True),
    ("confirm", "dismiss", None, False),
    ("prompt", "accept", "answer!", "answer!"),
    ("prompt", "dismiss", None, None),
])
async def test_each_dialog_kind_gives_the_page_what_was_answered(
        every_path: cdpnb.Backend, site: ScenarioServer, kind: str, action: str,
        text: str | None, got: object) -> None:
    """Playwright page-dialog ``should fire``, ``should allow accepting prompts``,
    ``should dismiss the prompt``, ``should accept/dismiss the confirm prompt``;
    Puppeteer dialog ``should fire``/``should allow accepting prompts``; WPT
    ``handle_user_prompt test_alert/test_confirm/test_prompt`` and ``user_prompt_closed
    test_prompt_type_*``: the dialog says its type, message and default; the page gets
    the answer; exactly one record, ``prompt_text`` only when a prompt was accepted."""
    async with await cdpnb.Supervisor.start(every_path, dialog_timeout_s=60) as sup:
        await sup.navigate(site.url("/blank"))
        call = {"alert": "alert('yo')", "confirm": "confirm('boolean?')",
                "prompt": "prompt('question?', 'yes.')"}[kind]
        await sup.evaluate(f"setTimeout(() => {{ const r = {call}; "
                           "window.__r = r === undefined ? 'undefined' : r; }, 0); 0")
        dialog = await sup.wait_for_dialog(20)
        assert (dialog.type, dialog.message, dialog.default_prompt) == {
            "alert": ("alert", "yo", ""), "confirm": ("confirm", "boolean?", ""),
            "prompt": ("prompt", "question?", "yes.")}[kind]
        assert dialog.frame_id == sup.page_target_id
        record = await sup.respond(action, prompt_text=text, dialog_id=dialog.id)
        assert await settled(sup, "__r") == got
        for _ in range(2):  # (Playwright: still one close after two more round trips)
            assert await sup.evaluate("1") == 1
        assert [r.id for r in sup.state.recent_dialogs] == [dialog.id]
        assert (record.closed_by, record.prompt_text) == ("agent", text)
        # The answer given, on every engine: Firefox's every-alert-accepted is beside it
        # (browser_accepted; tests/test_conformance.py).
        assert record.accepted is (action == "accept")


async def test_three_alerts_while_the_page_loads_hold_the_load_until_each_is_answered(
        every_path: cdpnb.Backend, site: ScenarioServer) -> None:
    """Playwright page-dialog ``should handle multiple alerts`` / ``multiple confirms``
    and the MCP ``two alert dialogs``: three dialogs in the page's own script, one after
    the other; each is answered in turn, and the page then finishes loading."""
    name = f"/three-{uuid.uuid4().hex[:8]}"
    page = site.add(name, "<!doctype html><title>three</title><p>Hello World</p><script>"
                          "alert('one'); confirm('two'); prompt('three')</script>")
    async with await cdpnb.Supervisor.start(every_path, dialog_timeout_s=60) as sup:
        loading = asyncio.ensure_future(sup.navigate(page, timeout=30))
        seen = []
        for _ in range(3):
            dialog = await sup.wait_for_dialog(20)
            seen.append((dialog.type, dialog.message))
            await sup.respond("accept", dialog_id=dialog.id)
        await loading
        assert seen == [("alert", "one"), ("confirm", "two"), ("prompt", "three")]
        assert await sup.evaluate("document.querySelector('p').textContent") == "Hello World"
        assert len({r.id for r in sup.state.recent_dialogs}) == 3


async def test_the_auto_dismiss_policy_lets_the_page_carry_on(
        every_path: cdpnb.Backend, site: ScenarioServer) -> None:
    """Playwright ``should auto-dismiss the alert/prompt without listeners`` (as a
    policy here) and hermes-agent ``test_auto_dismiss_policy`` /
    ``test_recent_dialogs_ring_buffer``: nothing stays pending, the page's code after
    the dialog runs, the record says the policy closed it, after it opened."""
    async with await cdpnb.Supervisor.start(every_path, policy="auto_dismiss") as sup:
        await sup.navigate(site.url("/blank"))
        await sup.evaluate("document.body.innerHTML = '<div onclick=\"window.alert(123); "
                           "window._clicked = true; window._p = prompt(\\'question?\\')\">x'"
                           "; setTimeout(() => document.querySelector('div').click(), 0); 0")
        assert await settled(sup, "_clicked") is True
        assert await sup.evaluate("window._p") is None
        await settle(sup, lambda s: len(s.recent_dialogs) == 2)
        assert sup.state.pending_dialogs == ()
        for record in sup.state.recent_dialogs:
            assert record.closed_by == "auto_policy" and record.closed_at >= record.opened_at


async def test_a_bridged_prompt_at_load_returns_the_agents_text(
        every_path: cdpnb.Backend, site: ScenarioServer) -> None:
    """hermes-agent ``test_bridge_captures_prompt_and_returns_reply_text``: a prompt
    50 ms after the page loads goes through the bridge and the page gets the reply
    (the port reads it back; the original did not)."""
    name = f"/bridged-{uuid.uuid4().hex[:8]}"
    page = site.add(name, "<!doctype html><title>b</title><script>window.__ret = null; "
                          "setTimeout(() => { window.__ret = prompt('PROMPT-MSG', 'default'); "
                          "}, 50);</script>")
    async with await cdpnb.Supervisor.start(every_path, bridge=True, dialog_timeout_s=60) as sup:
        await sup.navigate(page)
        dialog = await sup.wait_for_dialog(20)
        assert (dialog.via, dialog.type, dialog.default_prompt) == ("bridge", "prompt",
                                                                    "default")
        await sup.respond("accept", prompt_text="AGENT-SUPPLIED-REPLY", dialog_id=dialog.id)
        assert await sup.evaluate("new Promise(done => { const look = () => window.__ret "
                                  "=== null ? setTimeout(look, 20) : done(window.__ret); "
                                  "look(); })", timeout=15) == "AGENT-SUPPLIED-REPLY"


@pytest.mark.parametrize("where", ["same-origin", "cross-site"])
async def test_a_frames_dialog_names_its_frame(
        every_path: cdpnb.Backend, site: ScenarioServer, where: str) -> None:
    """WPT ``user_prompt_opened test_iframe`` / ``user_prompt_closed test_iframe``,
    hermes-agent ``test_iframe_contentwindow_alert`` (which never checked the frame) and
    its documented OOPIF smoke: the dialog's frame is the frame, not the page; evaluate
    reaches that frame; the answer reaches the frame's call."""
    kid = site.url("/child", "a" if where == "same-origin" else "b")
    top = site.add(f"/framed-{uuid.uuid4().hex[:8]}",
                   f'<!doctype html><title>top</title><iframe id=inner src="{kid}"></iframe>')
    async with await cdpnb.Supervisor.start(every_path, dialog_timeout_s=60) as sup:
        await sup.navigate(top)
        await settle(sup, lambda s: any(f.url == kid for f in s.frames.values()))
        frame = next(f.frame_id for f in sup.state.frames.values() if f.url == kid)
        assert await sup.evaluate("document.getElementById('who').textContent",
                                  frame_id=frame) == "child"
        await sup.evaluate("setTimeout(() => { window.__r = confirm('in iframe'); }, 0); 0",
                           frame_id=frame)
        dialog = await sup.wait_for_dialog(20)
        assert (dialog.frame_id, dialog.page_session_id) == (frame, sup.page_session_id)
        await sup.respond("accept", dialog_id=dialog.id)
        assert await settled(sup, "__r", frame) is True


async def test_a_frame_that_goes_and_comes_back_is_a_new_frame(
        every_path: cdpnb.Backend, site: ScenarioServer) -> None:
    """Playwright frame-hierarchy ``should send events when frames are manipulated
    dynamically`` and ``should report different frame instance when frame re-attaches``;
    hermes-agent ``frame_id not_in_frame_tree``: a removed frame's id is refused, the
    same element attached again is a new frame, and its dialog names the new one."""
    async with await cdpnb.Supervisor.start(every_path, dialog_timeout_s=60) as sup:
        await sup.navigate(site.url("/blank"))
        child = site.url("/child")
        await sup.evaluate(f"const f = document.createElement('iframe'); f.id = 'frame1'; "
                           f"f.src = {json.dumps(child)}; document.body.appendChild(f); 0")
        await settle(sup, lambda s: any(f.url == child for f in s.frames.values()))
        old = next(f.frame_id for f in sup.state.frames.values() if f.url == child)
        await sup.evaluate("window.__kept = document.getElementById('frame1'); "
                           "window.__kept.remove(); 0")
        await settle(sup, lambda s: old not in s.frames)
        with pytest.raises(cdpnb.UnknownFrame, match="not in the frame tree"):
            await sup.evaluate("1", frame_id=old)
        await sup.evaluate("document.body.appendChild(window.__kept); 0")
        await settle(sup, lambda s: any(f.url == child for f in s.frames.values()))
        new = next(f.frame_id for f in sup.state.frames.values() if f.url == child)
        assert new != old
        await sup.evaluate("setTimeout(() => alert('back'), 0); 0", frame_id=new)
        dialog = await sup.wait_for_dialog(20)
        assert dialog.frame_id == new
        await sup.respond("accept", dialog_id=dialog.id)


@pytest.mark.parametrize("close_at_once", [False, True], ids=["kept", "closed-at-once"])
async def test_a_dialog_a_page_opens_in_its_popup_is_the_popups(
        every_path: cdpnb.Backend, site: ScenarioServer, close_at_once: bool) -> None:
    """Playwright page-event-popup ``should be able to capture alert`` and
    browsercontext-events ``dialog event should work in popup`` / ``in immediately
    closed popup``: the opener calls ``prompt`` on the popup it just opened; the dialog
    is the popup's (its page, its opener), and the answer reaches the opener's call."""
    close = "w.close(); " if close_at_once else ""
    async with await cdpnb.Supervisor.start(every_path, dialog_timeout_s=60) as sup:
        await sup.navigate(site.url("/blank"))
        await sup.evaluate("setTimeout(() => { const w = window.open(''); "
                           f"const r = w.prompt('hey?'); {close}window.__r = r; }}, 0); 0",
                           user_gesture=True)
        dialog = await sup.wait_for_dialog(20)
        page = sup.state.pages[dialog.page_session_id or ""]
        assert not page.main and page.opener_target_id == sup.page_target_id
        assert (dialog.type, dialog.message) == ("prompt", "hey?")
        await sup.respond("accept", prompt_text="hello", dialog_id=dialog.id)
        assert await settled(sup, "__r") == "hello"
        if close_at_once:
            await settle(sup, lambda s: page.session_id not in s.pages)
        [record] = sup.state.recent_dialogs
        assert (record.page_session_id, record.closed_by) == (page.session_id, "agent")


async def test_a_dialog_answered_out_of_band_is_someone_elses_close(
        every_path: cdpnb.Backend, site: ScenarioServer) -> None:
    """Playwright chromium ``should fire dialogclosed event when dialog is closed out of
    band``, the MCP ``dialog closed out of band`` and Puppeteer ``should see dialogs
    handled by other connections``: another client answers the dialog; it leaves the
    pending list as someone else's close, and answering it afterwards says so."""
    async with await cdpnb.Supervisor.start(every_path, dialog_timeout_s=60) as sup:
        await sup.navigate(site.url("/blank"))
        await sup.evaluate("setTimeout(() => { window.__r = confirm('yo'); }, 0); 0")
        dialog = await sup.wait_for_dialog(20)
        await asyncio.sleep(0.1)  # a person's pace, not an auto-dismisser's
        if sup.protocol == "cdp":
            await sup.cdp("Page.handleJavaScriptDialog", {"accept": True})
        else:
            await sup.bidi("browsingContext.handleUserPrompt",
                           {"context": dialog.frame_id, "accept": True})
        assert await settled(sup, "__r") is True
        await settle(sup, lambda s: not s.pending_dialogs)
        [record] = sup.state.recent_dialogs
        assert (record.closed_by, record.accepted) == ("remote", True)
        with pytest.raises(cdpnb.UnknownDialog, match="no longer open: it was closed by remote"):
            await sup.respond("accept", dialog_id=dialog.id)
        assert sup.hints == []  # not fast: no auto-dismisser is suspected


async def test_wrong_answers_are_clean_errors_and_stop_does_not_wait_on_a_dialog(
        every_path: cdpnb.Backend, site: ScenarioServer) -> None:
    """hermes-agent ``test_respond_with_no_pending_dialog_errors_cleanly`` and
    ``test_browser_dialog_invalid_action``, WPT ``handle_user_prompt
    test_two_top_level_contexts`` (a wrong target) and Playwright ``should be able to
    close context with open alert`` / page-close ``should close page with active
    dialog``: each wrong call names what was wrong, and stopping with a dialog open
    returns promptly."""
    sup = await cdpnb.Supervisor.start(every_path, dialog_timeout_s=60)
    try:
        await sup.navigate(site.url("/blank"))
        with pytest.raises(cdpnb.NoPendingDialog, match="no dialog is open"):
            await sup.respond("accept")
        await sup.evaluate("setTimeout(() => alert('left open'), 0); 0")
        dialog = await sup.wait_for_dialog(20)
        with pytest.raises(ValueError, match="action must be 'accept' or 'dismiss', got 'eat'"):
            await sup.respond("eat")
        with pytest.raises(cdpnb.UnknownDialog, match=f"no open dialog has id 'd-99' "
                                                       f"\\(open: {dialog.id}\\)"):
            await sup.respond("accept", dialog_id="d-99")
        with pytest.raises(TypeError, match="prompt_text must be a str or None, got int"):
            await sup.respond("accept", prompt_text=5, dialog_id=dialog.id)  # type: ignore[arg-type]
    finally:
        began = time.monotonic()
        await sup.stop()
    assert time.monotonic() - began < 10
    assert every_path.running


#: Playwright page-event-popup: how each page opens its popup, and whether the popup's
#: ``window.opener`` is set (``noopener`` and ``rel=noopener`` clear it).
POPUPS = {
    "window.open('about:blank')": ("window.open('about:blank'); 0", True),
    "window.open('')": ("window.open(''); 0", True),
    "noopener and a url": ("window.open({url}, null, 'noopener'); 0", False),
    "target=_blank rel=opener": (
        "const a = document.createElement('a'); a.target = '_blank'; a.rel = 'opener'; "
        "a.href = {url}; document.body.appendChild(a); a.click(); 0", True),
    "target=_blank rel=noopener": (
        "const a = document.createElement('a'); a.target = '_blank'; a.rel = 'noopener'; "
        "a.href = {url}; document.body.appendChild(a); a.click(); 0", False),
}


@pytest.mark.parametrize("how", list(POPUPS))
async def test_every_way_of_opening_a_popup_gives_a_supervised_page_of_its_opener(
        every_path: cdpnb.Backend, site: ScenarioServer, how: str) -> None:
    """Playwright page-event-popup ``should work``, ``with empty url``, ``with noopener
    and url``, ``with clicking target=_blank`` (``rel=opener`` / ``rel=noopener``): a
    popup is a page cdpnb supervises, named as opened by the page (noopener too: the
    browser says who opened it, the page's ``window.opener`` does not), and the
    popup's own ``window.opener`` is as the page asked."""
    script, has_opener = POPUPS[how]
    async with await cdpnb.Supervisor.start(every_path, dialog_timeout_s=60) as sup:
        await sup.navigate(site.url("/blank"))
        await sup.evaluate(script.format(url=json.dumps(site.url("/child"))),
                           user_gesture=True)
        loads = "about:blank" if how.startswith("window.open('") else site.url("/child")
        # (its frame, once its document is the one asked for: evaluate reaches it there)
        await settle(sup, lambda s: any(
            not p.main and (f := s.frames.get(p.target_id)) is not None
            and (f.url or "about:blank") == loads for p in s.pages.values()))
        popup = next(p for p in sup.state.pages.values() if not p.main)
        assert popup.opener_target_id == sup.page_target_id
        assert await sup.evaluate("!!window.opener", frame_id=popup.target_id) is has_opener
        assert await sup.evaluate("!!window.opener") is False  # the page has none


async def test_a_popup_opened_from_a_frame_is_the_pages(
        every_path: cdpnb.Backend, site: ScenarioServer) -> None:
    """Playwright page-event-popup ``should report popup opened from iframes``: the
    popup a frame opens is a supervised page too, and its prompt is answered there."""
    async with await cdpnb.Supervisor.start(every_path, dialog_timeout_s=60) as sup:
        await sup.navigate(site.url("/two-site"))
        await settle(sup, lambda s: any(f.url.endswith("/child") and f.parent_frame_id
                                        for f in s.frames.values()))
        frame = next(f.frame_id for f in sup.state.frames.values()
                     if f.url.endswith("/child") and f.parent_frame_id)
        await sup.evaluate("setTimeout(() => { window.__r = window.open('').prompt('hey?'); "
                           "}, 0); 0", frame_id=frame, user_gesture=True)
        dialog = await sup.wait_for_dialog(20)
        page = sup.state.pages[dialog.page_session_id or ""]
        assert not page.main
        await sup.respond("accept", prompt_text="from a frame's popup", dialog_id=dialog.id)
        assert await settled(sup, "__r", frame) == "from a frame's popup"


async def test_a_navigation_drops_the_old_documents_frames(
        every_path: cdpnb.Backend, site: ScenarioServer) -> None:
    """Playwright frame-hierarchy ``should detach child frames on navigation`` and
    ``should not send attach/detach events for main frame``: a page with frames nested
    three deep (cross-site at each level) has them all in the tree; after a navigation
    to a page without frames only the top frame is left, and it is the same frame."""
    async with await cdpnb.Supervisor.start(every_path, dialog_timeout_s=60) as sup:
        await sup.navigate(site.url("/nest?depth=3"))
        await settle(sup, lambda s: len(s.frames) == 4)
        top = sup.page_target_id
        tree = sup.frame_tree()
        assert tree.top is not None and tree.top.frame_id == top
        assert sorted(node.depth for node in tree.children) == [1, 2, 3]
        await sup.navigate(site.url("/blank"))
        await settle(sup, lambda s: len(s.frames) == 1)
        assert list(sup.state.frames) == [top]
