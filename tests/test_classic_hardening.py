"""WebDriver classic under the cases that wedged it or lost what it said (issue 38), on
WebKit (WebKitWebDriver + MiniBrowser) and Chromium behind chromedriver: one launch per
path for the module.

A dialog in a window that is not the current one, ``close_page`` over a dialog, a
popup's alert while the main page is used, a lazy iframe, values JSON loses, frame
names and frames in shadow roots, a prompt's value, a click while an alert is open.
The exact races are in tests/test_classic_window_races.py (a scripted server)."""

from __future__ import annotations

import asyncio
import http.server
import json
import math
import threading
import time
from collections.abc import Iterator

import pytest

import cdpnb
from cdpnb.drivers.classic import driver as classic_driver
from cdpnb.errors import BlockedByDialog
from cdpnb.probes import ScenarioServer
from cdpnb.protocol.classic import ELEMENT_KEY

pytestmark = pytest.mark.browser

CLASSIC_PATHS = ("webkit", "chromium+chromedriver")


@pytest.fixture(scope="module", params=CLASSIC_PATHS)
def classic_path(request: pytest.FixtureRequest) -> Iterator[cdpnb.Backend]:
    with cdpnb.launch(request.param) as backend:
        yield backend


@pytest.fixture(scope="module")
def site() -> Iterator[ScenarioServer]:
    with ScenarioServer() as server:
        server.add("/opener", "<!doctype html><title>opener</title><body>"
                              "<button id=pop>open</button><a id=tab target=_blank>link</a>")
        server.add("/shadow", "<!doctype html><title>shadow</title><body>"
                              "<iframe name=left src='/child'></iframe><div id=host></div>"
                              "<script>host.attachShadow({mode: 'open'}).innerHTML = "
                              "\"<iframe name=shadowed src='/blank'></iframe>\";</script>")
        for variant in ("a", "b"):
            server.add(f"/lazy-{variant}",
                       "<!doctype html><title>lazy</title><body><p>top</p>"
                       "<div style='height:5000px'></div><iframe name=later loading=lazy "
                       f"src='{server.url('/child', variant)}'></iframe>")
        yield server


@pytest.fixture
def short_budget(monkeypatch: pytest.MonkeyPatch) -> float:
    """Background commands under a 3 s budget (10 s in use), so that a window waiting
    on another window's dialog costs a poll 3 s here."""
    monkeypatch.setattr(classic_driver, "BACKGROUND", {"timeout": 3.0})
    monkeypatch.setattr(classic_driver, "BACKGROUND_WAIT_S", 7.0)
    return 3.0


async def open_popup(sup: cdpnb.Supervisor, site: ScenarioServer, how: str) -> str:
    """The page opens ``/child?popup``: by ``window.open`` (the popup keeps its opener,
    and on Chromium its renderer) or by a ``target=_blank`` link (no opener); cdpnb
    follows it and makes it the window it polls. Its target id."""
    await sup.navigate(site.url("/opener"))
    target = json.dumps(site.url("/child?popup"))
    await sup.evaluate(f"pop.onclick = () => {{ window.w = window.open({target}); }}; "
                       f"tab.href = {target}; 0")
    await sup.click(selector="#pop" if how == "window.open" else "#tab")
    state = await sup.wait_for(lambda s: len(s.pages) == 2, 15)
    popup = next(p.target_id for p in state.pages.values() if not p.main)
    await sup.wait_for(lambda s: s.frames.get(popup) is not None
                       and s.frames[popup].url.endswith("?popup"), 15)
    return popup


async def test_a_prompt_of_the_opener_while_its_popup_is_current(
        classic_path: cdpnb.Backend, site: ScenarioServer, short_budget: float) -> None:
    """The issue's wedge: the opener prompts while its popup is the current window.
    chromedriver 156 (the popup waits on the opener's paused renderer): the poll's budget
    ends the wait, the prompt is found in the opener and answered there, and both
    windows answer again. WebKitWebDriver 2.50 can neither show that prompt nor switch
    to its window (measured): the supervisor says so instead of hanging."""
    async with await cdpnb.Supervisor.start(classic_path, dialog_timeout_s=120) as sup:
        main = sup.page_target_id
        popup = await open_popup(sup, site, "window.open")
        # scheduled from the popup, which stays the current window
        await sup.evaluate("opener.setTimeout(() => { opener.__r = opener.prompt('opener?', "
                           "'d'); }, 200); 0", frame_id=popup)
        if classic_path.kind == "webkit":
            with (pytest.warns(cdpnb.CdpnbWarning, match="can neither show it nor switch"),
                  pytest.raises(cdpnb.WaitTimeout)):
                await sup.wait_for_dialog(timeout=4 * short_budget)
            assert any(popup in hint and main in hint for hint in sup.hints)
            return
        dialog = await sup.wait_for_dialog(timeout=6 * short_budget)
        assert (dialog.message, dialog.page_session_id) == ("opener?", main)
        record = await sup.respond("accept", prompt_text="Ada", dialog_id=dialog.id)
        assert (record.closed_by, record.type, record.prompt_text) == ("agent", "prompt", "Ada")
        assert await sup.evaluate("window.__r", timeout=10) == "Ada"
        assert await sup.evaluate("location.search", frame_id=popup, timeout=10) == "?popup"
        assert sup.hints == []


@pytest.mark.parametrize(("how", "call"), [("window.open", "prompt('stay?')"),
                                          ("link", "alert('stay?')")])
async def test_close_page_over_a_popups_dialog_dismisses_it_then_closes(
        classic_path: cdpnb.Backend, site: ScenarioServer, how: str, call: str) -> None:
    """Both servers refuse to close a window that shows a dialog ("unexpected alert
    open"): close_page dismisses it first, as navigate does, and records it; the
    popup closes and the page goes on."""
    async with await cdpnb.Supervisor.start(classic_path, dialog_timeout_s=60) as sup:
        popup = await open_popup(sup, site, how)
        await sup.evaluate(f"setTimeout(() => {{ window.__r = {call}; }}, 10); 0",
                           frame_id=popup)
        dialog = await sup.wait_for_dialog(timeout=15)
        assert dialog.page_session_id == popup
        result = await sup.close_page(popup, timeout=15)
        assert result.closed and popup not in sup.state.pages
        record = next(r for r in sup.state.recent_dialogs if r.id == dialog.id)
        assert (record.closed_by, record.reason, record.accepted) == (
            "cdpnb", "page_closing", False)
        assert sup.state.pending_dialogs == ()
        await sup.wait_for(lambda s: len(s.pages) == 1, 10)
        assert await sup.evaluate("location.pathname", timeout=10) == "/opener"


async def test_a_popups_alert_stays_open_and_answerable_while_the_main_page_is_used(
        classic_path: cdpnb.Backend, site: ScenarioServer) -> None:
    """WPT's test_two_top_level_contexts: the popup (a link's: no opener) shows an alert
    and the main page is evaluated in. chromedriver 156 runs it and the alert stays
    open, then is answered in its own window (it was recorded closed by someone else,
    its answer "no such alert"). WebKitWebDriver 2.50 never answers a switch back to a
    window that shows a dialog: the command is BlockedByDialog, named, never sent."""
    async with await cdpnb.Supervisor.start(classic_path, dialog_timeout_s=60) as sup:
        popup = await open_popup(sup, site, "link")
        await sup.evaluate("setTimeout(() => alert('in the popup'), 10); 0", frame_id=popup)
        dialog = await sup.wait_for_dialog(timeout=15)
        if classic_path.kind == "webkit":
            with pytest.raises(BlockedByDialog, match="never answers a switch back") as held:
                await sup.evaluate("1 + 1", timeout=10)
            assert held.value.dialog_id == dialog.id
        else:
            assert await sup.evaluate("1 + 1", timeout=10) == 2
        await asyncio.sleep(0.3)  # (more polls: the alert is still the popup's, open)
        assert [(d.id, d.page_session_id) for d in sup.state.pending_dialogs] == [
            (dialog.id, popup)]
        record = await sup.respond("accept", dialog_id=dialog.id)
        assert (record.closed_by, record.accepted) == ("agent", True)
        assert await sup.evaluate("1 + 1", timeout=10) == 2


@pytest.mark.parametrize("variant", ["a", "b"])
async def test_a_lazy_iframe_is_listed_not_entered_until_it_loads(
        classic_path: cdpnb.Backend, site: ScenarioServer, variant: str) -> None:
    """chromedriver 156, measured: a ``loading=lazy`` iframe entered before it loaded
    (and before any script read its document) failed every later command "timeout",
    so navigate raised CommandTimeout and later walks started inside the frame (the
    tree listed the page's own URL among its children). It is listed at about:blank,
    not entered, until it loads."""
    async with await cdpnb.Supervisor.start(classic_path, dialog_timeout_s=60) as sup:
        page = site.url(f"/lazy-{variant}")
        await sup.navigate(page, timeout=20)
        top = sup.page_target_id
        assert top is not None
        lazy = f"{top}/0"
        assert {k: (f.url, f.name, f.parent_frame_id) for k, f in sup.state.frames.items()} \
            == {top: (page, None, None), lazy: ("about:blank", "later", top)}
        assert await sup.evaluate("location.pathname", timeout=10) == f"/lazy-{variant}"
        await sup.evaluate("document.querySelector('iframe').scrollIntoView(); 0")
        child = site.url("/child", variant)
        state = await sup.wait_for(lambda s: s.frames[lazy].url == child, 15)
        assert [f.url for f in state.frames.values()] == [page, child]
        assert await sup.evaluate("[location.href, window.name]", frame_id=lazy,
                                  timeout=10) == [child, "later"]


class HeldFrames:
    """Serves ``/held?…`` only once the test lets it go: a frame whose document is under
    way for as long as the test wants (no sleep, no race with the machine's load)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.asked = threading.Event()
        held = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.startswith("/held"):
                    held.asked.set()
                    held.release.wait(30)
                    body = b"<!doctype html><title>held</title><p>loaded</p>"
                else:
                    body = b"<!doctype html><title>top</title><p>top</p>"
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])  # same site, cross-site
async def test_an_alert_while_a_frame_loads_is_seen_and_the_frame_joins_once_loaded(
        classic_path: cdpnb.Backend, host: str) -> None:
    """WebKitWebDriver 2.50, measured: the walk entered a frame whose document was under
    way, waited there for its load, and the page's alert meanwhile wedged the server
    (the walk answered "unexpected alert open", every later ``GET /alert/text`` never
    did: the alert was never seen and the session was lost). A frame that has not
    loaded is listed at about:blank and not entered; the alert is seen and answered;
    the frame joins the tree once it has loaded."""
    held = HeldFrames()
    try:
        async with await cdpnb.Supervisor.start(classic_path, dialog_timeout_s=60) as sup:
            await sup.navigate(f"http://127.0.0.1:{held.port}/top", timeout=20)
            top = sup.page_target_id
            assert top is not None
            frame_url = f"http://{host}:{held.port}/held"
            await sup.evaluate(
                f"const f = document.createElement('iframe'); f.src = {json.dumps(frame_url)};"
                " document.body.append(f); 0", timeout=10)
            assert await asyncio.to_thread(held.asked.wait, 10)
            # Walks run while the frame loads (the poller walks every few polls).
            await sup.wait_for(lambda s: f"{top}/0" in s.frames, 15)
            await sup.evaluate("setTimeout(() => alert('while the frame loads'), 300); 0",
                               timeout=10)
            dialog = await sup.wait_for_dialog(timeout=15)
            assert dialog.message == "while the frame loads"
            await sup.respond("accept", dialog_id=dialog.id)
            held.release.set()
            state = await sup.wait_for(lambda s: s.frames[f"{top}/0"].url == frame_url, 15)
            assert [f.url for f in state.frames.values()] == [
                f"http://127.0.0.1:{held.port}/top", frame_url]
            assert await sup.evaluate("document.title", frame_id=f"{top}/0",
                                      timeout=10) == "held"
            began = asyncio.get_running_loop().time()
        assert asyncio.get_running_loop().time() - began < 5.0  # the stop: not 10 s
    finally:
        held.close()


async def test_values_come_back_as_over_cdp(classic_path: cdpnb.Backend,
                                            site: ScenarioServer) -> None:
    """What JSON loses comes back as over CDP and BiDi: data by value at any depth,
    anything else a RemoteObject described as CDP describes it (each measured on
    Chromium 156 over CDP); a node of the frame's document carries its W3C element
    reference."""
    async with await cdpnb.Supervisor.start(classic_path, dialog_timeout_s=60) as sup:
        await sup.navigate(site.url("/blank"))
        value = await sup.evaluate("[undefined, NaN, -0, Infinity, -Infinity, 2n ** 70n, "
                                   "{a: undefined, b: [null, 1.5]}]")
        assert value[0] is cdpnb.Undefined and math.isnan(value[1])
        assert math.copysign(1.0, value[2]) == -1.0 and value[2] == 0
        assert value[3:] == [math.inf, -math.inf, 2 ** 70,
                             {"a": cdpnb.Undefined, "b": [None, 1.5]}]
        assert await sup.evaluate("undefined") is cdpnb.Undefined
        await sup.evaluate("document.body.id = 'b'; document.body.className = 'x y'; 0")
        described = {
            "document.body": ("object", "node", "HTMLBodyElement", "body#b.x.y"),
            "document": ("object", "node", "HTMLDocument", "#document"),
            "window": ("object", None, "Window", "Window"),
            "[1, document.body]": ("object", "array", "Array", "Array(2)"),
            "new Map([[1, 2]])": ("object", "map", "Map", "Map(1)"),
            "(() => { const o = {}; o.o = o; return o })()": ("object", None, "Object",
                                                              "Object"),
            "Symbol('x')": ("symbol", None, None, "Symbol(x)"),
            "/a/g": ("object", "regexp", "RegExp", "/a/g"),
            "new Uint8Array(3)": ("object", "typedarray", "Uint8Array", "Uint8Array(3)"),
        }
        for expression, expected in described.items():
            got = await sup.evaluate(expression)
            assert isinstance(got, cdpnb.RemoteObject), expression
            assert (got.type, got.subtype, got.class_name, got.description) == expected
        date = await sup.evaluate("new Date(0)")
        assert (date.subtype, date.description[:15]) == ("date", "Thu Jan 01 1970")
        error = await sup.evaluate("new Error('boom')")
        assert (error.subtype, error.description.splitlines()[0]) == ("error", "Error: boom")
        body = await sup.evaluate("document.body")
        assert body.object_id and body.session_id == sup.page_target_id
        # (the handle is classic's element reference: a raw command takes it)
        got = await sup.classic("classic.executeScript", {
            "script": "return arguments[0].id", "args": [{ELEMENT_KEY: body.object_id}]})
        assert got == {"value": "b"}
        assert await sup.evaluate("Promise.resolve(5)") == 5
        promise = await sup.evaluate("Promise.resolve(5)", await_promise=False)
        assert (promise.subtype, promise.description) == ("promise", "Promise")


async def test_frames_keep_their_names_and_frames_in_shadow_roots_join_the_tree(
        classic_path: cdpnb.Backend, site: ScenarioServer) -> None:
    """Names are each frame's ``window.name`` (None when empty, as over CDP); an iframe
    in an (open) shadow root is not in ``window.frames`` but is in the tree, named
    ``s<n>``, and usable: evaluated in, its prompt answered."""
    async with await cdpnb.Supervisor.start(classic_path, dialog_timeout_s=60) as sup:
        await sup.navigate(site.url("/shadow"))
        top = sup.page_target_id
        shadowed = f"{top}/s0"
        state = await sup.wait_for(lambda s: shadowed in s.frames, 15)
        assert {k: (f.url, f.name, f.parent_frame_id) for k, f in state.frames.items()} == {
            top: (site.url("/shadow"), None, None),
            f"{top}/0": (site.url("/child"), "left", top),
            shadowed: (site.url("/blank"), "shadowed", top)}
        assert await sup.evaluate("location.pathname", frame_id=shadowed) == "/blank"
        await sup.evaluate("setTimeout(() => { window.__r = prompt('deep?'); }, 10); 0",
                           frame_id=shadowed)
        dialog = await sup.wait_for_dialog(timeout=15)
        await sup.respond("accept", prompt_text="found", dialog_id=dialog.id)
        assert await sup.evaluate("window.__r", frame_id=shadowed, timeout=10) == "found"
        await sup.evaluate("window.name = 'renamed'; 0", frame_id=f"{top}/0")
        await sup.wait_for(lambda s: s.frames[f"{top}/0"].name == "renamed", 15)


async def test_a_prompts_value_reaches_evaluate_when_a_handler_answers_it(
        classic_path: cdpnb.Backend, site: ScenarioServer) -> None:
    """Both servers answer ``execute/sync`` null as soon as its script opens a dialog;
    the value is read back once the handler answered, as over CDP and BiDi."""
    async with await cdpnb.Supervisor.start(classic_path, dialog_timeout_s=60) as sup:
        await sup.navigate(site.url("/blank"))
        sup.on("dialog", lambda ev: ev.accept("Ada"))
        assert await sup.evaluate("prompt('name?')", timeout=15) == "Ada"
        assert await sup.evaluate("confirm('sure?')", timeout=15) is True
        assert await sup.evaluate("alert('hi')", timeout=15) is cdpnb.Undefined
        assert await sup.evaluate("new Promise(r => setTimeout(() => r(prompt('later?')), 20))",
                                  timeout=15) == "Ada"
        assert [r.closed_by for r in sup.state.recent_dialogs] == ["agent"] * 4


async def test_a_click_while_an_alert_is_open_is_blocked_by_dialog(
        classic_path: cdpnb.Backend, site: ScenarioServer) -> None:
    async with await cdpnb.Supervisor.start(classic_path, dialog_timeout_s=60) as sup:
        await sup.navigate(site.url("/blank"))
        await sup.evaluate("setTimeout(() => alert('wait'), 10); 0")
        dialog = await sup.wait_for_dialog(timeout=15)
        with pytest.raises(BlockedByDialog) as blocked:
            await sup.click(selector="body", timeout=10)
        assert blocked.value.dialog_id == dialog.id
        assert "CDP" not in type(blocked.value).__name__
        await sup.respond("accept", dialog_id=dialog.id)
        await sup.click(selector="body", timeout=10)


@pytest.mark.parametrize("how", ["reload", "elsewhere"])
async def test_a_page_that_navigates_itself_over_its_iframes_alert(
        classic_path: cdpnb.Backend, site: ScenarioServer, how: str) -> None:
    """The page navigates itself (its timer) while its cross-site iframe shows an alert.
    chromedriver 156, measured: the browser closes the alert with the document it left,
    and the poll alone read that as someone else's close (``remote``, which feeds
    ``bridge="auto"``'s fast-close rule); now the poll reads the top document and the
    close is the browser's navigation's, without a hint. WebKit 2.50: the page's timer
    waits behind its iframe's alert (one process), so the alert stays open until it is
    answered, and the page navigates then. Either way the page is usable after."""
    key = f"navigated-{how}-{time.monotonic_ns()}"
    # (after its load: chromedriver waits for a frame's pending load before it answers
    # GET /alert/text, and an alert in a loading document holds that load)
    child = site.add(f"/{key}-child", "<!doctype html><title>child</title><script>onload ="
                                      " () => setTimeout(() => alert('from the child "
                                      "frame'), 50)</script>")
    child = site.url(f"/{key}-child", "b")  # cross-site: an OOPIF where there are any
    landing = site.add(f"/{key}-landing", "<!doctype html><title>landing</title><p>here")
    moving_on = "location.reload()" if how == "reload" else f"location.href = {json.dumps(landing)}"
    page = site.add(f"/{key}", f"""<!doctype html><title>first</title><body><script>
        if (sessionStorage.getItem({json.dumps(key)}) === null) {{
          sessionStorage.setItem({json.dumps(key)}, '1');
          const f = document.createElement('iframe'); f.src = {json.dumps(child)};
          f.onload = () => setTimeout(() => {{ {moving_on}; }}, 2000);
          document.body.append(f);
        }} else document.title = 'again';</script>""")
    expected_title = "again" if how == "reload" else "landing"
    async with await cdpnb.Supervisor.start(classic_path, dialog_timeout_s=60) as sup:
        await sup.navigate(page, timeout=20)
        # Seen, and on chromedriver perhaps closed already. A walk after the navigation
        # that enters the iframe as its alert opens waits there (the server takes one
        # command at a time: the polls wait behind it) until its script budget,
        # WALK_SCRIPT_S; it waited until the page's timer closed the alert before, and
        # the alert was never seen (2 runs in 24 with the alert's delay swept 46-57 ms;
        # 0 in 24 with the budget).
        said = "from the child frame"
        state = await sup.wait_for(
            lambda s: any(d.message == said for d in (*s.pending_dialogs,
                                                      *s.recent_dialogs)), 15)
        dialog = next(d for d in (*state.pending_dialogs, *state.recent_dialogs)
                      if d.message == said)
        if classic_path.kind == "webkit":
            await asyncio.sleep(3.0)  # past the page's timer: it waits behind the alert
            assert dialog.id in {d.id for d in sup.state.pending_dialogs}
            await sup.respond("accept", dialog_id=dialog.id)
            closed_by = ("agent", None)
        else:
            await sup.wait_for(lambda s: all(d.id != dialog.id for d in s.pending_dialogs),
                               15)
            closed_by = ("browser", "navigation")
        record = next(r for r in sup.state.recent_dialogs if r.id == dialog.id)
        assert (record.closed_by, record.reason) == closed_by, record
        assert sup.hints == []
        deadline = asyncio.get_running_loop().time() + 15
        while (title := await sup.evaluate("document.title", timeout=10)) != expected_title:
            assert asyncio.get_running_loop().time() < deadline, title
            await asyncio.sleep(0.1)
