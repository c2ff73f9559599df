"""The real-browser smoke that the legs on the other Pythons run beside their tests
without browsers (``scripts/test-pythons.sh``, run by ``.ci/run``): a launch, a prompt
in a cross-site out-of-process iframe answered, a trace recorded and loaded, through
both faces (async, and the blocking ``cdpnb.sync`` driven by hand on its thread).
The default Python runs them with the rest of the suite."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import cdpnb
import cdpnb.sync
from cdpnb.probes import ScenarioServer

pytestmark = [pytest.mark.browser, pytest.mark.smoke]

PROMPT = "setTimeout(() => { window.__got = prompt('name?', 'default'); }, 0); 0"


def _check_trace(path: Path, answered: str) -> None:
    trace = cdpnb.Trace.load(path)
    assert trace.complete
    dialogs = trace.dialogs()
    assert dialogs["type"].astype(str).tolist() == ["prompt"]
    assert dialogs["closed_by"].astype(str).tolist() == ["agent"]
    final = trace.final_state()
    assert final.pending_dialogs == ()
    assert [d.prompt_text for d in final.recent_dialogs] == [answered]
    frames = trace.frames()
    oopifs = frames[frames["event"] == "oopif_attached"]
    assert len(oopifs) >= 1 and oopifs["is_oopif"].all()
    # the prompt's frame is the OOPIF the trace saw attached
    assert set(dialogs["frame_id"].astype(str)) <= set(oopifs["frame_id"].astype(str))


async def test_async_face_answers_an_oopif_prompt_and_records_it(
        site: ScenarioServer, tmp_path: Path) -> None:
    path = tmp_path / "async.jsonl.zst"
    async with cdpnb.launch("headless-shell") as backend:
        sup = await cdpnb.Supervisor.start(backend, record=path)
        await sup.navigate(site.url("/two-site"))
        await sup.wait_for(lambda s: any(f.is_oopif for f in s.frames.values()), timeout=30)
        oopif = next(f for f in sup.snapshot().frame_tree.children if f.is_oopif)
        await sup.evaluate(PROMPT, frame_id=oopif.frame_id)
        dialog = await sup.wait_for_dialog(timeout=30)
        assert (dialog.type, dialog.frame_id, dialog.default_prompt) == (
            "prompt", oopif.frame_id, "default")
        record = await sup.respond("accept", prompt_text="Ada", dialog_id=dialog.id)
        assert record.closed_by == "agent"
        assert await sup.evaluate("window.__got", frame_id=oopif.frame_id) == "Ada"
        await sup.stop()
        assert backend.running  # the browser outlives its supervisor
    _check_trace(path, "Ada")


def test_blocking_face_answers_an_oopif_prompt_and_records_it(
        site: ScenarioServer, tmp_path: Path) -> None:
    path = tmp_path / "sync.jsonl.gz"
    with cdpnb.sync.launch("chromium") as backend, \
            cdpnb.sync.Supervisor.start(backend, record=path) as sup:
        sup.navigate(site.url("/two-site"))
        sup.wait_for(lambda s: any(f.is_oopif for f in s.frames.values()), timeout=30)
        oopif = next(f for f in sup.snapshot().frame_tree.children if f.is_oopif)
        sup.evaluate(PROMPT, frame_id=oopif.frame_id)
        dialog = sup.wait_for_dialog(timeout=30)
        assert dialog.frame_id == oopif.frame_id
        assert sup.respond("accept", prompt_text="Grace", dialog_id=dialog.id).closed_by == (
            "agent")
        assert sup.evaluate("window.__got", frame_id=oopif.frame_id) == "Grace"
    _check_trace(path, "Grace")


def test_blocking_face_inside_a_running_loop(site: ScenarioServer) -> None:
    """A script that calls the blocking face from a coroutine (a loop is running on this
    thread): it must not refuse, unlike Playwright's sync API."""
    async def main() -> object:
        with cdpnb.sync.launch("headless-shell") as backend, \
                cdpnb.sync.Supervisor.start(backend) as sup:
            sup.navigate(site.url("/blank"))
            return sup.evaluate("6 * 7")

    assert asyncio.run(main()) == 42

