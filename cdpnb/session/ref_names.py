"""How an accessibility ref is spelt and read back: ``role:name``, the name with whitespace
collapsed and cut to ``MAX_REF_NAME`` characters (… marks a cut), ``#n`` for the n-th
row with the same role and name (and for the first one whose name itself ends in
``#<digits>``), so a ref always reads back as one (role, name, n). The refs come from
CDP's accessibility tree (``cdp.accessibility``: which rows get one); every driver
checks a ref's spelling the same way."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

__all__ = ["MAX_REF_NAME", "assign_refs", "make_ref", "parse_ref", "ref_name"]

#: The longest name a ref keeps (a longer one is cut, ``…`` marking the cut).
MAX_REF_NAME = 60
_SUFFIX = re.compile(r"#(\d+)$")


def ref_name(name: str) -> str:
    """The name as it appears in a ref: whitespace collapsed, cut to MAX_REF_NAME."""
    text = " ".join(name.split())
    return text if len(text) <= MAX_REF_NAME else text[:MAX_REF_NAME - 1] + "…"


def make_ref(role: str, name: str, nth: int) -> str:
    """The ref of the ``nth`` (1-based) row with this role and (ref) name."""
    if nth < 1:
        raise ValueError(f"nth must be >= 1, got {nth}")
    base = f"{role}:{name}"
    return f"{base}#{nth}" if nth > 1 or _SUFFIX.search(name) else base


def parse_ref(ref: str) -> tuple[str, str, int]:
    """(role, name, nth) of a ref; ValueError naming ``ref`` if it is not one."""
    if not isinstance(ref, str):
        raise TypeError(f"ref must be a str, got {type(ref).__name__}")
    role, sep, rest = ref.partition(":")
    if not sep or not role:
        raise ValueError(f"ref must look like 'role:name' or 'role:name#n', got {ref!r}")
    match = _SUFFIX.search(rest)
    if match is None:
        return role, rest, 1
    nth = int(match.group(1))
    if nth < 1:
        raise ValueError(f"ref {ref!r} has #{nth}; counts start at 1")
    return role, rest[:match.start()], nth


def assign_refs(keys: Iterable[tuple[str, str] | None]) -> list[str | None]:
    """Refs for (role, name) keys in document order; ``None`` (an ignored row) gets none."""
    seen: Counter[tuple[str, str]] = Counter()
    out: list[str | None] = []
    for key in keys:
        if key is None:
            out.append(None)
            continue
        role, name = key[0], ref_name(key[1])
        seen[(role, name)] += 1
        out.append(make_ref(role, name, seen[(role, name)]))
    return out
