"""``Supervisor.screenshot``: a PNG of the page's viewport, or of one frame's box in it,
over each protocol.

- CDP: ``Page.captureScreenshot`` on the page's own session; a frame's box is its
  ``<iframe>``'s content box (``DOM.getFrameOwner``, ``DOM.getBoxModel`` on the
  parent's session), added up to the page's viewport, given as ``clip`` in the
  document's coordinates (the visual viewport's ``pageX``/``pageY`` added:
  ``Page.getLayoutMetrics``).
- WebDriver BiDi: ``browsingContext.captureScreenshot`` of the tab (a frame is no
  top-level context, which the command needs), ``clip`` the frame's box in the
  viewport, measured from the sandbox realm.
- WebDriver classic: ``GET /screenshot`` of the window; a frame's is cut from it at
  the frame's box (read by script in each parent frame). A window's first one waits
  for the window to have drawn a frame (two animation frames of its document).

A frame and its ancestors are scrolled into view first; the part of its box outside
the viewport is left out (a PNG shows what the page shows).
"""

from __future__ import annotations

import base64
import binascii
import io
from typing import Any

from cdpnb.errors import CDPError, ElementNotClickable, UnknownFrame
from cdpnb.protocol.classic import frame_path
from cdpnb.supervisor.actions import page_of_frame, scroll_frames_into_view
from cdpnb.supervisor.bidi_actions import frame_box
from cdpnb.supervisor.core import Core
from cdpnb.supervisor.evaluation import Budget

__all__ = ["PNG_SIGNATURE", "bidi_screenshot", "cdp_screenshot", "classic_screenshot",
           "png_of"]

#: What every PNG starts with.
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
Box = tuple[float, float, float, float]


def png_of(data: object, where: str) -> bytes:
    """The PNG that ``data`` (base64, as every protocol sends it) holds."""
    try:
        png = base64.b64decode(str(data), validate=True)
    except (binascii.Error, ValueError):
        png = b""
    if not png.startswith(PNG_SIGNATURE):
        raise CDPError(-32000, f"{where} sent no PNG", "screenshot")
    return png


def _in_view(box: Box, width: float, height: float, frame_id: str) -> Box:
    x, y, w, h = box
    left, top = max(0.0, x), max(0.0, y)
    right, bottom = min(width, x + w), min(height, y + h)
    if right - left < 1 or bottom - top < 1:
        raise ElementNotClickable(f"frame {frame_id} has no visible area in the page's "
                                  "viewport to take a screenshot of")
    return left, top, right - left, bottom - top


# -- CDP --------------------------------------------------------------------------------

async def _cdp_frame_box(core: Core, frame_id: str, budget: Budget) -> Box:
    """Frame ``frame_id``'s content box in its page's viewport (CSS pixels).

    Measured on Chromium 156: the box of an element, read on the session that renders
    it, is in that session's viewport, however deep in in-process frames it is; so an
    ``<iframe>``'s box read on its parent's session places the frame in that session's
    viewport, and the session's own root frame (an OOPIF) is placed the same way in
    its parent's, up to the page."""
    state = core.state
    x = y = 0.0
    size: tuple[float, float] | None = None
    frame = state.frames.get(frame_id)
    while frame is not None and frame.parent_frame_id is not None:
        parent = state.frames.get(frame.parent_frame_id)
        if parent is None:
            break
        try:
            owner = await core.send("DOM.getFrameOwner", {"frameId": frame.frame_id},
                                    parent.session_id, budget.left())
            model = await core.send("DOM.getBoxModel",
                                    {"backendNodeId": owner["backendNodeId"]},
                                    parent.session_id, budget.left())
        except CDPError as exc:
            raise ElementNotClickable(f"frame {frame_id} has no box on its page to take a "
                                      f"screenshot of ({exc.message})") from None
        content = [float(v) for v in model["model"]["content"]]
        if size is None:
            size = (content[2] - content[0], content[5] - content[1])
        x, y = x + content[0], y + content[1]
        # On to the root frame of the parent's session (the page, or an OOPIF).
        root = parent
        while root.parent_frame_id is not None:
            above = state.frames.get(root.parent_frame_id)
            if above is None or above.session_id != root.session_id:
                break
            root = above
        frame = root
    if size is None:
        raise UnknownFrame(f"frame {frame_id} has no parent frame to place it in")
    return x, y, size[0], size[1]


async def cdp_screenshot(core: Core, frame_id: str | None, budget: Budget) -> bytes:
    state = core.state
    page = page_of_frame(state, frame_id)
    params: dict[str, Any] = {"format": "png"}
    frame = state.frames.get(frame_id or "")
    if frame is not None and frame.parent_frame_id is not None:
        assert frame_id is not None
        await scroll_frames_into_view(core, frame_id, budget)
        box = await _cdp_frame_box(core, frame_id, budget)
        metrics = await core.send("Page.getLayoutMetrics", {}, page, budget.left())
        view = metrics.get("cssVisualViewport") or {}
        x, y, width, height = _in_view(box, float(view.get("clientWidth", 0)),
                                       float(view.get("clientHeight", 0)), frame_id)
        params["clip"] = {"x": x + float(view.get("pageX", 0)),
                          "y": y + float(view.get("pageY", 0)),
                          "width": width, "height": height, "scale": 1}
    reply = await core.send("Page.captureScreenshot", params, page, budget.left())
    return png_of(reply.get("data"), "Page.captureScreenshot")


# -- WebDriver BiDi ---------------------------------------------------------------------

async def bidi_screenshot(core: Core, context: str, tab: str, budget: Budget) -> bytes:
    """The tab ``tab``'s viewport, or frame ``context``'s box in it."""
    params: dict[str, Any] = {"context": tab, "origin": "viewport",
                              "format": {"type": "image/png"}}
    if context != tab:
        box = await frame_box(core, context, budget)
        if box is None:
            raise ElementNotClickable(f"frame {context}'s element could not be found in "
                                      "its parent (a shadow root?) to take a screenshot of")
        size = await core.send("script.evaluate", {
            "expression": "[innerWidth, innerHeight]", "awaitPromise": False,
            "target": {"context": tab, "sandbox": "cdpnb"}}, timeout=budget.left())
        width, height = (float(v["value"]) for v in size["result"]["value"])
        x, y, w, h = _in_view(box, width, height, context)
        params["clip"] = {"type": "box", "x": x, "y": y, "width": w, "height": h}
    reply = await core.send("browsingContext.captureScreenshot", params,
                            timeout=budget.left())
    return png_of(reply.get("data"), "browsingContext.captureScreenshot")


# -- WebDriver classic ------------------------------------------------------------------

#: The i-th frame of this document (``window.frames[i]``) scrolled into view unless its
#: element's box is in view already; its content box then (x, y, width, height in this
#: frame's viewport), or null.
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
        x, y, width, height = _in_view(box, image.width / scale, image.height / scale,
                                       frame_id)
        part = image.crop((round(x * scale), round(y * scale), round((x + width) * scale),
                           round((y + height) * scale)))
        out = io.BytesIO()
        part.save(out, format="PNG")
    return out.getvalue()
