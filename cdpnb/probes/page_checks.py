"""The probe's page checks: a screenshot of a page and of its cross-site frame, fill in
the page and in a cross-site frame, wait_for_selector timing out and then finding an
element the page adds. Each does the work and looks at the result: the PNGs decoded and
their colours found where the page (``/shot``) puts them, the text read back by the
page's own ``input`` listener (``/fill``), the element there once the wait returned
(``/later``); the pages are ``cdpnb.probes.server``'s."""

from __future__ import annotations

from cdpnb.errors import CdpnbError, WaitTimeout
from cdpnb.playback.script import is_replay_url
from cdpnb.probes.basics import Outcome, Site, frame_at, needs_page, within
from cdpnb.probes.pixels import Picture, decode_png
from cdpnb.supervisor import Supervisor

__all__ = ["FILL_FOR_S", "FILL_TEXT", "LATE_MS", "LOOK_FOR_S", "NEVER_S", "SHOT_FRAME",
           "fill", "screenshot", "wait_for_selector"]


#: The screenshot page's colours, and where its cross-site frame is (CSS px: left, top,
#: width, height; see ``/shot`` in cdpnb.probes.server).
PAGE_BLUE = (0, 0, 255)
FRAME_RED = (255, 0, 0)
SHOT_FRAME = (40, 40, 200, 100)
#: How much of a box must show its colour: a few pixels of a frame's edge may be
#: blended (antialiasing, a scaled screenshot), a wrong picture misses by far.
MOSTLY = 0.9


def _size_problem(picture: Picture, width: float, height: float, what: str) -> str | None:
    """Why ``picture`` is not ``width`` × ``height`` CSS px at one scale (its pixels per
    CSS px, 0.5 to 4, as a device pixel ratio may be), or None."""
    scale = picture.width / width if width > 0 else 0.0
    if not 0.5 <= scale <= 4 or abs(picture.height - height * scale) > max(2.0, scale):
        return (f"{what} is {picture.width}×{picture.height} px, not {width:g}×{height:g} "
                "CSS px at one scale")
    return None


def _page_shot_problem(picture: Picture, view: list[float]) -> str | None:
    """Why ``picture`` is not the ``/shot`` page's viewport (``view``: innerWidth,
    innerHeight), or None."""
    width, height = view
    problem = _size_problem(picture, width, height, "the page's screenshot")
    if problem is not None:
        return problem
    scale = picture.width / width
    left, top, w, h = (round(v * scale) for v in SHOT_FRAME)
    above = picture.share(PAGE_BLUE, (0, 0, picture.width, top))
    inside = picture.share(FRAME_RED, (left + 2, top + 2, left + w - 2, top + h - 2))
    if above < MOSTLY or inside < MOSTLY:
        colour, share = picture.main_colour()
        return (f"the page's screenshot does not show the page: {above:.0%} of the strip "
                f"above the frame is the page's blue, {inside:.0%} of the frame's box the "
                f"frame's red ({share:.0%} of the {picture.width}×{picture.height} picture "
                f"is {colour})")
    return None


def _frame_shot_problem(picture: Picture, scale: float) -> str | None:
    """Why ``picture`` is not the ``/shot-frame`` frame's box at the page's ``scale``
    (its screenshot's pixels per CSS px), or None."""
    width, height = SHOT_FRAME[2] * scale, SHOT_FRAME[3] * scale
    if abs(picture.width - width) > max(2.0, scale) or abs(picture.height - height) > max(
            2.0, scale):
        return (f"the frame's screenshot is {picture.width}×{picture.height} px, not its "
                f"box's {width:g}×{height:g}")
    red = picture.share(FRAME_RED)
    if red < MOSTLY:
        return f"the frame's screenshot is {red:.0%} the frame's red, not all of it"
    return None


async def screenshot(sup: Supervisor, site: Site) -> Outcome:
    """A PNG of the page, then of its cross-site frame, each decoded and looked at."""
    needs_page(sup)
    await sup.navigate(site.url("/shot"), timeout=within(10))
    frame_id = await frame_at(sup, site.url("/shot-frame", "b"), "the cross-site frame")
    view = await sup.evaluate("() => [innerWidth, innerHeight]", timeout=within(5))
    if not (isinstance(view, list) and len(view) == 2
            and all(isinstance(v, int | float) and v > 0 for v in view)):
        return "fail", f"the page's [innerWidth, innerHeight] is {view!r}, no size", None
    try:
        page = decode_png(await sup.screenshot(timeout=within(10)))
    except (CdpnbError, ValueError) as exc:
        return "fail", f"no screenshot of the page: {type(exc).__name__}: {exc}", None
    problem = _page_shot_problem(page, view)
    if problem is not None:
        return "fail", problem, None
    said = (f"a {page.width}×{page.height} PNG of the page's viewport, the page and its "
            "cross-site frame where they are")
    try:
        frame = decode_png(await sup.screenshot(frame_id, timeout=within(10)))
    except (CdpnbError, ValueError) as exc:
        return ("partial", f"{said}; none of the cross-site frame: {type(exc).__name__}: "
                f"{exc}", None)
    problem = _frame_shot_problem(frame, page.width / view[0])
    if problem is not None:
        return "partial", f"{said}; but {problem}", None
    return "ok", f"{said}; a {frame.width}×{frame.height} PNG of the cross-site frame alone", None


#: What the fill check types (over the field's "old").
FILL_TEXT = "Ada Lovelace 1843"
#: How long a fill may look for a field that takes the text (one that succeeds takes a
#: look or two; WebKit's in a cross-site frame never does). Fixed, not stretched
#: (``within``): see :func:`_looking`.
FILL_FOR_S = 2.0
#: How long, replayed, a fill or a wait for an element that comes may look.
REPLAYED_LOOKS_S = 20.0


def _looking(sup: Supervisor, seconds: float) -> float:
    """The budget of a fill or a wait whose looks are counted by the clock: ``seconds``
    live; replayed, REPLAYED_LOOKS_S. A replay answers each look with the recorded one:
    one look more than the recording made gets no reply (an error, which ends a fill
    that never succeeds at once, with the verdict it had), one fewer leaves a recorded
    command never sent, which holds the replay up at it
    (``cdpnb.playback.server.REORDER_GRACE_S``) and every check after with it. Its looks
    come at its own pace, which beside a dozen other replays in one process was over
    0.4 s a look (measured: within the 5 s the recording had, a replay made too few,
    and the checks after it ran out of time)."""
    return REPLAYED_LOOKS_S if is_replay_url(sup.endpoint) else seconds


async def _filled(sup: Supervisor, frame_id: str | None) -> str | None:
    """Fill the ``/fill`` page's field (in ``frame_id``) and read it back through the
    page's own listener: None, or what went wrong."""
    try:
        await sup.fill("#field", FILL_TEXT, frame_id=frame_id,
                       timeout=_looking(sup, FILL_FOR_S))
    except CdpnbError as exc:
        return f"fill raised {type(exc).__name__}: {exc}"
    got = await sup.evaluate("() => [window.typed, document.getElementById('field').value]",
                             frame_id=frame_id, timeout=within(5))
    if got != [FILL_TEXT, FILL_TEXT]:
        heard, holds = got if isinstance(got, list) and len(got) == 2 else (got, None)
        return (f"the page's input listener read {heard!r} and the field holds {holds!r}, "
                f"not {FILL_TEXT!r}")
    return None


async def fill(sup: Supervisor, site: Site) -> Outcome:
    """Type over a field's text, in the page and in its cross-site frame; the page's own
    script reads it back."""
    needs_page(sup)
    await sup.navigate(site.url("/fill"), timeout=within(10))
    frame_id = await frame_at(sup, site.url("/fill-frame", "b"), "the cross-site frame")
    problem = await _filled(sup, None)
    if problem is not None:
        return "fail", f"in the page: {problem}", None
    problem = await _filled(sup, frame_id)
    if problem is not None:
        return "partial", f"the page's field ✓; in the cross-site frame: {problem}", None
    return "ok", ("typed over the field's old text, read back by the page's own input "
                  "listener, in the page and in the cross-site frame"), None


#: When the ``/later`` page adds ``#late``: ms after its script ran, as it loaded.
LATE_MS = 2000
#: How long the check first waits for ``#late``, well before the page adds it.
NEVER_S = 0.5
#: How long it then may wait for it to come (some 1.5 s in: about a dozen looks);
#: replayed, longer (:func:`_looking`).
LOOK_FOR_S = 5.0


async def wait_for_selector(sup: Supervisor, site: Site) -> Outcome:
    """Time out, with the named error, waiting for an element the page has not added;
    then wait for it until the page adds it, LATE_MS after it loaded.

    Replayed, the first wait is not made: its looks are counted by the clock, and a
    replay's clock is not the browser's. Beside other replays a replay's event loop
    stalls (up to 1.7 s, measured: recordings loading), which ends a 0.5 s wait after
    other looks than the recording's, or cuts one short after its first command (over
    CDP a look is two: Page.createIsolatedWorld, then Runtime.evaluate); each recorded
    look left over then held the replay up 2 s, and each one cut short shifted every
    look after it by one, which cost 2 s a look. So both waits look for the same
    selector, with nothing between them: their looks are the same commands from first
    to last, and a replay's one wait takes every recorded answer in turn, the first
    wait's "none matched" too, until the one that found it (so a replay's verdict is
    the second wait's: a first wait that returned is found live only).
    """
    needs_page(sup)
    await sup.navigate(site.url(f"/later?ms={LATE_MS}"), timeout=within(10))
    replayed = is_replay_url(sup.endpoint)
    early: str | None = None
    if not replayed:
        try:
            await sup.wait_for_selector("#late", timeout=NEVER_S)
        except WaitTimeout:
            pass
        except CdpnbError as exc:
            early = f"{type(exc).__name__}: {exc}, not WaitTimeout"
        else:
            early = "it returned"
    try:
        await sup.wait_for_selector("#late", timeout=_looking(sup, LOOK_FOR_S))
    except CdpnbError as exc:
        return ("fail", f"waiting for an element the page adds {LATE_MS} ms after it loads "
                f"raised {type(exc).__name__}: {exc}", None)
    if not await sup.evaluate("() => document.getElementById('late') !== null",
                              timeout=within(5)):
        return "fail", "wait_for_selector('#late') returned, but the page has no #late", None
    said = f"waited for an element until the page added it, {LATE_MS} ms after it loaded"
    if replayed:
        return "ok", (f"{said} (replayed: the first wait, {NEVER_S:g} s for it before that, "
                      "is timed, so not made again)"), None
    if early is not None:
        return ("partial", f"{said}; but waiting {NEVER_S:g} s for it before that: {early}",
                None)
    return "ok", (f"WaitTimeout after {NEVER_S:g} s for an element the page had not added; "
                  f"then {said}"), None
