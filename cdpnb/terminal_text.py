"""Text cdpnb did not write, made inert for a terminal: one sanitiser for every
line the CLI and the progress bars print.

A page, an endpoint (``/json/version``'s ``Browser``) or a trace header can hold
control characters: ``ESC ] 0 ;`` retitles the terminal, ``ESC [ 2 J`` clears it,
OSC 52 writes the clipboard, a carriage return overwrites what was printed, and the
bidirectional overrides reorder what a reader sees (Trojan Source). Each becomes its
escape as text (``\\x1b``, ``\\u202e``), visible and harmless; line feeds and tabs
stay. rich strips only BEL, BS, VT, FF and CR itself. HTML output has its own escaping
(``html.escape``) and needs none of this.
"""

from __future__ import annotations

import re

__all__ = ["inert"]

#: C0 controls but tab and line feed, DEL, C1 controls, the line and paragraph
#: separators, and the bidirectional embeddings, overrides and isolates.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _shown(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def inert(text: str) -> str:
    """``text`` with every character that could steer a terminal shown as its escape.

    >>> inert("Chrome/1\\x1b]0;pwned\\x07 \\u202eevil\\r\\nnext")
    'Chrome/1\\\\x1b]0;pwned\\\\x07 \\\\u202eevil\\\\x0d\\nnext'
    """
    return _UNSAFE.sub(_shown, text) if _UNSAFE.search(text) else text
