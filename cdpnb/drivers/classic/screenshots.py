"""A screenshot over WebDriver classic: ``GET /screenshot`` of the window; a frame's is cut
from it at the frame's box (read by script in each parent frame). A window's first one
waits for the window to have drawn a frame (two animation frames of its document)."""

from __future__ import annotations

import io

from cdpnb.errors import CDPError, ElementNotClickable
from cdpnb.protocol.classic import frame_path
from cdpnb.session.budget import Budget
from cdpnb.session.core import Core
from cdpnb.session.screenshots import Box, in_view, png_of

__all__ = ["FRAMES_CAP_MS", "classic_screenshot"]


#: The i-th frame of this document (``window.frames[i]``) scrolled into view unless its
#: element's box is in view already; its content box then (x, y, width, height in this
#: frame's viewport), or null. (BiDi's ``_SCROLL_FRAME`` is the same box read from the
#: frame's element; the two stay as they are, byte for byte: a replay finds its recorded
#: reply by the script sent, so the recorded traces in ``datasets/`` need this text.)
_FRAME_BOX = """const owner = Array.from(document.querySelectorAll("iframe, frame"))
  .find(f => f.contentWindow === window.frames[arguments[0]]);
if (!owner) return null;
let r = owner.getBoundingClientRect();
if (!(r.left >= 0 && r.top >= 0 && r.right <= innerWidth && r.bottom <= innerHeight)) {
  owner.scrollIntoView({block: "center", inline: "center", behavior: "instant"});
  r = owner.getBoundingClientRect();
}
const style = getComputedStyle(owner);
const left = parseFloat(style.paddingLeft), top = parseFloat(style.paddingTop);
return [r.left + owner.clientLeft + left, r.top + owner.clientTop + top,
        owner.clientWidth - left - parseFloat(style.paddingRight),
        owner.clientHeight - top - parseFloat(style.paddingBottom), innerWidth];"""


#: Resolves true once the document has run two animation frames (the first one's
#: rendering then went out), false after FRAMES_CAP_MS without them (a window that
#: renders none, hidden or minimized, is still screenshot, only not marked drawn).
_TWO_FRAMES = """return new Promise(done => {
  const late = setTimeout(() => done(false), %d);
  requestAnimationFrame(() => requestAnimationFrame(() => { clearTimeout(late); done(true); }));
});"""


#: How long a window's first screenshot waits for its first frames at most (ms).
#: Measured in fresh MiniBrowser windows: the first animation frame came 1-200 ms
#: after the load.
FRAMES_CAP_MS = 2000


async def _drawn_once(core: Core, window: str, budget: Budget) -> bool:
    """Wait until ``window`` has drawn a frame (see ``classic_screenshot``): True once
    it has, False when it ran none within FRAMES_CAP_MS or could not be asked (a dialog
    open, a page whose script broke the wait: the screenshot says what it can)."""
    try:
        reply = await core.send("classic.executeScript", {
            "script": _TWO_FRAMES % FRAMES_CAP_MS, "args": [], "window": window},
            timeout=budget.left())
    except CDPError:
        return False
    return reply.get("value") is True


async def classic_screenshot(core: Core, window: str, frame_id: str | None,
                             budget: Budget, drawn: set[str] | None = None) -> bytes:
    """The window's screenshot; for a frame, the part of it the frame's box covers.

    Measured on WebKitWebDriver 2.50: the element screenshot of an ``<iframe>`` is
    black, and one of the frame's root element covers its content only (not its
    viewport); so a frame's is cut from the window's, at its box (each parent's
    ``<iframe>`` content box, added up), scaled by the screenshot's pixels per CSS
    pixel.

    Measured on WebKitWebDriver 2.50.6 (MiniBrowser under Xvfb): ``GET /screenshot``
    in a fresh window's first fraction of a second is all white, whatever the page
    (right after the window's first navigation: 10 launches of 10; after ``/blank``
    then ``/shot``: 8 of 22), though the load is complete and the document visible
    and focused; the PNG is the same as a white page's (nothing tells the two
    apart), a second one 50-200 ms later shows the page, and so does the first one
    taken 0.3 s after the load, or once the page's ``first-contentful-paint`` entry
    is there (it comes 30-200 ms after the load), or once the document ran two
    animation frames (34 of 34, at machine loads up to 13: the first frame came
    1-200 ms after the load). Once a window has drawn, a screenshot shows the
    latest DOM at once (after a style change: 16 of 16, chromedriver 156 too; after
    a navigation: 42 of 42). So the first screenshot of each window (``drawn``: the
    windows that drew a frame already, updated here) waits for two animation frames
    first: no retry, so a page that is white is screenshot as fast, white."""
    handle, path = frame_path(frame_id) if frame_id is not None else (window, [])
    if drawn is not None and handle not in drawn and await _drawn_once(core, handle, budget):
        drawn.add(handle)
    box: list[float] | None = None
    top_width = 0.0
    for depth in range(len(path), 0, -1):
        found = (await core.send("classic.executeScript", {
            "script": _FRAME_BOX, "args": [path[depth - 1]], "window": handle,
            "frame": path[:depth - 1]}, timeout=budget.left())).get("value")
        if not isinstance(found, list) or len(found) != 5:
            raise ElementNotClickable(f"frame {frame_id}'s element could not be found in "
                                      "its parent to take a screenshot of")
        x, y, width, height, top_width = (float(v) for v in found)
        box = [x, y, width, height] if box is None else [box[0] + x, box[1] + y, *box[2:]]
    reply = await core.send("classic.takeScreenshot", {"window": handle},
                            timeout=budget.left())
    png = png_of(reply.get("value"), "WebDriver classic's screenshot")
    if box is None:
        return png
    assert frame_id is not None
    return _cut(png, (box[0], box[1], box[2], box[3]), top_width, frame_id)


def _cut(png: bytes, box: Box, css_width: float, frame_id: str) -> bytes:
    """The part of ``png`` (a viewport ``css_width`` CSS pixels wide) under ``box``."""
    # Imported here: only a frame's screenshot over classic needs an image library
    # (Pillow, which matplotlib brings too).
    from PIL import Image

    with Image.open(io.BytesIO(png)) as image:
        scale = image.width / css_width if css_width > 0 else 1.0
        x, y, width, height = in_view(box, image.width / scale, image.height / scale,
                                       frame_id)
        part = image.crop((round(x * scale), round(y * scale), round((x + width) * scale),
                           round((y + height) * scale)))
        out = io.BytesIO()
        part.save(out, format="PNG")
    return out.getvalue()
