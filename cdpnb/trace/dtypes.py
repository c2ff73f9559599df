"""Typed columns for the trace tables: real dtypes from plain lists or numpy arrays.

``datetime64[ns, UTC]`` for wall-clock times, ``float64`` seconds since the trace
started, categoricals with str categories for the small vocabularies, nullable
``Int64`` / ``Float64`` / ``boolean`` / ``string`` where a value can be missing, and
pandas' default ``str`` (Arrow-backed) for JSON text. The object tables and the
columnar ones build their columns with these, so both give the same dtypes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from cdpnb.trace.canonical import escape_surrogates
from cdpnb.trace.format import INT_MAX, INT_MIN, Record

__all__ = [
    "Convert",
    "Rows",
    "booleans",
    "categorical",
    "categorical_codes",
    "categories_of",
    "escape_surrogates_in",
    "float64s",
    "frame_of",
    "int64s",
    "json_texts",
    "seconds_since",
    "str_or_none",
    "strings",
    "text_array",
    "wall_times",
]

_T = TypeVar("_T")

# -- typed columns ------------------------------------------------------------------------


def wall_times(walls: Sequence[float] | np.ndarray[Any, Any]) -> pd.DatetimeIndex:
    stamps = pd.to_datetime(np.asarray(walls, dtype="float64"), unit="s", utc=True)
    return stamps.as_unit("ns")


def seconds_since(monos: Sequence[float] | np.ndarray[Any, Any],
                  start: float) -> np.ndarray[Any, np.dtype[np.float64]]:
    return np.asarray(monos, dtype="float64") - start


def escape_surrogates_in(values: Sequence[Any]) -> list[Any]:
    """Lone surrogates (JavaScript strings may hold them; UTF-8 cannot) as ``\\udXXX``
    escapes: the same value to json.loads inside JSON text, visible in plain text."""
    return [escape_surrogates(v) if isinstance(v, str) else v for v in values]


def text_array(build: Callable[[Sequence[Any]], _T], values: Sequence[Any]) -> _T:
    try:
        return build(values)
    except UnicodeEncodeError:  # Arrow-backed strings must be valid UTF-8
        return build(escape_surrogates_in(values))


def categorical(values: Sequence[Any], categories: Sequence[str] | None = None) -> pd.Categorical:
    """A categorical of ``values`` (None is NA) with str categories: sorted, or exactly
    ``categories`` (values outside them are NA). Factorised by hand: pd.Categorical
    on a list holding None is ten times slower."""
    codes, uniques = pd.factorize(np.asarray(values, dtype=object), sort=True)
    found = text_array(lambda v: pd.Index(v, dtype="str"), list(uniques))
    if categories is None:
        return pd.Categorical.from_codes(codes, categories=found)
    index = pd.Index(list(categories), dtype="str")
    to_index = np.append(index.get_indexer(found), -1)  # code -1 (NA) stays -1
    return pd.Categorical.from_codes(to_index[codes], categories=index)


def int64s(values: Sequence[int | None]) -> pd.api.extensions.ExtensionArray:
    try:
        return pd.array(values, dtype="Int64")
    except (OverflowError, TypeError):
        # Page-controlled numbers (a console line number) can be any JSON integer; the
        # record keeps it, the column shows NA where it does not fit 64 bits.
        return pd.array([v if isinstance(v, int) and INT_MIN <= v <= INT_MAX else None
                         for v in values], dtype="Int64")


def float64s(values: Sequence[float | None]) -> pd.api.extensions.ExtensionArray:
    return pd.array(values, dtype="Float64")


def booleans(values: Sequence[bool | None]) -> pd.api.extensions.ExtensionArray:
    return pd.array(values, dtype="boolean")


def strings(values: Sequence[str | None]) -> pd.api.extensions.ExtensionArray:
    """Nullable text (``string``, NA for missing)."""
    return text_array(lambda v: pd.array(v, dtype="string"), values)


def json_texts(values: Sequence[str]) -> pd.api.extensions.ExtensionArray:
    """JSON text, never missing (pandas' default ``str``)."""
    return text_array(lambda v: pd.array(v, dtype="str"), values)


def frame_of(columns: dict[str, Any]) -> pd.DataFrame:
    return pd.DataFrame(columns, index=pd.RangeIndex(len(next(iter(columns.values())))))


def str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


Convert = Callable[[list[Any]], Any]


class Rows:
    """Rows collected as column lists, typed at the end by ``schema`` (column ->
    converter, in column order). ``time`` takes wall floats; ``t`` monotonic ones."""

    def __init__(self, start: float, schema: Mapping[str, Convert]) -> None:
        self.schema = {"time": wall_times, "t": lambda monos: seconds_since(monos, start), **schema}
        self.columns: list[list[Any]] = [[] for _ in self.schema]

    def add(self, record: Record, *values: Any) -> None:
        """One row: the record's wall and mono times, then the schema's other columns."""
        for column, value in zip(self.columns, (record.wall, record.mono, *values),
                                 strict=True):
            column.append(value)

    def frame(self, **rename: str) -> pd.DataFrame:
        named = {rename.get(name, name): convert(values) for (name, convert), values
                 in zip(self.schema.items(), self.columns, strict=True)}
        return frame_of(named)


def categories_of(categories: Sequence[str]) -> Convert:
    return lambda values: categorical(values, categories)


def categorical_codes(codes: np.ndarray[Any, Any], names: Sequence[str]) -> pd.Categorical:
    """What ``categorical`` makes of ``[names[c] for c in codes]`` (-1 for None), from
    the codes: the categories are the names used, sorted as ``categorical`` sorts them."""
    used = sorted(np.unique(codes[codes >= 0]).tolist(), key=names.__getitem__)
    lookup = np.full(len(names) + 1, -1, np.int64)  # code -1 looks up the last: -1
    lookup[used] = np.arange(len(used))
    found = text_array(lambda v: pd.Index(v, dtype="str"), [names[c] for c in used])
    return pd.Categorical.from_codes(lookup[codes], categories=found)
