"""A hint is issued once, as a CdpnbWarning at the user's own line, from either face."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Callable
from typing import Any

import pytest

import cdpnb
from cdpnb.testing import ScriptedBrowser, ScriptedCommand, ScriptedError


async def test_a_hint_warns_once_at_the_callers_line_of_the_async_face() -> None:
    browser = ScriptedBrowser()
    browser.on("Runtime.evaluate", lambda command: {"result": {"type": "number", "value": 1}})
    sup = await cdpnb.Supervisor.start(browser)
    try:
        sup._hint("advice for the caller")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert await sup.evaluate("1") == 1
            assert await sup.evaluate("1") == 1
        assert [str(w.message) for w in caught] == ["advice for the caller"]
        assert caught[0].filename == __file__
        assert caught[0].category is cdpnb.CdpnbWarning
        sup._hint("advice for the caller")  # given once: never again
        sup._hint("more advice")
        with pytest.warns(cdpnb.CdpnbWarning, match="more advice") as record:
            sup.snapshot()
        assert [w.filename for w in record] == [__file__]
        assert sup.hints == ["advice for the caller", "more advice"]
    finally:
        await sup.stop()


def test_a_hint_warns_at_the_callers_line_of_the_blocking_face() -> None:
    browser = ScriptedBrowser()
    browser.on("Runtime.evaluate", lambda command: {"result": {"type": "number", "value": 2}})
    sup = cdpnb.sync.Supervisor.start(browser)
    try:
        sup.aio._hint("blocking advice")
        with pytest.warns(cdpnb.CdpnbWarning, match="blocking advice") as record:
            assert sup.evaluate("2") == 2
        assert [w.filename for w in record] == [__file__]
    finally:
        sup.stop()


def test_a_hint_warns_at_the_callers_line_when_a_loop_runs_on_its_thread() -> None:
    """As in a notebook: the blocking call runs on the engine loop, the warning is
    issued on the caller's thread once the call returns."""
    browser = ScriptedBrowser()
    browser.on("Runtime.evaluate", lambda command: {"result": {"type": "number", "value": 3}})
    sup = cdpnb.sync.Supervisor.start(browser)

    async def in_a_running_loop() -> list[warnings.WarningMessage]:
        sup.aio._hint("kernel advice")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert sup.evaluate("3") == 3
        return caught

    try:
        caught = asyncio.run(in_a_running_loop())
        assert [(str(w.message), w.filename) for w in caught] == [("kernel advice", __file__)]
    finally:
        sup.stop()


def _hinting_then_failing(sup: cdpnb.Supervisor, hint: str
                          ) -> Callable[[ScriptedCommand], dict[str, Any]]:
    """A handler that gives a hint while the command runs, then fails the command."""
    def handle(command: ScriptedCommand) -> dict[str, Any]:
        sup._hint(hint)
        raise ScriptedError(-32000, "no such thing")
    return handle


async def test_a_hint_a_filter_raises_as_a_call_fails_is_a_note_on_the_calls_error() -> None:
    """Under ``-W error`` a hint warned as a call fails would replace the call's own
    error (a lost connection's ConnectionLost became the "ended for good" warning on
    CPython 3.12 and 3.11 in CI): the error says what happened, the hint rides on it.
    Under the default filters the hint is a warning, as after a call that returned."""
    browser = ScriptedBrowser()
    sup = await cdpnb.Supervisor.start(browser)
    try:
        browser.on("Runtime.evaluate", _hinting_then_failing(sup, "given while the call ran"))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(cdpnb.CDPError, match="no such thing") as failed:
                await sup.evaluate("1")
        notes = getattr(failed.value, "__notes__", [])
        assert notes == ["cdpnb hint: given while the call ran"]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            sup.snapshot()
        assert caught == []  # each hint once: the notes were its issue
        browser.on("Runtime.evaluate", _hinting_then_failing(sup, "given as the next call ran"))
        with pytest.warns(cdpnb.CdpnbWarning, match="given as the next call ran") as record, \
                pytest.raises(cdpnb.CDPError, match="no such thing") as failed:
            await sup.evaluate("1")
        assert [w.filename for w in record] == [__file__]
        assert not getattr(failed.value, "__notes__", [])
    finally:
        await sup.stop()


def test_a_hint_a_filter_raises_as_a_blocking_call_fails_is_a_note_on_its_error() -> None:
    browser = ScriptedBrowser()
    sup = cdpnb.sync.Supervisor.start(browser)
    try:
        browser.on("Runtime.evaluate",
                   _hinting_then_failing(sup.aio, "blocking advice on a failure"))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(cdpnb.CDPError, match="no such thing") as failed:
                sup.evaluate("1")
        assert getattr(failed.value, "__notes__", []) == [
            "cdpnb hint: blocking advice on a failure"]
    finally:
        sup.stop()


async def test_stop_stops_before_a_hint_a_filter_raises() -> None:
    """Under ``-W error`` a hint pending at ``stop()`` is raised once the supervisor has
    stopped (its page closed, its connection ended), never instead of stopping."""
    browser = ScriptedBrowser()
    sup = await cdpnb.Supervisor.start(browser)
    sup._hint("advice pending at stop")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(cdpnb.CdpnbWarning, match="advice pending at stop"):
            await sup.stop()
    assert not sup.connected
    with pytest.raises(cdpnb.SupervisorStopped):
        await sup.evaluate("1")
    await sup.stop()  # again: nothing left to say or do
