"""What a screenshot is on every protocol (``Supervisor.screenshot``): a PNG of the page's
viewport, or of one frame's box in it. A frame and its ancestors are scrolled into view
first; the part of its box outside the viewport is left out (a PNG shows what the page
shows). How each protocol takes one is in its room's ``screenshots``."""

from __future__ import annotations

import base64
import binascii

from cdpnb.errors import CDPError, ElementNotClickable

__all__ = ["PNG_SIGNATURE", "Box", "in_view", "png_of"]


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


def in_view(box: Box, width: float, height: float, frame_id: str) -> Box:
    x, y, w, h = box
    left, top = max(0.0, x), max(0.0, y)
    right, bottom = min(width, x + w), min(height, y + h)
    if right - left < 1 or bottom - top < 1:
        raise ElementNotClickable(f"frame {frame_id} has no visible area in the page's "
                                  "viewport to take a screenshot of")
    return left, top, right - left, bottom - top
