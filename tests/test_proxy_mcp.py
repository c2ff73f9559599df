"""``cdpnb.proxy`` with chrome-devtools-mcp 1.11.0, unmodified: an MCP server (stdio,
``tests/clients/mcp_client.py``) that drives the browser with its bundled puppeteer-core
25.14 through ``--browserUrl``, recorded, replayed with no browser, and raced by a
remote that auto-dismisses dialogs (chrome-devtools-mcp #1069 / #2424's class).

What the server does with a dialog, as measured here (1.11.0, Chromium 156):

* It learns of one from puppeteer's ``dialog`` event and keeps it until ``handle_dialog``
  clears it, whether or not the browser still shows it. It reports it
  as an ``# Open dialog`` section (``prompt: name? (default value: "nobody").``) in the
  reply of a page-scoped tool: ``press_key`` (whose key opened it), then
  ``list_console_messages``; never in ``list_pages`` (not page-scoped) nor in
  ``evaluate_script`` (defined with ``defineTool``, not ``definePageTool``: it is not
  page-scoped, so its ``blockedByDialog`` check never runs).
* ``evaluate_script`` answers any dialog opened while it runs itself (``dialogAction``
  defaults to ``accept``: an ``alert`` from ``setTimeout(..., 0)`` was accepted 15 ms
  after it opened, and a later ``handle_dialog`` still said "Successfully accepted"). So
  this module opens its prompt from a key press: ``press_key`` passes no dialog action,
  and the prompt stays open for the client's ``handle_dialog``.
* Its own session attaches the page twice (auto-attach under its tab, and
  ``Target.attachToTarget`` for its DevTools "universe"), so the browser sends every
  ``Page.javascriptDialogOpening`` on two sessions of the connection.
"""

from __future__ import annotations

import asyncio
import json
import urllib.request
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from clients.mcp_client import McpClient, ToolResult

import cdpnb
from cdpnb.backends.node import find_node
from cdpnb.probes import ScenarioServer
from cdpnb.protocol import Command, ErrorReply, Event, Note, Reply
from cdpnb.proxy import Proxy
from cdpnb.proxy.relay import OWN_ID_BASE

#: Every tool call's bound: a quiet machine answers in 0.01–1.5 s (new_page is the
#: slowest); a stalled one fails the test by this timeout instead of hanging it.
TOOL_TIMEOUT_S = 60.0
ANSWER = "Ada"
#: Arms a prompt for the next key press, opened after the key is up. A prompt opened in a
#: handler holds that ``Input.dispatchKeyEvent``'s reply (the renderer pauses in it), and
#: ``press_key`` with it; one opened by a timer set on *keydown* raced the key-up the
#: server sends next: when the timer won, the key-up queued behind the open prompt and
#: ``press_key`` never returned (in the last CI run and each local run before the change,
#: Chromium 156). On *keyup* the timer fires after the last input event was acknowledged.
ARM = ("() => { window.got = 'unset'; document.addEventListener('keyup', () => "
       "setTimeout(() => { window.got = prompt('name?', 'nobody'); }, 0), {once: true}); "
       "return 'armed'; }")
OPEN_PROMPT = 'prompt: name? (default value: "nobody").\n' \
              "Call handle_dialog to handle it before continuing."
#: Runs of the fault case: each a fresh server and proxy (≈3 s each when quiet).
FAULT_RUNS = 5


@dataclass(frozen=True)
class Step:
    """One tool call of a session and what it gave back."""

    name: str
    arguments: dict[str, Any]
    result: ToolResult


@dataclass(frozen=True)
class McpRecording:
    paths: list[Path]
    steps: list[Step]
    trace: cdpnb.Trace
    page_url: str


@pytest.fixture(scope="module")
def node() -> str:
    return find_node()


def returned(result: ToolResult) -> Any:
    """The value ``evaluate_script`` says the function returned (its ```json block)."""
    assert not result.is_error, result.text
    _, _, rest = result.text.partition("```json\n")
    block, fence, _ = rest.partition("\n```")
    assert fence, f"no json block in {result.text!r}"
    return json.loads(block)


def selected_page(result: ToolResult, page_url: str) -> int:
    """The id of the page ``new_page`` opened: listed with its title and URL, selected."""
    pages = result.pages()
    chosen = [n for n, line in pages.items() if line == f"two sites ({page_url}) [selected]"]
    assert len(chosen) == 1, result.text
    return chosen[0]


def summary(steps: list[Step]) -> list[tuple[str, bool, str]]:
    return [(s.name, s.result.is_error, s.result.text) for s in steps]


def _site_requests(site: ScenarioServer) -> int:
    return sum(path.startswith(("/two-site", "/child")) for _, path in site.requests)


def _commands(trace: cdpnb.Trace, method: str) -> list[Command]:
    return [m for m in trace.messages if isinstance(m, Command) and m.method == method]


Call = Callable[..., Awaitable[ToolResult]]


async def wait_open_dialog(step: Call, page: int) -> ToolResult:
    """``list_console_messages`` (page-scoped, not blocked by a dialog) until its reply
    says a dialog is open. Measured: the first reply already does (the prompt opens while
    ``press_key`` still waits for the page to settle after its key-up), so a replay asks
    as often as the recording did."""
    for _ in range(100):
        listed = await step("list_console_messages", pageId=page)
        if listed.section("Open dialog") is not None:
            return listed
        await asyncio.sleep(0.05)
    raise AssertionError(f"the server never reported the dialog: {listed.text}")


async def ordinary_session(node: str, url: str, page_url: str, *,
                           ask: str = "() => document.title") -> list[Step]:
    """An MCP client's ordinary session: a page with a cross-site iframe, an evaluation,
    a prompt opened by a key press and answered with ``handle_dialog``, what the page
    got, the pages listed, the page closed. It stops after a failed evaluation (a replay
    that diverged: there is nothing more to ask)."""
    steps: list[Step] = []
    async with await McpClient.start(url, node=node, timeout=TOOL_TIMEOUT_S) as mcp:

        async def step(name: str, **arguments: Any) -> ToolResult:
            result = await asyncio.wait_for(mcp.call_tool(name, arguments), TOOL_TIMEOUT_S)
            steps.append(Step(name, arguments, result))
            return result

        page = selected_page(await step("new_page", url=page_url), page_url)
        if (await step("evaluate_script", function=ask, pageId=page)).is_error:
            return steps
        await step("evaluate_script", function=ARM, pageId=page)
        await step("press_key", key="p", pageId=page)
        await wait_open_dialog(step, page)
        await step("handle_dialog", action="accept", promptText=ANSWER, pageId=page)
        await step("evaluate_script", function="() => window.got", pageId=page)
        await step("list_pages")
        await step("close_page", pageId=page)
    return steps


@pytest.fixture(scope="module")
def mcp_recording(chromium: cdpnb.Backend, site: ScenarioServer, node: str,
                  tmp_path_factory: pytest.TempPathFactory) -> McpRecording:
    """The ordinary session recorded through the proxy in front of the session's
    Chromium (module-wide: the replays below read it)."""
    path = tmp_path_factory.mktemp("mcp") / "mcp.jsonl"
    page_url = site.url("/two-site")

    async def record() -> tuple[list[Step], list[Path]]:
        async with cdpnb.proxy(chromium, record=path) as px:
            steps = await ordinary_session(node, px.url, page_url)
        return steps, px.recordings

    steps, paths = asyncio.run(record())
    return McpRecording(paths, steps, cdpnb.Trace.load(path), page_url)


# -- 1. the recording -------------------------------------------------------------------


@pytest.mark.browser
def test_mcp_session_is_recorded_with_its_own_answer(mcp_recording: McpRecording) -> None:
    steps = {s.name: s for s in mcp_recording.steps}  # the last call of each tool
    calls = [s.name for s in mcp_recording.steps]
    assert calls == ["new_page", "evaluate_script", "evaluate_script", "press_key",
                     "list_console_messages", "handle_dialog", "evaluate_script",
                     "list_pages", "close_page"]
    assert not any(s.result.is_error for s in mcp_recording.steps), \
        summary(mcp_recording.steps)
    title, armed, got = (s.result for s in mcp_recording.steps if s.name == "evaluate_script")
    assert (returned(title), returned(armed), returned(got)) == ("two sites", "armed", ANSWER)
    assert steps["press_key"].result.text.startswith("Successfully pressed key: p")
    assert steps["list_console_messages"].result.section("Open dialog") == OPEN_PROMPT
    answered = steps["handle_dialog"].result
    assert answered.text.startswith("Successfully accepted the dialog")
    assert answered.section("Open dialog") is None  # cleared by the answer
    page = steps["close_page"].arguments["pageId"]
    assert steps["list_pages"].result.pages()[page] == \
        f"two sites ({mcp_recording.page_url}) [selected]"
    assert page not in steps["close_page"].result.pages()

    # The recording: one connection (the server's puppeteer), both directions.
    assert len(mcp_recording.paths) == 1
    trace = mcp_recording.trace
    assert trace.complete and trace.protocol == "cdp"
    assert trace.header["meta"]["proxy"]["connection"] == 1
    assert {"send", "recv"} <= set(trace.events()["direction"].astype(str))
    [navigate] = _commands(trace, "Page.navigate")
    assert navigate.params["url"] == mcp_recording.page_url
    keys = [c.params for c in _commands(trace, "Input.dispatchKeyEvent")]
    assert [(k["type"], k["key"]) for k in keys] == [("keyDown", "p"), ("keyUp", "p")]
    # The server's answer went to the browser as it sent it, and was answered.
    [answer] = _commands(trace, "Page.handleJavaScriptDialog")
    assert answer.id < OWN_ID_BASE
    assert answer.params == {"accept": True, "promptText": ANSWER}
    [reply] = [m for m in trace.messages if isinstance(m, Reply) and m.id == answer.id]
    assert reply.result == {}

    dialogs = trace.dialogs()
    mine = dialogs[dialogs["closed_by"] == "client"]
    assert len(mine) == 1, dialogs.to_string()
    record = mine.iloc[0]
    assert (record["type"], record["message"], record["default_prompt"], record["via"]) == (
        "prompt", "name?", "nobody", "native")
    assert bool(record["accepted"]) and record["answer"] == ANSWER
    assert record["session_id"] == answer.session_id
    assert record["url"] == mcp_recording.page_url
    # The same prompt, sent again on the server's second session of the page, is folded
    # as a second dialog read "remote" (reported to the proxy's owner: one browser
    # dialog, two records). Whatever comes of that, nobody but the client answered it.
    assert set(dialogs["closed_by"]) <= {"client", "remote"}, dialogs.to_string()
    assert (dialogs["answer"] == ANSWER).all() and dialogs["accepted"].all()

    frames = trace.frames()
    oopif = frames[frames["event"] == "oopif_attached"]
    assert len(oopif) == 1, frames.to_string()
    assert frames[frames["frame_id"] == oopif["frame_id"].iloc[0]]["url"].dropna() \
        .str.endswith("/child").any()


# -- 2. the replay, no browser ----------------------------------------------------------


@pytest.mark.browser
async def test_mcp_replays_its_session_offline(mcp_recording: McpRecording, node: str,
                                               site: ScenarioServer) -> None:
    """The unmodified server against the recording alone gets every tool result it got
    from Chromium. Strict matching (the default) is enough: chrome-devtools-mcp 1.11.0
    sends nothing fresh (measured: no random or clock-derived value in any params; its
    puppeteer's utility world is ``__puppeteer_utility_world__25.14.0``, its evaluations'
    sourceURLs name its own file and line, ids come from the browser, i.e. the
    recording), so every command repeats byte for byte, three times over. Those
    sourceURLs hold the server's install path, so a recording replays strictly from the
    same checkout. Loose matching gives the same run."""
    recorded = summary(mcp_recording.steps)
    requests = _site_requests(site)
    for match in ("strict", "strict", "strict", "loose"):
        async with cdpnb.proxy(replay=mcp_recording.paths, match=match) as px:
            assert px.mode == "replay" and px.recordings == []
            steps = await ordinary_session(node, px.url, mcp_recording.page_url)
            assert px.divergence is None, px.divergence
        assert summary(steps) == recorded, match
    assert _site_requests(site) == requests  # no page was asked for: no browser


@pytest.mark.browser
async def test_a_different_question_is_told_where_it_left_the_recording(
        mcp_recording: McpRecording, node: str) -> None:
    """A session that evaluates ``location.href`` where the recording has
    ``document.title``: its tool call fails with the replay's reason, ``px.divergence``
    names the command and the params that differ (loose matching does not take a
    different expression for a fresh token), and leaving the block raises."""
    with pytest.raises(cdpnb.ReplayDiverged) as raised:
        async with cdpnb.proxy(replay=mcp_recording.paths, match="loose") as px:
            steps = await ordinary_session(node, px.url, mcp_recording.page_url,
                                           ask="() => location.href")
            found = px.divergence
    assert [s.name for s in steps] == ["new_page", "evaluate_script"]
    assert steps[0].result == mcp_recording.steps[0].result  # matched, as recorded
    asked = steps[-1].result
    assert asked.is_error
    assert "Protocol error (Runtime.evaluate): cdpnb replay:" in asked.text
    assert "replay diverged" in asked.text
    assert found is not None and found.method == "Runtime.evaluate"
    assert found.expected is not None and found.expected.method == "Runtime.evaluate"
    [diff] = found.diff
    assert diff.startswith("params.expression: ")
    assert "() => document.title" in diff.split("(recorded)")[0]
    assert "() => location.href" in diff.split("(recorded)")[1]
    assert diff.endswith("(received)")
    assert "Runtime.evaluate" in str(raised.value) and diff in str(raised.value)


# -- 3. a remote that auto-dismisses dialogs ----------------------------------------------


@dataclass(frozen=True)
class FaultRun:
    """What the server did in one run under ``dismiss-dialogs=10ms``."""

    press_key: ToolResult
    page_got: Any
    stale: ToolResult
    handled: ToolResult
    after: ToolResult
    handled_again: ToolResult
    usable: ToolResult
    closed: ToolResult
    trace: cdpnb.Trace


async def fault_run(chromium: cdpnb.Backend, node: str, page_url: str,
                    path: Path) -> FaultRun:
    async with cdpnb.proxy(chromium, record=path, faults=["dismiss-dialogs=10ms"]) as px, \
            await McpClient.start(px.url, node=node, timeout=TOOL_TIMEOUT_S) as mcp:

        async def call(name: str, **arguments: Any) -> ToolResult:
            return await asyncio.wait_for(mcp.call_tool(name, arguments), TOOL_TIMEOUT_S)

        page = selected_page(await call("new_page", url=page_url), page_url)
        assert returned(await call("evaluate_script", function=ARM, pageId=page)) == "armed"
        pressed = await call("press_key", key="p", pageId=page)
        # What the page's prompt() returned, once it has returned: the dialog is gone.
        for _ in range(100):
            got = returned(await call("evaluate_script", function="() => window.got",
                                      pageId=page))
            if got != "unset":
                break
            await asyncio.sleep(0.05)
        stale = await call("list_console_messages", pageId=page)
        handled = await call("handle_dialog", action="accept", promptText=ANSWER,
                             pageId=page)
        after = await call("list_console_messages", pageId=page)
        again = await call("handle_dialog", action="accept", promptText=ANSWER,
                           pageId=page)
        usable = await call("evaluate_script", pageId=page,
                            function="() => document.title + ':' + window.got")
        closed = await call("close_page", pageId=page)
    return FaultRun(pressed, got, stale, handled, after, again, usable, closed, px.trace())


@pytest.mark.browser
async def test_a_remote_that_dismisses_dialogs_is_reproduced_for_the_mcp_server(
        chromium: cdpnb.Backend, site: ScenarioServer, node: str, tmp_path: Path) -> None:
    """#1069 / #2424's class: the dialog vanishes (dismissed by the "remote" 10 ms after
    it opens) before the agent calls ``handle_dialog``.

    Measured over 25 runs (15 on a quiet machine, 10 beside two busy processes), every
    time: nothing stalls (each call answered in 0.01–0.3 s when quiet) and the page stays
    usable (its prompt() returned null); but the server goes on reporting the gone
    dialog as open (``# Open dialog`` in ``list_console_messages`` after the page's
    prompt() has returned), and ``handle_dialog`` says "Successfully accepted the
    dialog" without sending anything (puppeteer marked the dialog handled at
    ``Page.javascriptDialogClosed`` and refused the accept; the server swallows that),
    then forgets it: a second ``handle_dialog`` is "No open dialog found". The agent is
    told its answer went through when the page got null. ``press_key``'s own reply named
    the dialog in 25 of 25 runs (its opening racing that reply: not asserted). The proxy
    dismissed the one dialog once per session that saw it (two dismissals, the second
    refused "No dialog is showing") in 22 runs, once in 3: not asserted (reported to the
    proxy's owner with the duplicated dialog records)."""
    runs = [await fault_run(chromium, node, site.url("/two-site"),
                            tmp_path / f"dismissed.{n}.jsonl") for n in range(FAULT_RUNS)]
    for run in runs:
        assert not run.press_key.is_error, run.press_key.text
        assert run.page_got is None  # the prompt was dismissed: the page got null
        assert run.stale.section("Open dialog") == OPEN_PROMPT  # ... and is still "open"
        assert not run.handled.is_error
        assert run.handled.text.startswith("Successfully accepted the dialog")
        assert run.after.section("Open dialog") is None
        assert run.handled_again.is_error
        assert "No open dialog found" in run.handled_again.text
        assert returned(run.usable) == "two sites:null"
        assert not run.closed.is_error, run.closed.text

        answers = _commands(run.trace, "Page.handleJavaScriptDialog")
        assert answers and all(a.id >= OWN_ID_BASE for a in answers)  # the client sent none
        assert all(a.params == {"accept": False} for a in answers)
        faults = [m.params for m in run.trace.messages
                  if isinstance(m, Note) and m.method == "cdpnb.proxyFault"]
        assert faults and {(f["rule"], f["action"]) for f in faults} == {
            ("dismiss-dialogs=10ms", "dismissed")}
        dialogs = run.trace.dialogs()
        assert (dialogs["closed_by"] == "fault").sum() >= 1, dialogs.to_string()
        assert "client" not in set(dialogs["closed_by"])
        assert not dialogs["accepted"].any()


# -- and without the fault: a dialog open under evaluate_script holds every tool --------


@pytest.mark.browser
async def test_evaluate_script_with_a_dialog_open_holds_every_tool(
        site: ScenarioServer, node: str, tmp_path: Path) -> None:
    """#1069 on 1.11.0, with no fault: ``evaluate_script`` on a page whose dialog is open
    is not refused (it is not page-scoped: no ``blockedByDialog`` check); its
    ``Runtime.evaluate`` gets no reply while the renderer is paused in the dialog (the
    default protocolTimeout is 180 s), and it holds the server's tool mutex, so the
    agent's ``handle_dialog`` (the one remedy) waits behind it and never reaches the
    browser. Only someone else ends it: here the page closed through the browser's own
    endpoint, and both calls then fail. (Measured: nothing moved in 8 s; closing the page
    freed both at once.)"""
    page_url = site.url("/two-site")
    # A browser of its own: a dialog left open by another test in the shared one blocks
    # every page of its site (they share a renderer), so this test's own calls would hang.
    async with cdpnb.launch("chromium") as chromium, \
            cdpnb.proxy(chromium, record=tmp_path / "held.jsonl") as px, \
            await McpClient.start(px.url, node=node, timeout=TOOL_TIMEOUT_S) as mcp:

        async def call(name: str, **arguments: Any) -> ToolResult:
            return await asyncio.wait_for(mcp.call_tool(name, arguments), TOOL_TIMEOUT_S)

        page = selected_page(await call("new_page", url=page_url), page_url)
        await call("evaluate_script", function=ARM, pageId=page)
        await call("press_key", key="p", pageId=page)
        await wait_open_dialog(call, page)
        evaluating = asyncio.ensure_future(call("evaluate_script", pageId=page,
                                                function="() => 41 + 1"))
        asked = await _sent(px, "Runtime.evaluate", "() => 41 + 1")
        answering = asyncio.ensure_future(call("handle_dialog", action="accept",
                                               promptText=ANSWER, pageId=page))
        held = px.trace()
        target = _target_of(held, page_url)
        try:
            await asyncio.sleep(3)  # a held call, not a race: nothing can answer it
            assert not evaluating.done() and not answering.done()
            held = px.trace()
            assert not [m for m in held.messages if isinstance(m, Reply | ErrorReply)
                        and m.id == asked.id], "Runtime.evaluate was answered"
            assert not _commands(held, "Page.handleJavaScriptDialog")
        finally:  # the page (its dialog open) must not outlive the test in the shared browser
            await asyncio.to_thread(_close_target, chromium, target)
        evaluated, answered = await evaluating, await answering
    assert evaluated.is_error and "Protocol error (Runtime.evaluate): Target closed" in \
        evaluated.text
    assert answered.is_error and "No page found" in answered.text
    trace = px.trace()
    assert not _commands(trace, "Page.handleJavaScriptDialog")  # the answer never went


async def _sent(px: Proxy, method: str, containing: str) -> Command:
    """The client's ``method`` command whose expression contains ``containing``, once
    the proxy has recorded it (bounded)."""
    for _ in range(400):
        found = [c for c in _commands(px.trace(), method)
                 if containing in str(c.params.get("expression", ""))]
        if found:
            return found[-1]
        await asyncio.sleep(0.05)
    raise AssertionError(f"the client never sent {method} with {containing!r}")


def _target_of(trace: cdpnb.Trace, page_url: str) -> str:
    """The target id of the page the client navigated to ``page_url``."""
    [navigate] = [c for c in _commands(trace, "Page.navigate") if c.params["url"] == page_url]
    for message in trace.messages:
        if isinstance(message, Event) and message.method == "Target.attachedToTarget" and \
                message.params["sessionId"] == navigate.session_id:
            return str(message.params["targetInfo"]["targetId"])
    raise AssertionError(f"no target attached as session {navigate.session_id}")


def _close_target(backend: cdpnb.Backend, target: str) -> None:
    """Close a page through the browser's own HTTP endpoint (not the proxy's)."""
    with urllib.request.urlopen(f"{backend.http_url}/json/close/{target}", timeout=10) as r:
        r.read()
