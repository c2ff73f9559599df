"""A static HTML snapshot beside every live widget.

A widget's output carries the widget view *and* ``text/html``: a live front end
shows the widget; an exported notebook, a notebook viewer or a front end without
the widget manager shows the HTML. The HTML is made of the same escaped pieces as
the widgets, and is kept current as the view redraws (``snapshot.py``), so it shows
what the widget showed last. A view that can no longer change, or one displayed where
no widget manager draws widgets, is output as the snapshot alone (``static_bundle``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["STATIC_STYLE", "static_bundle", "widget_bundle"]

STATIC_STYLE = "font-family:var(--jp-ui-font-family,sans-serif);font-size:12px"


def _wrapped(html: str) -> str:
    return f'<div class="cdpnb-static" style="{STATIC_STYLE}">{html}</div>'


def widget_bundle(widget: Any, plain: str, html: str, **kwargs: Any) -> Any:
    """``widget``'s mime bundle with ``text/plain`` and the static ``text/html``."""
    bundle = widget._repr_mimebundle_(**kwargs)
    if isinstance(bundle, dict):  # the widget's own text is its whole child list
        bundle["text/plain"] = plain
        bundle["text/html"] = _wrapped(html)
    return bundle


def static_bundle(plain: str, html: str) -> dict[str, Any]:
    """The snapshot alone: ``text/plain`` and ``text/html``, no widget."""
    return {"text/plain": plain, "text/html": _wrapped(html)}
