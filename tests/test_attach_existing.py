"""Supervising pages that already exist (``Supervisor.start(page="first" | <id>)``),
and ``cdpnb.registry`` taking what ``Supervisor.start`` takes (a backend object too).

The pages are made outside the supervisor: over CDP by a raw client of the test's own
(as an agent's browser would), over WebDriver BiDi by an earlier supervisor that left
its page open (Firefox allows one BiDi session per browser, and names its tabs afresh
in each session). chromium+bidi starts a browser for each connection, so no page made
elsewhere can exist there: its cases say so as explicit expectations. The hermes-agent
flow runs on chromium+playwright: Playwright holds the page and dismisses every native
dialog, and the registry, given the backend, answers the agent's dialogs from the
first one on.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import json
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any, cast

import pytest
import websockets
from cdp_proxy import CDPProxy
from conftest import settle

import cdpnb
import cdpnb.drivers.cdp.attach as attach_module
import cdpnb.sync
from cdpnb.backends.playwright_attach import PlaywrightAttachment
from cdpnb.probes import ScenarioServer
from cdpnb.supervisor.registry import StartOptions
from cdpnb.testing import HOLD, ScriptedBiDiBrowser, ScriptedBrowser

#: A page with a same-site iframe and a cross-site one (an OOPIF over CDP).
MIXED = """<!doctype html><title>mixed</title><body>
<iframe id=same src="/child"></iframe><iframe id=cross src="{B}/child"></iframe></body>"""

#: Reads ``window[name]`` once the page has set it (a dialog's call returns later).
SETTLED = ("new Promise(done => {{ const look = () => window[{name}] === undefined ? "
           "setTimeout(look, 20) : done(window[{name}]); look(); }})")


def mixed_page(site: ScenarioServer) -> str:
    path = f"/mixed-{uuid.uuid4().hex[:8]}"
    site.add(path, MIXED)
    return path


@pytest.fixture(autouse=True)
def clean_registry() -> Iterator[None]:
    cdpnb.sync.registry.stop_all()
    yield
    cdpnb.sync.registry.stop_all()


class RawCDP:
    """A bare CDP client of the test's own: the "other client" of these cases."""

    def __init__(self, ws: websockets.ClientConnection) -> None:
        self.ws = ws
        self.ids = itertools.count(1)
        self.waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.events: list[dict[str, Any]] = []
        self.reader = asyncio.get_running_loop().create_task(self._read())

    async def _read(self) -> None:
        async for raw in self.ws:
            message = json.loads(raw)
            if "id" in message:
                future = self.waiting.pop(message["id"], None)
                if future is not None and not future.done():
                    future.set_result(message)
            else:
                self.events.append(message)

    async def send(self, method: str, params: dict[str, Any] | None = None,
                   session: str | None = None, timeout: float = 10.0, *,
                   check: bool = True) -> dict[str, Any]:
        number = next(self.ids)
        message: dict[str, Any] = {"id": number, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        future = asyncio.get_running_loop().create_future()
        self.waiting[number] = future
        await self.ws.send(json.dumps(message))
        reply = await asyncio.wait_for(future, timeout)
        if not check and "error" in reply:
            return {}
        assert "error" not in reply, reply
        result: dict[str, Any] = reply["result"]
        return result

    async def event(self, method: str, timeout: float = 10.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            found = [e for e in self.events if e["method"] == method]
            if found:
                self.events.remove(found[0])
                params: dict[str, Any] = found[0]["params"]
                return params
            assert time.monotonic() < deadline, f"no {method} within {timeout} s"
            await asyncio.sleep(0.01)

    async def attach(self, target: str) -> str:
        reply = await self.send("Target.attachToTarget", {"targetId": target, "flatten": True})
        return str(reply["sessionId"])

    async def evaluate(self, session: str, expression: str, *, check: bool = True,
                       **extra: Any) -> Any:
        """The value (None for an error reply when not ``check``: a document that went
        while it ran)."""
        reply = await self.send("Runtime.evaluate", {"expression": expression,
                                                     "returnByValue": True, **extra}, session,
                                check=check)
        return reply["result"].get("value") if reply else None

    async def pages(self) -> list[str]:
        infos = (await self.send("Target.getTargets"))["targetInfos"]
        return [i["targetId"] for i in infos if i["type"] == "page"
                and not i["url"].startswith("devtools://")]


@pytest.fixture
async def raw(every_path: cdpnb.Backend) -> AsyncIterator[RawCDP | None]:
    """A raw CDP client beside the supervisor (None over WebDriver BiDi)."""
    if every_path.protocol != "cdp":
        yield None
        return
    async with websockets.connect(every_path.cdp_url, max_size=None) as ws:
        client = RawCDP(ws)
        yield client
        client.reader.cancel()


async def made_elsewhere(backend: cdpnb.Backend, raw: RawCDP | None, site: ScenarioServer,
                         path: str, *, popup: bool = True) -> str:
    """A page loaded at ``path`` by someone else (and the popup it opened): the
    ``page=`` that names it. Over CDP a raw client creates it; on Firefox an earlier
    supervisor adopts the browser's first tab, loads it and leaves it (its ids do not
    carry over to the next session, so the next one names it ``"first"``)."""
    if raw is not None:
        target = str((await raw.send("Target.createTarget", {"url": site.url(path)}))["targetId"])
        session = await raw.attach(target)
        # The new tab commits about:blank first (readyState "complete" already), then
        # the URL: what runs before that commit is lost with its document.
        deadline = time.monotonic() + 10
        while await raw.evaluate(session, "location.href + ' ' + document.readyState",
                                 check=False) != f"{site.url(path)} complete":
            assert time.monotonic() < deadline, f"{path} did not load"
            await asyncio.sleep(0.02)
        if popup:
            await raw.evaluate(session, "window.open('/blank', 'popup'); 1", userGesture=True)
        await raw.send("Target.detachFromTarget", {"sessionId": session})
        return target
    async with await cdpnb.Supervisor.start(backend, page="first") as earlier:
        await earlier.navigate(site.url(path))
        if popup:
            await earlier.evaluate("window.open('/blank', 'popup'); 1", user_gesture=True)
            await settle(earlier, lambda s: len(s.pages) == 2)
    return "first"


async def settled(sup: cdpnb.Supervisor, name: str, frame_id: str | None = None) -> Any:
    return await sup.evaluate(SETTLED.format(name=json.dumps(name)), frame_id=frame_id,
                              timeout=15)


# -- an existing page, supervised as the supervisor's own ------------------------------


@pytest.mark.parametrize("bridge", [False, True])
async def test_an_existing_page_is_supervised_with_its_frames_popups_and_dialogs(
        every_path: cdpnb.Backend, raw: RawCDP | None, site: ScenarioServer,
        bridge: bool) -> None:
    """A page loaded before the supervisor came: its frames and OOPIF are in
    ``frame_tree()``, the popup it opened is supervised, a prompt opened afterwards in
    its cross-site frame and an alert in its popup are seen and answered (natively, or
    through the bridge put into the documents already loaded), and ``stop()`` leaves
    the page and its popup open."""
    if every_path.kind == "chromium+bidi":
        # Expected: chromium-bidi starts a Chromium for each connection, so the only page
        # there is that browser's own first tab; page="first" adopts it.
        async with await cdpnb.Supervisor.start(every_path, page="first") as sup:
            assert [p.url for p in sup.pages] == [""]
            assert sup.state.frames[str(sup.page_target_id)].url == "about:blank"
        return
    path = mixed_page(site)
    page = await made_elsewhere(every_path, raw, site, path)
    sup = await cdpnb.Supervisor.start(every_path, page=page, bridge=bridge,
                                       dialog_timeout_s=60)
    try:
        if page != "first":
            assert sup.page_target_id == page
        expected = {site.url("/child"), site.url("/child", "b")}
        await settle(sup, lambda s: len(s.pages) == 2 and {
            f.url for f in s.frames.values() if f.parent_frame_id == s.page_target_id
        } == expected and any(  # the popup's document, once it is set up too
            not p.main and p.target_id in s.frames
            and s.frames[p.target_id].url == site.url("/blank") for p in s.pages.values()))
        tree = sup.frame_tree()
        assert tree.top is not None and tree.top.url == site.url(path)
        children = {c.url: c for c in tree.children}
        assert set(children) == expected
        cross = children[site.url("/child", "b")]
        # Over CDP the cross-site frame is an OOPIF on a session of its own; WebDriver
        # BiDi does not say which frames run out of process.
        assert cross.is_oopif is (every_path.protocol == "cdp")
        assert children[site.url("/child")].is_oopif is False
        popup = next(p for p in sup.pages if not p.main)
        assert popup.opener_target_id == sup.page_target_id

        await sup.evaluate("setTimeout(() => { window.r = prompt('name?') }, 0); 1",
                           frame_id=cross.frame_id)
        dialog = await sup.wait_for_dialog(20)
        assert (dialog.frame_id, dialog.type) == (cross.frame_id, "prompt")
        assert dialog.via == ("bridge" if bridge else "native")
        await sup.respond("accept", prompt_text="Ada", dialog_id=dialog.id)
        assert await settled(sup, "r", cross.frame_id) == "Ada"

        await sup.evaluate("setTimeout(() => { alert('from the popup'); "
                           "window.done = 'yes' }, 0); 1", frame_id=popup.target_id)
        dialog = await sup.wait_for_dialog(20)
        assert (dialog.message, dialog.page_session_id) == ("from the popup",
                                                            popup.session_id)
        await sup.respond("accept", dialog_id=dialog.id)
        assert await settled(sup, "done", popup.target_id) == "yes"
        assert [r.closed_by for r in sup.state.recent_dialogs] == ["agent", "agent"]
        left = {p.target_id for p in sup.pages}
    finally:
        await sup.stop()
    if raw is not None:
        assert left <= set(await raw.pages())
        return
    # Firefox: the next session finds both tabs still there.
    async with await cdpnb.Supervisor.start(every_path, page="first") as again:
        assert again.state.frames[str(again.page_target_id)].url == site.url(path)
        assert len(again.pages) == 2


async def test_a_dialog_open_before_attaching(every_path: cdpnb.Backend,
                                              raw: RawCDP | None,
                                              site: ScenarioServer) -> None:
    """A dialog already open in the page when the supervisor attaches. Measured: over
    CDP (Chromium 156, headless-shell 156) a session attached later is never told of it
    (no javascriptDialogOpening after Page.enable), cannot answer it ("No dialog is
    showing"), and the page answers nothing until it closes: the start fails with
    PageBlocked, the page is left as it was, and once its holder answered, the start
    succeeds. Firefox ESR 153 never announces it either, yet its tab keeps working and
    a raw ``browsingContext.handleUserPrompt`` answers it."""
    if every_path.kind == "chromium+bidi":
        # Expected: each connection's browser is new, so no dialog can be open in a page
        # there before the supervisor connects.
        async with await cdpnb.Supervisor.start(every_path, page="first") as sup:
            assert sup.state.pending_dialogs == ()
        return
    if raw is not None:
        target = await made_elsewhere(every_path, raw, site, "/blank", popup=False)
        holder = await raw.attach(target)
        await raw.send("Page.enable", session=holder)
        await raw.evaluate(holder, "setTimeout(() => { window.r = prompt('held?') }, 0); 1")
        assert (await raw.event("Page.javascriptDialogOpening"))["message"] == "held?"
        began = time.monotonic()
        with pytest.raises(cdpnb.PageBlocked, match="dialog") as blocked:
            await cdpnb.Supervisor.start(every_path, page=target)
        assert blocked.value.target_id == target
        assert time.monotonic() - began < attach_module.BLOCKED_PAGE_TIMEOUT_S + 5
        assert target in await raw.pages()  # left as it was
        await raw.send("Page.handleJavaScriptDialog", {"accept": True, "promptText": "held"},
                       holder)
        async with await cdpnb.Supervisor.start(every_path, page=target) as sup:
            assert await settled(sup, "r") == "held"
        await raw.send("Target.detachFromTarget", {"sessionId": holder})
        return
    async with await cdpnb.Supervisor.start(every_path, page="first") as earlier:
        await earlier.navigate(site.url("/blank"))
        # Opens after this session ended, before the next one begins.
        await earlier.evaluate("setTimeout(() => { window.r = prompt('before?') }, 1000); 1")
    await asyncio.sleep(2.0)
    async with await cdpnb.Supervisor.start(every_path, page="first") as sup:
        assert sup.state.pending_dialogs == ()  # never announced
        assert await sup.evaluate("String(window.r)") == "undefined"  # still in prompt()
        await sup.bidi("browsingContext.handleUserPrompt", {
            "context": sup.page_target_id, "accept": True, "userText": "late"})
        assert await settled(sup, "r") == "late"


async def test_stop_leaves_the_page_and_dismisses_its_open_dialog(
        every_path: cdpnb.Backend, raw: RawCDP | None, site: ScenarioServer) -> None:
    """``stop()`` closes no page it did not create; a dialog still open in it is
    dismissed first (measured: chromium keeps a dialog open after the session that held
    it went, and nobody can answer it then), so the page runs on, and its next dialog
    is the next client's."""
    page = await made_elsewhere(every_path, raw, site, "/blank", popup=False) \
        if every_path.kind != "chromium+bidi" else "first"
    sup = await cdpnb.Supervisor.start(every_path, page=page, dialog_timeout_s=60)
    await sup.evaluate("setTimeout(() => { window.r = prompt('left open?') }, 0); 1")
    dialog = await sup.wait_for_dialog(20)
    target = sup.page_target_id
    await sup.stop()
    record = next(r for r in sup.state.recent_dialogs if r.id == dialog.id)
    assert (record.closed_by, record.reason, record.accepted) == ("cdpnb", "detached", False)
    if raw is not None:
        assert target in await raw.pages()
        session = await raw.attach(str(target))
        assert await raw.evaluate(session, "String(window.r)") == "null"
        # The bridge, had it been on, would be gone with the session: a native dialog.
        await raw.send("Page.enable", session=session)
        await raw.evaluate(session, "setTimeout(() => alert('next'), 0); 1")
        assert (await raw.event("Page.javascriptDialogOpening"))["message"] == "next"
        await raw.send("Page.handleJavaScriptDialog", {"accept": True}, session)
        await raw.send("Target.detachFromTarget", {"sessionId": session})
    elif every_path.kind == "firefox":
        async with await cdpnb.Supervisor.start(every_path, page="first") as again:
            assert await again.evaluate("String(window.r)") == "null"
    # chromium+bidi: the tab's browser ended with the connection (one per connection).


async def test_page_first_takes_the_first_page_the_browser_lists(
        every_path: cdpnb.Backend, raw: RawCDP | None) -> None:
    """``page="first"``: the first ``page`` target of ``Target.getTargets`` (over
    BiDi the first top-level context of ``browsingContext.getTree``), left open by
    ``stop()``."""
    if raw is not None:
        first = (await raw.pages())[0]
        async with await cdpnb.Supervisor.start(every_path, page="first") as sup:
            assert sup.page_target_id == first
            assert sup.options.page == "first"
        assert first in await raw.pages()
        return
    async with await cdpnb.Supervisor.start(every_path, page="first") as sup:
        tree = await sup.bidi("browsingContext.getTree", {"maxDepth": 0})
        assert sup.page_target_id == tree["contexts"][0]["context"]
        assert sup.pages[0].main and sup.pages[0].target_id == sup.page_target_id


async def test_a_page_that_is_not_there_is_a_clear_error(
        every_path: cdpnb.Backend, raw: RawCDP | None) -> None:
    """An id that names no page: UnknownPage, naming the pages there are."""
    with pytest.raises(cdpnb.UnknownPage, match="no-such-page") as unknown:
        await cdpnb.Supervisor.start(every_path, page="no-such-page")
    assert unknown.value.page == "no-such-page"
    assert unknown.value.existing, "it names the pages the browser has"
    assert unknown.value.existing[0] in str(unknown.value)
    if raw is not None:
        assert set(unknown.value.existing) == set(await raw.pages())
    else:
        # A context id does not carry over to another BiDi session (Firefox names its
        # tabs afresh; chromium-bidi starts another browser): the message says so.
        assert "earlier WebDriver BiDi session" in str(unknown.value)
    for bad, error in ((3, TypeError), (None, TypeError), ("", ValueError),
                       (" first", ValueError)):
        with pytest.raises(error, match="page"):
            await cdpnb.Supervisor.start(every_path, page=bad)  # type: ignore[arg-type]


async def test_an_iframe_target_is_not_a_page(every_path: cdpnb.Backend, raw: RawCDP | None,
                                              site: ScenarioServer) -> None:
    """Over CDP an OOPIF is a target too (type ``iframe``): page= refuses it by name.
    Over BiDi a frame's context is no top-level context: UnknownPage as any other id."""
    if raw is None:
        async with await cdpnb.Supervisor.start(every_path) as sup:
            await sup.navigate(site.url("/two-site"))
            child = sup.frame_tree().children[0].frame_id
        with pytest.raises(cdpnb.UnknownPage, match="no top-level browsing context"):
            await cdpnb.Supervisor.start(every_path, page=child)
        return
    target = await made_elsewhere(every_path, raw, site, "/two-site", popup=False)
    infos = (await raw.send("Target.getTargets"))["targetInfos"]
    deadline = time.monotonic() + 10
    while not any(i["type"] == "iframe" for i in infos):
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)
        infos = (await raw.send("Target.getTargets"))["targetInfos"]
    iframe = next(i["targetId"] for i in infos if i["type"] == "iframe")
    with pytest.raises(cdpnb.UnknownPage, match="type 'iframe', not a page"):
        await cdpnb.Supervisor.start(every_path, page=iframe)
    await raw.send("Target.closeTarget", {"targetId": target})


# -- what the supervisor decides, exactly (scripted browsers) --------------------------


def listing(*targets: tuple[str, str]) -> dict[str, Any]:
    return {"targetInfos": [{"targetId": t, "type": kind, "url": "about:blank",
                             "attached": False} for t, kind in targets]}


async def test_scripted_first_on_a_browser_without_pages_creates_one_and_closes_it() -> None:
    browser = ScriptedBrowser()
    browser.on("Target.getTargets", lambda command: listing(("W", "service_worker")))
    sup = await cdpnb.Supervisor.start(browser, page="first")
    assert len(browser.commands("Target.createTarget")) == 1
    created = sup.page_target_id
    await sup.stop()
    assert [c.params["targetId"] for c in browser.commands("Target.closeTarget")] == [created]


async def test_scripted_an_adopted_page_is_attached_kept_and_taken_back() -> None:
    """page=<id>: attached, never created; after a drop the same target is attached
    again; stop() closes nothing."""
    browser = ScriptedBrowser()
    browser.on("Target.getTargets", lambda command: listing(
        ("MINE", "page"), ("THEIRS", "page"), ("FRAME", "iframe")))
    sup = await cdpnb.Supervisor.start(browser, page="THEIRS")
    assert sup.page_target_id == "THEIRS"
    assert browser.commands("Target.createTarget") == []
    assert [c.params["targetId"] for c in browser.commands("Target.attachToTarget")] == \
        ["THEIRS"]
    await browser.drop()
    await settle(sup, lambda s: sup.reconnects == 1 and sup.connected)
    assert sup.page_target_id == "THEIRS"
    assert [c.params["targetId"] for c in browser.commands("Target.attachToTarget")] == \
        ["THEIRS", "THEIRS"]
    assert browser.commands("Target.createTarget") == []
    await sup.stop()
    assert browser.commands("Target.closeTarget") == []


async def test_scripted_a_blocked_page_is_page_blocked_and_never_closed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A page whose set-up gets no reply (a dialog opened before we came blocks its
    renderer): PageBlocked at start; at a reconnect it is not closed and replaced as
    cdpnb's own wedged page would be: the attempts fail and the supervisor gives up."""
    monkeypatch.setattr(attach_module, "BLOCKED_PAGE_TIMEOUT_S", 0.3)
    monkeypatch.setattr(attach_module, "WEDGED_PAGE_TIMEOUT_S", 0.3)
    browser = ScriptedBrowser()
    browser.on("Target.getTargets", lambda command: listing(("THEIRS", "page")))
    browser.on("Page.enable", lambda command: HOLD)
    with pytest.raises(cdpnb.PageBlocked, match="THEIRS did not answer") as blocked:
        await cdpnb.Supervisor.start(browser, page="THEIRS")
    assert blocked.value.target_id == "THEIRS"
    assert browser.commands("Target.closeTarget") == []

    browser = ScriptedBrowser()
    browser.on("Target.getTargets", lambda command: listing(("THEIRS", "page")))
    sup = await cdpnb.Supervisor.start(browser, page="THEIRS", reconnect_attempts=2)
    browser.on("Page.enable", lambda command: HOLD)
    await browser.drop()
    await settle(sup, lambda s: sup.stats().get("reconnect-gave-up") == 1)
    assert browser.commands("Target.closeTarget") == []
    assert browser.commands("Target.createTarget") == []
    with pytest.warns(cdpnb.CdpnbWarning, match="ended for good: .*THEIRS did not answer"):
        await sup.stop()


async def test_scripted_bidi_first_and_unknown_contexts() -> None:
    browser = ScriptedBiDiBrowser()
    browser._contexts["TAB-1"] = None  # the browser's own first tab
    sup = await cdpnb.Supervisor.start(browser, page="first")
    assert sup.page_target_id == "TAB-1"
    assert browser.commands("browsingContext.create") == []
    await sup.stop()
    assert browser.commands("browsingContext.close") == []
    assert len(browser.commands("session.end")) == 1

    browser = ScriptedBiDiBrowser()
    browser._contexts["TAB-1"] = None
    with pytest.raises(cdpnb.UnknownPage, match=r"'TAB-9'.*TAB-1 \(about:blank\)"):
        await cdpnb.Supervisor.start(browser, page="TAB-9")
    assert browser.commands("session.end"), "a failed start ends the session it made"


# -- the registry: what Supervisor.start takes --------------------------------------


def test_the_registry_takes_the_options_supervisor_start_takes() -> None:
    start = inspect.signature(cdpnb.Supervisor.start).parameters
    keywords = {name for name, p in start.items() if p.kind is p.KEYWORD_ONLY}
    assert set(StartOptions.__annotations__) == keywords


@pytest.fixture(scope="module")
def playwright_backend() -> Iterator[cdpnb.Backend]:
    """chromium+playwright: Playwright's client attached, holding the browser's first
    page and dismissing its native dialogs (no dialog handler)."""
    with cdpnb.launch("chromium+playwright") as backend:
        yield backend


@pytest.mark.browser
async def test_the_registry_takes_a_backend_and_rebinds_when_the_endpoint_changes(
        every_path: cdpnb.Backend, raw: RawCDP | None,
        playwright_backend: cdpnb.Backend) -> None:
    """``get_or_start(task, backend, **options)``: the same endpoint (the backend, or
    its ``cdp_url`` as a string) gives the same supervisor; another endpoint, or
    ``page=`` naming another page, rebinds (the old one stopped, its adopted page left)."""
    reg = cdpnb.registry
    sup = await reg.get_or_start("task", every_path, page="first")
    assert sup.endpoint == every_path.cdp_url
    assert await reg.get_or_start("task", every_path.cdp_url) is sup
    assert await reg.get_or_start("task", every_path, page="first") is sup
    assert await reg.get_or_start("task", every_path) is sup  # keeps what it started with
    if raw is not None:
        target = str((await raw.send("Target.createTarget", {"url": "about:blank"}))["targetId"])
        other = await reg.get_or_start("task", every_path, page=target)
        assert other is not sup and sup.stopped and other.page_target_id == target
        assert await reg.get_or_start("task", every_path.cdp_url, page=target) is other
        sup = other
    moved = await reg.get_or_start("task", playwright_backend)
    assert moved is not sup and sup.stopped
    assert moved.endpoint == playwright_backend.cdp_url
    assert moved.bridge_enabled  # chromium+playwright: known to dismiss dialogs
    assert await reg.stop("task") is True
    if raw is not None:
        assert target in await raw.pages()
        await raw.send("Target.closeTarget", {"targetId": target})
    face = cdpnb.sync.registry.get_or_start("sync-task", every_path, page="first")
    assert face.aio is cdpnb.registry.get("sync-task")
    assert face.endpoint == every_path.cdp_url and face.url == face.aio.url
    assert cdpnb.sync.registry.stop("sync-task") is True
    for bad in (None, 5, b"ws://x", "", object()):
        with pytest.raises(TypeError, match="url"):
            await reg.get_or_start("task", bad)  # type: ignore[arg-type]


# -- the hermes-agent flow -------------------------------------------------------------


class Agent:
    """The agent's browser: Playwright's page on chromium+playwright, driven on
    Playwright's own loop (as an agent's browser tool drives it)."""

    def __init__(self, backend: cdpnb.Backend) -> None:
        attachment = backend._started.attachment
        assert attachment is not None
        self.attachment: PlaywrightAttachment = attachment

    async def run(self, make: Any) -> Any:
        async def call() -> Any:
            return await make(self.page)
        return await asyncio.wrap_future(self.attachment._submit(call()))

    @property
    def page(self) -> Any:
        """Its one page (the browser's first tab): a page of cdpnb's own that an
        earlier test closed may still be in Playwright's list for a moment."""
        browser = self.attachment._browser
        assert browser is not None
        deadline = time.monotonic() + 10
        while len(pages := browser.contexts[0].pages) != 1:
            assert time.monotonic() < deadline, pages
            time.sleep(0.02)
        return pages[0]

    async def target_id(self) -> str:
        async def info(page: Any) -> str:
            session = await page.context.new_cdp_session(page)
            reply = await session.send("Target.getTargetInfo")
            await session.detach()
            return str(reply["targetInfo"]["targetId"])
        return cast(str, await self.run(info))


CASES = [("alert('saved')", "accept", None, "undefined"),
         ("confirm('delete?')", "accept", None, True),
         ("confirm('really?')", "dismiss", None, False),
         ("prompt('name?', 'x')", "accept", "Ada", "Ada")]


@pytest.mark.browser
async def test_hermes_flow_answers_the_agents_dialogs_on_its_own_page(
        playwright_backend: cdpnb.Backend, site: ScenarioServer) -> None:
    """hermes-agent's supervisor: one per task through the registry, attached to the
    page the agent's (Playwright-driven) browser already has. Given the backend,
    the registry knows Playwright dismisses native dialogs: the bridge is on from the
    start, in the document the agent loaded before and in the ones it loads after, so
    cdpnb answers every dialog with the caller's answer, the first one too, none lost
    to Playwright's dismisser."""
    agent = Agent(playwright_backend)
    path = mixed_page(site)
    await agent.run(lambda page: page.goto(site.url(path)))
    sup = await cdpnb.registry.get_or_start("hermes-task", playwright_backend, page="first",
                                            dialog_timeout_s=60)
    assert sup.page_target_id == await agent.target_id()
    assert sup.bridge_enabled
    await settle(sup, lambda s: any(f.is_oopif for f in s.frames.values()))

    async def case(call: str, action: str, text: str | None, got: object,
                   frame: str | None = None) -> None:
        script = (f"() => setTimeout(() => {{ const r = {call}; "
                  "window.__r = r === undefined ? 'undefined' : r }, 0)")

        async def trigger(page: Any) -> None:
            target = page if frame is None else next(f for f in page.frames if f.url == frame)
            await target.evaluate(script)
        await agent.run(trigger)
        dialog = await sup.wait_for_dialog(20)
        assert dialog.via == "bridge"
        record = await sup.respond(action, prompt_text=text, dialog_id=dialog.id)
        assert record.closed_by == "agent"

        async def value(page: Any) -> object:
            target = page if frame is None else next(f for f in page.frames if f.url == frame)
            return await target.evaluate(SETTLED.format(name='"__r"'))
        assert await agent.run(value) == got

        async def forget(page: Any) -> None:
            target = page if frame is None else next(f for f in page.frames if f.url == frame)
            await target.evaluate("() => { delete window.__r }")
        await agent.run(forget)

    for call, action, text, got in CASES:  # the document loaded before cdpnb came
        await case(call, action, text, got)
    await case("prompt('in the frame?')", "accept", "yes", "yes",
               frame=site.url("/child", "b"))  # its cross-site frame (an OOPIF)
    await agent.run(lambda page: page.goto(site.url("/blank")))  # a document loaded after
    for call, action, text, got in CASES:
        await case(call, action, text, got)
    records = sup.state.recent_dialogs
    assert len(records) == 2 * len(CASES) + 1
    assert {(r.closed_by, r.via) for r in records} == {("agent", "bridge")}
    assert await cdpnb.registry.stop("hermes-task") is True

    async def closed(page: Any) -> bool:
        return bool(page.is_closed())
    assert await agent.run(closed) is False  # the agent's page stays


@pytest.mark.browser
async def test_hermes_flow_with_a_url_string_loses_the_first_dialog(
        playwright_backend: cdpnb.Backend, site: ScenarioServer) -> None:
    """The contrast: given only the URL, the registry cannot know Playwright is
    attached. The first native dialog is closed by Playwright's dismisser within
    milliseconds (``remote``); the supervisor then turns the bridge on and says so."""
    agent = Agent(playwright_backend)
    await agent.run(lambda page: page.goto(site.url("/blank")))
    sup = await cdpnb.registry.get_or_start("hermes-url", playwright_backend.cdp_url,
                                            page="first", dialog_timeout_s=60)
    assert not sup.bridge_enabled
    await agent.run(lambda page: page.evaluate("() => setTimeout(() => alert('lost'), 0)"))
    await settle(sup, lambda s: len(s.recent_dialogs) == 1 and sup.bridge_enabled)
    assert sup.state.recent_dialogs[0].closed_by == "remote"
    with pytest.warns(cdpnb.CdpnbWarning, match="auto-dismisses native dialogs"):
        await sup.annotate("test.after", {})
    assert await cdpnb.registry.stop("hermes-url") is True


# -- last: on Firefox it ends the browser's one BiDi session for good ----------------


async def test_a_reconnect_takes_the_same_page_back(every_path: cdpnb.Backend,
                                                    raw: RawCDP | None,
                                                    site: ScenarioServer) -> None:
    """The connection drops (a proxy closes it): the supervisor comes back to the same
    existing page, creating none, and answers its dialogs again. Over BiDi there is no
    such page to come back to: Firefox keeps a dropped session and refuses a new one,
    chromium-bidi starts a new browser for the new connection (both said in hints)."""
    proxy = await CDPProxy(every_path.cdp_url).start()
    try:
        page = await made_elsewhere(every_path, raw, site, "/blank", popup=False) \
            if every_path.kind != "chromium+bidi" else "first"
        sup = await cdpnb.Supervisor.start(proxy.url, page=page, dialog_timeout_s=60)
        try:
            target = sup.page_target_id
            pages_before = set(await raw.pages()) if raw is not None else set()
            await proxy.drop()
            if every_path.kind == "firefox":
                await settle(sup, lambda s: not sup.alive and any(
                    "launch the browser again" in h for h in sup.hints))
                with pytest.warns(cdpnb.CdpnbWarning):
                    sup.snapshot()
                    await sup.annotate("test.after", {})
                return
            await settle(sup, lambda s: sup.reconnects == 1 and sup.connected)
            if every_path.kind == "chromium+bidi":
                assert sup.page_target_id != target
                with pytest.warns(cdpnb.CdpnbWarning, match="new, blank tab"):
                    await sup.annotate("test.after", {})
                return
            assert sup.page_target_id == target
            assert raw is not None and set(await raw.pages()) == pages_before
            await sup.evaluate("setTimeout(() => { window.r = confirm('back?') }, 0); 1")
            dialog = await sup.wait_for_dialog(20)
            await sup.respond("accept", dialog_id=dialog.id)
            assert await settled(sup, "r") is True
        finally:
            await sup.stop()
        assert target in await raw.pages()
    finally:
        await proxy.close()
