"""Typed columns for the trace tables: real dtypes from plain lists or numpy arrays.

``datetime64[ns, UTC]`` for wall-clock times, ``float64`` seconds since the trace
started, categoricals with ``TEXT`` categories for the small vocabularies, nullable
``Int64`` / ``Float64`` / ``boolean`` where a number or a flag can be missing, and
``TEXT`` for every text column. Every trace table builds its columns with these; the
probe's tables go through :func:`with_text_dtype`.

``TEXT`` is pandas 3's default string dtype, ``str``: Arrow-backed, NaN where a value
is missing. One text dtype, and the one a user's own frames have (``pd.Series(["x"])``,
``read_csv``, ``read_parquet``): measured on pandas 3.1.1, merging a nullable
``string`` key with a ``str`` one gives ``object``, and a categorical with ``string``
categories is not equal to one with ``str`` categories, so a mix of the two (as the
tables had) degrades a join or a concat.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, TypeVar, cast

import numpy as np
import pandas as pd

from cdpnb.trace.canonical import escape_surrogates
from cdpnb.trace.format import INT_MAX, INT_MIN, Record

__all__ = [
    "TEXT",
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
    "seconds_since",
    "str_or_none",
    "strings",
    "text_array",
    "wall_times",
    "with_text_dtype",
]

_T = TypeVar("_T")


def _text_dtype() -> pd.StringDtype[Literal["pyarrow"]]:
    try:
        # pandas >= 2.3: what pandas 3 calls "str" (and infers for text).
        return pd.StringDtype("pyarrow", na_value=np.nan)
    except TypeError:
        # pandas 2.1, 2.2 (no na_value): the same Arrow-backed, NaN-missing strings,
        # what pandas 2.2.3 infers with future.infer_string on (measured).
        older: Any = pd.StringDtype
        return cast('pd.StringDtype[Literal["pyarrow"]]', older("pyarrow_numpy"))


#: The one text dtype of every table cdpnb makes: pandas' ``str`` (see the module doc).
TEXT = _text_dtype()

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
    found = text_array(lambda v: pd.Index(v, dtype=TEXT), list(uniques))
    if categories is None:
        return pd.Categorical.from_codes(codes, categories=found)
    index = pd.Index(list(categories), dtype=TEXT)
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


def _texts(values: Sequence[Any]) -> pd.api.extensions.ExtensionArray:
    return cast(pd.api.extensions.ExtensionArray, pd.array(values, dtype=TEXT))


def strings(values: Sequence[str | None]) -> pd.api.extensions.ExtensionArray:
    """Text, ``TEXT`` (None is missing: NaN)."""
    return text_array(_texts, values)


def _is_text(values: pd.Index | pd.Series) -> bool:
    """Text in another string dtype, or in ``object`` (str and missing values only: a
    column with nothing in it is text too, as pandas infers ``object`` for it)."""
    dtype = values.dtype
    if isinstance(dtype, pd.StringDtype):
        return dtype != TEXT
    return (pd.api.types.is_object_dtype(dtype)
            and all(isinstance(v, str) for v in values[values.notna()]))


def _as_text(values: Any) -> Any:
    return text_array(lambda v: pd.Series(v, dtype=object).astype(TEXT).array, list(values))


def with_text_dtype(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every text column (``object`` of str, or another string dtype),
    every categorical's categories and a text index in ``TEXT``; the rest as it is."""
    out = frame.copy(deep=False)
    for name in out.columns:
        column = out[name]
        dtype = column.dtype
        if isinstance(dtype, pd.CategoricalDtype):
            categories = dtype.categories
            if categories.dtype != TEXT and (categories.empty
                                             or _is_text(pd.Series(categories))):
                out[name] = column.cat.rename_categories(
                    pd.Index(_as_text(categories), dtype=TEXT))
        elif _is_text(column):
            out[name] = pd.Series(_as_text(column), index=column.index, dtype=TEXT)
    if not isinstance(out.index, pd.MultiIndex) and _is_text(pd.Series(out.index)):
        out.index = pd.Index(_as_text(out.index), dtype=TEXT, name=out.index.name)
    return out


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
    found = text_array(lambda v: pd.Index(v, dtype=TEXT), [names[c] for c in used])
    return pd.Categorical.from_codes(lookup[codes], categories=found)
