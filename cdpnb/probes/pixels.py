"""What the screenshot check reads in a PNG: that it decodes whole, how big it is, and
how much of a box shows one colour.

The check's pages (``/shot``, ``/shot-frame``) are flat colours, so a screenshot that
shows them can be told from one that does not (black, blank, the wrong part of the
page) by counting pixels, with no reference image to drift.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from PIL.Image import Image

__all__ = ["Picture", "decode_png"]

#: How far a channel may stray from the colour asked for: a compositor's colour
#: conversion or dithering moves a flat colour by a few steps, never by this many.
TOLERANCE = 24

RGB = tuple[int, int, int]
#: (left, top, right, bottom) in pixels, right and bottom excluded.
Box = tuple[int, int, int, int]


@dataclass(frozen=True)
class Picture:
    """A decoded PNG, in RGB."""

    image: Image

    @property
    def width(self) -> int:
        return self.image.width

    @property
    def height(self) -> int:
        return self.image.height

    def share(self, colour: RGB, box: Box | None = None) -> float:
        """The fraction of the pixels in ``box`` (the whole picture if None) that show
        ``colour``; 0 when the box holds no pixel."""
        left, top, right, bottom = box if box is not None else (0, 0, self.width, self.height)
        left, top = max(0, left), max(0, top)
        right, bottom = min(self.width, right), min(self.height, bottom)
        if right <= left or bottom <= top:
            return 0.0
        part = self.image.crop((left, top, right, bottom))
        near = 0
        for count, pixel in part.getcolors(part.width * part.height) or ():
            rgb = pixel if isinstance(pixel, tuple) else (pixel, pixel, pixel)
            if all(abs(a - b) <= TOLERANCE for a, b in zip(rgb, colour, strict=True)):
                near += count
        return near / ((right - left) * (bottom - top))


    def main_colour(self) -> tuple[str, float]:
        """The colour most pixels show (``#rrggbb``), and their share."""
        colours = self.image.getcolors(self.width * self.height) or [(0, (0, 0, 0))]
        count, pixel = max(colours, key=lambda c: c[0])
        rgb = pixel if isinstance(pixel, tuple) else (pixel, pixel, pixel)
        return "#" + "".join(f"{v:02x}" for v in rgb[:3]), count / max(1, self.width * self.height)


def decode_png(data: bytes) -> Picture:
    """Every pixel of the PNG ``data``; ValueError saying why when it is none (no PNG
    signature, a damaged or cut-off stream)."""
    # Imported here: Pillow (a dependency, for classic's frame screenshots) is needed
    # only by the check that takes screenshots.
    from PIL import Image as PILImage
    from PIL import UnidentifiedImageError

    if not data.startswith(b"\x89PNG\r\n\x1a\n"):
        raise ValueError(f"not a PNG (it starts {data[:8]!r})")
    try:
        with PILImage.open(io.BytesIO(data)) as image:
            if image.format != "PNG":
                raise ValueError(f"not a PNG: Pillow reads it as {image.format}")
            image.load()  # (decodes every row: a damaged or cut-off stream raises here)
            rgb = image.convert("RGB")
    except UnidentifiedImageError:
        raise ValueError("a PNG signature, then nothing Pillow can read as an image") from None
    except (OSError, SyntaxError) as exc:
        raise ValueError(f"a PNG that does not decode ({exc})") from None
    return Picture(rgb)
