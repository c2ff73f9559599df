"""The supervisor over WebDriver BiDi on Chromium, through chromium-bidi (the BiDi
mapper Puppeteer uses): the same API as over Firefox, and what the mapper does not
report.

Measured (chromium-bidi 17.0.2 over Debian Chromium 156): prompts in the main frame,
a srcdoc frame and a cross-site frame arrive with their frame's context and are
answered in 2–10 ms; a prompt in a cross-site frame nested in another cross-site frame
is never reported (no ``userPromptOpened``), so only the dialog bridge reaches it,
when chromium-bidi pauses that frame's request at all (some of the time: see
``cdpnb/probes/expected.py``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

import cdpnb
from cdpnb.probes import ScenarioServer
from tests.test_firefox import REPORTING, open_probe_page, wait_report

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def mapper() -> Iterator[cdpnb.Backend]:
    with cdpnb.launch("chromium+bidi") as backend:
        yield backend


@pytest.fixture
async def sup(mapper: cdpnb.Backend, site: ScenarioServer) -> AsyncIterator[cdpnb.Supervisor]:
    site.requests.clear()
    supervisor = await cdpnb.Supervisor.start(mapper, dialog_timeout_s=30)
    yield supervisor
    await supervisor.stop()


async def test_prompts_in_main_srcdoc_and_cross_site_frames_are_answered(
        sup: cdpnb.Supervisor, site: ScenarioServer) -> None:
    assert sup.protocol == "bidi"
    # chromium-bidi swaps browserName and browserVersion: put back.
    assert sup.browser_version["product"].startswith("Chrome/156")
    frames = await open_probe_page(sup, site)
    for name in ("main", "srcdoc", "cross"):
        await sup.evaluate(REPORTING.format(call="prompt('q', 'd')", name=name),
                           frame_id=frames[name])
        dialog = await sup.wait_for_dialog(timeout=5)
        assert dialog.frame_id == frames[name]
        record = await sup.respond("accept", prompt_text=name)
        assert record.closed_by == "agent"
        assert await wait_report(site, name) == name


async def test_a_nested_cross_site_prompt_is_not_reported_and_bridged_when_the_call_is_paused(
        mapper: cdpnb.Backend, sup: cdpnb.Supervisor, site: ScenarioServer) -> None:
    frames = await open_probe_page(sup, site)
    await sup.evaluate(REPORTING.format(call="confirm('deep')", name="unseen"),
                       frame_id=frames["nested"])
    with pytest.raises(cdpnb.WaitTimeout):
        await sup.wait_for_dialog(timeout=1.5)
    assert "unseen" not in str(list(site.requests))  # still blocked in confirm()
    async with await cdpnb.Supervisor.start(mapper, bridge=True) as bridged:
        frames = await open_probe_page(bridged, site)
        await bridged.evaluate(REPORTING.format(call="confirm('deep')", name="bridged"),
                               frame_id=frames["nested"])
        try:
            dialog = await bridged.wait_for_dialog(timeout=5)
        except cdpnb.WaitTimeout:
            # Measured: chromium-bidi 17 pauses an out-of-process frame's request for the
            # intercept only some of the time (per frame: each call from a frame it
            # missed goes out too). Then the bridge's call fails, the script falls back
            # to the native confirm(), and that one is never reported either: the frame
            # stays blocked, as without the bridge. Nothing else may have happened.
            assert "bridged" not in str(list(site.requests))
            assert bridged.state.pending_dialogs == ()
            return
        assert (dialog.via, dialog.frame_id) == ("bridge", frames["nested"])
        await bridged.respond("accept")
        assert await wait_report(site, "bridged") is True
