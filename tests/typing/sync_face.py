"""Checked by mypy --strict in tests/test_faces.py: the blocking face has real types."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, assert_type

import pandas as pd

import cdpnb
import cdpnb.sync
from cdpnb.campaign import CampaignResult, RunSummary
from cdpnb.state import BrowserState


def blocking_face(url: str) -> None:
    sup = cdpnb.sync.Supervisor.start(url, policy="auto_accept", bridge=True,
                                      record="run.jsonl.gz", redact=True)
    assert_type(sup, cdpnb.sync.Supervisor)
    assert_type(sup.aio, cdpnb.Supervisor)
    assert_type(sup.evaluate("1 + 1", timeout=2.0), Any)
    assert_type(sup.navigate("about:blank"), cdpnb.NavigateResult)
    assert_type(sup.evaluate("(x) => x * 2", 21, frame_id="F"), Any)
    assert_type(sup.wait_for_dialog(timeout=5), cdpnb.PendingDialog)
    assert_type(sup.respond("accept", prompt_text="x"), cdpnb.DialogRecord)
    assert_type(sup.wait_for(lambda s: bool(s.frames), timeout=1.0), BrowserState)
    assert_type(sup.annotate("experiment.phase", {"n": 1}), None)
    assert_type(sup.accessibility(), pd.DataFrame)
    assert_type(sup.snapshot(), cdpnb.Snapshot)
    assert_type(sup.state, BrowserState)
    assert_type(sup.alive, bool)
    assert_type(sup.page_session_id, str | None)
    assert_type(sup.hints, list[str])
    assert_type(sup.unsupported, dict[str, str])
    assert_type(sup.navigate("about:blank", frame_id="F"), cdpnb.NavigateResult)
    assert_type(sup.click("#go", frame_id="F", timeout=5), cdpnb.ClickResult)
    assert_type(sup.click(ref="button:Go").dialog_id, str | None)
    assert_type(sup.close_page("T", run_beforeunload=True), cdpnb.ClosePageResult)
    assert_type(sup.set_content("<p>hi</p>"), cdpnb.SetContentResult)
    assert_type(sup.reload(), cdpnb.NavigateResult)
    assert_type(sup.fill("#name", "Ada", frame_id="F"), None)
    assert_type(sup.wait_for_selector("#go", state="attached", timeout=5), None)
    assert_type(sup.screenshot("F", path="shot.png"), bytes)
    assert_type(sup.wait_for_event("dialog", lambda ev: ev.type == "prompt"),
                cdpnb.SupervisorEvent)
    assert_type(sup.url, str | None)
    assert_type(sup.endpoint, str)

    def answer(ev: cdpnb.SupervisorEvent) -> None:
        assert_type(ev.accept("x").result(5), cdpnb.DialogRecord)
        assert_type((ev.type, ev.message, ev.default_value), tuple[str | None, str | None,
                                                                   str | None])

    assert_type(sup.on("dialog", answer), Callable[[cdpnb.SupervisorEvent], object])
    assert_type(sup.off("dialog"), int)
    for ev in sup.events("framenavigated", timeout=1.0):
        assert_type(ev, cdpnb.SupervisorEvent)
    with sup as same:
        assert_type(same, cdpnb.sync.Supervisor)
    got = cdpnb.sync.registry.get("task")
    assert_type(got, cdpnb.sync.Supervisor | None)
    assert_type(cdpnb.sync.registry.get_or_start("task", url), cdpnb.sync.Supervisor)
    assert_type(cdpnb.sync.registry.get_or_start("task", url, page="first", bridge=True),
                cdpnb.sync.Supervisor)
    assert_type(cdpnb.sync.registry.task_ids(), list[str])
    assert_type(cdpnb.sync.registry.stop_all(), int)


def module_face() -> None:
    backend = cdpnb.sync.launch("headless-shell", timeout=10.0)
    assert_type(backend, cdpnb.Backend)
    backend.close()
    assert_type(cdpnb.sync.probe(["replay:x.jsonl"], repeat=1), cdpnb.ProbeResult)
    with cdpnb.sync.replay("x.jsonl", speed=None) as replayed:
        assert_type(replayed.cdp_url, str)
    # a campaign blocks in both faces: the same callable namespace
    result = cdpnb.sync.campaign(["chromium"], ["dialog.*.main"], 3, out="c", retries=1)
    assert_type(result, CampaignResult)
    assert_type(cdpnb.campaign.load("c"), pd.DataFrame)
    assert_type(cdpnb.campaign.CampaignResult("c").summary(), pd.DataFrame)
    assert_type(cdpnb.campaign(["node"], client="tcp://127.0.0.1:8786").run,
                RunSummary | None)


async def async_face() -> None:
    backend = await cdpnb.launch("chromium")
    assert_type(backend, cdpnb.Backend)
    await backend.aclose()
    async with cdpnb.launch("chromium") as other:
        assert_type(other, cdpnb.Backend)
    # Supervisor.start: awaited, or entered (issue 39), the Supervisor either way
    sup = await cdpnb.Supervisor.start(other)
    assert_type(sup, cdpnb.Supervisor)
    async with cdpnb.Supervisor.start(other, policy="auto_accept") as entered:
        assert_type(entered, cdpnb.Supervisor)
