"""Accessibility snapshots across frames, stable refs, element evaluate and clicks by
ref: the ref rule as pure functions, the rest on real Chromium."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from conftest import settle
from hypothesis import given
from hypothesis import strategies as st

import cdpnb
import cdpnb.sync
from cdpnb import ElementNotClickable, StaleRef
from cdpnb.drivers.cdp.accessibility import FrameAX, order_rows
from cdpnb.drivers.cdp.driver import CDPDriver
from cdpnb.probes import ScenarioServer
from cdpnb.session.actions import quad_centre
from cdpnb.session.ref_names import MAX_REF_NAME, assign_refs, make_ref, parse_ref

# -- the ref rule (pure) -------------------------------------------------------------


def test_duplicates_are_numbered_in_document_order() -> None:
    keys = [("button", "Go"), ("link", "Go"), ("button", "Go"), None, ("button", "Go")]
    assert assign_refs(keys) == ["button:Go", "link:Go", "button:Go#2", None, "button:Go#3"]


def test_names_are_collapsed_and_cut() -> None:
    long = "word " * 40
    ref = assign_refs([("heading", "  two\n  lines "), ("heading", long)])
    assert ref[0] == "heading:two lines"
    assert ref[1] is not None and len(ref[1]) == len("heading:") + MAX_REF_NAME
    assert ref[1].endswith("…")


def test_a_name_that_looks_numbered_still_reads_back() -> None:
    assert make_ref("button", "Item #2", 1) == "button:Item #2#1"
    assert parse_ref("button:Item #2#1") == ("button", "Item #2", 1)
    assert parse_ref("button:Item #2") == ("button", "Item ", 2)


@given(st.lists(st.tuples(st.sampled_from(["button", "link", "StaticText"]),
                          st.text(alphabet="ab #1:", max_size=6)), max_size=30))
def test_every_ref_parses_back_to_its_key_and_count(keys: list[tuple[str, str]]) -> None:
    refs = assign_refs(keys)
    assert len(set(refs)) == len(refs)  # unique
    seen: dict[tuple[str, str], int] = {}
    for (role, name), ref in zip(keys, refs, strict=True):
        assert ref is not None
        short = " ".join(name.split())
        seen[(role, short)] = seen.get((role, short), 0) + 1
        assert parse_ref(ref) == (role, short, seen[(role, short)])


@pytest.mark.parametrize("bad", ["", "no-colon", ":name", "button:x#0"])
def test_malformed_refs_are_named(bad: str) -> None:
    with pytest.raises(ValueError, match="ref"):
        parse_ref(bad)


def _node(nid: str, role: str, name: str = "", *, kids: tuple[str, ...] = (),
          parent: str | None = None, backend: int | None = None,
          ignored: bool = False) -> dict[str, Any]:
    node: dict[str, Any] = {"nodeId": nid, "role": {"value": role}, "name": {"value": name},
                            "childIds": list(kids), "ignored": ignored}
    if parent:
        node["parentId"] = parent
    if backend is not None:
        node["backendDOMNodeId"] = backend
    return node


def test_a_child_frame_is_spliced_in_after_its_iframe_element() -> None:
    top = FrameAX("T", "S", [
        _node("1", "RootWebArea", "top", kids=("2", "3", "4"), backend=1),
        _node("2", "button", "Go", parent="1", backend=2),
        _node("3", "Iframe", parent="1", backend=3),
        _node("4", "button", "Go", parent="1", backend=4),
    ])
    child = FrameAX("C", "S2", [
        _node("1", "RootWebArea", "child", kids=("2", "9"), backend=1),
        _node("2", "button", "Go", parent="1", backend=7),
        _node("9", "InlineTextBox", "Go", parent="1", backend=8),
    ], parent_frame_id="T", owner_backend_id=3)
    rows = order_rows([child, top], "T")
    assert [(r.frame_id, r.ref) for r in rows] == [
        ("T", "RootWebArea:top"), ("T", "button:Go"), ("T", "Iframe:"),
        ("C", "RootWebArea:child"), ("C", "button:Go#2"),  # InlineTextBox left out
        ("T", "button:Go#3")]
    assert [r.depth for r in rows] == [0, 1, 1, 2, 3, 1]
    # Filtering a frame keeps the refs it has in the whole page.
    assert [r.ref for r in rows if r.frame_id == "C"] == ["RootWebArea:child", "button:Go#2"]


def test_an_ambiguous_dom_mapping_is_left_empty() -> None:
    frame = FrameAX("T", None, [
        _node("1", "RootWebArea", kids=("2", "3"), backend=1),
        _node("2", "StaticText", "a", parent="1", backend=5),
        _node("3", "StaticText", "b", parent="1", backend=5),
        _node("4", "generic", parent="1", ignored=True),
    ])
    rows = order_rows([frame], "T")
    assert [r.backend_dom_node_id for r in rows] == [1, None, None, None]
    assert rows[-1].ref is None  # ignored rows have no ref


def test_quad_centre_skips_empty_boxes() -> None:
    assert quad_centre([[0, 0, 0, 0, 0, 0, 0, 0], [10, 10, 30, 10, 30, 20, 10, 20]]) == (20, 15)
    assert quad_centre([[1, 2, 3]]) is None


# -- real Chromium ---------------------------------------------------------------------

BUTTONS = """<!doctype html><title>buttons</title><body>
<h1>Buttons</h1>
<button id=go onclick="window.clicked = (window.clicked || 0) + 1">Go</button>
<button id=go2 onclick="window.second = true">Go</button>
<button onclick="window.r = confirm('sure?')">Ask</button>
<div style="display:none"><button id=hidden>Hidden</button></div>
<a href="{A}/blank">Leave</a>
<iframe id=child src="{B}/ax-child"></iframe>
</body>"""

CHILD = """<!doctype html><title>ax child</title><body>
<p>inside the OOPIF</p>
<button onclick="window.clicked = (window.clicked || 0) + 1">Go</button>
<input aria-label="Your name" value="">
</body>"""



@pytest.fixture
async def page(sup: cdpnb.Supervisor, site: ScenarioServer) -> AsyncIterator[dict[str, str]]:
    site.add("/ax-child", CHILD)
    await sup.navigate(site.add("/buttons", BUTTONS))
    await settle(sup, lambda s: any(f.is_oopif and f.url.endswith("/ax-child")
                                    for f in s.frames.values()))
    tree = sup.frame_tree()
    assert tree.top is not None
    oopif = next(c for c in tree.children if c.is_oopif)
    yield {"main": tree.top.frame_id, "oopif": oopif.frame_id}


@pytest.mark.browser
async def test_rows_for_every_frame_with_refs(sup: cdpnb.Supervisor,
                                              page: dict[str, str]) -> None:
    ax = await sup.accessibility()
    assert list(ax.columns[:5]) == ["ref", "role", "name", "frame_id", "backend_dom_node_id"]
    assert str(ax["backend_dom_node_id"].dtype) == "Int64"
    named = ax.dropna(subset=["ref"])
    main = named[named["frame_id"] == page["main"]]
    oopif = named[named["frame_id"] == page["oopif"]]
    assert {"button:Go", "button:Go#2", "button:Ask", "link:Leave",
            "heading:Buttons"} <= set(main["ref"])
    # The OOPIF's rows come through its own session, spliced in after its iframe,
    # so its Go button is the third on the page.
    assert {"button:Go#3", "textbox:Your name", "StaticText:inside the OOPIF"} <= set(
        oopif["ref"])
    assert (oopif["session_id"] != main["session_id"].iloc[0]).all()
    refs = list(named["ref"])
    assert refs.index("Iframe:") < refs.index("button:Go#3") < refs.index("link:Leave") or \
        refs.index("link:Leave") < refs.index("Iframe:") < refs.index("button:Go#3")
    assert named["ref"].is_unique
    # Hidden elements are not in the accessibility tree; ambiguous ids stay empty.
    assert "button:Hidden" not in set(named["ref"])
    # Same page, same refs.
    again = await sup.accessibility()
    assert list(again.dropna(subset=["ref"])["ref"]) == refs
    # A frame filter keeps the refs of the whole page.
    only = await sup.accessibility(frame_id=page["oopif"])
    assert set(only.dropna(subset=["ref"])["ref"]) == set(oopif["ref"])
    assert sup.stats()["accessibility-snapshots"] == 3


@pytest.mark.browser
async def test_evaluate_on_a_ref_in_the_page_and_in_the_oopif(
        sup: cdpnb.Supervisor, page: dict[str, str]) -> None:
    await sup.accessibility()
    assert await sup.evaluate_on("button:Go", "function (el) { return el.id }") == "go"
    assert await sup.evaluate_on("button:Go#2", "el => el.id") == "go2"
    # In the OOPIF, through its session; extra arguments follow the element.
    got = await sup.evaluate_on("textbox:Your name",
                                "function (el, value, n) { el.value = value.repeat(n); "
                                "return [el.value, location.host === document.domain + ':' "
                                "+ location.port] }", "ab", 2)
    assert got == ["abab", True]
    assert await sup.evaluate("document.querySelector('input').value",
                              frame_id=page["oopif"]) == "abab"
    with pytest.raises(cdpnb.EvaluateError, match="boom"):
        await sup.evaluate_on("button:Go", "el => { throw new Error('boom') }")
    # A ref not taken yet is looked up on the page as it is now.
    driver = sup._driver
    assert isinstance(driver, CDPDriver)
    driver.refs.forget()
    assert await sup.evaluate_on("link:Leave", "el => el.tagName") == "A"
    # One spelling per ref; a trailing line comment in the function is harmless.
    assert await sup.evaluate_on("button:Go#1", "el => el.id // the first Go") == "go"


@pytest.mark.browser
async def test_click_by_ref_in_the_page_and_in_the_oopif(
        sup: cdpnb.Supervisor, page: dict[str, str]) -> None:
    await sup.accessibility()
    done = await sup.click(ref="button:Go")
    assert done.ref == "button:Go" and done.dialog_id is None
    await sup.click(ref="button:Go")
    assert await sup.evaluate("window.clicked") == 2
    assert await sup.evaluate("window.second ?? false") is False
    await sup.click(ref="button:Go#3")
    assert await sup.evaluate("window.clicked", frame_id=page["oopif"]) == 1
    assert await sup.evaluate("window.clicked") == 2
    assert sup.stats()["clicks"] == 3


@pytest.mark.browser
async def test_a_click_that_opens_a_dialog_returns_it(sup: cdpnb.Supervisor,
                                                      page: dict[str, str]) -> None:
    await sup.accessibility()
    done = await asyncio.wait_for(sup.click(ref="button:Ask", timeout=5), 5)
    assert done.dialog_id is not None
    record = await sup.respond("accept", dialog_id=done.dialog_id)
    assert record.type == "confirm" and record.message == "sure?"
    await settle(sup, lambda s: not s.pending_dialogs)
    assert await sup.evaluate("window.r") is True


@pytest.mark.browser
async def test_a_blocking_click_that_opens_a_dialog_returns_it_at_once(
        sup: cdpnb.Supervisor, page: dict[str, str]) -> None:
    """From a script's thread the click's mouse event is sent by a task of its own (its
    reply waits for the dialog), so it must wait on the loop, not block the thread:
    the click returns with the dialog, not after its time runs out."""
    blocking = cdpnb.sync.Supervisor.of(sup)

    def script() -> tuple[dict[str, Any], float]:
        blocking.accessibility()
        began = time.monotonic()
        done = blocking.click(ref="button:Ask", timeout=5)
        return done, time.monotonic() - began

    done, took = await asyncio.to_thread(script)
    assert done.dialog_id is not None and took < 2.5
    record = await sup.respond("accept", dialog_id=done.dialog_id)
    assert record.type == "confirm"


@pytest.mark.browser
async def test_a_click_is_the_user_gesture_beforeunload_needs(
        sup: cdpnb.Supervisor, site: ScenarioServer) -> None:
    site.add("/leave-asks", """<!doctype html><title>asks</title><body>
<button>Stay a while</button>
<script>addEventListener('beforeunload', e => { e.preventDefault(); e.returnValue = ''; });
</script></body>""")
    await sup.navigate(site.url("/leave-asks"))
    await sup.accessibility()
    await sup.click(ref="button:Stay a while")
    leaving = asyncio.ensure_future(sup.navigate(site.url("/blank"), timeout=10))
    dialog = await sup.wait_for_dialog(timeout=5)
    assert dialog.type == "beforeunload"
    await sup.respond("accept", dialog_id=dialog.id)
    await leaving
    assert await sup.evaluate("document.title") == "blank"


@pytest.mark.browser
async def test_a_ref_goes_stale_when_the_page_navigates(sup: cdpnb.Supervisor,
                                                        page: dict[str, str],
                                                        site: ScenarioServer) -> None:
    await sup.accessibility()
    await sup.navigate(site.url("/buttons"))  # the same page, new nodes
    with pytest.raises(StaleRef, match="button:Go") as caught:
        await sup.evaluate_on("button:Go", "el => el.id")
    assert caught.value.ref == "button:Go"
    with pytest.raises(StaleRef):
        await sup.click(ref="button:Go#3")  # its OOPIF was replaced too
    # A fresh snapshot gives working refs again.
    await sup.accessibility()
    assert await sup.evaluate_on("button:Go", "el => el.id") == "go"
    with pytest.raises(StaleRef, match="no element"):
        await sup.click(ref="button:Nothing like this")


@pytest.mark.browser
async def test_a_removed_element_is_stale_and_a_hidden_one_not_clickable(
        sup: cdpnb.Supervisor, page: dict[str, str]) -> None:
    await sup.accessibility()
    await sup.evaluate("document.getElementById('go2').remove()")
    with pytest.raises(StaleRef):
        await sup.evaluate_on("button:Go#2", "el => el.id")
    await sup.evaluate("document.getElementById('go').style.visibility = 'hidden'; "
                       "document.getElementById('go').style.width = '0px'")
    with pytest.raises((ElementNotClickable, StaleRef)):
        await sup.click(ref="button:Go", timeout=1)


@pytest.mark.browser
async def test_a_hung_element_function_ends_within_its_budget(
        sup: cdpnb.Supervisor, page: dict[str, str]) -> None:
    await sup.accessibility()
    with pytest.raises(cdpnb.EvaluateTimeout) as caught:
        await sup.evaluate_on("button:Go#3", "el => { while (true) {} }", timeout=0.8)
    assert caught.value.ended_by == "terminateExecution"
    assert await sup.evaluate_on("button:Go#3", "el => el.textContent") == "Go"
