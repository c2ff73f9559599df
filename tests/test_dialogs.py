"""Native dialogs in every frame, against real Chromium and headless-shell."""

from __future__ import annotations

import asyncio
import time

import pytest
from conftest import open_two_site, settle

import cdpnb
from cdpnb.probes import ScenarioServer

# (dialog call, action, prompt_text, expected [typeof, value] in page JS)
CASES = [
    ("alert('A')", "accept", None, ["undefined", None]),
    ("confirm('C')", "accept", None, ["boolean", True]),
    ("confirm('C')", "dismiss", None, ["boolean", False]),
    ("prompt('P', 'def')", "accept", "typed <b>text</b>", ["string", "typed <b>text</b>"]),
    ("prompt('P', 'def')", "accept", None, ["string", "def"]),  # OK without text: the default
    ("prompt('P', 'def')", "dismiss", None, ["object", None]),
]


async def open_dialog(sup: cdpnb.Supervisor, call: str, frame_id: str | None) -> None:
    """Open a dialog from page JS without blocking the evaluate that schedules it."""
    await sup.evaluate(f"setTimeout(() => {{ window.__r = {call}; }}, 0); 0", frame_id=frame_id)


async def page_result(sup: cdpnb.Supervisor, frame_id: str | None) -> list[object]:
    result: list[object] = await sup.evaluate("[typeof window.__r, window.__r ?? null]",
                                              frame_id=frame_id)
    return result


@pytest.mark.parametrize("frame", ["main", "srcdoc", "oopif"])
@pytest.mark.parametrize(("call", "action", "text", "expected"), CASES,
                         ids=[f"{c.split('(')[0]}-{a}{'-text' if t else ''}"
                              for c, a, t, _ in CASES])
async def test_dialog_in_every_frame_is_seen_answered_and_round_trips(
    sup: cdpnb.Supervisor, site: ScenarioServer, frame: str, call: str, action: str,
    text: str | None, expected: list[object],
) -> None:
    frames = await open_two_site(sup, site)
    frame_id = frames[frame]
    await open_dialog(sup, call, frame_id)
    dialog = await sup.wait_for_dialog(timeout=5)
    assert dialog.type == call.split("(")[0]
    assert dialog.frame_id == frame_id
    assert dialog.session_id == sup.page_session_id  # dialogs arrive on the top session
    assert dialog.via == "native"
    assert sup.snapshot().pending_dialogs[0].id == dialog.id

    record = await sup.respond(action, prompt_text=text)

    assert record.id == dialog.id
    assert record.closed_by == "agent"
    assert record.accepted is (action == "accept")
    assert record.closed_at >= record.opened_at
    if dialog.type == "prompt" and action == "accept":
        assert record.prompt_text == (text or dialog.default_prompt)  # OK: the default
    assert await page_result(sup, frame_id) == expected
    snap = sup.snapshot()
    assert snap.pending_dialogs == ()
    assert snap.recent_dialogs[-1].id == dialog.id


async def test_headless_shell_dialogs_in_oopif_and_srcdoc(
    headless_shell: cdpnb.Backend, site: ScenarioServer
) -> None:
    async with await cdpnb.Supervisor.start(headless_shell.cdp_url) as sup:
        frames = await open_two_site(sup, site)
        for name in ("main", "srcdoc", "oopif"):
            await open_dialog(sup, "prompt('where', 'x')", frames[name])
            dialog = await sup.wait_for_dialog(timeout=5)
            assert dialog.frame_id == frames[name]
            assert dialog.has_browser_handler is False  # measured: headless-shell has none
            await sup.respond("accept", prompt_text=name)
            assert await page_result(sup, frames[name]) == ["string", name]


async def test_chromium_reports_a_browser_handler(sup: cdpnb.Supervisor,
                                                  site: ScenarioServer) -> None:
    await sup.navigate(site.url("/blank"))
    await open_dialog(sup, "alert(1)", None)
    dialog = await sup.wait_for_dialog(timeout=5)
    assert dialog.has_browser_handler is True
    await sup.respond("accept")


@pytest.mark.parametrize("action", ["accept", "dismiss"])
async def test_beforeunload_after_a_user_gesture(sup: cdpnb.Supervisor, site: ScenarioServer,
                                                 action: str) -> None:
    await sup.navigate(site.url("/beforeunload"))
    # beforeunload only asks after a user activation.
    await sup.cdp("Runtime.evaluate", {"expression": "1", "userGesture": True})
    leaving = asyncio.ensure_future(sup.navigate(site.url("/blank")))
    dialog = await sup.wait_for_dialog(timeout=5)
    assert dialog.type == "beforeunload"
    assert not leaving.done()  # navigation waits for the answer
    record = await sup.respond(action)
    assert record.type == "beforeunload"
    assert record.closed_by == "agent"
    if action == "accept":
        await asyncio.wait_for(leaving, 10)
        assert await sup.evaluate("location.pathname") == "/blank"
    else:
        with pytest.raises(cdpnb.NavigationError, match="ERR_ABORTED"):
            await asyncio.wait_for(leaving, 10)
        assert await sup.evaluate("location.pathname") == "/beforeunload"


async def test_beforeunload_without_gesture_navigates_without_asking(
    sup: cdpnb.Supervisor, site: ScenarioServer
) -> None:
    await sup.navigate(site.url("/beforeunload"))
    await sup.navigate(site.url("/blank"))
    assert sup.snapshot().recent_dialogs == ()


@pytest.mark.parametrize(("policy", "call", "expected", "accepted"), [
    ("auto_dismiss", "prompt('p', 'def')", ["object", None], False),
    ("auto_dismiss", "confirm('c')", ["boolean", False], False),
    ("auto_accept", "prompt('p', 'def')", ["string", "def"], True),
    ("auto_accept", "confirm('c')", ["boolean", True], True),
])
async def test_auto_policies_answer_in_every_frame(
    chromium: cdpnb.Backend, site: ScenarioServer, policy: str, call: str,
    expected: list[object], accepted: bool,
) -> None:
    async with await cdpnb.Supervisor.start(chromium.cdp_url, policy=policy) as sup:  # type: ignore[arg-type]
        frames = await open_two_site(sup, site)
        for name in ("main", "oopif"):
            before = len(sup.snapshot().recent_dialogs)
            await open_dialog(sup, call, frames[name])
            await settle(sup, lambda s, n=before: len(s.recent_dialogs) == n + 1)
            record = sup.snapshot().recent_dialogs[-1]
            assert record.closed_by == "auto_policy"
            assert record.frame_id == frames[name]
            assert record.accepted is accepted
            assert await page_result(sup, frames[name]) == expected


async def test_must_respond_watchdog_dismisses_after_the_timeout(
    chromium: cdpnb.Backend, site: ScenarioServer
) -> None:
    async with await cdpnb.Supervisor.start(chromium.cdp_url, dialog_timeout_s=0.4) as sup:
        frames = await open_two_site(sup, site)
        await open_dialog(sup, "prompt('wait', 'def')", frames["oopif"])
        dialog = await sup.wait_for_dialog(timeout=5)
        began = time.monotonic()
        await settle(sup, lambda s: not s.pending_dialogs)
        waited = time.monotonic() - began
        record = sup.snapshot().recent_dialogs[-1]
        assert record.id == dialog.id
        assert record.closed_by == "watchdog"
        assert record.accepted is False
        assert 0.3 <= record.closed_at - record.opened_at < 1.5
        assert waited < 1.5
        assert await page_result(sup, frames["oopif"]) == ["object", None]
        assert sup.stats()["watchdog-dismissals"] == 1


async def test_watchdog_does_not_fire_for_an_answered_dialog(
    chromium: cdpnb.Backend, site: ScenarioServer
) -> None:
    async with await cdpnb.Supervisor.start(chromium.cdp_url, dialog_timeout_s=0.3) as sup:
        await sup.navigate(site.url("/blank"))
        await open_dialog(sup, "confirm('x')", None)
        await sup.wait_for_dialog(timeout=5)
        await sup.respond("accept")
        await asyncio.sleep(0.5)
        assert [r.closed_by for r in sup.snapshot().recent_dialogs] == ["agent"]
        assert "watchdog-dismissals" not in sup.stats()


# Closed within milliseconds by someone else, it may look like an auto-dismissing client
# (the hint is tested in test_bridge.py); here only the record counts.
@pytest.mark.filterwarnings("ignore::cdpnb.errors.CdpnbWarning")
async def test_dialog_closed_by_another_client_is_remote(
    sup: cdpnb.Supervisor, chromium: cdpnb.Backend, site: ScenarioServer
) -> None:
    await sup.navigate(site.url("/blank"))
    # A second, independent CDP client on the same page (as a proxy or a person would be)
    # answers the dialog before we do.
    async with await cdpnb.Supervisor.start(chromium.cdp_url) as other:
        attached = await other.cdp("Target.attachToTarget",
                                   {"targetId": sup.page_target_id, "flatten": True},
                                   browser=True)
        session = attached["sessionId"]
        await other.cdp("Page.enable", session_id=session)
        await open_dialog(sup, "confirm('other')", None)
        dialog = await sup.wait_for_dialog(timeout=5)
        await other.cdp("Page.handleJavaScriptDialog", {"accept": True}, session_id=session)
        await settle(sup, lambda s: not s.pending_dialogs)
    record = sup.snapshot().recent_dialogs[-1]
    assert record.id == dialog.id
    assert record.closed_by == "remote"
    assert record.accepted is True
    with pytest.raises(cdpnb.NoPendingDialog, match="closed by remote"):
        await sup.respond("accept")
    with pytest.raises(cdpnb.UnknownDialog, match="no longer open.*remote"):
        await sup.respond("accept", dialog_id=dialog.id)


async def test_respond_errors_name_what_is_wrong(sup: cdpnb.Supervisor,
                                                 site: ScenarioServer) -> None:
    await sup.navigate(site.url("/blank"))
    with pytest.raises(cdpnb.NoPendingDialog, match="no dialog is open"):
        await sup.respond("accept")
    with pytest.raises(cdpnb.WaitTimeout, match="no dialog opened within 0.2 s"):
        await sup.wait_for_dialog(timeout=0.2)
    await open_dialog(sup, "alert('x')", None)
    dialog = await sup.wait_for_dialog(timeout=5)
    with pytest.raises(ValueError, match="action must be 'accept' or 'dismiss', got 'ok'"):
        await sup.respond("ok")
    with pytest.raises(cdpnb.UnknownDialog, match=r"no open dialog has id 'd-99' \(open: d-1\)"):
        await sup.respond("accept", dialog_id="d-99")
    with pytest.raises(TypeError, match="prompt_text must be a str"):
        await sup.respond("accept", prompt_text=5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="timeout must be a positive number"):
        await sup.wait_for_dialog(timeout=-1)
    # The dialog is still open after all those refusals, and can be answered.
    assert sup.snapshot().pending_dialogs[0].id == dialog.id
    await sup.respond("accept", dialog_id=dialog.id)
