"""The live widgets against real Chromium: what they show, and what their buttons do."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

import cdpnb
from cdpnb.notebook import SupervisorView
from cdpnb.probes import ProbeResult, ScenarioServer
from tests.conftest import js, open_two_site, settle

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = "<img src=x onerror=\"window.pwned=1\"><script>window.pwned=2</script>"

pytestmark = pytest.mark.browser


async def _redrawn(view: SupervisorView, predicate: object, timeout: float = 20.0) -> None:
    """Wait for the view's own refresh timer (not a manual refresh) to show something."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():  # type: ignore[operator]
        assert loop.time() < deadline, f"the view did not redraw in {timeout} s: {view!r}"
        await asyncio.sleep(0.02)


async def test_frame_tree_shows_oopif_boundaries_and_session_ids(
        sup: cdpnb.Supervisor, site: ScenarioServer) -> None:
    view = sup.view(refresh_s=0.05)
    frames = await open_two_site(sup, site)
    child = site.url("/child", site="b")
    await _redrawn(view, lambda: len(view.tree_nodes) == 3 and child in view.tree.value)
    by_id = {n.frame_id: n for n in view.tree_nodes}
    assert set(by_id) == set(frames.values())
    oopif = by_id[frames["oopif"]]
    assert oopif.is_oopif and oopif.session_id and oopif.depth == 1
    assert not by_id[frames["srcdoc"]].is_oopif and by_id[frames["srcdoc"]].session_id is None
    assert "OOPIF" in view.tree.value and oopif.session_id[:11] in view.tree.value
    assert "connected" in view.header.value
    view.close()


async def test_accept_button_answers_a_prompt_in_an_oopif(
        sup: cdpnb.Supervisor, site: ScenarioServer) -> None:
    frames = await open_two_site(sup, site)
    view = sup.view(refresh_s=0.05)
    await sup.evaluate("setTimeout(() => { window.answer = prompt('Your name?', 'anon') }, 0)",
                       frame_id=frames["oopif"])
    await _redrawn(view, lambda: len(view.rows) == 1)
    row = next(iter(view.rows.values()))
    assert row.dialog.frame_id == frames["oopif"]
    assert row.answer.value == "anon" and "OOPIF" in row.label.value
    row.answer.value = "Ada Lovelace"
    row.accept.click()  # what a user's click does: the handler runs on this thread
    assert row.accept.disabled
    await _redrawn(view, lambda: row.outcome is not None)
    assert row.outcome.closed_by == "agent" and row.outcome.prompt_text == "Ada Lovelace"
    assert "closed by agent" in row.status.value
    assert await sup.evaluate("window.answer", frame_id=frames["oopif"]) == "Ada Lovelace"
    await _redrawn(view, lambda: view.rows == {} and "Ada Lovelace" in view.recent.value)
    view.close()


async def test_dismiss_button_and_a_button_for_a_dialog_already_gone(
        sup: cdpnb.Supervisor, site: ScenarioServer) -> None:
    await sup.navigate(site.url("/blank"))
    view = sup.view(refresh_s=0.05)
    await sup.evaluate("setTimeout(() => { window.ok = confirm('Proceed?') }, 0)")
    await _redrawn(view, lambda: len(view.rows) == 1)
    row = next(iter(view.rows.values()))
    assert row.answer not in row.widget.children[1].children  # no text box for confirm
    row.dismiss.click()
    await _redrawn(view, lambda: row.outcome is not None)
    assert await sup.evaluate("window.ok") is False

    # A second row answered elsewhere first: clicking it reports why, buttons come back.
    await sup.evaluate("setTimeout(() => { window.ok = confirm('Again?') }, 0)")
    await _redrawn(view, lambda: len(view.rows) == 1 and row.dialog.id not in view.rows)
    stale = next(iter(view.rows.values()))
    await sup.respond("accept", dialog_id=stale.dialog.id)
    stale.accept.click()
    await _redrawn(view, lambda: stale.outcome is not None)
    assert isinstance(stale.outcome, cdpnb.DialogError)
    assert "UnknownDialog" in stale.status.value or "no longer open" in stale.status.value
    assert not stale.accept.disabled
    view.close()


async def test_page_text_is_escaped_everywhere_the_view_shows_it(
        sup: cdpnb.Supervisor, site: ScenarioServer) -> None:
    await sup.navigate(site.url("/blank"))
    view = sup.view(refresh_s=0.05)
    hostile = js(HOSTILE)
    await sup.evaluate(f"setTimeout(() => {{ console.error({hostile}); alert({hostile}) }}, 0)")
    await _redrawn(view, lambda: len(view.rows) == 1 and "pwned" in view.console.value)
    row = next(iter(view.rows.values()))
    for html in (row.label.value, view.console.value):
        assert "<img" not in html and "<script" not in html
        assert "&lt;img src=x onerror=&quot;window.pwned=1&quot;&gt;" in html
    static = view._repr_mimebundle_()["text/html"]  # what an exported notebook shows
    assert "<img" not in static and "<script" not in static
    assert static.count("&lt;img src=x onerror=&quot;window.pwned=1&quot;&gt;") >= 2
    row.accept.click()
    await _redrawn(view, lambda: "pwned" in view.recent.value)
    assert "<img" not in view.recent.value and "&lt;script&gt;" in view.recent.value
    assert await sup.evaluate("window.pwned") is cdpnb.Undefined
    view.close()


async def test_redraws_are_throttled_and_run_on_the_viewing_thread(
        sup: cdpnb.Supervisor, site: ScenarioServer) -> None:
    await sup.navigate(site.url("/blank"))
    view = sup.view(refresh_s=0.3)
    threads: set[int] = set()
    redraw = view.refresh

    def spy() -> bool:
        threads.add(threading.get_ident())
        return redraw()

    view.refresh = spy  # type: ignore[method-assign]
    before = view.redraws
    # 40 console errors, each its own message and state change, inside ~one period.
    await sup.evaluate("for (let i = 0; i < 40; i++) setTimeout(() => console.error('e' + i), i)")
    await settle(sup, lambda s: s.console_errors_total >= 40)
    await _redrawn(view, lambda: "e39" in view.console.value)
    assert view.redraws - before <= 3, "redraws must be throttled to one per refresh_s"
    assert threads == {threading.get_ident()}
    view.close()
    assert not view.live


async def test_view_stops_redrawing_after_the_supervisor_stops(chromium: cdpnb.Backend) -> None:
    sup = await cdpnb.Supervisor.start(chromium.cdp_url)
    view = sup.view(refresh_s=0.05)
    assert view.live
    await sup.stop()
    await _redrawn(view, lambda: not view.live)
    assert "stopped" in view.header.value
    assert "stopped" in repr(view) or "live=False" in repr(view)


def test_probe_view_cell_shows_its_checks() -> None:
    result = ProbeResult.from_json((ROOT / "datasets/probes/probe.json").read_text())
    view = result.view()
    assert set(view.cells) == {(b, c) for b in result.backends for c in view.matrix.index}
    playwright = view.cells[("chromium+playwright", "dialogs cross-site")]
    assert playwright.description == "~" and playwright.button_style == "warning"
    assert view.cells[("chromium", "dialogs cross-site")].description == "✓"
    assert view.cells[("node", "dialogs cross-site")].button_style == "danger"
    playwright.click()
    assert view.selected == ("chromium+playwright", "dialogs cross-site")
    for kind in ("alert", "confirm", "prompt"):
        assert f"dialog.{kind}.cross_site" in view.detail.value
    assert "closed by remote" in view.detail.value
    assert "chromium+playwright.native.jsonl.gz" in view.detail.value
    with pytest.raises(KeyError, match="no cell"):
        view.select("safari", "dialogs cross-site")
    # Capabilities are rows, backends columns (each as wide as its widest mark: none
    # cut; tests/test_probe_display.py looks at it in a browser).
    columns = view.grid.layout.grid_template_columns
    assert f"repeat({len(result.backends)}, max-content)" in columns
    assert len(view.grid.children) == (len(result.backends) + 1) * (len(view.matrix.index) + 1)
    bundle = view._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    static = bundle["text/html"]
    assert static.index(">dialogs main<") < static.index(">dialogs cross-site<")
    assert "dialog.alert.cross_site" in static  # the chosen cell's checks, too


def test_trace_view_timeline_per_session_and_dialog_plot() -> None:
    trace = cdpnb.Trace.load(ROOT / "datasets/probes/chromium.native.jsonl.gz")
    view = trace.view()
    dialogs = trace.dialogs()
    assert (view.timeline["event"] == "dialog_opened").sum() == len(dialogs)
    assert (view.timeline["event"] == "dialog_closed").sum() == dialogs["closed_at"].notna().sum()
    assert view.plot.value[:8] == b"\x89PNG\r\n\x1a\n" and len(view.plot.value) > 5000
    # made at 192 dpi, shown at half its pixel width: crisp on a retina screen
    width = int.from_bytes(view.plot.value[16:20], "big")
    assert width > 1200 and view.plot.layout.width == f"{round(width / 2)}px"
    # an OOPIF swap is not a removal
    events = set(view.timeline["event"].astype(str))
    assert {"swapped", "detached", "oopif_attached"} <= events
    static = view._repr_mimebundle_()["text/html"]
    assert '<img src="data:image/png;base64,' in static and "swapped" in static
    page = str(dialogs["session_id"].iloc[0])
    view.select(page)
    assert len(view.shown) < len(view.timeline)
    assert set(view.shown["session_id"].astype(str)) == {page}
    assert f"{len(view.shown)}" in view.sessions.label
    view.select(None)
    assert len(view.shown) == len(view.timeline)
    with pytest.raises(ValueError, match="session_id 'nope' is not in this trace"):
        view.select("nope")
