"""Liveness on every protocol: what is behind a supervisor dies (a WebDriver server, its
browser, the browser behind the chromium-bidi mapper, a runtime), killed by its pid in
the middle of a wait and of a command. Every time the same promise: the call ends at
once with ConnectionLost saying what died, ``alive`` goes False, and a hint says the
connection ended for good and why. Also: a script that holds a runtime (Bun cannot end
one), a WebDriver server that answers in the wrong shapes, chromedriver's port race.

Timings here are generous bounds against a wait of a minute, never a race's winner.
"""

from __future__ import annotations

import asyncio
import os
import stat
import time
import warnings
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

import cdpnb
from cdpnb.backends.webdriver_servers import ChromedriverProcess, find_chromedriver
from cdpnb.testing.classic_peer import ClassicPeer

#: What "at once" means beside two CPU-bound processes: far below every wait's minute.
AT_ONCE_S = 15.0
#: The waits and commands that are cut short (each would take a minute otherwise).
LONG_S = 60.0
LONG_SCRIPT = "new Promise(r => setTimeout(r, 60000))"


# -- helpers ---------------------------------------------------------------------------------


def _children(pid: int, *names: str) -> list[psutil.Process]:
    """``pid``'s direct children named one of ``names`` (a browser's main process)."""
    return [p for p in psutil.Process(pid).children() if p.name() in names]


async def _until(condition: Callable[[], bool], timeout: float = AT_ONCE_S) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "never came"
        await asyncio.sleep(0.02)


async def _killed_during(sup: cdpnb.Supervisor, victim: psutil.Process | Callable[[], None],
                         call: Callable[[], Awaitable[Any]]) -> tuple[cdpnb.ConnectionLost,
                                                                      list[str]]:
    """Kill ``victim`` (SIGKILL, by its pid; or call it) while ``call`` waits; the
    ConnectionLost the call ended with and the CdpnbWarnings issued (once each, wherever
    they came: the failing call itself issues the hint when it is there by then)."""
    async def kill_soon() -> None:
        await asyncio.sleep(0.5)  # (the call is waiting by then; were it not, it fails too)
        if isinstance(victim, psutil.Process):
            victim.kill()
        else:
            victim()

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always", cdpnb.CdpnbWarning)
        killer = asyncio.ensure_future(kill_soon())
        began = time.monotonic()
        try:
            with pytest.raises(cdpnb.ConnectionLost) as lost:
                await call()
        finally:
            await killer
        assert time.monotonic() - began < AT_ONCE_S  # (against a minute's wait)
        await _until(lambda: not sup.alive and any("ended for good" in h for h in sup.hints))
        assert not sup.connected
        with pytest.raises(cdpnb.ConnectionLost, match="is down"):  # later calls: at once
            await sup.evaluate("1")
        await sup.stop()
    return lost.value, [str(w.message) for w in seen if w.category is cdpnb.CdpnbWarning]


def _said_once(hints: list[str], warned: list[str], *words: str) -> None:
    ended = [h for h in hints if "ended for good" in h]
    assert len(ended) == 1, hints
    for word in words:
        assert word in ended[0], (word, ended[0])
    assert warned.count(ended[0]) == 1  # issued to the user once


def _wait(sup: cdpnb.Supervisor) -> Callable[[], Awaitable[Any]]:
    return lambda: sup.wait_for_dialog(timeout=LONG_S)


def _command(sup: cdpnb.Supervisor) -> Callable[[], Awaitable[Any]]:
    return lambda: sup.evaluate(LONG_SCRIPT, timeout=LONG_S)


# -- WebDriver classic: chromedriver and WebKitWebDriver, real --------------------------------

#: (kind, the name of the browser's main process, the words the server says of its end)
CLASSIC = {"chromium+chromedriver": ("chromium", "session deleted as the browser has closed"),
           "webkit": ("MiniBrowser", "invalid session id")}


@pytest.mark.browser
@pytest.mark.parametrize("during", ["wait", "command"])
@pytest.mark.parametrize("what", ["browser", "server"])
@pytest.mark.parametrize("kind", list(CLASSIC))
async def test_a_classic_server_or_its_browser_killed_ends_every_wait_with_what_died(
        kind: str, what: str, during: str) -> None:
    async with cdpnb.launch(kind) as backend:
        sup = await cdpnb.Supervisor.start(backend, dialog_timeout_s=LONG_S)
        browser_name, server_words = CLASSIC[kind]
        if what == "browser":
            browsers = _children(backend.pid, browser_name)
            assert len(browsers) == 1, browsers
            victim = browsers[0]
        else:
            victim = psutil.Process(backend.pid)
        lost, warned = await _killed_during(
            sup, victim, (_wait if during == "wait" else _command)(sup))
        if what == "browser":
            words = ("WebDriver session", "is gone", server_words,
                     "the browser behind the WebDriver server closed or died")
        else:
            words = ("WebDriver server", "is gone (the connection was refused)",
                     "its process has ended")
        for word in words:
            assert word in str(lost)
        _said_once(sup.hints, warned, "WebDriver classic connection", *words)
        assert sup.state.connection.phase == "gave_up"
        assert sup.stats().get("reconnects", 0) == 0  # (a new session would be a new browser)


# -- WebDriver BiDi: Chromium killed behind the chromium-bidi mapper or chromedriver --------


@pytest.mark.browser
@pytest.mark.parametrize("during", ["wait", "command"])
@pytest.mark.parametrize("kind", ["chromium+bidi", "chromium+chromedriver+bidi"])
async def test_chromium_killed_behind_a_bidi_server_ends_every_wait_with_what_died(
        kind: str, during: str) -> None:
    """chromium-bidi keeps the socket open (cdpnb's wrapper closes it saying why);
    chromedriver drops it (its session, asked once, says why). Either way nothing
    reconnects: that would start another browser."""
    async with cdpnb.launch(kind) as backend:
        sup = await cdpnb.Supervisor.start(backend, dialog_timeout_s=LONG_S)
        browsers = _children(backend.pid, "chromium")
        assert len(browsers) == 1, browsers
        victim = browsers[0]
        lost, warned = await _killed_during(
            sup, victim, (_wait if during == "wait" else _command)(sup))
        if kind == "chromium+bidi":
            words: tuple[str, ...] = (f"the browser behind chromium-bidi (pid {victim.pid}) "
                                      "exited (signal SIGKILL)",)
        else:
            words = ("WebDriver session", "is gone (\"invalid session id\"",
                     "the browser behind the WebDriver server closed or died")
        for word in words:
            assert word in str(lost)
        _said_once(sup.hints, warned, "WebDriver BiDi connection", *words)
        assert backend.running  # (the server lives on: a new supervisor gets a new browser)
        assert sup.stats().get("reconnects", 0) == 0


@pytest.mark.browser
async def test_a_mapper_session_ended_by_cdpnb_is_no_death() -> None:
    """The browser the mapper closes itself (session.end at stop) is not said as gone:
    nothing is hinted, and a second supervisor on the same mapper works."""
    async with cdpnb.launch("chromium+bidi") as backend:
        for _ in range(2):
            async with await cdpnb.Supervisor.start(backend) as sup:
                assert await sup.evaluate("6 * 7") == 42
            assert not any("ended for good" in h for h in sup.hints)


# -- CDP: the browser killed (the socket's end says it) --------------------------------------


@pytest.mark.browser
async def test_chromium_killed_ends_every_wait_and_says_so() -> None:
    async with cdpnb.launch("chromium") as backend:
        sup = await cdpnb.Supervisor.start(backend, dialog_timeout_s=LONG_S)
        lost, warned = await _killed_during(sup, psutil.Process(backend.pid), _wait(sup))
        assert "connection dropped" in str(lost)
        _said_once(sup.hints, warned, "CDP connection", "connection dropped",
                   "gave up after 3 reconnect attempts", "Connection refused")


# -- the runtimes: node and Bun ------------------------------------------------------------


@pytest.mark.browser
async def test_node_exiting_mid_evaluate_ends_it_at_once_saying_the_runtime_exited() -> None:
    """Node keeps its socket open after process.exit() while a debugger is attached: the
    destruction of its one context says it exited."""
    async with cdpnb.launch("node") as backend:
        sup = await cdpnb.Supervisor.start(backend)
        node = psutil.Process(backend.pid)

        async def exit_in_evaluate() -> Any:
            return await sup.evaluate("process.exit(3)", timeout=LONG_S)

        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always", cdpnb.CdpnbWarning)
            began = time.monotonic()
            with pytest.raises(cdpnb.ConnectionLost, match=r"the runtime .*node\[\d+\] exited"):
                await exit_in_evaluate()
            assert time.monotonic() - began < AT_ONCE_S
            await _until(lambda: not sup.alive and bool(sup.hints))
            await sup.stop()
        warned = [str(w.message) for w in seen if w.category is cdpnb.CdpnbWarning]
        _said_once(sup.hints, warned, "CDP connection", f"node[{node.pid}] exited",
                   "process.exit()")
        await _until(lambda: not node.is_running() or node.status() == psutil.STATUS_ZOMBIE)


@pytest.mark.browser
@pytest.mark.parametrize("during", ["wait", "command"])
async def test_node_killed_ends_every_wait_and_says_so(during: str) -> None:
    async with cdpnb.launch("node") as backend:
        sup = await cdpnb.Supervisor.start(backend)
        lost, warned = await _killed_during(
            sup, psutil.Process(backend.pid), (_wait if during == "wait" else _command)(sup))
        assert "connection dropped" in str(lost)
        _said_once(sup.hints, warned, "CDP connection", "connection dropped",
                   "Connection refused")


@pytest.mark.browser
async def test_bun_held_by_an_endless_script_is_not_alive_and_says_so() -> None:
    """Bun cannot end a script (no Runtime.terminateExecution): the evaluate's budget
    ends the call, the runtime stays held (alive False, a hint), and killing it then
    ends a wait at once like any death."""
    async with cdpnb.launch("bun") as backend:
        sup = await cdpnb.Supervisor.start(backend)
        with pytest.warns(cdpnb.CdpnbWarning, match="a script cdpnb could not end holds"), \
                pytest.raises(cdpnb.EvaluateTimeout,
                              match="no way to end a running script") as timed_out:
            await sup.evaluate("while (true) {}", timeout=2)
        assert timed_out.value.ended_by == "not terminated"
        assert "the target answers nothing until it ends" in str(timed_out.value)
        assert not sup.alive and sup.connected
        assert any("`alive` is False until it answers again" in h for h in sup.hints)
        lost, warned = await _killed_during(sup, psutil.Process(backend.pid), _wait(sup))
        assert "connection dropped" in str(lost)
        _said_once(sup.hints, warned, "WIP connection", "connection dropped")


@pytest.mark.browser
async def test_bun_held_by_a_script_that_ends_is_alive_again() -> None:
    async with cdpnb.launch("bun") as backend, await cdpnb.Supervisor.start(backend) as sup:
        with pytest.warns(cdpnb.CdpnbWarning, match="could not end holds"), \
                pytest.raises(cdpnb.EvaluateTimeout):
            await sup.evaluate("{ const t = Date.now(); while (Date.now() - t < 8000) {} }",
                               timeout=1)
        assert not sup.alive  # (held: the script runs 8 s, the call ended after 1.5)
        await _until(lambda: sup.alive, 30)  # the probe queued behind it was answered
        assert await sup.evaluate("6 * 7") == 42
        # A script that only waits holds nothing: the runtime answers meanwhile.
        with pytest.raises(cdpnb.EvaluateTimeout, match="answers other commands"):
            await sup.evaluate("new Promise(() => {})", timeout=1)
        assert sup.alive


# -- scripted WebDriver servers: the same words, exactly ------------------------------------


@pytest.fixture
def peer() -> Iterator[ClassicPeer]:
    with ClassicPeer().serving() as serving:
        yield serving


async def test_a_classic_session_that_ends_under_the_poll_ends_every_wait(
        peer: ClassicPeer) -> None:
    sup = await cdpnb.Supervisor.start(peer.url, dialog_timeout_s=LONG_S)

    def end_the_session() -> None:
        with peer.lock:
            peer.session_id = "someone-else"  # every request: "invalid session id"

    lost, warned = await _killed_during(sup, end_the_session, _wait(sup))
    words = ("the WebDriver session session-1 at", "is gone (\"invalid session id\"",
             "the browser behind the WebDriver server closed or died")
    for word in words:
        assert word in str(lost)
    _said_once(sup.hints, warned, "WebDriver classic connection", *words)
    assert ("DELETE", "/session/session-1") not in peer.requests  # (nothing left to end)


async def test_a_classic_server_gone_under_the_poll_ends_every_wait(peer: ClassicPeer) -> None:
    sup = await cdpnb.Supervisor.start(peer.url, dialog_timeout_s=LONG_S)
    lost, warned = await _killed_during(sup, peer.die, _wait(sup))
    words = ("the WebDriver server at", "is gone (the connection was refused): its process "
             "has ended")
    for word in words:
        assert word in str(lost)
    _said_once(sup.hints, warned, "WebDriver classic connection", *words)


#: A misspoken answer → what the EndpointError names.
MISSPOKEN = {
    "window an object": (("GET", "/window"), (200, {"handle": "w"}),
                         r"classic.getWindowHandle with \{\"handle\": \"w\"\}, not a window"),
    "window a number": (("GET", "/window"), (200, 5), "getWindowHandle with 5, not a window"),
    "window empty": (("GET", "/window"), (200, ""), "getWindowHandle with \"\", not a window"),
    "handles a number": (("GET", "/window/handles"), (200, 5),
                         "getWindowHandles with 5, not a list of window handles"),
    "handles null": (("GET", "/window/handles"), (200, None),
                     "getWindowHandles with null, not a list"),
    "handles an object": (("GET", "/window/handles"), (200, {"a": 1}),
                          r"getWindowHandles with \{\"a\": 1\}, not a list"),
    "handles of numbers": (("GET", "/window/handles"), (200, [1, 2]),
                           r"getWindowHandles with \[1, 2\], not a list"),
    "window an error without a code": (("GET", "/window"), (500, {"error": 5}),
                                       r"GET /session/<id>/window of the new session failed "
                                       r"\(HTTP 500\)"),
    "capabilities a list": (("POST", "/session"),
                            (200, {"sessionId": "session-1", "capabilities": [1]}),
                            r"POST /session gave capabilities that are no JSON object"),
    "session id a number": (("POST", "/session"), (200, {"sessionId": 5}),
                            "POST /session gave no sessionId"),
}


@pytest.mark.parametrize("case", list(MISSPOKEN))
async def test_a_webdriver_server_in_wrong_shapes_is_an_endpoint_error_naming_them(
        peer: ClassicPeer, case: str) -> None:
    request, answer, named = MISSPOKEN[case]
    peer.misspoken[request] = answer
    with pytest.raises(cdpnb.EndpointError, match=named):
        await cdpnb.Supervisor.start(peer.url, connect_timeout_s=5)
    if request != ("POST", "/session"):  # a session it made is ended again
        assert ("DELETE", "/session/session-1") in peer.requests


async def test_a_misspoken_answer_mid_session_is_a_named_error(peer: ClassicPeer) -> None:
    async with await cdpnb.Supervisor.start(peer.url) as sup:
        peer.misspoken["POST", "/element"] = (200, {"x": 1})
        with pytest.raises(cdpnb.CDPError, match=r"answered classic.findElement with "
                           r"\{\"x\": 1\}, not an element reference"):
            await sup.classic("classic.findElement", {"using": "css selector", "value": "a"})
        assert sup.alive  # (a wrong answer is not a dead server)


# -- chromedriver's start: a port taken under it is tried once more -------------------------


@pytest.mark.browser
def test_chromedriver_that_lost_its_port_race_is_started_once_more(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A chromedriver that exits at once saying "IPv4 port not available. Exiting..."
    (its --port=0 race, about one start in 40): a stand-in says it on its first start
    and is the real one after."""
    real = find_chromedriver()
    mark = tmp_path / "failed-once"
    stand_in = tmp_path / "chromedriver"
    stand_in.write_text(
        "#!/bin/sh\n"
        f'case "$1" in --version) exec {real} "$@";; esac\n'
        f'if [ ! -e {mark} ]; then : > {mark}; echo "IPv4 port not available. Exiting..."; '
        "exit 1; fi\n"
        f'exec {real} "$@"\n')
    stand_in.chmod(stand_in.stat().st_mode | stat.S_IXUSR)
    with caplog.at_level("INFO", logger="cdpnb.backends"):
        process = ChromedriverProcess.start(chromedriver=str(stand_in))
    try:
        assert mark.exists() and process.running
        assert any("could not bind its port" in r.getMessage() and "once more" in r.getMessage()
                   for r in caplog.records)
    finally:
        process.close()
    assert not os.path.exists(process.workdir)
