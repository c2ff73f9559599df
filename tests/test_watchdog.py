"""must_respond's watchdog (``cdpnb.supervisor.watchdog``): deadlines kept by dialog,
one timer on the engine loop, woken only when a deadline comes before the one it is
set to. The browser side (a forgotten dialog dismissed, an answered one left alone) is
in tests/test_dialogs.py."""

from __future__ import annotations

import threading
import time
import types
from typing import Any

import pytest

from cdpnb.runtime.engine import engine
from cdpnb.supervisor import watchdog
from cdpnb.supervisor.watchdog import DialogDeadlines


class _CountingLoop:
    """The engine loop, counting the wake-ups asked of it."""

    def __init__(self) -> None:
        self.wakes = 0

    def call_soon_threadsafe(self, callback: Any, *args: Any) -> Any:
        self.wakes += 1
        return engine.loop.call_soon_threadsafe(callback, *args)


@pytest.fixture
def counting(monkeypatch: pytest.MonkeyPatch) -> _CountingLoop:
    loop = _CountingLoop()
    monkeypatch.setattr(watchdog, "engine", types.SimpleNamespace(loop=loop))
    return loop


def _fired_into(fired: list[tuple[str, str, float]], done: threading.Event,
                expected: int) -> Any:
    def fire(dialog_id: str) -> None:
        fired.append((dialog_id, threading.current_thread().name, time.monotonic()))
        if len(fired) == expected:
            done.set()
    return fire


def test_deadlines_fire_in_turn_from_one_timer_woken_once(counting: _CountingLoop) -> None:
    fired: list[tuple[str, str, float]] = []
    done = threading.Event()
    deadlines = DialogDeadlines(0.3, _fired_into(fired, done, 2))
    started = time.monotonic()
    deadlines.open("d-1")
    time.sleep(0.05)
    deadlines.open("d-2")  # later than d-1's: no wake
    deadlines.open("d-3")
    deadlines.close("d-3")  # answered: dropped, nothing woken
    assert counting.wakes == 1
    assert done.wait(10), fired
    time.sleep(0.4)  # (d-3's deadline passes too: nothing more fires)
    assert [d for d, _, _ in fired] == ["d-1", "d-2"]
    assert {thread for _, thread, _ in fired} == {"cdpnb-engine"}  # (the engine loop's)
    assert all(at - started >= 0.3 for _, _, at in fired)
    assert deadlines.pending() == {}
    deadlines.open("d-4")  # nothing armed any more: this one wakes the engine
    assert counting.wakes == 2
    deadlines.stop()


def test_a_closed_dialog_fires_nothing_and_stop_ends_every_deadline(
        counting: _CountingLoop) -> None:
    fired: list[tuple[str, str, float]] = []
    done = threading.Event()
    deadlines = DialogDeadlines(0.1, _fired_into(fired, done, 1))
    deadlines.open("d-1")
    deadlines.close("d-1")
    deadlines.open("d-2")
    deadlines.stop()
    assert deadlines.pending() == {}
    assert not done.wait(0.4)
    assert fired == []
