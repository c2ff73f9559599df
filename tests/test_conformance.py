"""One promise, every path: the same scenario on native CDP (chromium, headless-shell)
and on WebDriver BiDi (Firefox, chromium-bidi), one browser per path for the module.

Each test here runs on every path; a path where the engine cannot do it is an explicit
expectation with its reason, never a skip. (The start of the conformance matrix of the
dialog contract: more scenarios join as each path is made to keep them.)
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

import cdpnb
from cdpnb.probes import ScenarioServer
from cdpnb.state import snapshot_of
from tests.conftest import settle

PATHS = ("chromium", "headless-shell", "firefox", "chromium+bidi")


@pytest.fixture(scope="module", params=PATHS)
def every_path(request: pytest.FixtureRequest) -> Iterator[cdpnb.Backend]:
    """A browser of each path, once for the module (pytest groups the tests by it)."""
    with cdpnb.launch(request.param) as backend:
        yield backend


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


async def test_the_pages_say_where_they_are_now_popups_included(
        every_path: cdpnb.Backend, site: ScenarioServer) -> None:
    async with await cdpnb.Supervisor.start(every_path, dialog_timeout_s=30) as sup:
        await assert_page_urls_stay_current(sup, site)


async def test_a_url_the_browser_cannot_load_is_a_navigation_error_that_names_it(
        every_path: cdpnb.Backend, site: ScenarioServer) -> None:
    async with await cdpnb.Supervisor.start(every_path, dialog_timeout_s=30) as sup:
        with pytest.raises(cdpnb.NavigationError, match="navigating to not a url failed: "):
            await sup.navigate("not a url")
        await sup.navigate(site.url("/blank"))  # the page is still usable
        assert await sup.evaluate("location.pathname") == "/blank"
