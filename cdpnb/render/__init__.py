"""Bounded, escaped text and HTML for reprs and widgets.

A leaf package (stdlib only, nothing from the rest of cdpnb) so every layer, the
sans-I/O ones included, can render itself without reaching up. Everything that comes
from a page (dialog messages, URLs, console text, frame names) is untrusted: it goes
through :func:`text` or :func:`cell`, which escape it, and is cut to a length so one
huge message cannot blow up a notebook.

Here are the pieces; :mod:`cdpnb.render.state` draws the state's models (dialogs,
frame trees, snapshots) with them, from the attributes it is given, so that the models
can call it and it never imports them.
"""

from __future__ import annotations

import datetime as _dt
import html
from collections.abc import Iterable, Sequence

__all__ = [
    "CSS",
    "MAX_ROWS",
    "MAX_TEXT",
    "WRAP",
    "badge",
    "cell",
    "clip",
    "short_repr",
    "table",
    "text",
    "when",
]

#: Characters of one untrusted string shown in HTML or a repr before it is cut.
MAX_TEXT = 160
#: Rows of one HTML table before the rest are summarised as "… N more".
MAX_ROWS = 20

CSS = ("font-family:var(--jp-code-font-family,monospace);font-size:12px;"
       "border-collapse:collapse")
#: Text that wraps at spaces (and inside a word only if the word alone is too wide), at
#: a normal line height: widgets' HTML areas neither wrap nor keep a normal height.
WRAP = "white-space:normal;overflow-wrap:break-word;line-height:1.3"
#: Cells up to this many characters never wrap.
SHORT = 16


def clip(value: object, limit: int = MAX_TEXT) -> str:
    """``str(value)`` cut to ``limit`` characters, with ``…`` when cut."""
    s = "" if value is None else str(value)
    return s if len(s) <= limit else s[: max(0, limit - 1)] + "…"


def text(value: object, limit: int = MAX_TEXT) -> str:
    """Escaped, clipped text: safe inside an element or an attribute value."""
    return html.escape(clip(value, limit), quote=True)


def short_repr(value: object, limit: int = 60) -> str:
    """``repr`` of a clipped string, for plain ``__repr__``s (control chars visible)."""
    return repr(clip(value, limit))


def when(epoch_s: float | None) -> str:
    """Wall time as ``HH:MM:SS.mmm`` UTC (``""`` for None)."""
    if epoch_s is None:
        return ""
    t = _dt.datetime.fromtimestamp(epoch_s, _dt.UTC)
    return t.strftime("%H:%M:%S.") + f"{t.microsecond // 1000:03d}"


def badge(label: str, colour: str = "#555") -> str:
    """A small coloured label; ``label`` is escaped."""
    return (f'<span style="background:{html.escape(colour)};color:#fff;border-radius:3px;'
            f'padding:0 4px;font-size:11px">{text(label, 40)}</span>')


def cell(value: object, limit: int = MAX_TEXT) -> str:
    """A table cell with escaped content; the full value (clipped) as its title."""
    shown = text(value, limit)
    # white-space:normal: a widget's HTML area does not wrap by itself, and a long
    # reason would otherwise be cut at the edge of the notebook.
    # Short values (ids, types, times) stay on one line; long ones (messages, URLs) wrap.
    wrap = WRAP if len(clip(value, limit)) > SHORT else "white-space:nowrap;line-height:1.3"
    return (f'<td style="padding:1px 6px;text-align:left;vertical-align:top;{wrap}" '
            f'title="{text(value, 1000)}">{shown}</td>')


def table(columns: Sequence[str], rows: Iterable[Sequence[object]], *,
          max_rows: int = MAX_ROWS, total: int | None = None,
          raw_columns: frozenset[int] = frozenset()) -> str:
    """An HTML table of escaped cells, at most ``max_rows`` rows.

    ``raw_columns`` are indexes of columns whose values are already HTML made by
    this module (badges); they must never hold page text. ``total`` is the number
    of rows there really are, when ``rows`` is already cut.
    """
    head = "".join(f'<th style="padding:1px 6px;text-align:left;{WRAP}">{text(c, 40)}</th>'
                   for c in columns)
    body: list[str] = []
    shown = 0
    seen = 0
    for row in rows:
        seen += 1
        if shown >= max_rows:
            continue
        cells = "".join(f'<td style="padding:1px 6px">{v}</td>' if i in raw_columns
                        else cell(v) for i, v in enumerate(row))
        body.append(f"<tr>{cells}</tr>")
        shown += 1
    more = max(total if total is not None else seen, seen) - shown
    if more > 0:
        body.append(f'<tr><td colspan="{len(columns)}" style="padding:1px 6px;color:#777;'
                    f'text-align:left">… {more} more</td></tr>')
    if not body:
        body.append(f'<tr><td colspan="{len(columns)}" style="padding:1px 6px;color:#777;'
                    'text-align:left">none</td></tr>')
    return (f'<table style="{CSS}"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table>')
