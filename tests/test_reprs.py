"""Plain and HTML reprs: bounded in size, page-controlled text always escaped."""

from __future__ import annotations

import json
import pickle
import re
from pathlib import Path

import pytest

import cdpnb
from cdpnb.probes import ProbeResult, ScenarioServer
from cdpnb.probes.run import CheckResult
from cdpnb.protocol import Event
from cdpnb.render import table, text
from cdpnb.state import (
    BrowserState,
    ConnectionPhase,
    ConsoleEntry,
    DialogRecord,
    FrameInfo,
    PendingDialog,
    Snapshot,
    snapshot_of,
)
from cdpnb.trace.format import Record

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = '<img src=x onerror="alert(1)"></td></table><script>alert(2)</script>'
ESCAPED = "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;"
HUGE = "A" * 1_000_000 + HOSTILE


def _unsafe(html: str) -> list[str]:
    return [tag for tag in ("<img", "<script", 'onerror="') if tag in html]


def _pending(message: str = HOSTILE, i: int = 1) -> PendingDialog:
    return PendingDialog(id=f"d-{i}", type="prompt", message=message, default_prompt=HOSTILE,
                         frame_id=HOSTILE, url=f"http://a.test/{HOSTILE}", opened_at=1.7e9)


def _record(message: str = HOSTILE, i: int = 1) -> DialogRecord:
    return DialogRecord(id=f"d-{i}", type="prompt", message=message, frame_id="F",
                        opened_at=1.7e9, closed_at=1.7e9 + 0.25, closed_by="agent",
                        accepted=True, prompt_text=HOSTILE)


def _hostile_state(n: int = 200) -> BrowserState:
    frames = {"top": FrameInfo(frame_id="top", url=f"http://a.test/?q={HOSTILE}",
                               session_id="S")}
    frames.update({f"f{i}": FrameInfo(frame_id=f"f{i}", parent_frame_id="top",
                                      url=f"http://b.test/{HOSTILE}", session_id=f"S{i}",
                                      is_oopif=True) for i in range(n)})
    return BrowserState(
        connected=True, page_target_id="T", page_session_id="S", frames=frames,
        pending_dialogs=tuple(_pending(HUGE, i) for i in range(n)),
        recent_dialogs=tuple(_record(HUGE, i) for i in range(n)),
        console_errors=tuple(ConsoleEntry(kind="console", level="error", text=HUGE,
                                          url=HOSTILE, at=1.7e9) for _ in range(n)),
    )


@pytest.mark.parametrize("model", [_pending(), _record()], ids=["pending", "record"])
def test_dialog_reprs_escape_page_text(model: PendingDialog | DialogRecord) -> None:
    html = model._repr_html_()
    assert _unsafe(html) == [] and ESCAPED in html
    plain = repr(model)
    assert plain.startswith(f"<{type(model).__name__} d-1 prompt ")
    assert len(plain) < 200


def test_dialog_reprs_stay_small_for_a_megabyte_message() -> None:
    for model in (_pending(HUGE), _record(HUGE)):
        assert len(repr(model)) < 300
        assert len(model._repr_html_()) < 5_000
        assert str(model) == repr(model)


def test_snapshot_html_is_bounded_and_escaped() -> None:
    snap = snapshot_of(_hostile_state())
    assert isinstance(snap, Snapshot) and snap.frame_tree.truncated
    html = snap._repr_html_()
    assert _unsafe(html) == []
    assert ESCAPED in html
    assert len(html) < 120_000, len(html)  # 200 dialogs of 1 MB each, still a small page
    assert "… 180 more" in html and "truncated" in html
    assert "OOPIF" in html
    assert len(repr(snap)) < 200


def test_empty_snapshot_renders() -> None:
    html = snapshot_of(BrowserState())._repr_html_()
    assert "no frames yet" in html and "none" in html


def test_table_helper_escapes_headers_cells_and_titles() -> None:
    html = table([HOSTILE], [[HOSTILE]] * 3, max_rows=2)
    assert _unsafe(html) == []
    assert "… 1 more" in html
    assert text('"quoted"') == "&quot;quoted&quot;"


def _probe_result() -> ProbeResult:
    rows = [CheckResult(backend=f"ws://evil/{HOSTILE}", version=HOSTILE, check="dialog.alert.main",
                        capability="dialogs main", run=1, status="fail", detail=HOSTILE,
                        value=None, seconds=0.1)]
    return ProbeResult(rows, {f"ws://evil/{HOSTILE}": {"version": HOSTILE}})


def test_probe_result_html_escapes_endpoint_text() -> None:
    result = _probe_result()
    html = result._repr_html_()
    assert _unsafe(html) == [] and ESCAPED in html
    view = result.view()
    view.select(f"ws://evil/{HOSTILE}", "dialogs main")
    assert _unsafe(view.detail.value) == [] and ESCAPED in view.detail.value


def test_recorded_probe_html_shows_the_whole_matrix() -> None:
    result = ProbeResult.from_json((ROOT / "datasets/probes/probe.json").read_text())
    html = result._repr_html_()
    for backend in result.backends:
        assert text(backend) in html
    assert "as expected" in html
    assert len(html) < 55_000  # (14 backends × 22 capabilities)


def _trace(n: int, message: str = HOSTILE) -> cdpnb.Trace:
    opening = Event(wall=1.7e9 + 0.001, mono=1.0, method="Page.javascriptDialogOpening",
                    params={"message": message, "type": "alert", "url": HOSTILE,
                            "frameId": "F"}, session_id="S")
    records: list[Record] = [opening]
    records += [Event(wall=1.7e9 + i * 1e-3, mono=1.0 + i * 1e-3, method="Runtime.consoleAPICalled",
                      params={"type": "log", "args": []}, session_id="S") for i in range(n)]
    return cdpnb.Trace({"cdpnb_trace": 1, "backend": {"kind": HOSTILE}}, records)


def test_trace_html_escapes_and_shows_dialogs_when_small() -> None:
    html = _trace(10)._repr_html_()
    assert _unsafe(html) == [] and ESCAPED in html
    assert "1 opened, 1 still open" in html


def test_large_trace_html_is_a_summary() -> None:
    trace = _trace(30_000)
    html = trace._repr_html_()
    assert "large trace" in html and len(html) < 10_000
    assert _unsafe(html) == []
    assert len(repr(trace)) < 300


def test_recorded_trace_reprs() -> None:
    trace = cdpnb.Trace.load(ROOT / "datasets/probes/chromium.native.jsonl.gz")
    html = trace._repr_html_()
    assert "complete" in html and "the last 5 closed" in html
    assert json.loads(json.dumps(trace.summary()))["messages"] == len(trace)


# -- BrowserState: what a notebook cell ending in ``await sup.wait_for(...)`` shows ------------

def test_a_browser_states_repr_is_one_short_line_whatever_it_holds() -> None:
    state = _hostile_state().evolve(
        connection=ConnectionPhase(phase="lost", generation=3, reason="gone\n\x1b[2J" * 50),
        page_gone=f"closed\r\x1b]0;{HOSTILE}\x07" * 100)
    plain = repr(state)
    assert str(state) == plain and len(plain) < 450, len(plain)
    assert plain.startswith("<BrowserState cdp connection=lost reconnects=2 ")
    # control characters from the far end and the page: shown escaped, never raw
    assert not any(c in plain for c in "\n\r\x1b\x07") and "\\x1b" in plain
    # what a reader looks for: the page, its frames and OOPIFs, the open dialogs
    assert "page=T url='http://a.test/?q=<img" in plain
    assert "frames=201 (200 OOPIFs)" in plain
    assert "pending_dialogs=200 [prompt 'AAAA" in plain and "+197 more]" in plain
    assert plain.endswith("dialogs_closed=0 console_errors=0>")


def test_an_empty_browser_states_repr() -> None:
    assert repr(BrowserState()) == ("<BrowserState cdp connection=down pages=0 frames=0 "
                                    "pending_dialogs=0 dialogs_closed=0 console_errors=0>")


def test_a_browser_states_fields_equality_and_pickling_stay_pydantics() -> None:
    state = _hostile_state(3)
    again = pickle.loads(pickle.dumps(state))
    assert again == state and again is not state and repr(again) == repr(state)
    assert state.evolve(dialog_seq=1) != state
    assert set(state.model_dump()) == set(BrowserState.model_fields)
    assert BrowserState.model_validate(state.model_dump()) == state


def test_a_browser_states_html_is_its_snapshots_bounded_and_escaped() -> None:
    html = snapshot_of(_hostile_state())._repr_html_()
    assert html.count("<b>cdpnb snapshot</b>") == 1
    assert _unsafe(html) == [] and ESCAPED in html
    assert len(html) < 120_000 and "… 180 more" in html


async def test_the_state_a_wait_returns_reads_in_one_line(
        sup: cdpnb.Supervisor, site: ScenarioServer) -> None:
    """The notebook's cell: ``await sup.wait_for(...)`` on a page with an OOPIF, then a
    dialog open; its repr names the page, the frames and the dialog, in a few hundred
    characters (pydantic's ran to 2.5 KB)."""
    await sup.navigate(site.url("/two-site"))
    state = await sup.wait_for(lambda s: any(f.is_oopif for f in s.frames.values()),
                               timeout=20)
    plain = repr(state)
    assert len(plain) < 400 and "\n" not in plain, plain
    assert plain.startswith("<BrowserState cdp connection=up page=")
    assert f"url={site.url('/two-site')!r}" in plain
    assert re.search(r" pages=1 frames=3 \(1 OOPIF\) pending_dialogs=0 ", plain), plain
    await sup.evaluate("setTimeout(() => alert('hello\\nthere'), 0)")
    state = await sup.wait_for(lambda s: bool(s.pending_dialogs), timeout=20)
    assert "pending_dialogs=1 [alert 'hello\\nthere']" in repr(state), repr(state)
    assert "alert" in snapshot_of(state)._repr_html_()
    await sup.respond("dismiss")
