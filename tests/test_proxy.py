"""``cdpnb proxy``: a client's session recorded, raced by fault rules, replayed offline.

The relay is sans-I/O, so its rules are tested on scripted frames (races a browser
cannot be made to produce on demand); the whole loop runs with the real, unmodified
Playwright client against real Chromium, then against the replay with no browser.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

import cdpnb
from cdpnb.playback.divergence import Divergence, learn_substitutions, params_diff
from cdpnb.playback.script import fresh_only
from cdpnb.probes import ScenarioServer
from cdpnb.protocol import Command, Note
from cdpnb.proxy import FaultRuleError, parse_faults
from cdpnb.proxy.relay import OWN_ID_BASE, Close, Later, Relay, Send
from cdpnb.proxy.server import connection_path

# -- fault rules ------------------------------------------------------------------------


def test_fault_rules_read_back_to_their_own_strings() -> None:
    rules = ["dismiss-dialogs=10ms", "delay:Page.frameNavigated=200ms",
             "drop:Page.frameNavigated@50%", "duplicate:Runtime.consoleAPICalled",
             "reorder:Page.javascriptDialogOpening,Page.frameNavigated",
             "detach:Page.javascriptDialogOpening", "close-after=5"]
    assert [str(rule) for rule in parse_faults(rules)] == rules
    assert parse_faults("close-after=3")[0].messages == 3  # type: ignore[union-attr]
    assert parse_faults(["delay:A.b=0.5s"])[0].seconds == 0.5  # type: ignore[union-attr]


@pytest.mark.parametrize(("rule", "said"), [
    ("dismiss-dialogs=10", "'10' is not a duration"),
    ("delay:Page.x=200", "not a duration"),
    ("delay:Page.x", "delay needs a duration"),
    ("drop:nothing", "not a method name"),
    ("close-after=0", "close-after takes a whole number"),
    ("reorder:A.b", "reorder names two methods"),
    ("detach:A.b@50%", "only delay, drop and duplicate take a chance"),
    ("delay:A.b=2h", "not a duration"),
    ("delay:A.b=600s", "longer than 60 s"),
    ("shuffle:A.b", "unknown rule 'shuffle'"),
])
def test_a_bad_rule_is_named_with_what_is_wrong(rule: str, said: str) -> None:
    with pytest.raises(FaultRuleError) as raised:
        parse_faults([rule])
    assert repr(rule) in str(raised.value) and said in str(raised.value)


# -- the relay, on scripted frames ------------------------------------------------------

def _frame(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode()


class Scripted:
    """A relay with its recording kept in memory."""

    def __init__(self, *faults: str, protocol: str = "cdp", seed: int | None = 1) -> None:
        self.recorded: list[Any] = []
        self.relay = Relay(protocol, faults=parse_faults(list(faults)), seed=seed,
                           sink=lambda message, wire: self.recorded.append(message))
        self.relay.start("ws://127.0.0.1:1/devtools/browser/x", 1.0, 1.0)
        self.t = 1.0

    def client(self, message: dict[str, Any]) -> list[Any]:
        self.t += 0.001
        return self.relay.from_client(_frame(message), self.t, self.t)

    def browser(self, message: dict[str, Any]) -> list[Any]:
        self.t += 0.001
        return self.relay.from_browser(_frame(message), self.t, self.t)

    def notes(self, method: str) -> list[dict[str, Any]]:
        return [m.params for m in self.recorded if isinstance(m, Note) and m.method == method]


OPENING = {"method": "Page.javascriptDialogOpening", "sessionId": "S",
           "params": {"frameId": "F", "type": "prompt", "message": "name?", "url": "http://x/",
                      "defaultPrompt": "", "hasBrowserHandler": True}}
CLOSED = {"method": "Page.javascriptDialogClosed", "sessionId": "S",
          "params": {"frameId": "F", "result": True, "userInput": "Ada"}}
ATTACHED = {"method": "Target.attachedToTarget", "params": {
    "sessionId": "S", "waitingForDebugger": False,
    "targetInfo": {"targetId": "T", "type": "page", "url": "about:blank", "attached": True}}}


def test_frames_pass_through_as_they_came_and_are_recorded_both_ways() -> None:
    s = Scripted()
    command = {"id": 1, "method": "Runtime.evaluate", "params": {"expression": "1"}}
    assert s.client(command) == [Send("browser", _frame(command))]
    reply = {"id": 1, "result": {"result": {"type": "number", "value": 1}}}
    assert s.browser(reply) == [Send("client", _frame(reply))]
    kinds = [type(m).__name__ for m in s.recorded]
    assert kinds == ["Note", "Command", "Reply"]  # connected, then both directions
    assert s.recorded[2].method == "Runtime.evaluate"  # a reply knows its command


def test_the_clients_own_answer_is_recorded_as_the_clients() -> None:
    s = Scripted()
    s.browser(ATTACHED)
    s.browser(OPENING)
    s.client({"id": 7, "method": "Page.handleJavaScriptDialog", "sessionId": "S",
              "params": {"accept": True, "promptText": "Ada"}})
    s.browser(CLOSED)
    s.browser({"id": 7, "sessionId": "S", "result": {}})
    assert s.notes("cdpnb.dialogAnswering") == [{"dialog_id": "d-1", "accept": True,
                                                 "prompt_text": "Ada", "closed_by": "client"}]
    assert s.notes("cdpnb.dialogAnswered") == [{"dialog_id": "d-1", "ok": True}]
    (record,) = s.relay.state.recent_dialogs
    assert (record.closed_by, record.accepted, record.prompt_text) == ("client", True, "Ada")


def test_dismiss_dialogs_answers_with_an_id_of_its_own_and_keeps_the_reply() -> None:
    s = Scripted("dismiss-dialogs=10ms")
    s.browser(ATTACHED)
    actions = s.browser(OPENING)
    later = next(a for a in actions if isinstance(a, Later))
    assert later.delay_s == pytest.approx(0.010)
    assert Send("client", _frame(OPENING)) in actions  # the client sees it open
    fired = later.then(2.0, 2.0)
    (sent,) = fired
    assert isinstance(sent, Send) and sent.to == "browser"
    own = json.loads(sent.data)
    assert own["id"] >= OWN_ID_BASE and own["sessionId"] == "S"
    assert own["method"] == "Page.handleJavaScriptDialog" and own["params"] == {"accept": False}
    s.browser({**CLOSED, "params": {"frameId": "F", "result": False, "userInput": ""}})
    # The reply to the proxy's own command stays with the proxy.
    assert s.browser({"id": own["id"], "sessionId": "S", "result": {}}) == []
    (record,) = s.relay.state.recent_dialogs
    assert (record.closed_by, record.accepted) == ("fault", False)
    assert s.notes("cdpnb.proxyFault")[0]["action"] == "dismissed"


def test_dismiss_dialogs_leaves_a_dialog_the_client_answered_first() -> None:
    s = Scripted("dismiss-dialogs=10ms")
    s.browser(ATTACHED)
    later = next(a for a in s.browser(OPENING) if isinstance(a, Later))
    s.client({"id": 3, "method": "Page.handleJavaScriptDialog", "sessionId": "S",
              "params": {"accept": True, "promptText": "Ada"}})
    s.browser(CLOSED)
    assert later.then(2.0, 2.0) == []  # nothing left to dismiss: no command sent
    assert s.relay.state.recent_dialogs[0].closed_by == "client"


EVENT = {"method": "Page.frameNavigated", "sessionId": "S",
         "params": {"frame": {"id": "F", "loaderId": "L", "url": "http://x/",
                              "securityOrigin": "http://x", "mimeType": "text/html"}}}
LOG = {"method": "Runtime.consoleAPICalled", "sessionId": "S",
       "params": {"type": "log", "args": [], "executionContextId": 1, "timestamp": 1.0}}


def test_drop_duplicate_and_delay_act_on_what_the_client_gets() -> None:
    s = Scripted("drop:Page.frameNavigated")
    s.browser(ATTACHED)
    assert s.browser(EVENT) == []
    assert s.notes("cdpnb.proxyFault")[-1]["action"] == "dropped"
    assert any(getattr(m, "method", None) == "Page.frameNavigated" for m in s.recorded)

    s = Scripted("duplicate:Page.frameNavigated")
    s.browser(ATTACHED)
    assert s.browser(EVENT) == [Send("client", _frame(EVENT))] * 2

    s = Scripted("delay:Page.frameNavigated=200ms")
    s.browser(ATTACHED)
    (later,) = s.browser(EVENT)
    assert isinstance(later, Later) and later.delay_s == pytest.approx(0.2)
    assert later.then(3.0, 3.0) == [Send("client", _frame(EVENT))]


def test_reorder_holds_the_first_until_the_second_has_gone() -> None:
    s = Scripted("reorder:Page.frameNavigated,Runtime.consoleAPICalled")
    s.browser(ATTACHED)
    held = s.browser(EVENT)
    assert [type(a) for a in held] == [Later]  # held (let go alone after a while)
    assert s.browser(LOG) == [Send("client", _frame(LOG)), Send("client", _frame(EVENT))]
    assert held[0].then(5.0, 5.0) == []  # already released: not sent twice
    actions = [p["action"] for p in s.notes("cdpnb.proxyFault")]
    assert actions == ["held", "released"]


def test_a_held_message_is_let_go_alone_when_the_second_never_comes() -> None:
    s = Scripted("reorder:Page.frameNavigated,Runtime.consoleAPICalled")
    s.browser(ATTACHED)
    (later,) = s.browser(EVENT)
    assert later.then(5.0, 5.0) == [Send("client", _frame(EVENT))]
    assert s.notes("cdpnb.proxyFault")[-1]["action"] == "released-alone"


def test_detach_detaches_the_session_the_message_came_on() -> None:
    s = Scripted("detach:Page.javascriptDialogOpening")
    s.browser(ATTACHED)
    actions = s.browser(OPENING)
    own = json.loads(next(a for a in actions if isinstance(a, Send) and a.to == "browser").data)
    assert own["method"] == "Target.detachFromTarget" and own["params"] == {"sessionId": "S"}
    assert "sessionId" not in own and own["id"] >= OWN_ID_BASE
    with pytest.raises(FaultRuleError, match="WebDriver BiDi has no sessions"):
        Relay("bidi", faults=parse_faults(["detach:A.b"]))


def test_close_after_closes_once_its_count_is_relayed() -> None:
    s = Scripted("close-after=2")
    assert [type(a) for a in s.client({"id": 1, "method": "A.b"})] == [Send]
    assert [type(a) for a in s.browser({"id": 1, "result": {}})] == [Send, Close]
    s.relay.closed("fault", "closed by a fault rule", 9.0, 9.0)
    assert s.notes("cdpnb.disconnected")[-1]["closed_by"] == "fault"
    assert s.client({"id": 2, "method": "A.b"}) == []  # ended: nothing more relayed


def test_a_chance_is_drawn_from_the_seed() -> None:
    def run(seed: int) -> list[int]:
        s = Scripted("drop:Page.frameNavigated@50%", seed=seed)
        s.browser(ATTACHED)
        return [len(s.browser(EVENT)) for _ in range(40)]

    assert run(7) == run(7)
    assert 0 < sum(run(7)) < 40


def test_a_frame_the_client_sends_that_is_no_command_still_goes_to_the_browser() -> None:
    s = Scripted()
    assert s.relay.from_client(b"not json", 1.0, 1.0) == [Send("browser", b"not json")]
    assert type(s.recorded[-1]).__name__ == "Fault"


def test_bidi_answers_and_dismissals_name_the_context() -> None:
    s = Scripted("dismiss-dialogs=5ms", protocol="bidi")
    s.browser({"type": "event", "method": "browsingContext.contextCreated", "params": {
        "context": "C", "url": "about:blank", "children": [], "parent": None,
        "userContext": "default"}})
    actions = s.browser({"type": "event", "method": "browsingContext.userPromptOpened",
                         "params": {"context": "C", "handler": "ignore", "message": "hi",
                                    "type": "alert", "userContext": "default"}})
    later = next(a for a in actions if isinstance(a, Later))
    (sent,) = later.then(2.0, 2.0)
    own = json.loads(sent.data)
    assert own["method"] == "browsingContext.handleUserPrompt"
    assert own["params"] == {"context": "C", "accept": False}


def test_connection_paths_number_every_connection_after_the_first() -> None:
    assert connection_path(Path("/r/run.jsonl.gz"), 1) == Path("/r/run.jsonl.gz")
    assert connection_path(Path("/r/run.jsonl.gz"), 3) == Path("/r/run.3.jsonl.gz")
    assert connection_path(Path("/r/run"), 2) == Path("/r/run.2")


# -- replay matching ------------------------------------------------------------------

def test_loose_matching_takes_fresh_tokens_only() -> None:
    assert fresh_only({"downloadPath": "/tmp/playwright-artifacts-m08xt0"},
                      {"downloadPath": "/tmp/playwright-artifacts-uK6F64"})
    assert fresh_only({"worldName": "__playwright_utility_world_page@8d89332f67e6a3a7"},
                      {"worldName": "__playwright_utility_world_page@8e8f1e87275d4b6b"})
    assert not fresh_only({"expression": "1+1"}, {"expression": "2+2"})
    assert not fresh_only({"promptText": "Ada"}, {"promptText": "Bob"})
    assert not fresh_only({"accept": True}, {"accept": False})
    assert not fresh_only({"a": "tokenabcdef"}, {"a": "tokenabcdef", "b": 1})


def test_a_divergence_names_what_differs() -> None:
    expected = Command(3, "Page.handleJavaScriptDialog", {"accept": True, "promptText": "Ada"},
                       "S")
    found = Divergence("Page.handleJavaScriptDialog", "S",
                       {"accept": True, "promptText": "Bob"}, expected)
    assert found.diff == ['params.promptText: "Ada" (recorded) != "Bob" (received)']
    assert "recorded next: Page.handleJavaScriptDialog" in str(found)
    assert params_diff({"a": [1, 2]}, {"a": [1, 3], "b": None}) == [
        "params.a[1]: 2 (recorded) != 3 (received)", "params.b: missing (recorded), null "
        "(received)"]
    assert learn_substitutions({"w": "world@8d89332f67e6"}, {"w": "world@0000aaaa1111"}) == {
        "world@8d89332f67e6": "world@0000aaaa1111"}


# -- the endpoint: loopback, no web page ------------------------------------------------

def _get(url: str, headers: dict[str, str]) -> int:
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.mark.browser
async def test_discovery_is_rewritten_and_a_web_page_is_refused(
        headless_shell: cdpnb.Backend, tmp_path: Path) -> None:
    async with cdpnb.proxy(headless_shell, record=tmp_path / "r.jsonl") as px:
        assert px.url.startswith("http://127.0.0.1:")
        body = await asyncio.to_thread(
            lambda: urllib.request.urlopen(px.url + "/json/version", timeout=10).read())
        version = json.loads(body)
        assert version["webSocketDebuggerUrl"] == px.ws_url
        listed = await asyncio.to_thread(
            lambda: urllib.request.urlopen(px.url + "/json/list", timeout=10).read())
        port = px.url.rsplit(":", 1)[1]
        assert all(f"127.0.0.1:{port}" in t["webSocketDebuggerUrl"]
                   for t in json.loads(listed))
        assert await asyncio.to_thread(
            _get, px.url + "/json/version", {"Origin": "http://evil.example"}) == 403
        assert await asyncio.to_thread(
            _get, px.url + "/json/version", {"Host": "evil.example"}) == 403
        assert px.refused == 2


# -- the real client: Playwright --------------------------------------------------------

async def playwright_script(url: str, page_url: str, answer: str = "Ada") -> dict[str, Any]:
    """An ordinary Playwright script: a page with a cross-site iframe, an evaluate, a
    prompt in the iframe answered by Playwright's own dialog handler, a popup."""
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.connect_over_cdp(url)
        context = browser.contexts[0]
        page = await context.new_page()
        page.on("dialog", lambda dialog: asyncio.ensure_future(dialog.accept(answer)))
        await page.goto(page_url)
        child = next(f for f in page.frames if f.url.endswith("/child"))
        results: dict[str, Any] = {"sum": await page.evaluate("1 + 1"),
                                   "title": await page.title(),
                                   "prompted": await child.evaluate("prompt('name?')")}
        async with page.expect_popup() as popup_info:
            await page.evaluate("window.open('/blank')")
        popup = await popup_info.value
        await popup.wait_for_load_state()
        results["popup"] = popup.url.rsplit("/", 1)[1]
        await popup.close()
        await page.close()
        await browser.close()
        return results


EXPECTED = {"sum": 2, "title": "two sites", "prompted": "Ada", "popup": "blank"}


@pytest.fixture(scope="module")
def playwright_recording(tmp_path_factory: pytest.TempPathFactory,
                         site: ScenarioServer) -> Path:
    """Playwright's script recorded through the proxy on real Chromium (module-wide:
    the replays below read it)."""
    path = tmp_path_factory.mktemp("proxy") / "playwright.jsonl"

    async def record() -> dict[str, Any]:
        async with cdpnb.launch("chromium") as backend, \
                cdpnb.proxy(backend, record=path) as px:
            return await asyncio.wait_for(playwright_script(px.url, site.url("/two-site")), 60)

    assert asyncio.run(record()) == EXPECTED
    return path


@pytest.mark.browser
def test_playwrights_session_is_recorded_as_a_trace(playwright_recording: Path) -> None:
    assert stat.S_IMODE(os.stat(playwright_recording).st_mode) == 0o600
    trace = cdpnb.Trace.load(playwright_recording)
    assert trace.complete
    commands = trace.commands()
    assert {"Target.setAutoAttach", "Page.navigate", "Page.handleJavaScriptDialog"} <= set(
        commands["method"])
    dialogs = trace.dialogs()
    (prompt,) = dialogs.itertuples()
    assert (prompt.type, prompt.message, prompt.closed_by, prompt.accepted, prompt.answer) == (
        "prompt", "name?", "client", True, "Ada")
    frames = trace.frames()
    assert frames["url"].str.endswith("/child").any()
    assert trace.header["meta"]["proxy"]["connection"] == 1


@pytest.mark.browser
async def test_playwright_replays_its_own_script_offline(playwright_recording: Path,
                                                         site: ScenarioServer) -> None:
    # Playwright names its utility world after a random page guid and asks for a fresh
    # download folder each run: strict matching diverges at once, loose does not.
    outcomes = []
    async with cdpnb.proxy(replay=playwright_recording, match="loose") as px:
        for _ in range(20):
            outcomes.append(await asyncio.wait_for(
                playwright_script(px.url, site.url("/two-site")), 60))
        assert px.divergence is None
    assert outcomes == [EXPECTED] * 20

    with pytest.raises(cdpnb.ReplayDiverged, match="Browser.setDownloadBehavior"):
        async with cdpnb.proxy(replay=playwright_recording) as px:
            with pytest.raises(Exception, match="replay diverged"):
                await asyncio.wait_for(playwright_script(px.url, site.url("/two-site")), 60)


@pytest.mark.browser
async def test_a_client_that_leaves_its_recording_is_told_where(
        playwright_recording: Path, site: ScenarioServer) -> None:
    with pytest.raises(cdpnb.ReplayDiverged) as diverged:
        async with cdpnb.proxy(replay=playwright_recording, match="loose") as px:
            with pytest.raises(Exception, match="replay diverged"):
                await asyncio.wait_for(playwright_script(px.url, site.url("/two-site"),
                                                         answer="Bob"), 60)
            found = px.divergence
            assert found is not None and found.method == "Page.handleJavaScriptDialog"
            assert found.diff == ['params.promptText: "Ada" (recorded) != "Bob" (received)']
    assert "Page.handleJavaScriptDialog" in str(diverged.value)


@pytest.mark.browser
async def test_a_remote_that_dismisses_dialogs_is_reproduced_for_playwright(
        chromium: cdpnb.Backend, site: ScenarioServer, tmp_path: Path) -> None:
    """hermes-agent #14540's remote browser: every dialog dismissed ≈10 ms after it
    opens. Playwright's handler answers 300 ms later: the page got null, the recording
    says the fault closed it, and Playwright's own accept is refused."""
    from playwright.async_api import Dialog, async_playwright

    refused: list[str] = []

    async def late_accept(dialog: Dialog) -> None:
        await asyncio.sleep(0.3)
        try:
            await dialog.accept("Ada")
        except Exception as exc:  # what Playwright says, as measured
            refused.append(str(exc))

    async with cdpnb.proxy(chromium, record=tmp_path / "fault.jsonl",
                           faults=["dismiss-dialogs=10ms"]) as px:
        async with async_playwright() as p:
            browser = await p.chromium.connect_over_cdp(px.url)
            page = await browser.contexts[0].new_page()
            page.on("dialog", lambda d: asyncio.ensure_future(late_accept(d)))
            await page.goto(site.url("/two-site"))
            got = await page.evaluate("prompt('name?')")
            await asyncio.sleep(0.5)
            await page.close()
            await browser.close()
        trace = px.trace()
    assert got is None
    (record,) = trace.dialogs().itertuples()
    assert (record.closed_by, record.accepted) == ("fault", False)
    assert record.open_ms >= 10
    assert len(refused) == 1  # Playwright's accept came after the dialog was gone


def test_a_client_answer_after_the_faults_leaves_the_faults_on_record() -> None:
    """Measured with Playwright (notebook 05): a handler that answered 5 ms after the
    proxy's dismissal went out was recorded as the client's, and the browser's close
    (result false: the dismissal) then read as someone else's. The browser answers the
    first answer it gets; the client's fails, and the record says the fault closed it."""
    s = Scripted("dismiss-dialogs=10ms")
    s.browser(ATTACHED)
    later = next(a for a in s.browser(OPENING) if isinstance(a, Later))
    (dismissal,) = later.then(2.0, 2.0)
    s.client({"id": 4, "method": "Page.handleJavaScriptDialog", "sessionId": "S",
              "params": {"accept": True, "promptText": "Ada"}})
    s.browser({**CLOSED, "params": {"frameId": "F", "result": False, "userInput": ""}})
    s.browser({"id": json.loads(dismissal.data)["id"], "sessionId": "S", "result": {}})
    s.browser({"id": 4, "sessionId": "S", "error": {"code": -32602,
                                                     "message": "No dialog is showing"}})
    (record,) = s.relay.state.recent_dialogs
    assert (record.closed_by, record.accepted) == ("fault", False)
    assert [n["closed_by"] for n in s.notes("cdpnb.dialogAnswering")] == ["fault"]


# -- the real client: Selenium 4 over WebDriver BiDi (chromedriver's webSocketUrl) ------

def selenium_script(url: str, capabilities: dict[str, Any], page_url: str) -> dict[str, Any]:
    """An ordinary Selenium 4 BiDi script: a session made over HTTP with
    ``webSocketUrl``, a navigation and an evaluate over BiDi, a prompt answered with
    Selenium's own ``handle_user_prompt``."""
    import time

    from selenium import webdriver

    options = webdriver.ChromeOptions()
    chrome = capabilities["goog:chromeOptions"]
    options.binary_location = chrome["binary"]
    for arg in chrome["args"]:
        options.add_argument(arg)
    options.set_capability("unhandledPromptBehavior", capabilities["unhandledPromptBehavior"])
    options.enable_bidi = True
    driver = webdriver.Remote(command_executor=url, options=options)
    try:
        context = driver.current_window_handle
        driver.browsing_context.navigate(context=context, url=page_url, wait="complete")
        prompts: list[dict[str, Any]] = []
        driver.browsing_context.add_event_handler("user_prompt_opened", prompts.append)
        evaluated = driver.script.evaluate("1 + 1", {"context": context}, await_promise=False)
        driver.execute_script("setTimeout(() => window.answer = prompt('name?'), 0)")
        deadline = time.monotonic() + 30
        while not prompts and time.monotonic() < deadline:
            time.sleep(0.02)
        driver.browsing_context.handle_user_prompt(context=context, accept=True,
                                                   user_text="Ada")
        answer = None
        while answer is None and time.monotonic() < deadline:
            answer = driver.execute_script("return window.answer")
        return {"sum": evaluated["result"]["value"], "prompted": len(prompts), "answer": answer}
    finally:
        driver.quit()


@pytest.mark.browser
async def test_seleniums_bidi_session_through_chromedriver_is_recorded(
        site: ScenarioServer, tmp_path: Path) -> None:
    async with cdpnb.launch("chromium+chromedriver") as backend, \
            cdpnb.proxy(backend, record=tmp_path / "selenium.jsonl") as px:
        capabilities = backend.webdriver_capabilities
        assert capabilities is not None and px.protocol == "bidi"
        got = await asyncio.to_thread(selenium_script, px.url, capabilities,
                                      site.url("/two-site"))
        trace = px.trace()
    assert got == {"sum": 2, "prompted": 1, "answer": "Ada"}
    assert px.http_recording == tmp_path / "selenium.webdriver.jsonl"
    exchanges = cdpnb.Trace.load(px.http_recording).commands()
    assert {"http.POST", "http.DELETE"} <= set(exchanges["method"])
    assert trace.protocol == "bidi" and trace.header["endpoint"].startswith("ws://127.0.0.1:")
    assert {"browsingContext.navigate", "script.evaluate",
            "browsingContext.handleUserPrompt"} <= set(trace.commands()["method"])
    (prompt,) = trace.dialogs().itertuples()
    assert (prompt.type, prompt.closed_by, prompt.accepted, prompt.answer) == (
        "prompt", "client", True, "Ada")


@pytest.mark.browser
async def test_selenium_replays_its_session_with_no_server(site: ScenarioServer,
                                                           tmp_path: Path) -> None:
    """The HTTP side (new session, execute, delete) and the BiDi socket both replay: the
    session is made against the replay, its webSocketUrl points at it."""
    path = tmp_path / "selenium.jsonl"
    async with cdpnb.launch("chromium+chromedriver") as backend, \
            cdpnb.proxy(backend, record=path) as px:
        capabilities = backend.webdriver_capabilities
        assert capabilities is not None
        recorded = await asyncio.to_thread(selenium_script, px.url, capabilities,
                                           site.url("/two-site"))
    async with cdpnb.proxy(replay=path) as px:
        replayed = await asyncio.to_thread(selenium_script, px.url, capabilities,
                                           site.url("/two-site"))
        assert px.divergence is None
    assert replayed == recorded == {"sum": 2, "prompted": 1, "answer": "Ada"}


def test_a_page_attached_twice_has_one_dialog_answered_on_either_session() -> None:
    """Chromium 156 announces a dialog on every session of its page (chrome-devtools-mcp
    attaches its page twice): one dialog, one dismissal, whichever session answers."""
    s = Scripted("dismiss-dialogs=10ms")
    s.browser(ATTACHED)
    s.browser({**ATTACHED, "params": {**ATTACHED["params"], "sessionId": "S2"}})
    first = [a for a in s.browser(OPENING) if isinstance(a, Later)]
    second = [a for a in s.browser({**OPENING, "sessionId": "S2"}) if isinstance(a, Later)]
    assert len(first) == 1 and second == []  # one dialog: dismissed once
    assert len(s.relay.state.pending_dialogs) == 1

    s = Scripted()
    s.browser(ATTACHED)
    s.browser({**ATTACHED, "params": {**ATTACHED["params"], "sessionId": "S2"}})
    s.browser(OPENING)
    s.browser({**OPENING, "sessionId": "S2"})
    s.client({"id": 9, "method": "Page.handleJavaScriptDialog", "sessionId": "S2",
              "params": {"accept": True, "promptText": "Ada"}})
    s.browser(CLOSED)
    s.browser({**CLOSED, "sessionId": "S2"})
    (record,) = s.relay.state.recent_dialogs
    assert (record.closed_by, record.prompt_text) == ("client", "Ada")


def test_the_live_view_shows_who_closed_each_dialog_with_page_text_escaped() -> None:
    from cdpnb.proxy import Proxy, ProxyServer

    server = ProxyServer("ws://127.0.0.1:9/devtools/browser/x", record=Path("run.jsonl"),
                         faults=parse_faults(["dismiss-dialogs=10ms"]))
    s = Scripted("dismiss-dialogs=10ms")
    server.relays.append(s.relay)
    server.recordings.append(Path("run.jsonl"))
    server.connections = 1
    s.browser(ATTACHED)
    hostile = {**OPENING, "params": {**OPENING["params"],
                                     "message": "<img src=x onerror=alert(1)>"}}
    later = next(a for a in s.browser(hostile) if isinstance(a, Later))
    later.then(2.0, 2.0)
    s.browser({**CLOSED, "params": {"frameId": "F", "result": False, "userInput": ""}})
    px = Proxy(server)
    html = px.view().render()
    assert "&lt;img src=x onerror=alert(1)&gt;" in html and "<img" not in html
    assert "fault" in html and "1 fault acts" in html and "run.jsonl" in html
    assert px.fault_acts(1) == {"dismissed": 1}


# -- a hostile client: no crash, no flood, no one else's session ------------------------

@pytest.mark.browser
async def test_a_hostile_client_cannot_crash_flood_or_reach_another_clients_session(
        headless_shell: cdpnb.Backend, tmp_path: Path) -> None:
    from websockets.asyncio.client import connect

    async def ask(ws: Any, message: dict[str, Any]) -> dict[str, Any]:
        await ws.send(json.dumps(message))
        while True:
            got = json.loads(await asyncio.wait_for(ws.recv(), 20))
            if got.get("id") == message["id"]:
                return got  # type: ignore[no-any-return]

    async with cdpnb.proxy(headless_shell, record=tmp_path / "h.jsonl",
                           max_record_bytes=64 * 1024) as px:
        async with connect(px.ws_url, max_size=None) as a, \
                connect(px.ws_url, max_size=None) as b:
            target = (await ask(a, {"id": 1, "method": "Target.createTarget",
                                    "params": {"url": "about:blank"}}))["result"]["targetId"]
            session = (await ask(a, {"id": 2, "method": "Target.attachToTarget", "params": {
                "targetId": target, "flatten": True}}))["result"]["sessionId"]
            # Client b, on its own socket, names a's session: the browser knows it not there.
            stolen = await ask(b, {"id": 1, "method": "Runtime.evaluate", "sessionId": session,
                                   "params": {"expression": "1"}})
            assert "error" in stolen
            # Garbage, a binary frame, JSON nested deeper than any parser wants: the
            # proxy relays them as they are; the browser answers; nothing crashes.
            await b.send(b"\x00\xff not json")
            await b.send("[" * 5000 + "]" * 5000)
            await b.send(json.dumps({"id": "x", "method": 5}))
            # A flood: far more than max_record_bytes, every reply still relayed.
            for i in range(3, 400):
                got = await ask(a, {"id": i, "method": "Runtime.evaluate", "sessionId": session,
                                    "params": {"expression": f"'{'x' * 200}{i}'"}})
                assert got["result"]["result"]["value"].endswith(str(i))
            await ask(a, {"id": 500, "method": "Target.closeTarget",
                          "params": {"targetId": target}})
        assert px.connections == 2
    recorded = cdpnb.Trace.load(tmp_path / "h.jsonl", strict=False)
    assert any(f.kind == "record-limit" for f in recorded.faults)
    assert (tmp_path / "h.jsonl").stat().st_size < 80 * 1024


# -- the real client: cdp-use (typed CDP over one socket, flat sessions) ----------------

async def cdp_use_script(ws_url: str, page_url: str, answer: str = "Ada") -> dict[str, Any]:
    """An ordinary cdp-use script: a target made and attached (flat, auto-attaching its
    cross-site iframe), a navigation, an evaluate, a prompt answered by its own event
    handler."""
    from cdp_use.client import CDPClient

    async with CDPClient(ws_url) as client:
        target = (await client.send.Target.createTarget({"url": "about:blank"}))["targetId"]
        session = (await client.send.Target.attachToTarget(
            {"targetId": target, "flatten": True}))["sessionId"]
        answered: list[Any] = []

        def on_dialog(event: Any, session_id: str | None) -> None:
            answered.append(asyncio.ensure_future(client.send.Page.handleJavaScriptDialog(
                {"accept": True, "promptText": answer}, session_id=session_id)))

        client.register.Page.javascriptDialogOpening(on_dialog)
        await client.send.Page.enable(session_id=session)
        await client.send.Target.setAutoAttach(
            {"autoAttach": True, "waitForDebuggerOnStart": False, "flatten": True},
            session_id=session)
        await client.send.Page.navigate({"url": page_url}, session_id=session)
        # (the navigation's load: the page's own answer that it is there)
        for _ in range(200):
            done = await client.send.Runtime.evaluate(
                {"expression": "document.readyState == 'complete' && frames.length == 2",
                 "returnByValue": True}, session_id=session)
            if done["result"].get("value"):
                break
            await asyncio.sleep(0.05)
        title = await client.send.Runtime.evaluate(
            {"expression": "document.title", "returnByValue": True}, session_id=session)
        prompted = await client.send.Runtime.evaluate(
            {"expression": "prompt('name?')",
             "returnByValue": True}, session_id=session)
        await asyncio.gather(*answered)
        await client.send.Target.closeTarget({"targetId": target})
        return {"title": title["result"]["value"], "prompted": prompted["result"]["value"]}


@pytest.mark.browser
async def test_cdp_use_records_and_replays_its_own_script(
        headless_shell: cdpnb.Backend, site: ScenarioServer, tmp_path: Path) -> None:
    path = tmp_path / "cdp-use.jsonl"
    async with cdpnb.proxy(headless_shell, record=path) as px:
        recorded = await asyncio.wait_for(cdp_use_script(px.ws_url, site.url("/two-site")), 60)
        trace = px.trace()
    assert recorded == {"title": "two sites", "prompted": "Ada"}
    (prompt,) = trace.dialogs().itertuples()
    assert (prompt.closed_by, prompt.answer) == ("client", "Ada")
    # cdp-use sends nothing random: a strict replay, with no browser, gives the same.
    async with cdpnb.proxy(replay=path) as px:
        replayed = await asyncio.wait_for(cdp_use_script(px.ws_url, site.url("/two-site")), 60)
        assert px.divergence is None
    assert replayed == recorded
