"""Issue 39: the probe's page checks (``page.screenshot``, ``page.fill``,
``page.wait_for_selector``). Each driver on a real browser of each protocol: CDP
(chromium), WebDriver BiDi (firefox) and WebDriver classic (webkit), finding what the
measured facts predict (``cdpnb.probes.expected``); each check failing, on a real
browser, where the page does not do what it should (the check's pages altered on a
server of the test's own); and what the screenshot check reads in a PNG."""

from __future__ import annotations

import asyncio
import io
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image

import cdpnb
import cdpnb.sync
from cdpnb.probes import CHECKS, PAGES, ScenarioServer, expected_status, race_between
from cdpnb.probes.page_checks import (
    FILL_TEXT,
    LATE_MS,
    LOOK_FOR_S,
    NEVER_S,
    SHOT_FRAME,
    fill,
    screenshot,
    wait_for_selector,
)
from cdpnb.probes.pixels import decode_png

ROOT = Path(__file__).resolve().parent.parent
#: One of each protocol: CDP, WebDriver BiDi, WebDriver classic.
BACKENDS = ("chromium", "firefox", "webkit")
#: What the fill page's listener read, and what its field holds.
READ_BACK = "() => [window.typed, document.getElementById('field').value]"


@pytest.fixture(scope="module", params=BACKENDS)
def shared(request: pytest.FixtureRequest, site: ScenarioServer
           ) -> Iterator[tuple[str, cdpnb.Supervisor]]:
    with cdpnb.sync.launch(request.param) as backend, \
            cdpnb.sync.Supervisor.start(backend) as blocking:
        blocking.navigate(site.url("/blank"))  # (as in the probe: other pages came first)
        yield request.param, blocking.aio


def test_the_page_checks_are_in_the_matrix_on_the_page_only_side() -> None:
    names = [c.name for c in CHECKS]
    assert names[names.index("evaluate.cross_site") + 1:][:3] == [
        "page.screenshot", "page.fill", "page.wait_for_selector"]
    page = {c.name: c for c in CHECKS if c.name.startswith("page.")}
    assert {c.capability for c in page.values()} == {"screenshot", "fill", "wait for selector"}
    assert {c.mode for c in page.values()} == {"native"}
    # A runtime has no page: the checks are ✗ there as every page-only check is.
    for kind in ("node", "deno", "bun"):
        assert {expected_status(kind, name) for name in page} == {"fail"}
        assert expected_status(kind, "frames.complete") == "fail"


@pytest.mark.browser
async def test_the_screenshot_check_decodes_the_page_and_its_cross_site_frame(
        shared: tuple[str, cdpnb.Supervisor], site: ScenarioServer) -> None:
    kind, sup = shared
    status, detail, value = await screenshot(sup, site)
    assert value is None and status in str(expected_status(kind, "page.screenshot")).split("|")
    width, height = await sup.evaluate("() => [innerWidth, innerHeight]")
    if status == "fail":  # (webkit: its paint raced the screenshot, and won; see RACES)
        assert race_between(kind, "page.screenshot") is not None
        assert detail == ("the page's screenshot does not show the page: 0% of the strip "
                          "above the frame is the page's blue, 0% of the frame's box the "
                          f"frame's red (100% of the {width}×{height} picture is #ffffff)")
        return
    assert detail == (f"a {width}×{height} PNG of the page's viewport, the page and its "
                      "cross-site frame where they are; a 200×100 PNG of the cross-site "
                      "frame alone")  # (device pixel ratio 1 on each)


@pytest.mark.browser
async def test_the_fill_check_types_in_the_page_and_in_its_cross_site_frame(
        shared: tuple[str, cdpnb.Supervisor], site: ScenarioServer) -> None:
    kind, sup = shared
    status, detail, _ = await fill(sup, site)
    # (webkit too: its cross-site frame's field takes the focus after a click,
    # cdpnb.drivers.classic.actions)
    assert status == expected_status(kind, "page.fill") == "ok", detail
    frame = next(f.frame_id for f in sup.state.frames.values()
                 if f.url == site.url("/fill-frame", "b"))
    for frame_id in (None, frame):  # what the check read, read again
        assert await sup.evaluate(READ_BACK,
                                  frame_id=frame_id) == [FILL_TEXT] * 2


@pytest.mark.browser
async def test_the_wait_for_selector_check_waits_then_times_out_with_the_named_error(
        shared: tuple[str, cdpnb.Supervisor], site: ScenarioServer) -> None:
    kind, sup = shared
    assert await wait_for_selector(sup, site) == (
        expected_status(kind, "page.wait_for_selector"),
        f"WaitTimeout after {NEVER_S:g} s for an element the page had not added; then waited "
        f"for an element until the page added it, {LATE_MS} ms after it loaded", None)
    assert await sup.evaluate("() => document.querySelectorAll('#late').length") == 1


# -- each check fails where the page does not do what it should --------------------------


@pytest.fixture(scope="module")
def altered() -> Iterator[tuple[ScenarioServer, cdpnb.Supervisor]]:
    """headless-shell on a scenario server of the module's own, whose pages a test may
    alter (the session's server is everyone's)."""
    with ScenarioServer() as own, cdpnb.sync.launch("headless-shell") as backend, \
            cdpnb.sync.Supervisor.start(backend) as blocking:
        yield own, blocking.aio


@pytest.mark.browser
async def test_the_screenshot_check_fails_a_picture_that_is_not_the_page(
        altered: tuple[ScenarioServer, cdpnb.Supervisor]) -> None:
    own, sup = altered
    own.add("/shot", PAGES["/shot"].replace("#0000ff", "#00ff00"))  # green, not blue
    try:
        status, detail, _ = await screenshot(sup, own)
    finally:
        own.pages["/shot"] = PAGES["/shot"]
    assert status == "fail"
    assert re.fullmatch(r"the page's screenshot does not show the page: 0% of the strip above "
                        r"the frame is the page's blue, 100% of the frame's box the frame's "
                        r"red \(9\d% of the 800×600 picture is #00ff00\)", detail), detail


@pytest.mark.browser
async def test_the_fill_check_reads_what_the_page_itself_got(
        altered: tuple[ScenarioServer, cdpnb.Supervisor]) -> None:
    own, sup = altered
    pristine = dict(own.pages)
    # The page's own script changes what it was given: the check reads the page's word.
    own.add("/fill", pristine["/fill"].replace("window.typed = field.value;",
                                               "window.typed = field.value.toUpperCase();"))
    try:
        assert await fill(sup, own) == (
            "fail", f"in the page: the page's input listener read {FILL_TEXT.upper()!r} and "
                    f"the field holds {FILL_TEXT!r}, not {FILL_TEXT!r}", None)
        own.pages["/fill"] = pristine["/fill"]
        own.add("/fill-frame", pristine["/fill-frame"].replace("<input id=field",
                                                               "<input id=field maxlength=3"))
        assert await fill(sup, own) == (
            "partial", "the page's field ✓; in the cross-site frame: the page's input "
                       "listener read 'Ada' and the field holds 'Ada', not "
                       f"{FILL_TEXT!r}", None)
    finally:
        own.pages.update(pristine)


@pytest.mark.browser
async def test_the_wait_for_selector_check_fails_a_wait_that_does_not_wait_or_never_ends(
        altered: tuple[ScenarioServer, cdpnb.Supervisor]) -> None:
    own, sup = altered
    try:
        # The page adds #late at once: the first wait, meant to time out, returns.
        own.add("/later", PAGES["/later"].replace("Number('{Q:ms}')", "0"))
        assert await wait_for_selector(sup, own) == (
            "partial", f"waited for an element until the page added it, {LATE_MS} ms after "
                       f"it loaded; but waiting {NEVER_S:g} s for it before that: it returned",
            None)
        # The page never adds it: the wait for it ends with the named error.
        own.add("/later", "<!doctype html><title>later</title><body>never</body>")
        status, detail, _ = await wait_for_selector(sup, own)
        assert status == "fail"
        assert detail.startswith(f"waiting for an element the page adds {LATE_MS} ms after it "
                                 "loads raised WaitTimeout: selector '#late' was not visible "
                                 f"in the page within {LOOK_FOR_S:g} s (last look: none "
                                 "matched)"), detail
    finally:
        own.pages["/later"] = PAGES["/later"]


# -- what the screenshot check reads in a PNG (no browser) -------------------------------


def png(image: Image.Image, format: str = "PNG") -> bytes:
    out = io.BytesIO()
    image.save(out, format=format)
    return out.getvalue()


def test_a_picture_is_read_whole_and_its_colours_counted() -> None:
    left, top, width, height = SHOT_FRAME
    image = Image.new("RGB", (400, 300), (0, 0, 250))  # (a few steps off: tolerated)
    image.paste((255, 0, 0), (left, top, left + width, top + height))
    picture = decode_png(png(image))
    assert (picture.width, picture.height) == (400, 300)
    assert picture.share((255, 0, 0), (left, top, left + width, top + height)) == 1.0
    assert picture.share((0, 0, 255), (0, 0, 400, top)) == 1.0
    assert picture.share((255, 0, 0)) == pytest.approx(200 * 100 / (400 * 300))
    assert picture.share((0, 255, 0)) == 0.0
    assert picture.share((255, 0, 0), (500, 500, 600, 600)) == 0.0  # (no pixel there)
    colour, share = picture.main_colour()
    assert colour == "#0000fa" and share == pytest.approx(1 - 200 * 100 / (400 * 300))
    grey = decode_png(png(Image.new("L", (10, 10), 128)))  # (one channel: read as RGB)
    assert grey.main_colour() == ("#808080", 1.0)


def test_what_is_not_a_whole_png_is_a_named_error() -> None:
    whole = png(Image.new("RGB", (64, 64), (1, 2, 3)))
    with pytest.raises(ValueError, match=r"not a PNG \(it starts b'\\xff\\xd8"):
        decode_png(png(Image.new("RGB", (8, 8)), "JPEG"))
    with pytest.raises(ValueError, match="a PNG signature, then nothing Pillow can read"):
        decode_png(whole[:8] + b"\0" * 64)
    with pytest.raises(ValueError, match="a PNG that does not decode"):
        decode_png(whole[:-30])  # (cut off in its image data)


# -- replayed: the recorded page checks give the recorded verdicts ------------------------


def test_a_replay_of_the_page_checks_finds_what_was_recorded() -> None:
    """WebKit over WebDriver classic, replayed with no browser: the screenshot (its
    window's first, after two animation frames) and fill in the cross-site frame (the
    field clicked once to take the focus) give what they gave live, and the first wait
    of wait_for_selector, timed, is left to the recording."""
    trace = ROOT / "datasets" / "probes" / "webkit.native.jsonl.gz"
    result = asyncio.run(cdpnb.probe([f"replay:{trace}"], progress=False))
    found = {r.check: r for r in result.results if r.check.startswith("page.")}
    assert {name: r.status for name, r in found.items()} == {
        "page.screenshot": "ok", "page.fill": "ok", "page.wait_for_selector": "ok"}
    assert found["page.fill"].detail.endswith("in the page and in the cross-site frame")
    assert found["page.wait_for_selector"].detail == (
        f"waited for an element until the page added it, {LATE_MS} ms after it loaded "
        f"(replayed: the first wait, {NEVER_S:g} s for it before that, is timed, so not "
        "made again)")
    assert result.surprises().empty
