"""What the page-control and input calls return: small frozen dataclasses, the same on
every protocol (``navigate``/``reload``, ``click``, ``set_content``, ``close_page``).

Each also reads as the dict it replaced (``result["frame_id"]``), so code written
against the old ``dict[str, Any]`` keeps working; attributes are the typed way.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

__all__ = ["ClickResult", "ClosePageResult", "NavigateResult", "SetContentResult"]


class _Readable:
    """``result["name"]`` reads the field ``name`` (a KeyError names the fields)."""

    def __getitem__(self, key: str) -> Any:
        names = [f.name for f in fields(self)]  # type: ignore[arg-type]
        if key not in names:
            raise KeyError(f"{key!r} (a {type(self).__name__} has {', '.join(names)})")
        return getattr(self, key)


@dataclass(frozen=True)
class NavigateResult(_Readable):
    """A navigation (or reload) that loaded: the URL asked for, the frame it loaded in
    (the page's top frame unless ``frame_id=`` named another) and the new document's
    loader id (CDP's ``loaderId``, BiDi's navigation id; None over WebDriver classic,
    which names none, and for a same-document navigation)."""

    url: str | None
    frame_id: str | None
    loader_id: str | None = None


@dataclass(frozen=True)
class ClickResult(_Readable):
    """A click: what was clicked (``selector`` or ``ref``; both None for a point),
    where (``x``, ``y`` in CSS pixels of ``frame_id``'s viewport) and the dialog the
    click opened (``dialog_id``, None when it opened none)."""

    frame_id: str | None
    x: float
    y: float
    dialog_id: str | None = None
    selector: str | None = None
    ref: str | None = None


@dataclass(frozen=True)
class SetContentResult(_Readable):
    """``set_content``: the frame whose document was replaced, whether its load came
    (``loaded``), and the dialog the new content opened and left to you, which ended
    the wait before the load (``dialog_id``)."""

    frame_id: str | None
    loaded: bool
    dialog_id: str | None = None


@dataclass(frozen=True)
class ClosePageResult(_Readable):
    """``close_page``: the page (its target id), whether it closed, and the
    beforeunload dialog that holds the close (``dialog_id``), if one does."""

    page: str | None
    closed: bool
    dialog_id: str | None = None
