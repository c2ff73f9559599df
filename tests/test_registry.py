"""``cdpnb.registry`` (async) and ``cdpnb.sync.registry``: one supervisor per task id."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import page_targets, wait_target_closed

import cdpnb
import cdpnb.sync


@pytest.fixture(autouse=True)
def clean_registry() -> Iterator[None]:
    cdpnb.sync.registry.stop_all()
    yield
    cdpnb.sync.registry.stop_all()
    assert len(cdpnb.registry) == 0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def test_same_task_and_url_returns_the_same_supervisor(chromium: cdpnb.Backend) -> None:
    reg = cdpnb.registry
    first = await reg.get_or_start("task-a", chromium.cdp_url, dialog_timeout_s=30)
    again = await reg.get_or_start("task-a", chromium.cdp_url, dialog_timeout_s=30)
    assert again is first
    assert isinstance(first, cdpnb.Supervisor)
    assert first.connected
    assert "task-a" in reg
    assert reg.get("task-a") is first
    assert reg.task_ids() == ["task-a"]
    assert len(reg) == 1
    assert await first.evaluate("1 + 1") == 2
    # only one page target was created for the task
    assert page_targets(chromium).count(first.page_target_id) == 1


async def test_a_stopped_supervisor_is_replaced(chromium: cdpnb.Backend) -> None:
    reg = cdpnb.registry
    first = await reg.get_or_start("task-a", chromium.cdp_url)
    await first.stop()  # stopped behind the registry's back
    assert not first.alive
    second = await reg.get_or_start("task-a", chromium.cdp_url)
    assert second is not first
    assert second.connected
    assert first.stopped
    assert reg.get("task-a") is second
    assert await second.evaluate("'fresh'") == "fresh"
    with pytest.raises(cdpnb.SupervisorStopped):
        await first.evaluate("1")


async def test_a_new_url_rebinds_the_task(chromium: cdpnb.Backend) -> None:
    reg = cdpnb.registry
    # http://host:port and ws://…/devtools/browser/… name the same browser
    old = await reg.get_or_start("task-a", chromium.http_url)
    assert old.endpoint == chromium.http_url
    assert await old.evaluate("2 * 3") == 6
    old_target = old.page_target_id
    new = await reg.get_or_start("task-a", chromium.cdp_url)
    assert new is not old
    assert old.stopped
    assert not old.connected
    assert new.endpoint == chromium.cdp_url
    assert new.connected
    assert reg.get("task-a") is new
    assert len(reg) == 1
    assert await new.evaluate("2 * 3") == 6
    assert wait_target_closed(chromium, old_target)
    assert new.page_target_id in page_targets(chromium)


async def test_two_task_ids_are_independent(chromium: cdpnb.Backend) -> None:
    reg = cdpnb.registry
    a = await reg.get_or_start("task-a", chromium.cdp_url)
    b = await reg.get_or_start("task-b", chromium.cdp_url)
    assert a is not b
    assert a.page_target_id != b.page_target_id
    await a.evaluate("window.who = 'a'")
    await b.evaluate("window.who = 'b'")
    assert await a.evaluate("window.who") == "a"
    assert await b.evaluate("window.who") == "b"
    assert sorted(reg.task_ids()) == ["task-a", "task-b"]

    assert await reg.stop("task-a") is True
    assert a.stopped
    assert not b.stopped
    assert await b.evaluate("window.who") == "b"
    assert await reg.get_or_start("task-b", chromium.cdp_url) is b
    assert reg.task_ids() == ["task-b"]


async def test_stop_returns_true_then_false(chromium: cdpnb.Backend) -> None:
    reg = cdpnb.registry
    sup = await reg.get_or_start("task-a", chromium.cdp_url)
    assert await reg.stop("task-a") is True
    assert sup.stopped
    assert "task-a" not in reg
    assert reg.get("task-a") is None
    assert await reg.stop("task-a") is False
    assert await reg.stop("never-started") is False


async def test_stop_all_counts_and_empties(chromium: cdpnb.Backend) -> None:
    reg = cdpnb.registry
    sups = [await reg.get_or_start(f"task-{i}", chromium.cdp_url) for i in range(3)]
    assert len(reg) == 3
    assert await reg.stop_all() == 3
    assert len(reg) == 0
    assert reg.task_ids() == []
    assert all(s.stopped for s in sups)
    assert await reg.stop_all() == 0


async def test_bad_arguments_name_what_was_wrong(chromium: cdpnb.Backend) -> None:
    reg = cdpnb.registry
    for task_id in (123, None, b"bytes", ""):
        with pytest.raises(TypeError, match="task_id"):
            await reg.get_or_start(task_id, chromium.cdp_url)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="task_id"):
            cdpnb.sync.registry.get_or_start(task_id, chromium.cdp_url)  # type: ignore[arg-type]
    for url in (None, 5, b"ws://x", ""):
        with pytest.raises(TypeError, match="url"):
            await reg.get_or_start("task-a", url)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="url"):
            cdpnb.sync.registry.get_or_start("task-a", url)  # type: ignore[arg-type]
    assert len(reg) == 0


async def test_a_failed_start_leaves_no_entry() -> None:
    reg = cdpnb.registry
    dead = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(cdpnb.CdpnbError):
        await reg.get_or_start("task-dead", dead, connect_timeout_s=2, reconnect_attempts=0)
    assert "task-dead" not in reg
    assert len(reg) == 0


async def test_concurrent_get_or_start_makes_one_supervisor(chromium: cdpnb.Backend) -> None:
    reg = cdpnb.registry
    pages_before = set(page_targets(chromium))
    got = await asyncio.gather(*(reg.get_or_start("task-a", chromium.cdp_url)
                                 for _ in range(3)))
    assert got[0] is got[1] is got[2]
    assert len(reg) == 1
    assert got[0].connected
    new_pages = set(page_targets(chromium)) - pages_before
    assert new_pages == {got[0].page_target_id}


def test_concurrent_sync_get_or_start_from_threads(chromium: cdpnb.Backend) -> None:
    results: list[Any] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(3)

    def worker() -> None:
        try:
            barrier.wait(5)
            results.append(cdpnb.sync.registry.get_or_start("task-t", chromium.cdp_url).aio)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert errors == []
    assert len(results) == 3
    assert results[0] is results[1] is results[2]
    assert len(cdpnb.registry) == 1


def test_sync_registry(chromium: cdpnb.Backend) -> None:
    reg = cdpnb.sync.registry
    one = reg.get_or_start("task-s", chromium.cdp_url, dialog_timeout_s=30)
    two = reg.get_or_start("task-s", chromium.cdp_url, dialog_timeout_s=30)
    assert isinstance(one, cdpnb.sync.Supervisor)
    assert one.aio is two.aio
    assert one.aio is cdpnb.registry.get("task-s")
    assert "task-s" in reg
    assert one.evaluate("40 + 2") == 42

    one.stop()
    three = reg.get_or_start("task-s", chromium.cdp_url)
    assert three.aio is not one.aio
    assert three.evaluate("1") == 1

    other = reg.get_or_start("task-s2", chromium.http_url)
    assert other.aio is not three.aio
    rebound = reg.get_or_start("task-s2", chromium.cdp_url)
    assert other.aio.stopped
    assert rebound.aio is not other.aio

    assert reg.stop("task-s") is True
    assert reg.stop("task-s") is False
    assert "task-s" not in reg
    assert reg.stop_all() == 1
    assert reg.stop_all() == 0
    assert len(cdpnb.registry) == 0
    assert rebound.aio.stopped


async def test_sync_registry_inside_a_running_loop(chromium: cdpnb.Backend) -> None:
    assert asyncio.get_running_loop().is_running()
    sup = cdpnb.sync.registry.get_or_start("task-loop", chromium.cdp_url)
    assert sup.evaluate("1 + 2") == 3
    # the async registry sees the same table
    assert await cdpnb.registry.get_or_start("task-loop", chromium.cdp_url) is sup.aio
    assert cdpnb.sync.registry.stop_all() == 1
