"""Which recorded payloads are already the text the tables show.

A table's ``payload`` is compact JSON as Python writes it (``json.dumps`` with
``separators=(",", ":")``, ``ensure_ascii=False``) of the parsed value. Most recorded
payloads are that text byte for byte (Chrome, Node and cdpnb write compact JSON with
shortest round-trip numbers), and the columnar tables show them as they are; this
module finds, over a block of payloads at once (numpy, no Python per row), every
payload that may differ, and those are parsed and written again:

- a ``\\u`` or ``\\/`` escape (Python writes the character itself);
- a control byte, or a space next to ``{ } [ ] : ,`` outside a string;
- a number Python would spell otherwise: an exponent, ``-0``, a trailing zero in the
  fraction, below 1e-4 or from 1e16 up (Python switches to an exponent), or sixteen
  digits and more that do not read back to the same text (msgspec, which spells floats
  as Python does in that range, is the judge).

A payload that repeats a key in one object is the one case not looked for: JSON leaves
its meaning open, Python keeps the last value, and no CDP peer sends one.
"""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec
import numpy as np

__all__ = ["canonical_buffer", "encode_json", "escape_surrogates", "noncanonical"]

Bytes = np.ndarray[Any, np.dtype[np.uint8]]
Ints = np.ndarray[Any, np.dtype[np.int64]]


def _table(chars: bytes) -> np.ndarray[Any, np.dtype[np.bool_]]:
    table = np.zeros(256, np.bool_)
    table[list(chars)] = True
    return table


_DIGIT = _table(b"0123456789")
_STRUCTURAL = _table(b"{}[]:,")
_BEFORE_NUMBER = _table(b":,[")
_AFTER_NUMBER = _table(b",}]")
_EXPONENT_NEXT = _table(b"0123456789+-")
_FLOATS = msgspec.json.Decoder(list[float])
_ENCODE = msgspec.json.encode
#: Tokens with this many digits or more are read back to check they are the shortest.
_CHECK_DIGITS = 16


def noncanonical(raw: bytes, offsets: Ints) -> np.ndarray[Any, np.dtype[np.bool_]]:
    """One flag per row: its payload ``raw[offsets[i]:offsets[i + 1]]`` may not be the
    text Python writes for its value."""
    rows = len(offsets) - 1
    flags = np.zeros(rows, np.bool_)
    if not raw:
        return flags
    b = np.frombuffer(raw, np.uint8)
    suspects, backslashed = _escapes(b)
    suspects.extend(_spaces(b, raw, offsets, backslashed))
    suspects.extend(_numbers(b))
    for where in suspects:
        flags[np.searchsorted(offsets, where, side="right") - 1] = True
    return flags


def _escapes(b: Bytes) -> tuple[list[Ints], Ints]:
    slash = np.flatnonzero(b == ord("\\"))
    if not len(slash):
        return [], slash
    after = b[np.minimum(slash + 1, len(b) - 1)]
    return [slash[(after == ord("u")) | (after == ord("/"))]], slash


def _spaces(b: Bytes, raw: bytes, offsets: Ints, backslashed: Ints) -> list[Ints]:
    low = np.flatnonzero(b <= ord(" "))
    if not len(low):
        return []
    control = low[b[low] < ord(" ")]
    space = low[b[low] == ord(" ")]
    near = space[_STRUCTURAL[b[np.maximum(space - 1, 0)]]
                 | _STRUCTURAL[b[np.minimum(space + 1, len(b) - 1)]]]
    if not len(near):
        return [control]
    # Inside a string when an odd number of quotes precede it in its payload (counted
    # per suspect: they are few); an escaped quote would miscount, so a payload with a
    # backslash is suspect either way.
    row = np.searchsorted(offsets, near, side="right") - 1
    slashed = np.isin(row, np.searchsorted(offsets, backslashed, side="right") - 1)
    outside = [not slash and raw.count(b'"', start, at) % 2 == 0 for at, start, slash
               in zip(near.tolist(), offsets[row].tolist(), slashed.tolist(), strict=True)]
    return [control, near[np.array(outside, np.bool_) | slashed]]


def _run(b: Bytes, at: Ints, step: int) -> Ints:
    """From each position in ``at`` (a digit), the last digit of its run going ``step``."""
    at = at.copy()
    active = np.arange(len(at))
    while len(active):
        nxt = at[active] + step
        ok = (nxt >= 0) & (nxt < len(b))
        ok[ok] = _DIGIT[b[nxt[ok]]]
        active = active[ok]
        at[active] += step
    return at


def _numbers(b: Bytes) -> list[Ints]:
    found: list[Ints] = []
    n = len(b)
    dot = np.flatnonzero(b == ord("."))
    dot = dot[(dot > 0) & (dot < n - 1)]
    dot = dot[_DIGIT[b[dot - 1]] & _DIGIT[b[dot + 1]]]
    if len(dot):
        # A number ends at , } ] (or an exponent): that drops most dots in text (IP
        # addresses, versions) before the longer walk back to the number's start.
        last = _run(b, dot + 1, 1)
        after = b[np.minimum(last + 1, n - 1)]
        ends = _AFTER_NUMBER[after] | ((after | 0x20) == ord("e"))
        dot, last, after = dot[ends], last[ends], after[ends]
        first = _run(b, dot - 1, -1)
        start = first - ((first > 0) & (b[np.maximum(first - 1, 0)] == ord("-")))
        real = (start > 0) & _BEFORE_NUMBER[b[np.maximum(start - 1, 0)]]
        first, last, start, dot, after = first[real], last[real], start[real], dot[real], \
            after[real]
        whole = dot - first  # digits before the point
        fraction = last - dot
        tiny = (whole == 1) & (b[first] == ord("0")) & (fraction >= 4)
        for k in range(1, 5):
            tiny &= b[np.minimum(dot + k, n - 1)] == ord("0")
        odd = (~_AFTER_NUMBER[after] | (whole > 16) | tiny
               | ((fraction > 1) & (b[last] == ord("0"))))
        found.append(start[odd])
        long = ~odd & (whole + fraction >= _CHECK_DIGITS)
        found.append(_not_shortest(b, start[long], last[long] + 1))
    found.append(_exponents(b))
    minus = np.flatnonzero(b[:-2] == ord("-"))
    minus = minus[(minus > 0) & (b[minus + 1] == ord("0"))]
    found.append(minus[_AFTER_NUMBER[b[minus + 2]] & _BEFORE_NUMBER[b[minus - 1]]])
    return found


def _exponents(b: Bytes) -> Ints:
    """Numbers written with an exponent and no point (``1e16``, ``1e+21``)."""
    e: Ints = np.concatenate([np.flatnonzero(b == ord("e")), np.flatnonzero(b == ord("E"))])
    e = e[(e > 0) & (e < len(b) - 1)]
    e = e[_DIGIT[b[e - 1]]]
    e = e[_EXPONENT_NEXT[b[e + 1]]]
    if not len(e):
        return e
    first = _run(b, e - 1, -1)
    start = first - ((first > 0) & (b[np.maximum(first - 1, 0)] == ord("-")))
    found: Ints = e[(start > 0) & _BEFORE_NUMBER[b[np.maximum(start - 1, 0)]]]
    return found


def _not_shortest(b: Bytes, start: Ints, end: Ints) -> Ints:
    """Of the number tokens ``b[start:end]``, those msgspec writes otherwise once read."""
    if not len(start):
        return start
    lengths = end - start + 1  # each with a comma after it
    bounds = np.cumsum(lengths)
    index = np.arange(bounds[-1]) + np.repeat(start - (bounds - lengths), lengths)
    text = b[np.minimum(index, len(b) - 1)]
    text[bounds - 1] = ord(",")
    joined = b"[" + text[:-1].tobytes() + b"]"
    if _ENCODE(_FLOATS.decode(joined)) == joined:
        return start[:0]
    tokens = joined[1:-1].split(b",")
    bad = [i for i, token in enumerate(tokens) if _ENCODE(msgspec.json.decode(token)) != token]
    return start[np.array(bad, np.int64)]


_SURROGATE = re.compile("[\ud800-\udfff]")
#: The text the tables show for a JSON value: compact, Unicode kept. One encoder for
#: every payload: json.dumps with options builds a new one per call.
encode_json = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=repr).encode


def escape_surrogates(text: str) -> str:
    """Lone surrogates as ``\\udXXX`` escapes, as tables._escape_surrogates writes them:
    the same value to json.loads, and valid UTF-8 (what Arrow-backed strings need)."""
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def canonical_buffer(raw: bytes, offsets: Ints, known: dict[int, str]) -> tuple[bytes, Ints]:
    """The payloads ``raw[offsets[i]:offsets[i + 1]]`` as the text Python writes: those
    already so as they are, ``known`` rows as given, the others parsed and written."""
    replace = dict(known)
    for i in np.flatnonzero(noncanonical(raw, offsets)).tolist():
        if i not in replace:
            replace[i] = encode_json(json.loads(raw[offsets[i]:offsets[i + 1]]))
    if not replace:
        return raw, offsets
    lengths = np.diff(offsets)
    pieces: list[Any] = []
    view, done = memoryview(raw), 0
    for i in sorted(replace):
        try:
            text = replace[i].encode()
        except UnicodeEncodeError:
            text = escape_surrogates(replace[i]).encode()
        pieces.append(view[done:offsets[i]])
        pieces.append(text)
        lengths[i] = len(text)
        done = int(offsets[i + 1])
    pieces.append(view[done:])
    bounds = np.zeros(len(offsets), np.int64)
    np.cumsum(lengths, out=bounds[1:])
    return b"".join(pieces), bounds
