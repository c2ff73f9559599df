"""A static HTML snapshot beside every live widget.

A widget's output carries the widget view *and* ``text/html``: a live front end
shows the widget; an exported notebook, a notebook viewer or a front end without
the widget manager shows the HTML, which is what the widget showed when it was
displayed. The HTML is made of the same escaped pieces as the widgets.
"""

from __future__ import annotations

from typing import Any

__all__ = ["STATIC_STYLE", "widget_bundle"]

STATIC_STYLE = "font-family:var(--jp-ui-font-family,sans-serif);font-size:12px"


def widget_bundle(widget: Any, plain: str, html: str, **kwargs: Any) -> Any:
    """``widget``'s mime bundle with ``text/plain`` and the static ``text/html``."""
    bundle = widget._repr_mimebundle_(**kwargs)
    if isinstance(bundle, dict):  # the widget's own text is its whole child list
        bundle["text/plain"] = plain
        bundle["text/html"] = f'<div class="cdpnb-static" style="{STATIC_STYLE}">{html}</div>'
    return bundle
