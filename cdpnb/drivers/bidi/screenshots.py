"""A screenshot over WebDriver BiDi: ``browsingContext.captureScreenshot`` of the tab (a
frame is no top-level context, which the command needs), ``clip`` the frame's box in the
viewport, measured from the sandbox realm."""

from __future__ import annotations

from typing import Any

from cdpnb.drivers.bidi.actions import frame_box
from cdpnb.errors import ElementNotClickable
from cdpnb.session.budget import Budget
from cdpnb.session.core import Core
from cdpnb.session.screenshots import in_view, png_of

__all__ = ["bidi_screenshot"]


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
        x, y, w, h = in_view(box, width, height, context)
        params["clip"] = {"type": "box", "x": x, "y": y, "width": w, "height": h}
    reply = await core.send("browsingContext.captureScreenshot", params,
                            timeout=budget.left())
    return png_of(reply.get("data"), "browsingContext.captureScreenshot")
