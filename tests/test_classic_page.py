"""Screenshots and fill over WebDriver classic, on WebKit (WebKitWebDriver + MiniBrowser
under cdpnb's Xvfb) and on Chromium behind chromedriver (issue 38).

A fresh window's first screenshot shows the page (WebKit's was all white before the
window drew its first frame: ``cdpnb.drivers.cdp.screenshots.classic_screenshot``), and
a page that is white is screenshot white with no retry. fill types into a field of a
cross-site frame as into the page's (WebKit refuses a script's focus there:
``cdpnb.drivers.classic.actions``), the page's own listeners reading it, and the
typed text never in a redacted trace.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import cdpnb
from cdpnb.probes import ScenarioServer
from cdpnb.probes.pixels import decode_png
from cdpnb.protocol import Command
from cdpnb.trace import Trace
from cdpnb.trace.redaction import REDACTED

pytestmark = pytest.mark.browser

CLASSIC_PATHS = ("webkit", "chromium+chromedriver")
GREEN = (0, 255, 0)
WHITE = (255, 255, 255)
#: A field that keeps what its own listeners saw: the value at each ``input`` event,
#: and how many clicks it got.
FIELD = """<input id=field value="old">
<script>
const field = document.getElementById('field');
window.seen = {typed: null, inputs: 0, clicks: 0};
field.addEventListener('input', () => { seen.typed = field.value; seen.inputs += 1; });
field.addEventListener('click', () => { seen.clicks += 1; });
</script>"""
PAGES = {
    "/green": '<!doctype html><body style="margin:0;background:#00ff00"></body>',
    "/white": '<!doctype html><body style="margin:0;background:#ffffff"></body>',
    "/typing": f'<!doctype html><body>{FIELD}<iframe id=frame src="{{B}}/typing-frame" '
               'width=300 height=60></iframe></body>',
    "/typing-frame": f"<!doctype html><body>{FIELD}</body>",
}
TYPED = "Ada Lovelace\n1843"
#: What the field holds once TYPED is typed (an <input> drops the line break).
HELD = "Ada Lovelace1843"
#: What the field's listeners saw, the text reversed: [typed, value, inputs, clicks].
READ_BACK = ("() => [[...seen.typed].reverse().join(''), [...field.value].reverse().join(''), "
             "seen.inputs, seen.clicks]")


@pytest.fixture(scope="module")
def pages() -> Iterator[ScenarioServer]:
    with ScenarioServer() as server:
        for path, html in PAGES.items():
            server.add(path, html)
        yield server


def sent(path: Path, method: str) -> list[dict[str, object]]:
    return [r.params for r in Trace.load(path).records
            if isinstance(r, Command) and r.method == method]


def waits_for_frames(path: Path) -> int:
    """How many times the recorded session waited for animation frames."""
    return sum("requestAnimationFrame" in str(p.get("script"))
               for p in sent(path, "classic.executeScript"))


@pytest.mark.parametrize("kind", CLASSIC_PATHS)
async def test_a_fresh_windows_first_screenshot_shows_the_page(
        kind: str, pages: ScenarioServer, tmp_path: Path) -> None:
    """Measured without the wait on WebKit: the first screenshot right after a fresh
    window's first navigation was all white, 10 launches of 10."""
    path = tmp_path / "t.jsonl"
    async with cdpnb.launch(kind) as backend, \
            await cdpnb.Supervisor.start(backend, record=path) as sup:
        await sup.navigate(pages.url("/green"))
        first = decode_png(await sup.screenshot(timeout=30))
        await sup.navigate(pages.url("/white"))
        then = decode_png(await sup.screenshot(timeout=30))
    assert first.share(GREEN) > 0.99, first.main_colour()
    assert then.share(WHITE) > 0.99, then.main_colour()
    # The window's first screenshot waited for its frames; the next one did not.
    assert waits_for_frames(path) == 1
    assert len(sent(path, "classic.takeScreenshot")) == 2


@pytest.mark.parametrize("kind", CLASSIC_PATHS)
async def test_a_white_page_is_screenshot_white_with_no_retry(
        kind: str, pages: ScenarioServer, tmp_path: Path) -> None:
    """The wait is for the window's first frames, never for a picture that is not
    white: a white page in a fresh window is one screenshot, white."""
    path = tmp_path / "t.jsonl"
    async with cdpnb.launch(kind) as backend, \
            await cdpnb.Supervisor.start(backend, record=path) as sup:
        await sup.navigate(pages.url("/white"))
        shots = [decode_png(await sup.screenshot(timeout=30)) for _ in range(2)]
    assert [s.share(WHITE) for s in shots] == [1.0, 1.0]
    assert len(sent(path, "classic.takeScreenshot")) == 2
    assert waits_for_frames(path) == 1


@pytest.fixture(scope="module", params=CLASSIC_PATHS)
def classic_path(request: pytest.FixtureRequest) -> Iterator[cdpnb.Backend]:
    with cdpnb.launch(request.param) as backend:
        yield backend


async def test_fill_types_in_a_cross_site_frame_as_in_the_page(
        classic_path: cdpnb.Backend, pages: ScenarioServer, tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    async with await cdpnb.Supervisor.start(classic_path, record=path, redact=True) as sup:
        await sup.navigate(pages.url("/typing"))
        frame = next(f.frame_id for f in sup.state.frames.values()
                     if f.url == pages.url("/typing-frame", "b"))
        for frame_id in (None, frame):
            await sup.fill("#field", TYPED, frame_id=frame_id, timeout=10)
        # (read back reversed: the trace holds what evaluate returns, and the typed
        # text must not be in it)
        seen = {where: await sup.evaluate(READ_BACK, frame_id=frame_id)
                for where, frame_id in (("page", None), ("frame", frame))}
    # Typed over "old", key by key: the page's own listener read each step, the last
    # one the whole text.
    for where, (typed, value, inputs, _) in seen.items():
        assert typed == value == HELD[::-1], where
        assert inputs >= len(HELD), (where, inputs)
    # Where a script's focus takes (the page; chromedriver's frame), fill clicks
    # nothing; WebKit's cross-site frame took the focus after one click on the field.
    webkit = classic_path.kind == "webkit"
    assert seen["page"][3] == 0
    assert seen["frame"][3] == (1 if webkit else 0)
    assert len(sent(path, "classic.elementClick")) == (1 if webkit else 0)
    # Redacted: the text is nowhere in the file, the keys it went as are there, hidden.
    assert "Lovelace" not in path.read_text()
    typed = sent(path, "classic.elementSendKeys")
    assert len(typed) == 2 and {p["text"] for p in typed} == {REDACTED}
