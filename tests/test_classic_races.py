"""WebDriver classic's races, played exactly by a scripted server (cdpnb.testing.classic_peer):
what a poll-based protocol must never get wrong, without a browser."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

import cdpnb
from cdpnb.errors import DialogError
from cdpnb.state.dialogs import FAST_REMOTE_MS
from cdpnb.testing.classic_peer import WINDOW, ClassicPeer


@pytest.fixture
def peer() -> Iterator[ClassicPeer]:
    with ClassicPeer().serving() as serving:
        yield serving


async def test_a_url_of_a_webdriver_server_gets_a_classic_supervisor(peer: ClassicPeer) -> None:
    async with await cdpnb.Supervisor.start(peer.url) as sup:
        assert sup.protocol == "classic"
        assert sup.page_target_id == WINDOW
        assert await sup.evaluate("6 * 7") == "6 * 7"  # (the peer echoes the expression)
        assert sup.state.engine == "scripted/1.0"
    assert ("DELETE", f"/session/{peer.session_id}") in peer.requests


async def test_a_first_frame_walk_that_runs_out_does_not_fail_the_start(
        peer: ClassicPeer) -> None:
    """Seen once on WebKitWebDriver 2.50 late in a full suite run: a fresh window's first
    walk ran out of its script budget. The start goes on; the poller walks later."""
    peer.misspoken[("POST", "/execute/sync")] = (500, {
        "error": "script timeout", "message": "script timed out after 2000ms"})
    async with await cdpnb.Supervisor.start(peer.url) as sup:
        walked = [r for r in peer.requests if r[1].endswith("/execute/sync")]
        assert walked, "the start walked the window's frames"
        del peer.misspoken[("POST", "/execute/sync")]
        assert sup.page_target_id == WINDOW and sup.alive
        assert await sup.evaluate("6 * 7") == "6 * 7"
        for _ in range(200):  # the poller's next walk (every WINDOWS_EVERY polls) joins it
            if WINDOW in sup.state.frames:
                break
            await asyncio.sleep(0.05)
        assert sup.state.frames[WINDOW].url == "http://fake.test/"


async def test_a_dialog_swapped_between_the_poll_and_the_answer_is_never_given_it(
        peer: ClassicPeer) -> None:
    """The agent answers "name?" with a text; by then the page has closed it and opened
    "password?" in its place. Classic would answer whatever is open: cdpnb checks the
    message first, so the text meant for one dialog never reaches another."""
    async with await cdpnb.Supervisor.start(peer.url, dialog_timeout_s=60) as sup:
        peer.open("name?")
        named = await sup.wait_for_dialog(timeout=10)
        assert named.message == "name?"
        # (Past FAST_REMOTE_MS: a close this quick would read as an auto-dismissing
        # client, whose advice is not this test's subject.)
        await asyncio.sleep(FAST_REMOTE_MS / 1000 * 2)
        peer.open("password?")  # swapped before the next poll
        with pytest.raises(DialogError):
            await sup.respond("accept", prompt_text="ada", dialog_id=named.id)
        assert peer.answers == [] and peer.typed is None
        # the next poll sees the new one as a dialog of its own
        state = await sup.wait_for(lambda s: any(d.message == "password?"
                                                 for d in s.pending_dialogs), 10)
        other = next(d for d in state.pending_dialogs if d.message == "password?")
        assert other.id != named.id
        await sup.respond("dismiss", dialog_id=other.id)
        assert peer.answers == [("dismiss", "password?", None)]
        gone = next(r for r in sup.state.recent_dialogs if r.id == named.id)
        assert (gone.closed_by, gone.accepted) == ("remote", None)


async def test_a_dialog_closed_by_someone_else_is_theirs(peer: ClassicPeer) -> None:
    async with await cdpnb.Supervisor.start(peer.url, dialog_timeout_s=60) as sup:
        peer.open("hello", prompt=False)
        dialog = await sup.wait_for_dialog(timeout=10)
        await asyncio.sleep(FAST_REMOTE_MS / 1000 * 2)  # (as above)
        peer.close_by_someone_else()
        state = await sup.wait_for(lambda s: any(r.id == dialog.id
                                                 for r in s.recent_dialogs), 10)
        record = next(r for r in state.recent_dialogs if r.id == dialog.id)
        assert (record.closed_by, record.type) == ("remote", "unknown")


async def test_an_auto_policy_answers_each_polled_dialog_once(peer: ClassicPeer) -> None:
    async with await cdpnb.Supervisor.start(peer.url, policy="auto_accept") as sup:
        for n in range(3):
            peer.open(f"alert {n}", prompt=False)
            await sup.wait_for(lambda s, n=n: any(r.message == f"alert {n}"
                                                  for r in s.recent_dialogs), 10)
        await asyncio.sleep(0.2)  # (more polls: none answers twice)
        assert peer.answers == [("accept", f"alert {n}", None) for n in range(3)]
        assert [r.closed_by for r in sup.state.recent_dialogs] == ["auto_policy"] * 3


@pytest.mark.parametrize("browser", ["chrome", "MiniBrowser"])
@pytest.mark.parametrize("how", ["someone else", "reload", "elsewhere"])
async def test_a_dialog_gone_as_the_page_navigated_over_it_is_the_browsers_close(
        peer: ClassicPeer, browser: str, how: str) -> None:
    """chromedriver 156 closes a frame's dialog when its page navigates or reloads
    itself: where a server's browser does so, a poll that finds a shown dialog gone
    reads the top document (its address, its ``performance.timeOrigin``), and a new
    document is the browser's close; someone else's close stays theirs. WebKit 2.50
    holds the page behind the dialog, and its ``execute/sync`` in a loading document can
    wedge it: there nothing is read and every close is someone else's."""
    peer.browser_name = browser
    async with await cdpnb.Supervisor.start(peer.url, dialog_timeout_s=60) as sup:
        peer.open("hello", prompt=False)
        dialog = await sup.wait_for_dialog(timeout=10)
        await asyncio.sleep(FAST_REMOTE_MS / 1000 * 2)  # (not an auto-dismisser's close)
        peer.requests.clear()
        if how == "someone else":
            peer.close_by_someone_else()
        else:
            peer.navigate_over_dialogs("http://fake.test/next" if how == "elsewhere"
                                       else None)
        await sup.wait_for(lambda s: not s.pending_dialogs, 10)
        record = next(r for r in sup.state.recent_dialogs if r.id == dialog.id)
        navigated = how != "someone else" and browser == "chrome"
        assert (record.closed_by, record.reason) == (
            ("browser", "navigation") if navigated else ("remote", None))
        read = ("GET", f"/session/{peer.session_id}/url") in peer.requests
        assert read == (browser == "chrome")
        assert sup.hints == []
