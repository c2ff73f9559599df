"""The frame tree stitched across OOPIF sessions, caps, and frame-routed commands."""

from __future__ import annotations

import itertools

import pytest
from conftest import open_two_site, settle

import cdpnb
from cdpnb.probes import ScenarioServer


async def test_two_site_tree_has_srcdoc_in_process_and_the_oopif_stitched_in(
    sup: cdpnb.Supervisor, site: ScenarioServer
) -> None:
    ids = await open_two_site(sup, site)
    snap = sup.snapshot()
    tree = snap.frame_tree
    assert tree.top is not None
    assert tree.top.frame_id == ids["main"] == sup.page_target_id
    assert tree.top.url == site.url("/two-site")
    assert tree.top.origin == site.site_a
    assert not tree.truncated
    by_id = {c.frame_id: c for c in tree.children}
    srcdoc, oopif = by_id[ids["srcdoc"]], by_id[ids["oopif"]]
    assert (srcdoc.url, srcdoc.is_oopif, srcdoc.parent_frame_id) == ("about:srcdoc", False,
                                                                     ids["main"])
    assert srcdoc.origin == site.site_a  # srcdoc runs with its parent's origin
    assert srcdoc.session_id is None
    assert oopif.is_oopif
    assert oopif.url == site.url("/child", "b")
    assert oopif.origin == site.site_b
    assert oopif.parent_frame_id == ids["main"]
    assert oopif.session_id is not None and oopif.session_id != sup.page_session_id
    # The JSON layout of the snapshot (docs/architecture.md).
    data = snap.to_dict()
    assert set(data) >= {"pending_dialogs", "recent_dialogs", "frame_tree", "console_errors",
                         "connected", "page_target_id"}
    assert data["connected"] is True
    assert {c["frame_id"] for c in data["frame_tree"]["children"]} == {ids["srcdoc"],
                                                                       ids["oopif"]}


async def test_cdp_routes_to_the_oopif_session_and_evaluate_reaches_every_frame(
    sup: cdpnb.Supervisor, site: ScenarioServer
) -> None:
    ids = await open_two_site(sup, site)
    reply = await sup.cdp("Runtime.evaluate", {"expression": "location.href"},
                          frame_id=ids["oopif"])
    assert reply["result"]["value"] == site.url("/child", "b")
    main = await sup.cdp("Runtime.evaluate", {"expression": "location.href"},
                         frame_id=ids["main"])
    assert main["result"]["value"] == site.url("/two-site")
    assert await sup.evaluate("document.querySelector('p').textContent",
                              frame_id=ids["srcdoc"]) == "in-process srcdoc frame"
    assert await sup.evaluate("document.title", frame_id=ids["oopif"]) == "child"
    assert await sup.evaluate("document.title") == "two sites"


async def test_routing_errors_say_what_to_do(sup: cdpnb.Supervisor, site: ScenarioServer) -> None:
    ids = await open_two_site(sup, site)
    with pytest.raises(cdpnb.FrameNotRoutable, match="contentWindow"):
        await sup.cdp("Runtime.evaluate", {"expression": "1"}, frame_id=ids["srcdoc"])
    with pytest.raises(cdpnb.UnknownFrame, match="'NO-SUCH-FRAME'"):
        await sup.cdp("Runtime.evaluate", {"expression": "1"}, frame_id="NO-SUCH-FRAME")
    with pytest.raises(cdpnb.UnknownFrame, match="'NOPE'"):
        await sup.evaluate("1", frame_id="NOPE")
    with pytest.raises(cdpnb.CDPError) as info:
        await sup.cdp("No.suchMethod", frame_id=ids["oopif"])
    assert info.value.code == -32601 and info.value.method == "No.suchMethod"
    with pytest.raises(ValueError, match="Domain.command"):
        await sup.cdp("nodot")
    with pytest.raises(TypeError, match="params for Runtime.evaluate must be a dict"):
        await sup.cdp("Runtime.evaluate", ["1"])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at most one of"):
        await sup.cdp("Browser.getVersion", frame_id=ids["main"], browser=True)
    version = await sup.cdp("Browser.getVersion", browser=True)
    assert "Chrome" in version["product"]


async def test_evaluate_values_and_errors(sup: cdpnb.Supervisor, site: ScenarioServer) -> None:
    await sup.navigate(site.url("/blank"))
    assert await sup.evaluate("({a: [1, 'two', null]})") == {"a": [1, "two", None]}
    assert await sup.evaluate("undefined") is cdpnb.Undefined
    assert await sup.evaluate("Promise.resolve(41).then(x => x + 1)") == 42
    assert await sup.evaluate("-Infinity") == float("-inf")
    assert await sup.evaluate("2n ** 70n") == 2**70
    with pytest.raises(cdpnb.EvaluateError, match="boom") as info:
        await sup.evaluate("(function thrower() { throw new Error('boom') })()")
    assert "thrower" in (info.value.stack or "")
    with pytest.raises(TypeError, match="expression must be a str"):
        await sup.evaluate(42)  # type: ignore[arg-type]


async def test_oopif_navigation_and_removal_update_the_tree(
    sup: cdpnb.Supervisor, site: ScenarioServer
) -> None:
    ids = await open_two_site(sup, site)
    oopif = ids["oopif"]
    # Cross-site to another page on the same foreign site: stays an OOPIF, new url.
    await sup.evaluate(f"document.getElementById('oopif').src = '{site.url('/blank', 'b')}'")
    await settle(sup, lambda s: s.frames[oopif].url == site.url("/blank", "b"))
    assert sup.state.frames[oopif].is_oopif
    # Back to the parent's site: swapped back in-process, same frame id.
    await sup.evaluate(f"document.getElementById('oopif').src = '{site.url('/child')}'")
    await settle(sup, lambda s: oopif in s.frames and not s.frames[oopif].is_oopif
                 and s.frames[oopif].url == site.url("/child"))
    assert sup.state.frames[oopif].session_id == sup.page_session_id
    # (once parsed: beside two CPU-bound processes the commit was told before the title
    # was read, and document.title was still "")
    assert await sup.evaluate("new Promise(done => { const look = () => document.title ? "
                              "done(document.title) : setTimeout(look, 20); look(); })",
                              frame_id=oopif, timeout=15) == "child"
    with pytest.raises(cdpnb.FrameNotRoutable):
        await sup.cdp("Runtime.evaluate", {"expression": "1"}, frame_id=oopif)
    # Cross-site again, then removed from the DOM.
    await sup.evaluate(f"document.getElementById('oopif').src = '{site.url('/child', 'b')}'")
    await settle(sup, lambda s: s.frames.get(oopif) is not None and s.frames[oopif].is_oopif)
    await sup.evaluate("document.getElementById('oopif').remove()")
    await settle(sup, lambda s: oopif not in s.frames)
    assert all(s.type != "iframe" for s in sup.state.sessions.values())
    assert [c.frame_id for c in sup.snapshot().frame_tree.children] == [ids["srcdoc"]]


async def test_main_frame_navigation_prunes_old_children(
    sup: cdpnb.Supervisor, site: ScenarioServer
) -> None:
    await open_two_site(sup, site)
    await sup.navigate(site.url("/blank"))
    tree = sup.snapshot().frame_tree
    assert tree.top is not None and tree.top.url == site.url("/blank")
    assert tree.children == ()
    assert len(sup.state.frames) == 1


async def test_nested_cross_site_chain_is_capped_in_the_snapshot_but_full_on_request(
    sup: cdpnb.Supervisor, site: ScenarioServer
) -> None:
    await sup.navigate(site.url("/nest?depth=4"))
    await settle(sup, lambda s: any(f.url.endswith("/nest?depth=0") for f in s.frames.values()))
    full = sup.frame_tree(full=True)
    assert [c.depth for c in full.children] == [1, 2, 3, 4]
    assert all(c.is_oopif for c in full.children)  # every level alternates site
    assert [c.oopif_depth for c in full.children] == [1, 2, 3, 4]
    chain = [full.top, *list(full.children)]
    for parent, child in itertools.pairwise(chain):
        assert parent is not None and child.parent_frame_id == parent.frame_id
    # Each level is its own child session, attached through its parent's session.
    sessions = {s.session_id: s for s in sup.state.sessions.values() if s.type == "iframe"}
    assert len(sessions) == 4
    capped = sup.snapshot().frame_tree
    assert capped.truncated is True
    assert [c.oopif_depth for c in capped.children] == [1, 2]
    # Commands reach the deepest OOPIF through its own session.
    deepest = full.children[-1]
    assert await sup.evaluate("document.title", frame_id=deepest.frame_id) == "nest 0"


async def test_many_frames_are_capped_at_30_entries(sup: cdpnb.Supervisor,
                                                     site: ScenarioServer) -> None:
    await sup.navigate(site.url("/many?n=45"))
    await settle(sup, lambda s: len(s.frames) == 46)
    snap = sup.snapshot()
    assert len(snap.frame_tree.children) == 30
    assert snap.frame_tree.truncated is True
    assert len(sup.frame_tree(full=True).children) == 45


async def test_console_errors_from_main_frame_and_oopif(sup: cdpnb.Supervisor,
                                                        site: ScenarioServer) -> None:
    ids = await open_two_site(sup, site)
    await sup.evaluate("console.error('main says <b>no</b>'); console.log('not an error')")
    await sup.evaluate("setTimeout(() => { throw new Error('oopif threw') }, 0)",
                       frame_id=ids["oopif"])
    # (Chromium's own messages, kind "browser", may come too: its favicon.ico's 404.)
    await settle(sup, lambda s: len([e for e in s.console_errors if e.kind != "browser"]) == 2)
    errors = [e for e in sup.snapshot().console_errors if e.kind != "browser"]
    assert errors[0].kind == "console" and errors[0].text == "main says <b>no</b>"
    assert errors[1].kind == "exception" and "oopif threw" in errors[1].text
    assert errors[1].session_id == sup.state.frames[ids["oopif"]].session_id
