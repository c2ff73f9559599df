"""A screenshot over CDP: ``Page.captureScreenshot`` on the page's own session; a frame's
box is its ``<iframe>``'s content box (``DOM.getFrameOwner``, ``DOM.getBoxModel`` on the
parent's session), added up to the page's viewport, given as ``clip`` in the document's
coordinates (the visual viewport's ``pageX``/``pageY`` added: ``Page.getLayoutMetrics``).
What a screenshot is on every protocol: ``shared.screenshots``.
"""

from __future__ import annotations

from typing import Any

from cdpnb.drivers.cdp.actions import scroll_frames_into_view
from cdpnb.errors import CDPError, ElementNotClickable, UnknownFrame
from cdpnb.session.actions import page_of_frame
from cdpnb.session.budget import Budget
from cdpnb.session.core import Core
from cdpnb.session.screenshots import Box, in_view, png_of

__all__ = ["cdp_screenshot"]


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
        x, y, width, height = in_view(box, float(view.get("clientWidth", 0)),
                                       float(view.get("clientHeight", 0)), frame_id)
        params["clip"] = {"x": x + float(view.get("pageX", 0)),
                          "y": y + float(view.get("pageY", 0)),
                          "width": width, "height": height, "scale": 1}
    reply = await core.send("Page.captureScreenshot", params, page, budget.left())
    return png_of(reply.get("data"), "Page.captureScreenshot")


# -- WebDriver BiDi ---------------------------------------------------------------------


# -- WebDriver classic ------------------------------------------------------------------


