"""The dialog contract over WebDriver classic, on WebKit (WebKitWebDriver + MiniBrowser
under cdpnb's Xvfb) and on Chromium behind chromedriver: one backend per path for the
module.

What classic can tell is held exactly: a dialog is seen by polling, answered (with its
text), in every frame and in a popup, but its frame and its type are unknown (None,
``"unknown"``) until an answer shows a prompt took its text; beforeunload is never
shown (the browser accepts it itself); every recording loads, replays and gives its
tables.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

import cdpnb
from cdpnb.errors import CDPError, ProtocolMismatch
from cdpnb.probes import ScenarioServer
from cdpnb.state import BrowserState
from tests import test_conformance as conformance

pytestmark = pytest.mark.browser

CLASSIC_PATHS = ("webkit", "chromium+chromedriver")


@pytest.fixture(scope="module", params=CLASSIC_PATHS)
def classic_path(request: pytest.FixtureRequest) -> Iterator[cdpnb.Backend]:
    with cdpnb.launch(request.param) as backend:
        yield backend


@pytest.fixture(scope="module")
def site() -> Iterator[ScenarioServer]:
    with ScenarioServer() as server:
        yield server


def frames_of(state: BrowserState, page: str) -> dict[str, str]:
    """main / srcdoc / cross_site / nested → frame id, on the probe page."""
    ids = {"main": page}
    for frame_id, frame in state.frames.items():
        if frame.url.endswith("about:srcdoc"):
            ids["srcdoc"] = frame_id
        elif "nest?depth=1" in frame.url:
            ids["cross_site"] = frame_id
        elif "nest?depth=0" in frame.url:
            ids["nested"] = frame_id
    return ids


async def open_dialog(sup: cdpnb.Supervisor, call: str, frame_id: str | None
                      ) -> cdpnb.state.PendingDialog:
    mark = sup.state.dialog_seq
    await sup.evaluate(f"setTimeout(() => {{ window.__r = {{v: {call}}}; }}, 10); 0",
                       frame_id=frame_id, timeout=10)
    state = await sup.wait_for(lambda s: s.dialog_seq > mark, 15)
    return next(d for d in state.pending_dialogs if d.id == f"d-{mark + 1}")


async def page_got(sup: cdpnb.Supervisor, frame_id: str | None) -> object:
    """What the dialog call returned to page JS (``undefined`` is ``cdpnb.Undefined``, as
    over CDP and BiDi), once it returned."""
    return await sup.evaluate("new Promise(done => { const look = () => "
                              "window.__r === undefined ? setTimeout(look, 20) : "
                              "done(window.__r.v); look(); })", frame_id=frame_id, timeout=10)


async def test_a_prompt_in_every_frame_is_polled_and_answered_with_its_text(
        classic_path: cdpnb.Backend, site: ScenarioServer) -> None:
    async with await cdpnb.Supervisor.start(classic_path, dialog_timeout_s=60) as sup:
        assert sup.protocol == "classic"
        await sup.navigate(site.url("/probe"))
        page = sup.page_target_id
        assert page is not None
        ids = frames_of(sup.state, page)
        assert set(ids) == {"main", "srcdoc", "cross_site", "nested"}, sup.state.frames
        for where, frame_id in ids.items():
            dialog = await open_dialog(sup, f"prompt('name {where}?', 'default')", frame_id)
            # classic names neither the frame nor the type: said, not guessed
            assert (dialog.type, dialog.frame_id, dialog.message, dialog.page_session_id) == (
                "unknown", None, f"name {where}?", page)
            record = await sup.respond("accept", prompt_text=f"ada {where}",
                                       dialog_id=dialog.id)
            assert (record.closed_by, record.accepted, record.type, record.prompt_text) == (
                "agent", True, "prompt", f"ada {where}")
            assert await page_got(sup, frame_id) == f"ada {where}"
        assert sup.state.pending_dialogs == ()


@pytest.mark.parametrize(("call", "action", "expected"), [
    ("alert('hi')", "accept", cdpnb.Undefined),
    ("confirm('sure?')", "accept", True),
    ("confirm('sure?')", "dismiss", False),
    ("prompt('name?', 'kept')", "accept", "kept"),  # accepted without text: its default
    ("prompt('name?', 'kept')", "dismiss", None),
])
async def test_each_kind_of_dialog_gets_the_answer_it_was_given(
        classic_path: cdpnb.Backend, site: ScenarioServer, call: str, action: str,
        expected: object) -> None:
    async with await cdpnb.Supervisor.start(classic_path, dialog_timeout_s=60) as sup:
        await sup.navigate(site.url("/blank"))
        dialog = await open_dialog(sup, call, None)
        # text sent with an accepted alert or confirm is refused by it, not typed
        record = await sup.respond(action, prompt_text="ignored" if "prompt" not in call
                                   else None, dialog_id=dialog.id)
        assert record.closed_by == "agent" and record.accepted is (action == "accept")
        assert await page_got(sup, None) == expected


@pytest.mark.parametrize(("policy", "accepted", "closed_by"), [
    ("auto_accept", True, "auto_policy"), ("auto_dismiss", False, "auto_policy"),
    ("must_respond", False, "watchdog")])
async def test_every_policy_answers_a_polled_dialog_in_a_cross_site_frame(
        classic_path: cdpnb.Backend, site: ScenarioServer, policy: str, accepted: bool,
        closed_by: str) -> None:
    async with await cdpnb.Supervisor.start(classic_path, policy=policy,  # type: ignore[arg-type]
                                            dialog_timeout_s=0.5) as sup:
        await sup.navigate(site.url("/probe"))
        assert sup.page_target_id is not None
        nested = frames_of(sup.state, sup.page_target_id)["nested"]
        mark = sup.state.dialog_seq
        await sup.evaluate("setTimeout(() => { window.__r = {v: confirm('go?')}; }, 10); 0",
                           frame_id=nested)
        state = await sup.wait_for(lambda s: any(r.id == f"d-{mark + 1}"
                                                 for r in s.recent_dialogs), 15)
        record = state.recent_dialogs[-1]
        assert (record.closed_by, record.accepted) == (closed_by, accepted)
        assert await page_got(sup, nested) is accepted


async def test_a_popups_prompt_is_the_popups_and_is_answered_without_a_wedge(
        classic_path: cdpnb.Backend, site: ScenarioServer) -> None:
    """A window that joins the session is a popup of the supervised page, made the
    current window (a prompt in a window that is not current wedges WebKit's session);
    its prompt is answered there, and once it closed the page is usable again."""
    async with await cdpnb.Supervisor.start(classic_path, dialog_timeout_s=60) as sup:
        await sup.navigate(site.url("/child"))
        main = sup.page_target_id
        target = json.dumps(site.url("/child?popup"))
        await sup.evaluate(f"document.body.innerHTML = '<a id=go target=_blank href=' + "
                           f"{target} + '>go</a>'; 0")
        await sup.click(selector="#go")
        state = await sup.wait_for(lambda s: len(s.pages) == 2, 15)
        popup = next(p for p in state.pages.values() if not p.main)
        assert popup.opener_target_id == main
        # the popup is the current window once cdpnb has switched to it
        await sup.wait_for(lambda s: s.frames.get(popup.target_id) is not None
                           and s.frames[popup.target_id].url.endswith("?popup"), 15)
        dialog = await open_dialog(sup, "prompt('in the popup?', 'd')", popup.target_id)
        assert dialog.page_session_id == popup.target_id
        await sup.respond("accept", prompt_text="popped", dialog_id=dialog.id)
        assert await page_got(sup, popup.target_id) == "popped"
        await sup.evaluate("window.close(); 0", frame_id=popup.target_id)
        await sup.wait_for(lambda s: len(s.pages) == 1, 15)
        await asyncio.sleep(0.5)  # (the next list of windows makes the main one current)
        assert await sup.evaluate("location.pathname", timeout=10) == "/child"


async def test_beforeunload_is_never_shown_over_classic(
        classic_path: cdpnb.Backend, site: ScenarioServer) -> None:
    """Measured on WebKitWebDriver 2.50 and chromedriver 156: a page that asks before it
    unloads is left without a dialog; the navigation goes on."""
    async with await cdpnb.Supervisor.start(classic_path, dialog_timeout_s=60) as sup:
        await sup.navigate(site.url("/beforeunload"))
        await sup.click(selector="body")
        await sup.navigate(site.url("/blank"), timeout=15)
        assert await sup.evaluate("location.pathname") == "/blank"
        assert sup.state.dialog_seq == 0


async def test_a_classic_recording_loads_and_replays_to_the_same_dialogs(
        classic_path: cdpnb.Backend, site: ScenarioServer, tmp_path: Path) -> None:
    path = tmp_path / "classic.jsonl.gz"
    async with await cdpnb.Supervisor.start(classic_path, policy="auto_accept",
                                            record=path) as sup:
        await sup.navigate(site.url("/probe"))
        assert sup.page_target_id is not None
        cross = frames_of(sup.state, sup.page_target_id)["cross_site"]
        await sup.evaluate("setTimeout(() => { window.__r = {v: prompt('p?', 'dflt')}; }, 10);"
                           " 0", frame_id=cross)
        await sup.wait_for(lambda s: bool(s.recent_dialogs), 15)
        assert await page_got(sup, cross) == "dflt"
        live = sup.state
    trace = cdpnb.Trace.load(path)
    assert trace.protocol == "classic"
    dialogs = trace.dialogs()
    assert dialogs[["message", "closed_by", "accepted"]].values.tolist() == [
        ["p?", "auto_policy", True]]
    assert set(trace.frames()["frame_id"]) >= set(live.frames)
    # offline, the reducers rebuild what the live supervisor had
    final = trace.final_state()
    assert [(r.message, r.closed_by) for r in final.recent_dialogs] == [
        (r.message, r.closed_by) for r in live.recent_dialogs]
    assert set(final.frames) == set(live.frames)
    # and a supervisor can start on the recording, served as an endpoint
    async with cdpnb.replay(trace) as backend, await cdpnb.Supervisor.start(backend) as again:
        assert again.protocol == "classic"


# -- the conformance scenarios that classic can drive -----------------------------------


async def test_a_url_the_browser_cannot_load_is_a_navigation_error_that_names_it(
        classic_path: cdpnb.Backend, site: ScenarioServer) -> None:
    await conformance.test_a_url_the_browser_cannot_load_is_a_navigation_error_that_names_it(
        classic_path, site)


@pytest.mark.parametrize("kind", ["alert", "confirm", "prompt"])
async def test_a_dismissal_is_the_dismissers_whatever_the_browser_says_it_was(
        classic_path: cdpnb.Backend, site: ScenarioServer, kind: str) -> None:
    await conformance.test_a_dismissal_is_the_dismissers_whatever_the_browser_says_it_was(
        classic_path, site, kind)


async def test_navigate_over_a_native_prompt_leaves_a_usable_page(
        classic_path: cdpnb.Backend, site: ScenarioServer) -> None:
    await conformance.test_navigate_over_a_native_prompt_leaves_a_usable_page(
        classic_path, site)


async def test_a_redacted_trace_never_holds_an_answer(
        classic_path: cdpnb.Backend, site: ScenarioServer, tmp_path: Path) -> None:
    await conformance.test_a_redacted_trace_never_holds_an_answer(
        classic_path, site, tmp_path, bridge=False)


async def test_while_a_dialog_is_open_only_its_answer_goes_through(
        classic_path: cdpnb.Backend, site: ScenarioServer) -> None:
    """Why the conformance scenarios that script a page under an open prompt (remove its
    frame, navigate it from its parent, close its tab, overlap a second prompt) cannot
    be driven over classic: every command but the dialog's own fails "unexpected alert
    open", in any frame; the dialog stays open and answerable, and the page goes on."""
    async with await cdpnb.Supervisor.start(classic_path, dialog_timeout_s=60) as sup:
        await sup.navigate(site.url("/probe"))
        assert sup.page_target_id is not None
        ids = frames_of(sup.state, sup.page_target_id)
        dialog = await open_dialog(sup, "prompt('held?')", ids["main"])
        for frame_id in ids.values():
            with pytest.raises(CDPError, match="unexpected alert open"):
                await sup.evaluate("1", frame_id=frame_id, timeout=10)
        await sup.respond("accept", prompt_text="free", dialog_id=dialog.id)
        assert await page_got(sup, None) == "free"
        assert await sup.evaluate("1 + 1", frame_id=ids["nested"]) == 2


async def test_a_user_gesture_is_a_click_not_a_flag_of_evaluate(
        classic_path: cdpnb.Backend, site: ScenarioServer) -> None:
    async with await cdpnb.Supervisor.start(classic_path, dialog_timeout_s=60) as sup:
        with pytest.raises(ProtocolMismatch, match="click"):
            await sup.evaluate("1", user_gesture=True)
        with pytest.raises(ProtocolMismatch, match="sup.classic"):
            await sup.cdp("Runtime.evaluate", {"expression": "1"})
        await sup.navigate(site.url("/child"))
        assert await sup.classic("classic.getTitle") == {"value": "child"}
