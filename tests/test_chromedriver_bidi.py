"""The supervisor over WebDriver BiDi through chromedriver's own mapper
(``chromium+chromedriver+bidi``): the session is made over HTTP (``POST /session`` with
``webSocketUrl: true``), the supervisor adopts it on its WebSocket instead of sending
``session.new``, and ends it with ``DELETE /session/<id>`` at stop.

Measured (chromedriver and Chromium 156.0.8078.108): a prompt in a cross-site frame
arrives with that frame's context and is answered with text; a popup's prompt arrives
with the popup as its page; beforeunload waits for the answer; ``stop()`` leaves
chromedriver with no session and no Chromium running.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

import cdpnb
from cdpnb.backends import reaper
from cdpnb.probes import ScenarioServer
from cdpnb.transport.webdriver_bidi import WebDriverBiDiSocket
from cdpnb.transport.webdriver_http import WebDriverError, WebDriverServer
from tests.conftest import settle
from tests.test_firefox import REPORTING, open_probe_page, wait_report

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def chromedriver_bidi() -> Iterator[cdpnb.Backend]:
    with cdpnb.launch("chromium+chromedriver+bidi") as backend:
        yield backend


@pytest.fixture
async def sup(chromedriver_bidi: cdpnb.Backend,
              site: ScenarioServer) -> AsyncIterator[cdpnb.Supervisor]:
    site.requests.clear()
    supervisor = await cdpnb.Supervisor.start(chromedriver_bidi, dialog_timeout_s=30,
                                              connect_timeout_s=60)
    yield supervisor
    await supervisor.stop()


def chromiums(backend: cdpnb.Backend) -> list[int]:
    """The processes of the backend's group but chromedriver: the sessions' browsers."""
    return [pid for pid in reaper.members(backend.pid) if pid != backend.pid]


def browser_gone(backend: cdpnb.Backend, browser: int, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while browser in chromiums(backend):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


async def test_the_session_is_made_over_http_adopted_and_deleted_at_stop(
        chromedriver_bidi: cdpnb.Backend, tmp_path: Path) -> None:
    assert chromedriver_bidi.protocol == "bidi"
    assert chromedriver_bidi.url.startswith("http://127.0.0.1:")
    trace = tmp_path / "session.jsonl"
    sup = await cdpnb.Supervisor.start(chromedriver_bidi, connect_timeout_s=60, record=trace)
    transport = sup._core.transport
    assert isinstance(transport, WebDriverBiDiSocket)
    made = transport.webdriver_session
    assert made is not None and not made.deleted
    assert sup.protocol == "bidi"
    assert sup.browser_version["product"] == f"Chrome/{made.capabilities['browserVersion']}"
    assert transport.url == made.capabilities["webSocketUrl"] == \
        f"ws://127.0.0.1:{chromedriver_bidi._browser.port}/session/{made.session_id}"
    assert made.capabilities["unhandledPromptBehavior"] == {"default": "ignore",
                                                            "beforeUnload": "ignore"}
    browser = made.capabilities["goog:processID"]
    assert browser in chromiums(chromedriver_bidi)
    await sup.stop()
    assert made.deleted
    # Neither session.new nor session.end went over the socket: the session is the one
    # made over HTTP, and ended there.
    sent = set(cdpnb.Trace.load(trace).commands()["method"])
    assert "session.subscribe" in sent and not {"session.new", "session.end"} & sent
    server = WebDriverServer(chromedriver_bidi.url)
    try:
        with pytest.raises(WebDriverError) as gone:
            server.request("GET", f"/session/{made.session_id}/url", None, 10)
        assert gone.value.error == "invalid session id"
    finally:
        server.close()
    assert await asyncio.to_thread(browser_gone, chromedriver_bidi, browser)


async def test_a_cross_site_prompt_is_seen_with_its_frame_and_answered_with_text(
        sup: cdpnb.Supervisor, site: ScenarioServer) -> None:
    frames = await open_probe_page(sup, site)
    await sup.evaluate(REPORTING.format(call="prompt('q', 'd')", name="cross"),
                       frame_id=frames["cross"])
    dialog = await sup.wait_for_dialog(timeout=10)
    assert (dialog.type, dialog.message, dialog.frame_id) == ("prompt", "q", frames["cross"])
    record = await sup.respond("accept", prompt_text="from cdpnb")
    assert record.closed_by == "agent" and record.prompt_text == "from cdpnb"
    assert await wait_report(site, "cross") == "from cdpnb"


async def test_a_popups_prompt_is_seen_with_the_popup_and_answered(
        sup: cdpnb.Supervisor, site: ScenarioServer) -> None:
    await sup.navigate(site.url("/blank"))
    await sup.evaluate(f"window.open({json.dumps(site.url('/two-site'))}); 0",
                       user_gesture=True)
    await settle(sup, lambda s: len(s.pages) == 2 and any(
        f.url.endswith("/child") for f in s.frames.values()), timeout=20)
    popup = next(p for p in sup.pages if not p.main)
    assert popup.opener_target_id == sup.page_target_id
    tree = sup.frame_tree(page=popup.target_id)
    child = next(c for c in tree.children if c.url.endswith("/child"))
    await sup.evaluate(REPORTING.format(call="prompt('from the popup')", name="popup"),
                       frame_id=child.frame_id)
    dialog = await sup.wait_for_dialog(timeout=10)
    assert dialog.page_session_id == popup.target_id and dialog.frame_id == child.frame_id
    await sup.respond("accept", prompt_text="popup answer")
    assert await wait_report(site, "popup") == "popup answer"


async def test_beforeunload_waits_for_the_answer(sup: cdpnb.Supervisor,
                                                 site: ScenarioServer) -> None:
    await sup.navigate(site.url("/beforeunload"))
    await sup.click(x=20, y=20)  # beforeunload asks only after a user activation
    leaving = asyncio.ensure_future(sup.navigate(site.url("/blank")))
    dialog = await sup.wait_for_dialog(timeout=10)
    assert dialog.type == "beforeunload"
    assert not leaving.done()
    await sup.respond("accept", dialog_id=dialog.id)
    await asyncio.wait_for(leaving, 20)
    assert await sup.evaluate("document.title") == "blank"


async def test_a_dropped_socket_resumes_on_a_new_session_and_the_old_one_is_deleted(
        chromedriver_bidi: cdpnb.Backend, site: ScenarioServer) -> None:
    """Measured: the WebSocket gone, the supervisor makes a new session over HTTP (a new
    Chromium), ends the one it lost with DELETE, and goes on in a new tab there."""
    async with await cdpnb.Supervisor.start(chromedriver_bidi, connect_timeout_s=60,
                                            reconnect_attempts=3) as sup:
        transport = sup._core.transport
        assert isinstance(transport, WebDriverBiDiSocket)
        lost = transport.webdriver_session
        assert lost is not None
        old = sup.page_target_id
        transport._sock.shutdown(socket.SHUT_RDWR)  # the connection dies under it
        await settle(sup, lambda s: sup.stats().get("reconnects") == 1 and s.connected,
                     timeout=60)
        now = sup._core.transport
        assert isinstance(now, WebDriverBiDiSocket) and now.webdriver_session is not None
        assert now.webdriver_session.session_id != lost.session_id and lost.deleted
        assert sup.page_target_id != old
        with pytest.warns(cdpnb.CdpnbWarning, match="chromedriver for each session"):
            await sup.navigate(site.url("/blank"))
        assert await sup.evaluate("document.title") == "blank"
