"""A hint is issued once, as a CdpnbWarning at the user's own line, from either face."""

from __future__ import annotations

import asyncio
import warnings

import pytest

import cdpnb
from cdpnb.testing import ScriptedBrowser


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
