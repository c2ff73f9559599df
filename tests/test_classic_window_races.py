"""WebDriver classic with several windows, played exactly by a scripted server
(cdpnb.testing.classic_peer) in each server's measured ways: a dialog that opens in a window
while another is the current one, an answer for a window that is not current, a script
that returns at the dialog it opened, a window closed over its dialog."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

import cdpnb
from cdpnb.drivers.classic import driver as classic_driver
from cdpnb.drivers.classic.driver import POLL_S, WINDOWS_EVERY
from cdpnb.errors import BlockedByDialog
from cdpnb.testing.classic_peer import WINDOW, ClassicPeer, Opens

POPUP = "window-2"


@pytest.fixture
def peer() -> Iterator[ClassicPeer]:
    with ClassicPeer().serving() as serving:
        yield serving


@pytest.fixture
def short_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """Background commands under a 1 s budget (10 s in use): what a paused renderer
    costs a poll, here."""
    monkeypatch.setattr(classic_driver, "BACKGROUND", {"timeout": 1.0})
    monkeypatch.setattr(classic_driver, "BACKGROUND_WAIT_S", 5.0)


async def with_popup(sup: cdpnb.Supervisor, peer: ClassicPeer, *, shares_renderer: bool
                     ) -> None:
    """The page opens a popup, which cdpnb follows and makes the window it polls."""
    peer.popup(POPUP, shares_renderer=shares_renderer)
    await sup.wait_for(lambda s: POPUP in s.pages, 10)
    await asyncio.sleep(POLL_S * WINDOWS_EVERY * 2)  # (the next look at the windows)
    assert peer.current == POPUP


async def test_a_dialog_of_the_opener_is_found_while_the_popup_waits_on_it(
        peer: ClassicPeer, short_budget: None) -> None:
    """chromedriver 156: a popup opened with window.open shares its opener's renderer;
    while the opener shows a prompt, every command in the popup, the poll included,
    waits for the session's pageLoad timeout (300 s by default, one command at a time).
    The poll's budget ends that wait, and the dialog is looked for, and found, in the
    opener; answered there, the popup answers again."""
    peer.browser_name = "chrome"
    async with await cdpnb.Supervisor.start(peer.url, dialog_timeout_s=60) as sup:
        await with_popup(sup, peer, shares_renderer=True)
        peer.open("opener?", window=WINDOW)
        dialog = await sup.wait_for_dialog(timeout=20)
        assert (dialog.message, dialog.page_session_id) == ("opener?", WINDOW)
        assert POPUP in peer.paused  # (the poll of the popup waited on the opener's prompt)
        assert peer.timeouts["pageLoad"] == 1000
        record = await sup.respond("accept", prompt_text="Ada", dialog_id=dialog.id)
        assert (record.closed_by, record.prompt_text) == ("agent", "Ada")
        assert peer.answers == [("accept", "opener?", "Ada")]
        assert await sup.evaluate("in the popup", frame_id=POPUP) == "in the popup"
        assert sup.hints == []


async def test_a_dialog_in_another_window_is_looked_for_even_when_nothing_waits_on_it(
        peer: ClassicPeer) -> None:
    """chromedriver 156 shows a window's dialog only while that window is current: the
    other supervised windows are polled too, every SWEEP_EVERY polls (≈1 s)."""
    peer.browser_name = "chrome"
    async with await cdpnb.Supervisor.start(peer.url, dialog_timeout_s=60) as sup:
        await with_popup(sup, peer, shares_renderer=False)
        peer.open("elsewhere", window=WINDOW)
        dialog = await sup.wait_for_dialog(timeout=20)
        assert dialog.page_session_id == WINDOW and peer.paused == []
        await sup.respond("dismiss", dialog_id=dialog.id)
        assert peer.answers == [("dismiss", "elsewhere", None)]


async def test_an_answer_goes_to_its_own_window_whichever_is_current(
        peer: ClassicPeer) -> None:
    """WPT's test_two_top_level_contexts on chromedriver: a popup's alert stays open and
    answerable after a command in the main window made that one current; before, the
    answer went to the main window, met "no such alert", and the alert was recorded
    closed by someone else."""
    peer.browser_name = "chrome"
    async with await cdpnb.Supervisor.start(peer.url, dialog_timeout_s=60) as sup:
        await with_popup(sup, peer, shares_renderer=False)
        peer.open("in the popup", prompt=False, window=POPUP)
        dialog = await sup.wait_for_dialog(timeout=10)
        assert await sup.evaluate("main") == "main"
        assert peer.current == WINDOW and [d.id for d in sup.state.pending_dialogs] == [
            dialog.id]
        record = await sup.respond("accept", dialog_id=dialog.id)
        assert (record.closed_by, record.accepted) == ("agent", True)
        assert peer.answers == [("accept", "in the popup", None)]


async def test_leaving_a_window_that_shows_a_dialog_is_refused_where_there_is_no_way_back(
        peer: ClassicPeer) -> None:
    """WebKitWebDriver 2.50 never answers a switch to a window that shows a dialog: a
    command for another window is BlockedByDialog (never sent), and the dialog stays
    answerable."""
    peer.switch_hangs_on_dialog = True
    async with await cdpnb.Supervisor.start(peer.url, dialog_timeout_s=60) as sup:
        await with_popup(sup, peer, shares_renderer=False)
        peer.open("in the popup", window=POPUP)
        dialog = await sup.wait_for_dialog(timeout=10)
        with pytest.raises(BlockedByDialog, match="never answers a switch back") as blocked:
            await sup.evaluate("main", timeout=5)
        assert blocked.value.dialog_id == dialog.id and peer.current == POPUP
        await sup.respond("accept", prompt_text="ok", dialog_id=dialog.id)
        assert await sup.evaluate("main", timeout=5) == "main"


@pytest.mark.parametrize(("kind", "answer", "expected"), [
    ("prompt", "accept", "Ada"), ("prompt", "dismiss", None), ("confirm", "accept", True),
    ("alert", "accept", cdpnb.Undefined)])
async def test_a_script_that_returns_at_its_dialog_gives_the_dialogs_value(
        peer: ClassicPeer, kind: str, answer: str, expected: object) -> None:
    """Both servers answer ``execute/sync`` null at once when its script opens a
    dialog, and the script goes on once it is answered: with a handler that answers,
    evaluate waits and reads the value back, as over CDP and BiDi."""
    peer.evaluate = lambda expression: Opens("name?", kind)  # type: ignore[arg-type]
    async with await cdpnb.Supervisor.start(peer.url, dialog_timeout_s=60) as sup:
        sup.on("dialog", lambda ev: ev.accept("Ada") if answer == "accept" else ev.dismiss())
        assert await sup.evaluate(f"{kind}('name?')", timeout=10) == expected
        assert peer.kept == {}  # (read back once, then gone)


async def test_without_anyone_to_answer_a_script_that_met_a_dialog_gives_none_at_once(
        peer: ClassicPeer) -> None:
    """Nobody but the caller answers (no handler, must_respond): classic cannot tell a
    script held in its dialog from one that ended as another task opened it (measured:
    WebKitWebDriver answered ``setTimeout(() => alert(1), 0); 0`` null), so evaluate
    returns None at once and the caller answers after it."""
    peer.evaluate = lambda expression: Opens("later?", "alert")  # type: ignore[arg-type]
    async with await cdpnb.Supervisor.start(peer.url, dialog_timeout_s=60) as sup:
        assert await sup.evaluate("setTimeout(() => alert('later?'), 0); 0", timeout=10) \
            is None
        dialog = await sup.wait_for_dialog(timeout=10)
        await sup.respond("accept", dialog_id=dialog.id)


async def test_close_page_over_a_dialog_dismisses_it_first(peer: ClassicPeer) -> None:
    """Both servers refuse to close a window that shows a dialog ("unexpected alert
    open"): close_page dismisses it first, as navigate does, and records it."""
    peer.browser_name = "chrome"
    async with await cdpnb.Supervisor.start(peer.url, dialog_timeout_s=60) as sup:
        await with_popup(sup, peer, shares_renderer=False)
        peer.open("leave?", window=POPUP)
        dialog = await sup.wait_for_dialog(timeout=10)
        result = await sup.close_page(POPUP, timeout=10)
        assert result.closed and POPUP not in sup.state.pages
        record = next(r for r in sup.state.recent_dialogs if r.id == dialog.id)
        assert (record.closed_by, record.reason, record.accepted) == (
            "cdpnb", "page_closing", False)
        closing = [r for r in peer.requests if r[0] == "DELETE" and r[1].endswith("/window")]
        assert peer.answers == [("dismiss", "leave?", None)] and len(closing) == 1
        assert await sup.evaluate("main", timeout=5) == "main"
