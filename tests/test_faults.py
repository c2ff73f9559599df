"""Faults a real browser produces, and load: each ends in a clear error within its
timeout, leaves the supervisor usable (or cleanly stopped), and loses no record."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import signal
import time
import warnings
from pathlib import Path

import psutil
import pytest
from conftest import hint_saying, open_two_site, settle, until_hinted

import cdpnb
from cdpnb.probes import ScenarioServer
from cdpnb.runtime.engine import engine
from cdpnb.trace import Trace

pytestmark = pytest.mark.browser


async def test_sigkill_mid_command_leaves_the_trace_whole(site: ScenarioServer,
                                                          tmp_path: Path) -> None:
    path = tmp_path / "killed.jsonl"
    # The connection's "ended for good" hint is told once, at whichever call comes
    # after it is given (the failing one, the snapshot or stop: a race with the
    # disconnect's handling); tests/test_liveness.py holds its words.
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always", cdpnb.CdpnbWarning)
        async with cdpnb.launch("headless-shell") as backend:
            sup = await cdpnb.Supervisor.start(backend, reconnect_attempts=0, record=path)
            await sup.navigate(site.url("/blank"))
            hanging = asyncio.ensure_future(sup.evaluate("new Promise(() => {})",
                                                         timeout=20))
            await asyncio.sleep(0.1)
            os.kill(backend.pid, signal.SIGKILL)
            began = time.monotonic()
            with pytest.raises(cdpnb.ConnectionLost):
                await hanging
            assert time.monotonic() - began < 1.0
            assert sup.snapshot().connected is False
            # What is on disk now, before anyone closes anything, is what a crash leaves.
            lines = path.read_text().splitlines()
            records = [json.loads(line) for line in lines]  # every line whole
            assert records[-1]["msg"]["method"] == "cdpnb.disconnected"
            sent = [r["msg"] for r in records if r.get("dir") == "send"]
            assert sent[-1]["method"] == "Runtime.evaluate"
            assert sent[-1]["params"]["expression"] == "new Promise(() => {})"
            await until_hinted(sup, "ended for good")
            await sup.stop()
    assert [str(w.message) for w in warned].count(hint_saying(sup, "ended for good")) == 1
    trace = Trace.load(path)
    assert trace.complete and len(trace.records) == len(lines) - 1


async def test_a_renderer_crash_fails_calls_at_once_and_navigation_recovers(
        sup: cdpnb.Supervisor, site: ScenarioServer) -> None:
    await sup.navigate(site.url("/blank"))
    pending = asyncio.ensure_future(sup.evaluate("new Promise(() => {})", timeout=20))
    await asyncio.sleep(0.1)
    began = time.monotonic()
    with pytest.raises(cdpnb.TargetGone, match="crashed"):
        await sup.cdp("Page.crash", timeout=20)
    with pytest.raises(cdpnb.TargetGone, match="renderer crashed"):
        await pending
    with pytest.raises(cdpnb.TargetGone, match="navigate"):
        await sup.evaluate("1", timeout=20)
    with pytest.raises(cdpnb.TargetGone, match="crashed"):  # any command, not only script
        await sup.cdp("DOM.getDocument", timeout=20)
    assert time.monotonic() - began < 1.0
    assert sup.page_session_id in sup.state.crashed_sessions
    await sup.navigate(site.url("/child"))
    assert await sup.evaluate("document.title") == "child"
    assert sup.state.crashed_sessions == frozenset()
    assert sup.stats()["commands-orphaned"] == 2


@pytest.mark.parametrize("how", ["removed", "navigated to its parent's site"])
async def test_an_oopif_that_goes_away_mid_call(sup: cdpnb.Supervisor, site: ScenarioServer,
                                                how: str) -> None:
    ids = await open_two_site(sup, site)
    pending = asyncio.ensure_future(sup.evaluate("new Promise(() => {})",
                                                 frame_id=ids["oopif"], timeout=20))
    await asyncio.sleep(0.1)
    began = time.monotonic()
    if how == "removed":
        await sup.evaluate("document.getElementById('oopif').remove()")
    else:
        await sup.evaluate(f"document.getElementById('oopif').src = "
                           f"{json.dumps(site.url('/blank'))}")
    with pytest.raises(cdpnb.TargetGone, match="session detached"):
        await pending
    assert time.monotonic() - began < 2.0
    assert await sup.evaluate("document.title") == "two sites"
    with pytest.raises((cdpnb.UnknownFrame, cdpnb.FrameNotRoutable)):
        await sup.cdp("Runtime.evaluate", {"expression": "1"}, frame_id=ids["oopif"])


@pytest.mark.parametrize("policy", ["auto_accept", "auto_dismiss", "must_respond"])
async def test_five_hundred_dialogs_as_fast_as_the_page_opens_them(
        chromium: cdpnb.Backend, site: ScenarioServer, tmp_path: Path, policy: str) -> None:
    path = tmp_path / f"{policy}.jsonl"
    async with await cdpnb.Supervisor.start(chromium, policy=policy, record=path) as sup:
        await sup.navigate(site.url("/blank"))
        await sup.evaluate("window.opened = 0; window.yes = 0; setTimeout(() => { "
                           "for (let i = 0; i < 500; i++) { window.opened++; "
                           "if (confirm('n' + i)) window.yes++; } window.done = true }, 0)")
        if policy == "must_respond":
            for i in range(500):
                dialog = await sup.wait_for_dialog(timeout=5)
                assert dialog.message == f"n{i}"
                await sup.respond("accept" if i % 2 else "dismiss", dialog_id=dialog.id)
        await settle(sup, lambda s: s.dialogs_closed_total == 500, timeout=60)
        assert await sup.evaluate("window.done") is True
        assert await sup.evaluate("window.opened") == 500
        yes = await sup.evaluate("window.yes")
        assert yes == {"auto_accept": 500, "auto_dismiss": 0, "must_respond": 250}[policy]
        assert len(sup.snapshot().recent_dialogs) == 20  # capped
    dialogs = Trace.load(path).dialogs()
    assert len(dialogs) == 500
    assert list(dialogs["message"]) == [f"n{i}" for i in range(500)]
    closed_by = "agent" if policy == "must_respond" else "auto_policy"
    assert set(dialogs["closed_by"].astype(str)) == {closed_by}
    assert int(dialogs["accepted"].sum()) == yes


async def test_three_hundred_frames_stay_within_the_snapshot_caps(
        sup: cdpnb.Supervisor, site: ScenarioServer) -> None:
    await sup.navigate(site.url("/many?n=300&cross=1"), timeout=60)
    await settle(sup, lambda s: sum(f.is_oopif for f in s.frames.values()) == 300, timeout=60)
    snap = sup.snapshot()
    assert len(snap.frame_tree.children) == 30 and snap.frame_tree.truncated is True
    assert len(json.dumps(snap.to_dict())) < 20_000  # bounded, whatever the page holds
    assert len(sup.frame_tree(full=True).children) == 300
    assert len(sup.view().tree.value) < 20_000
    # A dialog in the 300th OOPIF is still seen and answered.
    last = sup.frame_tree(full=True).children[-1]
    await sup.evaluate("setTimeout(() => alert('deep in'), 0)", frame_id=last.frame_id)
    dialog = await sup.wait_for_dialog(timeout=5)
    assert dialog.frame_id == last.frame_id
    await sup.respond("accept", dialog_id=dialog.id)


async def test_a_thousand_prompts_leave_no_growth(chromium: cdpnb.Backend,
                                                  site: ScenarioServer) -> None:
    async with await cdpnb.Supervisor.start(chromium, policy="auto_accept") as sup:
        await sup.navigate(site.url("/blank"))
        run = ("(() => { let n = 0; for (let i = 0; i < {n}; i++) "
               "if (prompt('p' + i, 'v') === 'v') n++; return n })()")

        async def engine_tasks() -> int:
            return len(asyncio.all_tasks())

        assert await sup.evaluate(run.replace("{n}", "200"), timeout=60) == 200  # warm-up
        gc.collect()
        rss_before = psutil.Process().memory_info().rss
        tasks_before = await engine.run(engine_tasks())
        assert await sup.evaluate(run.replace("{n}", "1000"), timeout=120) == 1000
        gc.collect()
        rss_after = psutil.Process().memory_info().rss
        tasks_after = await engine.run(engine_tasks())
        assert tasks_after <= tasks_before
        assert rss_after - rss_before < 20 * 2**20, (rss_before, rss_after)
        stats = sup.stats()
        assert stats["in_flight"] == 0
        assert sup.state.dialogs_closed_total == 1200
        assert len(sup.state.recent_dialogs) == 20
