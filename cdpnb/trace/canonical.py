"""The recorded payloads as the text the tables show, written again only where they differ.

A table's ``payload`` is compact JSON as Python writes it (``json.dumps`` with
``separators=(",", ":")``, ``ensure_ascii=False``) of the parsed value: the text the
line reader gives. Most recorded payloads are that text byte for byte (Chrome, Node and
cdpnb write compact JSON), and the tables show them as they are. This module finds,
over a block of payloads at once (no Python per row), every place where one may differ:

- a number Python spells otherwise: an exponent (Chromium writes epoch milliseconds so:
  ``1.795636643825172e+12``, Python ``1795636643825.172``: every
  ``Runtime.consoleAPICalled`` ``timestamp``, every ``Network.responseReceived``
  ``responseTime``), ``-0``, a trailing zero in the fraction, below 1e-4 or from 1e16
  up (Python switches to an exponent), or sixteen digits and more (Python writes the
  shortest that reads back). Only the number is written again, where it stands;
- a ``\\u`` or ``\\/`` escape (Python writes the character itself), a control byte, a
  space next to ``{ } [ ] : ,`` outside a string, a number that is not finite: the
  payload is parsed and written again whole (rare: Python peers and hand-made lines).

Where they are: number tokens by one regular expression (RE2, pyarrow's
``extract_regex_span``: a pass over the block's payloads, then the rest of the rows that
had one), spaces and backslashes with numpy; whether a place is inside a string by the
parity of the unescaped quotes before it (``bitwise_xor.reduceat`` over the block, one
pass). A quote is escaped when an odd run of backslashes precedes it: a string holding
``\\"x\\", y`` (Chromium's ``sec-ch-ua`` header) is told apart from JSON around it, so
its payload is left as it is. Measured on a million real messages (295 MB of
payloads, 27% of them not Python's text; ``benchmarks/bench_trace.py``): 5.9 CPU s when
each such payload was parsed and written again with ``json``, 1.5 with this; the regular
expression is half of what is left, numpy's passes a quarter.

A payload that repeats a key in one object is the one case not looked for: JSON leaves
its meaning open, Python keeps the last value, and no CDP peer sends one.
"""

from __future__ import annotations

import json
import math
import operator
import re
from dataclasses import dataclass
from typing import Any

import msgspec
import numpy as np

from cdpnb.protocol.deep_values import as_json

__all__ = ["Edits", "canonical_buffer", "edits", "encode_json", "escape_surrogates"]

Bytes = np.ndarray[Any, np.dtype[np.uint8]]
Ints = np.ndarray[Any, np.dtype[np.int64]]


def _table(chars: bytes) -> np.ndarray[Any, np.dtype[np.bool_]]:
    table = np.zeros(256, np.bool_)
    table[list(chars)] = True
    return table


_STRUCTURAL = _table(b"{}[]:,")
_QUOTE, _BACKSLASH, _SPACE = ord('"'), ord("\\"), ord(" ")
_REWRITTEN_ESCAPES = (ord("u"), ord("/"))

# A number token Python may spell otherwise, with the byte before it (``: , [``) and
# after it (``, } ]``): outside a string nothing else stands there, and inside one the
# quote parity tells. Any other spelling is already Python's: an integer but -0, and a
# float of fifteen digits or fewer, without an exponent or a trailing zero, from 1e-4
# to 1e16 (fifteen digits always read back to themselves, so they are the shortest).
_ODD_NUMBER = (r"-?\d+(?:\.\d+)?[eE][-+]?\d+"  # an exponent
               r"|-0"  # negative zero, an integer: 0
               r"|-?\d+\.\d+0"  # a trailing zero in the fraction (1.50; 1.0 is Python's)
               r"|-?0\.0000\d*"  # below 1e-4
               r"|-?[0-9.]{17,}")  # sixteen digits and a point, or more: read back
_NUMBER_RE2 = rf"(?P<token>[:,\[](?:{_ODD_NUMBER})[,}}\]])"


@dataclass
class Edits:
    """What makes a block's payloads the text Python writes: ``whole`` rows are parsed
    and written again; each number token ``raw[starts[k]:ends[k]]`` (in row
    ``rows[k]``, none of them whole) becomes ``texts[k]``."""

    whole: list[int]
    rows: Ints
    starts: Ints
    ends: Ints
    texts: list[bytes]

    def changed(self, size: int) -> np.ndarray[Any, np.dtype[np.bool_]]:
        """One flag per row: written again, whole or in part."""
        flags = np.zeros(size, np.bool_)
        flags[self.whole] = True
        flags[self.rows] = True
        return flags


def edits(raw: bytes, offsets: Ints, skip: frozenset[int] = frozenset()) -> Edits:
    """The edits of the payloads ``raw[offsets[i]:offsets[i + 1]]`` (each a JSON object,
    valid UTF-8, as the scan and the Parquet reader vouch); rows in ``skip`` have their
    text from elsewhere and get none."""
    none = np.zeros(0, np.int64)
    if not raw:
        return Edits([], none, none, none, [])
    b = np.frombuffer(raw, np.uint8)
    escaped_quotes, rewritten_escapes = _escapes(b)
    low = np.flatnonzero(b <= _SPACE)
    control = low[b[low] < _SPACE]  # JSON's whitespace, outside strings
    space = low[b[low] == _SPACE]
    near = space[_STRUCTURAL[b[np.maximum(space - 1, 0)]]
                 | _STRUCTURAL[b[np.minimum(space + 1, len(b) - 1)]]]
    starts, ends = _number_tokens(raw, offsets)
    quote = b == _QUOTE
    quote[escaped_quotes] = False
    inside = _inside(quote, np.concatenate([near, starts - 1]))
    outside = ~inside[len(near):]
    starts, ends = starts[outside], ends[outside]
    rows = np.searchsorted(offsets, starts, side="right") - 1
    texts, changed = _spellings(raw, b, starts, ends)
    places = np.concatenate([rewritten_escapes, control, near[~inside[:len(near)]]])
    whole = set((np.searchsorted(offsets, places, side="right") - 1).tolist())
    whole.update(rows[[text is None for text in texts]].tolist() if texts else ())
    whole -= skip
    excluded = np.array(sorted(whole | skip), np.int64)
    keep = changed & ~np.isin(rows, excluded)
    return Edits(sorted(whole), rows[keep], starts[keep], ends[keep],
                 [text for text, k in zip(texts, keep.tolist(), strict=True)
                  if k and text is not None])


def _escapes(b: Bytes) -> tuple[Ints, Ints]:
    """The escaped quotes, and the ``\\u`` / ``\\/`` escapes (their payloads are written
    again whole). A backslash run's pairs are escaped backslashes; an odd run's last
    backslash escapes the byte after the run."""
    slash = np.flatnonzero(b == _BACKSLASH)
    if not len(slash):
        return slash, slash
    first = np.ones(len(slash), np.bool_)
    first[1:] = np.diff(slash) != 1
    run_starts = np.flatnonzero(first)
    lengths = np.diff(np.append(run_starts, len(slash)))
    odd = lengths % 2 == 1
    after = slash[run_starts[odd] + lengths[odd] - 1] + 1
    after = after[after < len(b)]
    escaped = b[after]
    rewritten = (escaped == _REWRITTEN_ESCAPES[0]) | (escaped == _REWRITTEN_ESCAPES[1])
    return after[escaped == _QUOTE], after[rewritten]


def _inside(quote: np.ndarray[Any, np.dtype[np.bool_]], points: Ints) -> np.ndarray[
        Any, np.dtype[np.bool_]]:
    """For each of ``points``, whether it is inside a string: an odd number of
    unescaped quotes before it. (Each payload holds whole strings, so counting from the
    block's start is counting from the payload's.)"""
    if not len(points):
        return np.zeros(0, np.bool_)
    order = np.argsort(points, kind="stable")
    ordered = points[order]
    at = ordered[ordered > 0]
    at = at[np.append(True, at[1:] != at[:-1])] if len(at) else at
    # Segment k runs from bounds[k] to bounds[k + 1]: the parity before at[j] is the
    # xor of segments 0..j.
    bounds = np.concatenate([[0], at])
    before = np.bitwise_xor.accumulate(np.bitwise_xor.reduceat(quote.view(np.uint8), bounds))
    parity = np.zeros(len(points), np.uint8)
    where = np.searchsorted(at, ordered)
    positive = ordered > 0
    parity[order[positive]] = before[where[positive]]
    inside: np.ndarray[Any, np.dtype[np.bool_]] = parity.astype(np.bool_)
    return inside


def _number_tokens(raw: bytes, offsets: Ints) -> tuple[Ints, Ints]:
    """Start and end of every number token ``_ODD_NUMBER`` finds, in or out of strings.
    One pass finds each row's first; the next looks again in the rest of the rows that
    had one (from the byte after the token: another may share it), until none has."""
    import pyarrow as pa

    rows, begin = np.arange(len(offsets) - 1), offsets[:-1]
    texts = _strings(raw, offsets)
    found_starts, found_ends = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    while len(rows):
        found = _extract_span(texts, _NUMBER_RE2)  # (null where none: not its field)
        valid = found.is_valid().to_numpy(zero_copy_only=False)
        pairs = found.filter(pa.array(valid)).field("token").flatten().to_numpy(
            zero_copy_only=False).reshape(-1, 2)
        rows, begin = rows[valid], begin[valid]
        starts = begin + pairs[:, 0] + 1
        ends = starts + pairs[:, 1] - 2
        found_starts.append(starts)
        found_ends.append(ends)
        begin = ends
        if len(rows):
            texts = _strings(*_joined(raw, begin, offsets[rows + 1]))
    all_starts, all_ends = np.concatenate(found_starts), np.concatenate(found_ends)
    order = np.argsort(all_starts, kind="stable")
    return all_starts[order], all_ends[order]


def _joined(raw: bytes, starts: Ints, ends: Ints) -> tuple[bytes, Ints]:
    """The pieces ``raw[starts[k]:ends[k]]`` one after another, and their offsets."""
    view = memoryview(raw)
    joined = b"".join([view[start:end] for start, end in
                       zip(starts.tolist(), ends.tolist(), strict=True)])
    bounds = np.zeros(len(starts) + 1, np.int64)
    np.cumsum(ends - starts, out=bounds[1:])
    return joined, bounds


def _strings(raw: bytes, offsets: Ints) -> Any:
    import pyarrow as pa

    return pa.LargeStringArray.from_buffers(len(offsets) - 1, pa.py_buffer(offsets.tobytes()),
                                            pa.py_buffer(raw))


def _extract_span(texts: Any, pattern: str) -> Any:
    import pyarrow.compute as pc

    compute: Any = pc  # (extract_regex_span is not in pyarrow-stubs)
    return compute.extract_regex_span(texts, pattern)


def _spellings(raw: bytes, b: Bytes, starts: Ints, ends: Ints) -> tuple[
        list[bytes | None], np.ndarray[Any, np.dtype[np.bool_]]]:
    """How Python writes each number token ``raw[starts[k]:ends[k]]`` (None: not finite,
    its payload written whole), and whether that differs: read all at once by msgspec
    (which reads numbers as Python's json does), written by ``repr``."""
    if not len(starts):
        return [], np.zeros(0, np.bool_)
    lengths = ends - starts + 1  # each with a comma after it
    bounds = np.cumsum(lengths)
    index = np.arange(bounds[-1]) + np.repeat(starts - (bounds - lengths), lengths)
    text = b[np.minimum(index, len(b) - 1)]
    text[bounds - 1] = ord(",")
    joined = text[:-1].tobytes()
    tokens = joined.split(b",")
    spelled: list[bytes | None]
    try:
        values = _NUMBERS.decode(b"[" + joined + b"]")
    except msgspec.DecodeError:  # out of range: 1e400 is inf to json
        spelled = [_spelled(token) for token in tokens]
    else:
        spelled = list(",".join(map(repr, values)).encode().split(b","))
    changed = np.fromiter(map(operator.ne, spelled, tokens), np.bool_, len(tokens))
    return spelled, changed


_NUMBERS = msgspec.json.Decoder(list[int | float])


def _spelled(token: bytes) -> bytes | None:
    """How Python writes the number ``token`` (None: not finite, written whole)."""
    if b"." not in token and b"e" not in token and b"E" not in token:
        return str(int(token)).encode()
    value = float(token)
    return repr(value).encode() if math.isfinite(value) else None


_SURROGATE = re.compile("[\ud800-\udfff]")
#: The text the tables show for a JSON value: compact, Unicode kept. One encoder for
#: every payload: json.dumps with options builds a new one per call.
encode_json = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False,
                               default=as_json).encode


def escape_surrogates(text: str) -> str:
    """Lone surrogates as ``\\udXXX`` escapes, as tables._escape_surrogates writes them:
    the same value to json.loads, and valid UTF-8 (what Arrow-backed strings need)."""
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _utf8(text: str) -> bytes:
    try:
        return text.encode()
    except UnicodeEncodeError:
        return escape_surrogates(text).encode()


def canonical_buffer(raw: bytes, offsets: Ints, known: dict[int, str]) -> tuple[bytes, Ints]:
    """The payloads ``raw[offsets[i]:offsets[i + 1]]`` as the text Python writes: those
    already so as they are, ``known`` rows as given, the others with their ``edits``."""
    found = edits(raw, offsets, frozenset(known))
    replace = {row: _utf8(text) for row, text in known.items()}
    for row in found.whole:
        replace[row] = _utf8(encode_json(json.loads(raw[offsets[row]:offsets[row + 1]])))
    if not replace and not len(found.rows):
        return raw, offsets
    # Every edit as (start, end, row, text), in order: whole rows and number tokens.
    whole_rows = np.array(sorted(replace), np.int64)
    starts = np.concatenate([offsets[whole_rows], found.starts])
    ends = np.concatenate([offsets[whole_rows + 1], found.ends])
    rows = np.concatenate([whole_rows, found.rows])
    texts = [replace[row] for row in whole_rows.tolist()] + found.texts
    order = np.lexsort((rows, starts))
    # What is kept between the edits, and the edits' texts, taking turns.
    kept = np.append(ends[order], len(raw)), np.append(starts[order], 0)
    view = memoryview(raw)
    pieces: list[Any] = [None] * (2 * len(order) + 1)
    pieces[0::2] = [view[start:end] for start, end in
                    zip([0, *kept[0][:-1].tolist()], [*kept[1][:-1].tolist(), len(raw)],
                        strict=True)]
    pieces[1::2] = [texts[k] for k in order.tolist()]
    lengths = np.diff(offsets)
    np.add.at(lengths, rows, np.fromiter(map(len, texts), np.int64, len(texts)) - (ends - starts))
    bounds = np.zeros(len(offsets), np.int64)
    np.cumsum(lengths, out=bounds[1:])
    return b"".join(pieces), bounds
