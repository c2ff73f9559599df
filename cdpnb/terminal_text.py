"""Text cdpnb did not write, made inert for a terminal: one sanitiser for every
line the CLI, the progress bars and the plain-text reprs print.

A page, an endpoint (``/json/version``'s ``Browser``) or a trace header can hold
control characters: ``ESC ] 0 ;`` retitles the terminal, ``ESC [ 2 J`` clears it,
OSC 52 writes the clipboard, a lone C1 byte (``\\x9b`` is CSI, ``\\x9d`` OSC) does the
same on terminals that read 8-bit controls, a carriage return overwrites what was
printed, and the bidirectional overrides and marks reorder what a reader sees (Trojan
Source). Each becomes its escape as text (``\\x1b``, ``\\u202e``): visible, so a reader
sees something was there, and harmless; what follows an ESC (``]0;title``) stays as
the plain text it then is. Line feeds and tabs stay. A lone surrogate (a JSON string can
hold one) is shown the same way, where printing it would raise UnicodeEncodeError.

:func:`inert` is for text; :func:`inert_json` for a JSON document (``json.dumps``
escapes C0 itself but leaves DEL, C1, the bidi controls and lone surrogates raw when
``ensure_ascii=False``): there each becomes a ``\\uXXXX`` escape, so the document still
parses to the same strings. HTML output has its own escaping (``html.escape``).
"""

from __future__ import annotations

import re

__all__ = ["UNSAFE", "inert", "inert_json"]

#: What a terminal must not receive raw from text cdpnb did not write: C0 controls but
#: tab and line feed, DEL, C1 controls, the line and paragraph separators, the bidi
#: marks, embeddings, overrides and isolates (U+061C, U+200E/F, U+202A-E, U+2066-9),
#: the invisible ones that hide text (zero-width space, word joiner and invisible
#: operators, BOM, interlinear annotation) and lone surrogates. Zero-width (non-)joiners
#: stay: emoji and scripts need them.
UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b\u200e\u200f\u2028\u2029\u202a-\u202e"
    "\u2060-\u2064\u2066-\u2069\ufeff\ufff9-\ufffb\ud800-\udfff]")


def _shown(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _json_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def inert(text: str) -> str:
    """``text`` with every character that could steer a terminal shown as its escape.

    >>> inert("Chrome/1\\x1b]0;pwned\\x07 \\u202eevil\\x9b2J\\r\\nnext")
    'Chrome/1\\\\x1b]0;pwned\\\\x07 \\\\u202eevil\\\\x9b2J\\\\x0d\\nnext'
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return UNSAFE.sub(_shown, text) if UNSAFE.search(text) else text


def inert_json(document: str) -> str:
    """A JSON document (``json.dumps(..., ensure_ascii=False)``) with every character
    :data:`UNSAFE` names written as its ``\\uXXXX`` escape: the same JSON, inert.

    >>> inert_json('{"Browser": "Chrome/1\\u202e\\x9b"}')
    '{"Browser": "Chrome/1\\\\u202e\\\\u009b"}'
    """
    if not isinstance(document, str):
        raise TypeError(f"document must be a str, got {type(document).__name__}")
    return UNSAFE.sub(_json_escape, document) if UNSAFE.search(document) else document
