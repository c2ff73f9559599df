"""``Supervisor.start(...)``: awaited for the supervisor, as ever, or entered with
``async with`` (started on entering, stopped on leaving): issue 39's
``TypeError: 'coroutine' object does not support the asynchronous context manager
protocol``. What is not browser-specific runs on a scripted peer; one test on a real
Chromium checks the page the supervisor made is gone after the block."""

from __future__ import annotations

import asyncio
import gc

import pytest

import cdpnb
import cdpnb.sync
from cdpnb.runtime.closing import Starting
from cdpnb.testing import ScriptedBrowser, ScriptedError
from tests.conftest import page_targets, wait_target_closed


def answering() -> ScriptedBrowser:
    browser = ScriptedBrowser()
    browser.on("Runtime.evaluate", lambda command: {"result": {"type": "number", "value": 2}})
    return browser


async def test_async_with_start_gives_the_supervisor_and_stops_it_on_leaving() -> None:
    browser = answering()
    starting = cdpnb.Supervisor.start(browser)
    assert isinstance(starting, Starting)
    assert "Supervisor.start" in repr(starting) and "async with" in repr(starting)
    async with starting as sup:
        assert isinstance(sup, cdpnb.Supervisor)
        assert not sup.stopped and sup.connected
        assert await sup.evaluate("1 + 1") == 2
        page = sup.page_target_id
    assert sup.stopped
    closed = browser.commands("Target.closeTarget")
    assert [c.params["targetId"] for c in closed] == [page]


async def test_leaving_the_block_by_an_error_stops_it_and_the_error_propagates() -> None:
    browser = answering()
    with pytest.raises(LookupError, match="from the block"):
        async with cdpnb.Supervisor.start(browser) as sup:
            raise LookupError("from the block")
    assert sup.stopped
    assert browser.commands("Target.closeTarget")


async def test_a_start_that_fails_raises_from_the_async_with_and_leaves_nothing() -> None:
    browser = ScriptedBrowser()

    def refuse(command: object) -> dict[str, object]:
        raise ScriptedError(-32000, "no new pages today")

    browser.on("Target.createTarget", refuse)
    entered = False
    with pytest.raises(cdpnb.CdpnbError, match="no new pages today"):
        async with cdpnb.Supervisor.start(browser):
            entered = True
    assert not entered


async def test_await_still_gives_the_supervisor_and_so_does_async_with_await() -> None:
    sup = await cdpnb.Supervisor.start(answering())
    try:
        assert isinstance(sup, cdpnb.Supervisor) and not sup.stopped
    finally:
        await sup.stop()
    async with await cdpnb.Supervisor.start(answering()) as again:
        assert not again.stopped
    assert again.stopped


async def test_it_is_a_coroutine_to_whatever_takes_one_and_runs_once() -> None:
    """As the coroutine it wraps: a task takes it, and a second await is the
    coroutine's own error, not a second supervisor."""
    starting = cdpnb.Supervisor.start(answering())
    sup = await asyncio.create_task(starting)
    try:
        assert isinstance(sup, cdpnb.Supervisor)
        with pytest.raises(RuntimeError, match="cannot reuse already awaited coroutine"):
            await starting
    finally:
        await sup.stop()


def test_a_start_never_awaited_is_pythons_never_awaited_warning() -> None:
    with pytest.warns(RuntimeWarning, match="Supervisor.start' was never awaited"):
        cdpnb.Supervisor.start(ScriptedBrowser())
        gc.collect()


def test_the_blocking_face_starts_and_stops_as_before() -> None:
    with cdpnb.sync.Supervisor.start(answering()) as sup:
        assert isinstance(sup, cdpnb.sync.Supervisor)
        assert sup.evaluate("1 + 1") == 2
    assert sup.stopped


async def test_async_with_start_on_chromium_closes_the_page_it_made(
        chromium: cdpnb.Backend) -> None:
    async with cdpnb.Supervisor.start(chromium, dialog_timeout_s=30) as sup:
        assert sup.protocol == "cdp"
        assert await sup.evaluate("6 * 7") == 42
        page = sup.page_target_id
        assert page in await asyncio.to_thread(page_targets, chromium)
    assert sup.stopped and not sup.connected
    assert await asyncio.to_thread(wait_target_closed, chromium, page)
