"""One promise, every path: the same scenario on native CDP (chromium, headless-shell)
and on WebDriver BiDi (Firefox, chromium-bidi), one browser per path for the module.

Each test here runs on every path; a path where the engine cannot do it is an explicit
expectation with its reason, never a skip. (The start of the conformance matrix of the
dialog contract: more scenarios join as each path is made to keep them.)
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from pathlib import Path

import pytest

import cdpnb
from cdpnb.probes import ScenarioServer
from cdpnb.probes.checks import user_activation
from cdpnb.state import snapshot_of
from tests.conftest import settle

#: A page that turns every intrinsic the bridge script might touch after it was
#: installed into a spy: what any of them is handed goes to window.__seen (kept with a
#: push captured first). Object.prototype.toJSON was how a page read the bridge key
#: (JSON.stringify calls it on every object it serialises).
HOSTILE_PAGE = """<!doctype html><title>hostile</title><script>
(() => {
  const seen = [], push = Array.prototype.push, join = Array.prototype.join, text = String;
  const from = Array.from, keys = Object.keys, values = Object.values, apply = Reflect.apply;
  const word = a => { try { return typeof a === 'object' && a !== null
    ? apply(join, keys(a), [',']) + '=' + apply(join, values(a), [',']) : text(a); }
    catch (e) { return '?'; } };
  const keep = (where, args) => {
    try { apply(push, seen, [where + ':' + apply(join, from(args, word), ['|'])]); }
    catch (e) {} };
  Object.defineProperty(window, '__seen', {value: seen});
  Object.prototype.toJSON = function () { keep('toJSON', [this]); return this; };
  const stringify = JSON.stringify, parse = JSON.parse;
  JSON.stringify = function () { keep('stringify', arguments); return stringify(...arguments); };
  JSON.parse = function () { keep('parse', arguments); return parse(...arguments); };
  const XHR = XMLHttpRequest, proto = XHR.prototype;
  for (const name of ['open', 'send', 'setRequestHeader']) {
    const real = proto[name];
    proto[name] = function () {
      keep('xhr.' + name, arguments); return apply(real, this, arguments); };
  }
  window.XMLHttpRequest = function () { keep('new XHR', arguments); return new XHR(); };
  const realFetch = window.fetch;
  window.fetch = function () {
    keep('fetch', arguments); return apply(realFetch, this, arguments); };
  const call = Function.prototype.call, fnApply = Function.prototype.apply;
  Function.prototype.call = function () {
    keep('call', arguments); return apply(call, this, arguments); };
  Function.prototype.apply = function () {
    keep('apply', arguments); return apply(fnApply, this, arguments); };
  String.prototype.toString = function () { keep('String.toString', [this]); return text(this); };
  Array.prototype.join = function () { keep('join', [this]); return ''; };
  window.btoa = function () { keep('btoa', arguments); return ''; };
  window.encodeURIComponent = function () { keep('encodeURIComponent', arguments); return ''; };
})();
</script><p>hostile</p>"""


async def assert_the_bridge_key_stays_private(sup: cdpnb.Supervisor, site: ScenarioServer,
                                              key: str) -> None:
    """On a page that spies on every intrinsic after the bridge script was installed, a
    bridged prompt is answered, and nothing the page saw holds the bridge key."""
    url = site.add("/hostile", HOSTILE_PAGE)
    await sup.navigate(url)
    before = sup.state.dialog_seq
    await sup.evaluate("setTimeout(() => { window.__got = prompt('name?', 'd'); }, 0); 0")
    state = await sup.wait_for(lambda s: s.dialog_seq > before, 10)
    dialog = next(d for d in state.pending_dialogs if d.id == f"d-{before + 1}")
    assert (dialog.via, dialog.message, dialog.default_prompt) == ("bridge", "name?", "d")
    await sup.respond("accept", prompt_text="hunter2", dialog_id=dialog.id)
    got = await sup.evaluate("new Promise(done => { const look = () => window.__got === "
                             "undefined ? setTimeout(look, 20) : done(window.__got); look(); })",
                             timeout=10)
    assert got == "hunter2"
    seen = await sup.evaluate("Array.from(window.__seen)")
    assert isinstance(seen, list)
    assert not [s for s in seen if key in str(s)], seen
    # the spies do see what passes through them (the test would catch a leak)
    assert "toJSON:probe=1" in await sup.evaluate(
        "JSON.stringify({probe: 1}); Array.from(window.__seen)")
    # ... and its source does not show it either
    assert await sup.evaluate(f"String(window.prompt).includes({json.dumps(key)})") is False


async def assert_page_urls_stay_current(sup: cdpnb.Supervisor, site: ScenarioServer) -> None:
    """``sup.pages`` says where each page is now: the supervisor's own after a
    navigation and a same-document one, and a noopener popup once it loaded."""
    first, second = site.url("/blank"), site.url("/two-site")
    await sup.navigate(first)
    await sup.navigate(second)
    await settle(sup, lambda s: snapshot_of(s).pages[0].url == second, 10)
    await sup.evaluate("history.pushState({}, '', '#moved'); 0")
    await settle(sup, lambda s: snapshot_of(s).pages[0].url == second + "#moved", 10)
    popup_url = site.url("/child", "b")
    # (with a user gesture: Chromium's popup blocker stops a window.open without one)
    await sup.evaluate(f"window.open({json.dumps(popup_url)}, '_blank', 'noopener'); 0",
                       user_gesture=True)
    await settle(sup, lambda s: any(p.url == popup_url and not p.main
                                    for p in snapshot_of(s).pages), 15)
    assert sup.snapshot().to_dict()["pages"][0]["url"] == second + "#moved"


async def test_a_page_that_spies_on_every_intrinsic_never_sees_the_bridge_key(
        every_path: cdpnb.Backend, site: ScenarioServer) -> None:
    """A page that replaces JSON, Object/Array/String.prototype members, XMLHttpRequest,
    fetch and Function.prototype.call/apply after the bridge was installed (its
    Object.prototype.toJSON once read the key) gets its prompt answered and never the
    key."""
    async with await cdpnb.Supervisor.start(every_path, bridge=True, dialog_timeout_s=30) as sup:
        await assert_the_bridge_key_stays_private(sup, site, sup._bridge.key)


@pytest.mark.parametrize("bridge", [False, True], ids=["native", "bridge"])
async def test_the_pages_say_where_they_are_now_popups_included(
        every_path: cdpnb.Backend, site: ScenarioServer, bridge: bool) -> None:
    """With the bridge on too: a noopener popup paused for its set-up once never loaded
    (its bridge script's registration got no reply until it ran)."""
    async with await cdpnb.Supervisor.start(every_path, bridge=bridge,
                                            dialog_timeout_s=30) as sup:
        await assert_page_urls_stay_current(sup, site)


async def test_a_url_the_browser_cannot_load_is_a_navigation_error_that_names_it(
        every_path: cdpnb.Backend, site: ScenarioServer) -> None:
    async with await cdpnb.Supervisor.start(every_path, dialog_timeout_s=30) as sup:
        with pytest.raises(cdpnb.NavigationError, match="navigating to not a url failed: "):
            await sup.navigate("not a url")
        await sup.navigate(site.url("/blank"))  # the page is still usable
        assert await sup.evaluate("location.pathname") == "/blank"


#: A page whose cross-site frame, and the page itself, can ask a prompt and keep what it
#: returned in its origin's localStorage (written at once, read after the document went:
#: a beacon sent then did not leave Firefox).
ASKING = """<!doctype html><title>{title}</title><script>
window.ask = (name) => {{ const got = prompt('where to?', 'default');
  localStorage.setItem(name, JSON.stringify(got)); }};
</script>{body}"""

#: chromium-bidi 17 does not pause every other new cross-site frame's bridge call (no
#: ``beforeRequestSent`` comes for it), so the script falls back to the native prompt
#: there, which BiDi reports too (measured: frames 1 and 3 of 4 bridged, in turn).
BRIDGED_IN_CROSS_SITE_FRAME = {"chromium+bidi": ("bridge", "native")}

#: What a released call's document keeps (``"null"``: the call returned dismissed; None:
#: its document was gone before it returned). ``navigate()`` dismisses first, so the
#: page's own call returns before anything unloads. A cross-site frame going with its
#: page (the page navigating itself) races its release: the call's return against the
#: frame's unloading. Both outcomes were measured (Firefox and chromium-bidi within a
#: few quiet runs, headless-shell beside two CPU-bound processes), so either is
#: expected; what never happens is any other value (nobody answered it) or a native
#: prompt after it.
RELEASED_CALL_KEEPS: dict[str, set[str | None]] = {
    "page": {"null"}, "cross-site frame": {"null", None}}
#: Paths where the page's own call, released (null) as navigate() dismisses its bridged
#: prompt, races the navigation that follows: Firefox ESR 153 left the page before the
#: call wrote its result once in two full-suite runs (the write is the page's, after the
#: answer; nothing tells cdpnb when it is done). A race, measured, not a winner asserted.
RELEASED_CALL_RACES_THE_NAVIGATION = {"firefox"}


@pytest.mark.parametrize("where", ["page", "cross-site frame"])
async def test_a_navigation_over_a_bridged_dialog_ends_it_and_the_page_moves_on(
        every_path: cdpnb.Backend, site: ScenarioServer, where: str) -> None:
    """Navigating over a bridged prompt: ``navigate()`` over the page's own, the page
    navigating itself over its cross-site frame's. The navigation completes, the prompt
    is closed by the browser's navigation (as a native one is), the page's call returns
    null (dismissed) without falling back to a native dialog, nothing stays pending,
    and the browser and the page carry on."""
    name = f"nav-{uuid.uuid4().hex[:8]}"
    kid = site.add(f"/{name}-kid", ASKING.format(title="kid", body="<p>kid</p>"))
    kid = kid.replace(site.site_a, site.site_b)
    top = site.add(f"/{name}", ASKING.format(title="top", body=f'<iframe src="{kid}"></iframe>'))
    async with await cdpnb.Supervisor.start(every_path, bridge=True, dialog_timeout_s=60) as sup:
        await sup.navigate(top)
        await settle(sup, lambda s: any(f.url == kid for f in s.frames.values()))
        frame = next(f.frame_id for f in sup.state.frames.values() if f.url == kid)
        asking = None if where == "page" else frame
        await sup.evaluate(f"setTimeout(() => ask({json.dumps(name)}), 0); 0", frame_id=asking)
        dialog = await sup.wait_for_dialog(20)
        vias = (BRIDGED_IN_CROSS_SITE_FRAME.get(every_path.kind, ("bridge",))
                if asking else ("bridge",))
        assert dialog.via in vias and dialog.frame_id == (asking or sup.page_target_id)
        away = site.url("/blank")
        if asking is None:
            await sup.navigate(away, timeout=20)
        else:
            await sup.evaluate(f"setTimeout(() => {{ location.href = {json.dumps(away)}; }}, 0); 0")
            await settle(sup, lambda s: s.pages[s.page_session_id or ""].url == away)
        await settle(sup, lambda s: any(r.id == dialog.id for r in s.recent_dialogs))
        [record] = [r for r in sup.state.recent_dialogs if r.id == dialog.id]
        # navigate() dismisses the page's bridged dialogs first (cdpnb's); the page's own
        # navigation ends its frame's as the browser ends a native one
        assert (record.closed_by, record.reason) == (
            ("cdpnb" if asking is None else "browser"), "navigation"), record
        assert sup.state.pending_dialogs == ()
        assert every_path.running and sup.connected
        assert await sup.evaluate("location.pathname") == "/blank"
        # What the call returned, read where it was written: a cross-site frame's storage
        # is partitioned by its top-level site (Chromium), so in the same page again.
        await sup.navigate(top)
        await settle(sup, lambda s: any(f.url == kid for f in s.frames.values()))
        again = None if asking is None else next(
            f.frame_id for f in sup.state.frames.values() if f.url == kid)
        kept = RELEASED_CALL_KEEPS[where] | (
            {None} if every_path.kind in RELEASED_CALL_RACES_THE_NAVIGATION else set())
        assert await sup.evaluate(f"localStorage.getItem({json.dumps(name)})",
                                  frame_id=again) in kept
        assert [r.id for r in sup.state.recent_dialogs if r.opened_at >= record.opened_at] \
            == [dialog.id]  # no native prompt came after it


async def test_a_tab_closed_with_its_dialog_open_is_the_browsers_close_not_a_client(
        every_path: cdpnb.Backend, site: ScenarioServer) -> None:
    """A popup closed (``close_page``: ``Target.closeTarget`` / ``browsingContext.close``,
    no beforeunload) while its prompt is open: its record says the browser closed it
    with the page, and nothing concludes that a client auto-dismisses dialogs (no hint,
    the bridge stays off). Chromium and chromium-bidi report the prompt closed (result
    false) 8-25 ms before the tab's end: that once read as an auto-dismisser, and
    switched the bridge on. (Another client's close is read the same way.)"""
    name = f"/closing-{uuid.uuid4().hex[:8]}"
    popup = site.add(name, "<!doctype html><title>closing</title>"
                           "<script>setTimeout(() => prompt('closing?'), 50)</script>")
    async with await cdpnb.Supervisor.start(every_path, dialog_timeout_s=60) as sup:
        await sup.navigate(site.url("/blank"))
        await sup.evaluate(f"window.open({json.dumps(popup)}, '_blank', 'noopener'); 0",
                           user_gesture=True)
        dialog = await sup.wait_for_dialog(20)
        page = sup.state.pages[dialog.page_session_id or ""]
        assert not page.main
        assert (await sup.close_page(page.target_id))["closed"]
        await settle(sup, lambda s: page.session_id not in s.pages
                     and any(r.id == dialog.id for r in s.recent_dialogs))
        await asyncio.sleep(0.5)  # past the moment a fast close is judged
        [record] = [r for r in sup.state.recent_dialogs if r.id == dialog.id]
        assert (record.closed_by, record.reason) == ("browser", "page_closed"), record
        assert sup.hints == [] and not sup.bridge_enabled
        assert sup.stats().get("fast-remote-dismissals", 0) == 0
        assert every_path.running
        assert await sup.evaluate("1 + 1") == 2


#: What the browser says a dismissed dialog's result was when it says otherwise:
#: Firefox closes an alert ``accepted: true`` whoever closed it and how (measured; an
#: alert has one button). The record holds the dismissal, the browser's word beside it.
BROWSER_ACCEPTED_ON_DISMISSAL = {("firefox", "alert"): True}


@pytest.mark.parametrize("kind", ["alert", "confirm", "prompt"])
async def test_a_dismissal_is_the_dismissers_whatever_the_browser_says_it_was(
        every_path: cdpnb.Backend, site: ScenarioServer, kind: str) -> None:
    """``respond("dismiss")`` and the ``auto_dismiss`` policy close a dialog as theirs.
    Firefox reports every alert closed ``accepted: true`` (an alert has one button), and
    a dismissed alert once read as someone else's close, then as an auto-dismisser."""
    async with await cdpnb.Supervisor.start(every_path, dialog_timeout_s=60) as sup:
        await sup.navigate(site.url("/blank"))
        await sup.evaluate(f"setTimeout(() => {{ window.__got = String({kind}('x')); }}, 0); 0")
        dialog = await sup.wait_for_dialog(20)
        record = await sup.respond("dismiss", dialog_id=dialog.id)
        assert (record.closed_by, record.reason) == ("agent", None), record
        # The same call, the same record on every engine (hermes'
        # test_browser_dialog_tool_end_to_end once read True on Firefox).
        assert (record.accepted, record.browser_accepted) == (
            False, BROWSER_ACCEPTED_ON_DISMISSAL.get((every_path.kind, kind))), record
        got = await sup.evaluate("new Promise(done => { const look = () => window.__got === "
                                 "undefined ? setTimeout(look, 20) : done(window.__got); "
                                 "look(); })", timeout=10)
        assert got == {"alert": "undefined", "confirm": "false", "prompt": "null"}[kind]
        assert sup.hints == []
    async with await cdpnb.Supervisor.start(every_path, policy="auto_dismiss") as sup:
        await sup.navigate(site.url("/blank"))
        await sup.evaluate(f"setTimeout(() => {kind}('y'), 0); 0")
        await settle(sup, lambda s: s.dialogs_closed_total == 1)
        await asyncio.sleep(0.5)  # past the moment a fast close is judged
        assert [(r.closed_by, r.accepted, r.browser_accepted)
                for r in sup.state.recent_dialogs] == [
            ("auto_policy", False, BROWSER_ACCEPTED_ON_DISMISSAL.get((every_path.kind, kind)))]
        assert sup.hints == [] and not sup.bridge_enabled


async def open_page_with_a_cross_site_frame(sup: cdpnb.Supervisor, site: ScenarioServer,
                                            prefix: str) -> str:
    """Navigate to a fresh page (``<iframe id=f>`` of the other site's /child) and
    return the frame's id once it is in the tree."""
    kid = site.url("/child", "b")
    top = site.add(f"/{prefix}-{uuid.uuid4().hex[:8]}",
                   f'<!doctype html><title>top</title><iframe id=f src="{kid}"></iframe>')
    await sup.navigate(top)
    await settle(sup, lambda s: any(f.url == kid for f in s.frames.values()))
    return next(f.frame_id for f in sup.state.frames.values() if f.url == kid)


#: Paths whose browser closes a frame's prompt when its parent navigates the frame:
#: Firefox, 50-70 ms after (measured). Chromium keeps it open and answerable, and the
#: frame's navigation waits for the answer (CDP and chromium-bidi, measured).
FRAME_NAVIGATION_CLOSES_ITS_PROMPT = {"firefox"}


async def test_a_frame_navigated_by_its_parent_over_its_prompt(
        every_path: cdpnb.Backend, site: ScenarioServer) -> None:
    """A cross-site frame's native prompt is open when its parent points the frame
    elsewhere: where the browser closes it, the record says the navigation did (it once
    said someone else, on Firefox); where the browser keeps it, it stays answerable,
    the answer reaches it, and the frame's navigation completes after."""
    async with await cdpnb.Supervisor.start(every_path, dialog_timeout_s=60) as sup:
        frame = await open_page_with_a_cross_site_frame(sup, site, "framenav")
        await sup.evaluate("setTimeout(() => { window.__got = prompt('stay?'); }, 0); 0",
                           frame_id=frame)
        dialog = await sup.wait_for_dialog(20)
        assert (dialog.via, dialog.frame_id) == ("native", frame)
        elsewhere = site.url("/blank", "b")
        await sup.evaluate(f"document.getElementById('f').src = {json.dumps(elsewhere)}; 0")
        if every_path.kind in FRAME_NAVIGATION_CLOSES_ITS_PROMPT:
            await settle(sup, lambda s: any(r.id == dialog.id for r in s.recent_dialogs))
            [record] = [r for r in sup.state.recent_dialogs if r.id == dialog.id]
            assert (record.closed_by, record.reason) == ("browser", "navigation"), record
        else:
            await asyncio.sleep(0.5)
            [still] = sup.state.pending_dialogs
            assert still.id == dialog.id and still.answerable
            record = await sup.respond("accept", prompt_text="stayed", dialog_id=dialog.id)
            assert (record.closed_by, record.prompt_text) == ("agent", "stayed")
        await settle(sup, lambda s: any(f.url == elsewhere for f in s.frames.values()))
        assert sup.state.pending_dialogs == () and every_path.running
        await sup.navigate(site.url("/blank"))
        assert await sup.evaluate("location.pathname") == "/blank"


#: Paths whose browser keeps the dangling dialog of a frame removed with its dialog
#: open and crashes at the page's next native dialog, navigation, reload or close
#: (Chromium 156, measured over CDP and over chromium-bidi): the page is frozen at once
#: and abandoned, never closed or navigated, and the supervisor gets a fresh page.
DANGLING_DIALOG_PATHS = {"chromium", "chromium+bidi"}

#: A page that kept ``window.confirm`` before anything of cdpnb's ran in it, and calls
#: it a moment after its frame went: a bridge put on the page cannot stop that call.
KEEPS_CONFIRM = ("<!doctype html><title>keeper</title>"
                 "<script>const keep = window.confirm;</script>"
                 '<iframe id=f src="{kid}"></iframe>')


async def test_a_frame_removed_over_its_prompt_leaves_the_browser_and_the_page_usable(
        every_path: cdpnb.Backend, site: ScenarioServer) -> None:
    """A cross-site frame's prompt is open when the page removes the frame (a ghost
    dialog) and calls a ``confirm`` it kept from before 300 ms later. The record says
    the frame went with the prompt; where the browser would crash at the page's next
    dialog, the page is frozen at once (the kept confirm never runs) and the supervisor
    given a fresh page; elsewhere the confirm is seen and answered. The browser lives
    on, and ``navigate()`` and stopping work."""
    hazardous = every_path.kind in DANGLING_DIALOG_PATHS
    # the hazard is told, and so is the page's replacement; elsewhere nothing is
    advice = (pytest.warns(cdpnb.CdpnbWarning, match="crashes|replaced by a fresh")
              if hazardous else contextlib.nullcontext())
    with advice:
        await _ghost_then_carry_on(every_path, site, hazardous)
    assert every_path.running  # stopping left the hazardous page alone


async def _ghost_then_carry_on(every_path: cdpnb.Backend, site: ScenarioServer,
                               hazardous: bool) -> None:
    kid = site.url("/child", "b")
    top = site.add(f"/keeper-{uuid.uuid4().hex[:8]}", KEEPS_CONFIRM.format(kid=kid))
    async with await cdpnb.Supervisor.start(every_path, dialog_timeout_s=60) as sup:
        await sup.navigate(top)
        await settle(sup, lambda s: any(f.url == kid for f in s.frames.values()))
        frame = next(f.frame_id for f in sup.state.frames.values() if f.url == kid)
        first_page = sup.page_target_id
        await sup.evaluate("setTimeout(() => prompt('ghost?'), 0); 0", frame_id=frame)
        ghost = await sup.wait_for_dialog(20)
        # Removed by the call itself (Firefox runs no timer of the tab while a prompt is
        # up); where the page is frozen and abandoned as the frame goes, the call's own
        # reply may never come (its session detached: TargetGone).
        with contextlib.suppress(*((cdpnb.TargetGone,) if hazardous else ())):
            await sup.evaluate("document.getElementById('f').remove(); setTimeout(() => "
                               "{ window.__got = keep('kept?'); }, 300); 0")
        await settle(sup, lambda s: any(r.id == ghost.id for r in s.recent_dialogs))
        [record] = [r for r in sup.state.recent_dialogs if r.id == ghost.id]
        assert (record.closed_by, record.reason) == ("browser", "frame_removed"), record
        if hazardous:
            await settle(sup, lambda s: s.page_target_id not in (None, first_page))
            await asyncio.sleep(0.6)  # past the kept confirm's moment: it never came
            assert sup.state.dialog_seq == 1 and sup.stats()["pages-replaced"] == 1
        else:
            kept = await sup.wait_for_dialog(20)
            assert (kept.via, kept.type) == ("native", "confirm")
            await sup.respond("accept", dialog_id=kept.id)
            assert await sup.evaluate("new Promise(done => { const look = () => "
                                      "window.__got === undefined ? setTimeout(look, 20) : "
                                      "done(window.__got); look(); })", timeout=10) is True
        assert every_path.running and sup.connected
        await sup.navigate(site.url("/blank"))
        assert await sup.evaluate("location.pathname") == "/blank"
        assert every_path.running and sup.connected


#: Two prompts on one page, the page's then its cross-site frame's 20 ms later: what
#: becomes of each (``closed_by``, ``reason``), by path. Chromium closes the older
#: itself and loses the newer's handle, which cdpnb releases (CDP and chromium-bidi,
#: measured); headless-shell answers the newest only and the older's page is replaced;
#: Firefox shows one prompt per tab and the newer waits for the older's answer.
OVERLAP_OUTCOMES = {
    "chromium": [("browser", "superseded"), ("cdpnb", "released")],
    "chromium+bidi": [("browser", "superseded"), ("cdpnb", "released")],
    "headless-shell": [("cdpnb", "page_replaced"), ("agent", None)],
    "firefox": [("agent", None), ("agent", None)],
}


async def test_overlapping_prompts_never_wedge_the_page(
        every_path: cdpnb.Backend, site: ScenarioServer) -> None:
    """The page prompts, its cross-site frame prompts 20 ms later. Whatever the browser
    does with two (close one, keep both, queue one), every prompt the browser still
    answers is answered, cdpnb frees what it cannot answer, each record says who
    closed it and why, and the browser and the page carry on."""
    replaced = every_path.kind == "headless-shell"
    advice = (pytest.warns(cdpnb.CdpnbWarning, match="released it|replaced by a fresh")
              if every_path.kind != "firefox" else contextlib.nullcontext())
    with advice:
        async with await cdpnb.Supervisor.start(every_path, dialog_timeout_s=60) as sup:
            frame = await open_page_with_a_cross_site_frame(sup, site, "overlap")
            await sup.evaluate("setTimeout(() => prompt('page?'), 0); 0")
            first = await sup.wait_for_dialog(20)
            await sup.evaluate("setTimeout(() => prompt('frame?'), 20); 0", frame_id=frame)
            await asyncio.sleep(0.5)  # the frame's prompt is up (or queued) by now
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 20
            while sup.state.dialogs_closed_total < 2:  # answer what can be, as it can be
                assert loop.time() < deadline, sup.snapshot().to_dict()
                for dialog in sup.state.pending_dialogs:
                    if dialog.answerable and dialog.answering is None:
                        with contextlib.suppress(cdpnb.DialogError):
                            await sup.respond("accept", prompt_text="ok", dialog_id=dialog.id)
                await asyncio.sleep(0.05)
            records = sorted((r for r in sup.state.recent_dialogs), key=lambda r: r.id)
            assert records[0].id == first.id
            assert [(r.closed_by, r.reason) for r in records] == \
                OVERLAP_OUTCOMES[every_path.kind], records
            assert sup.state.pending_dialogs == () and every_path.running
            await sup.navigate(site.url("/blank"))
            assert await sup.evaluate("location.pathname") == "/blank"
            assert replaced == (sup.stats().get("pages-replaced", 0) == 1)


@pytest.mark.parametrize("action", ["accept", "dismiss"])
async def test_beforeunload_holds_the_navigation_until_answered(
        every_path: cdpnb.Backend, site: ScenarioServer, action: str) -> None:
    """After a user activation, leaving a page with a beforeunload handler asks first:
    the navigation waits for the answer; accepting lets it go on, dismissing keeps the
    page (``navigate()`` then says it did not happen), and the page stays usable."""
    async with await cdpnb.Supervisor.start(every_path, dialog_timeout_s=60) as sup:
        await sup.navigate(site.url("/beforeunload"))
        await user_activation(sup)
        leaving = asyncio.ensure_future(sup.navigate(site.url("/blank"), timeout=20))
        try:
            dialog = await sup.wait_for_dialog(20)
            assert dialog.type == "beforeunload" and not leaving.done()
            record = await sup.respond(action, dialog_id=dialog.id)
            assert (record.closed_by, record.accepted) == ("agent", action == "accept")
            if action == "accept":
                await leaving
                assert await sup.evaluate("document.title") == "blank"
            else:
                with contextlib.suppress(cdpnb.CdpnbError):
                    await asyncio.wait_for(leaving, 20)
                assert await sup.evaluate("document.title") == "beforeunload"
        finally:
            leaving.cancel()
            await asyncio.gather(leaving, return_exceptions=True)
        assert sup.state.pending_dialogs == () and every_path.running


#: WebDriver BiDi cannot hold a new top-level context before its first script runs
#: (CDP's auto-attach waits for the debugger): the bridge's preload script is added
#: once the popup is announced, so a prompt while its first document loads is usually
#: native (seen and answered all the same), and bridged when the preload script wins
#: the race (a full run on Firefox saw it). Measured on Firefox and chromium-bidi.
NATIVE_AT_A_POPUPS_LOAD = {"firefox", "chromium+bidi"}


@pytest.mark.parametrize("bridge", [False, True], ids=["native", "bridge"])
async def test_a_popups_prompt_is_the_popups_and_is_answered_there(
        every_path: cdpnb.Backend, site: ScenarioServer, bridge: bool) -> None:
    """A popup (with its opener) prompts as it loads: the dialog names the popup's page
    and frame, the answer reaches the popup's own call, the opener is untouched."""
    name = f"pop-{uuid.uuid4().hex[:8]}"
    popup = site.add(f"/{name}", "<!doctype html><title>pop</title><script>"
                                 "localStorage.setItem(" + json.dumps(name) +
                                 ", JSON.stringify(prompt('from the popup', 'd')));</script>")
    async with await cdpnb.Supervisor.start(every_path, bridge=bridge,
                                            dialog_timeout_s=60) as sup:
        await sup.navigate(site.url("/blank"))
        await sup.evaluate(f"window.__pop = window.open({json.dumps(popup)}); 0",
                           user_gesture=True)
        dialog = await sup.wait_for_dialog(20)
        page = sup.state.pages[dialog.page_session_id or ""]
        assert not page.main and page.opener_target_id == sup.page_target_id
        assert (dialog.type, dialog.message, dialog.default_prompt) == (
            "prompt", "from the popup", "d")
        if bridge and every_path.kind in NATIVE_AT_A_POPUPS_LOAD:
            assert dialog.via in ("native", "bridge")  # a race: the preload script's
        else:
            assert dialog.via == ("bridge" if bridge else "native")
        await sup.respond("accept", prompt_text="to the popup", dialog_id=dialog.id)
        got = await sup.evaluate("new Promise(done => { const look = () => "
                                 f"localStorage.getItem({json.dumps(name)}) === null ? "
                                 "setTimeout(look, 20) : done(localStorage.getItem("
                                 f"{json.dumps(name)})); look(); }})", timeout=10)
        assert got == '"to the popup"'
        assert sup.state.pending_dialogs == () and every_path.running


@pytest.mark.parametrize("bridge", [False, True], ids=["native", "bridge"])
async def test_a_redacted_trace_never_holds_an_answer(
        every_path: cdpnb.Backend, site: ScenarioServer, tmp_path: Path, bridge: bool) -> None:
    """With ``redact=True``, the text an agent types into a prompt (and the page's own
    echo of it) appears nowhere in the trace file, on either protocol and either path."""
    secret = f"hunter2-{uuid.uuid4().hex[:8]}"
    trace = tmp_path / "redacted.jsonl"
    async with await cdpnb.Supervisor.start(every_path, bridge=bridge, redact=True,
                                            record=trace, dialog_timeout_s=60) as sup:
        await sup.navigate(site.url("/blank"))
        await sup.evaluate("setTimeout(() => { window.__got = prompt('password?'); }, 0); 0")
        dialog = await sup.wait_for_dialog(20)
        assert dialog.via == ("bridge" if bridge else "native")
        record = await sup.respond("accept", prompt_text=secret, dialog_id=dialog.id)
        assert record.prompt_text == secret  # the live record keeps it; the file does not
        assert await sup.evaluate("new Promise(done => { const look = () => window.__got "
                                  "=== undefined ? setTimeout(look, 20) : done(true); "
                                  "look(); })", timeout=10)
    text = trace.read_text()
    assert secret not in text and "prompt" in text


#: Who ends a native prompt when ``navigate()`` leaves its page: Chromium and Firefox
#: close it themselves as the navigation starts; headless-shell would wedge the page
#: ("Not attached to an active page", measured), so cdpnb dismisses it first; over
#: WebDriver classic (tests/test_classic.py runs this too) the navigation would fail
#: "unexpected alert open", so cdpnb dismisses it first there too.
NAVIGATION_CLOSES = {"headless-shell": ("cdpnb", "navigation"),
                     "webkit": ("cdpnb", "navigation"),
                     "chromium+chromedriver": ("cdpnb", "navigation")}


async def test_navigate_over_a_native_prompt_leaves_a_usable_page(
        every_path: cdpnb.Backend, site: ScenarioServer) -> None:
    """``navigate()`` while the page's native prompt is open: the navigation completes,
    the record says the navigation ended the prompt, and the new page answers."""
    async with await cdpnb.Supervisor.start(every_path, dialog_timeout_s=60) as sup:
        await sup.navigate(site.url("/blank?first"))
        await sup.evaluate("setTimeout(() => prompt('leaving?'), 0); 0")
        dialog = await sup.wait_for_dialog(20)
        assert dialog.via == "native"
        await sup.navigate(site.url("/blank?second"), timeout=20)
        await settle(sup, lambda s: any(r.id == dialog.id for r in s.recent_dialogs))
        [record] = [r for r in sup.state.recent_dialogs if r.id == dialog.id]
        assert (record.closed_by, record.reason) == NAVIGATION_CLOSES.get(
            every_path.kind, ("browser", "navigation")), record
        assert await sup.evaluate("location.search") == "?second"
        assert sup.state.pending_dialogs == () and every_path.running
