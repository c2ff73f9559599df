"""Several traces of the same experiment, side by side.

``compare(a, b, c)`` lines up what each run did, by content rather than by ids
(dialog ids, frame ids and session ids differ from run to run): which dialogs
were seen and how they ended, how many frames and OOPIFs there were, how fast
the commands every run sent were answered, and what went wrong.

Each column is named so that runs tell apart: a loaded trace by its file name (with
the nearest folder that tells two equal names apart), a trace made here by its backend
(with its start time where two are of one backend).

pandas loads on first use: ``cdpnb.trace`` (which the recording supervisor
imports) stays light.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cdpnb.trace.canonical import escape_surrogates
from cdpnb.trace.trace import Trace

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["SECTIONS", "compare"]

SECTIONS = ("trace", "dialogs", "frames", "commands", "console", "faults")

Item = tuple[str, str]


class _Facts:
    """What one trace did, as (section, item) -> value."""

    def __init__(self) -> None:
        self.values: dict[Item, Any] = {}
        self.counts: set[Item] = set()  # items that read 0 (not NA) where another trace lacks them
        self.medians: dict[str, float] = {}

    def put(self, section: str, item: str, value: Any, *, count: bool = False) -> None:
        # Text from a trace's header (a backend name from a page's JS, a hand-made
        # line) may hold lone surrogates, which pandas' Arrow-backed strings (and any
        # UTF-8 output) refuse: escaped as the trace's tables escape them.
        if isinstance(value, str):
            value = escape_surrogates(value)
        self.values[(section, escape_surrogates(item))] = value
        if count:
            self.counts.add((section, item))


def _tally(values: Iterable[str]) -> str:
    """``agent`` when every value agrees, else ``agent ×2, remote ×1`` (most first)."""
    counts = Counter(values)
    if len(counts) == 1:
        return next(iter(counts))
    return ", ".join(f"{value} ×{n}" for value, n in counts.most_common())


def _quoted(text: str, limit: int = 40) -> str:
    quoted = json.dumps(text, ensure_ascii=False)
    return quoted if len(quoted) <= limit else quoted[:limit - 1] + "…"


def _answer(row: Any) -> str:
    import pandas as pd

    if pd.isna(row.closed_by):
        return "open"
    if pd.isna(row.accepted):
        return "no answer"
    if not row.accepted:
        return "dismiss"
    return _quoted(row.answer) if row.type == "prompt" and not pd.isna(row.answer) else "accept"


def _dialog_facts(facts: _Facts, frame: pd.DataFrame) -> None:
    import pandas as pd

    facts.put("dialogs", "opened", len(frame), count=True)
    for (kind, message), group in frame.groupby(["type", "message"], observed=True, sort=False):
        name = f"{kind} {_quoted(str(message))}"
        facts.put("dialogs", f"{name}: seen", len(group), count=True)
        facts.put("dialogs", f"{name}: answer", _tally(_answer(r) for r in group.itertuples()))
        facts.put("dialogs", f"{name}: closed_by",
                  _tally("open" if pd.isna(c) else str(c) for c in group["closed_by"]))
        facts.put("dialogs", f"{name}: via", _tally(str(v) for v in group["via"]))


def _depth(frame_id: str, parent_of: dict[str, str]) -> int:
    depth, seen = 0, {frame_id}
    while frame_id in parent_of:
        frame_id = parent_of[frame_id]
        if frame_id in seen:  # a cycle in a malformed trace
            break
        seen.add(frame_id)
        depth += 1
    return depth


def _frame_facts(facts: _Facts, frame: pd.DataFrame) -> None:
    import pandas as pd

    ids = set(frame["frame_id"].dropna())
    oopifs = set(frame.loc[frame["event"] == "oopif_attached", "frame_id"])
    parents = frame.dropna(subset=["parent_frame_id"])
    parent_of = dict(zip(parents["frame_id"], parents["parent_frame_id"], strict=True))
    facts.put("frames", "frames", len(ids), count=True)
    facts.put("frames", "oopifs", len(oopifs), count=True)
    facts.put("frames", "max depth", max((_depth(f, parent_of) for f in ids), default=pd.NA))
    facts.put("frames", "navigations", int((frame["event"] == "navigated").sum()), count=True)
    # A frame moved to another process (it became, or stopped being, an OOPIF: CDP
    # frameDetached, reason "swap"), not removed: a row "swapped" in frames(), or
    # "detached" with that reason in a table made before that row had its own name.
    swap = (frame["reason"].astype("string") == "swap").fillna(False)
    detached = frame["event"] == "detached"
    swapped = (frame["event"] == "swapped") | (detached & swap)
    facts.put("frames", "detached", int((detached & ~swap).sum()), count=True)
    facts.put("frames", "swapped", int(swapped.sum()), count=True)


def _command_facts(facts: _Facts, frame: pd.DataFrame) -> None:
    import pandas as pd

    answered = frame["ok"].notna()
    failed = frame["ok"].eq(False).fillna(False)
    facts.put("commands", "sent", len(frame), count=True)
    facts.put("commands", "unanswered", int((~answered).sum()), count=True)
    facts.put("commands", "errors", int(failed.sum()), count=True)
    if len(frame):
        medians = frame.groupby("method", observed=True)["latency_ms"].median()
        facts.medians = {str(m): float(v) for m, v in medians.items() if not pd.isna(v)}
    for method, n in frame.loc[failed, "method"].value_counts(sort=False).items():
        if n:
            facts.put("commands", f"errors: {method}", int(n), count=True)


def _console_facts(facts: _Facts, frame: pd.DataFrame) -> None:
    console = frame["kind"] == "console"
    facts.put("console", "console calls", int(console.sum()), count=True)
    facts.put("console", "console errors",
              int((console & frame["level"].isin(["error", "assert"])).sum()), count=True)
    facts.put("console", "exceptions", int((frame["kind"] == "exception").sum()), count=True)


def _fault_facts(facts: _Facts, trace: Trace) -> None:
    faults = trace.faults
    facts.put("faults", "faults", len(faults), count=True)
    for kind, n in Counter(f.kind for f in faults).items():
        facts.put("faults", f"kind: {kind}", n, count=True)


def _facts(trace: Trace) -> _Facts:
    import pandas as pd

    facts = _Facts()
    facts.put("trace", "backend", trace.backend.get("kind") or pd.NA)
    # (a BiDi trace has no Browser.getVersion reply: the version its backend reported)
    facts.put("trace", "browser",
              trace.browser.get("Browser") or trace.backend.get("version") or pd.NA)
    facts.put("trace", "messages", len(trace), count=True)
    facts.put("trace", "duration s", round(trace.duration_s, 3))
    facts.put("trace", "complete", trace.complete)
    _dialog_facts(facts, trace.dialogs())
    _frame_facts(facts, trace.frames())
    _command_facts(facts, trace.commands())
    _console_facts(facts, trace.console())
    _fault_facts(facts, trace)
    return facts


#: What a trace file's name ends with, taken off for its column's name.
_SUFFIXES = (".jsonl.gz", ".jsonl.zst", ".jsonl", ".parquet")


def _stem(path: Path) -> str:
    """``chromium.native`` of ``…/chromium.native.jsonl.gz``."""
    name = path.name
    for suffix in _SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[:-len(suffix)]
    return name


def _base_name(trace: Trace) -> str:
    """A loaded trace's file name without its suffix; a trace made here, its backend."""
    # Escaped as _Facts.put escapes: a file name undecodable on this system holds
    # lone surrogates too (os.fsdecode's surrogateescape).
    if trace.path is not None:
        return escape_surrogates(_stem(Path(trace.path)))
    return escape_surrogates(str(trace.backend.get("kind") or "trace"))


def _qualifiers(trace: Trace) -> list[str]:
    """What can tell a trace from another of the same name, nearest first: a loaded
    trace's folders (its parent first); a trace made here, its start time (to the
    second, then with the date and milliseconds)."""
    if trace.path is not None:
        # absolute, not resolved: the folders the user named, not a symlink's target
        parts = Path(trace.path).absolute().parent.parts[1:]  # (no root)
        return [escape_surrogates(part) for part in reversed(parts)]
    if not trace.started_at:
        return []
    started = dt.datetime.fromtimestamp(trace.started_at)
    return [f"{started:%H:%M:%S}",
            f"{started:%Y-%m-%d %H:%M:%S}.{started.microsecond // 1000:03d}"]


def _labels(traces: Sequence[Trace], labels: Sequence[str] | None) -> list[str]:
    if labels is None:
        return _distinct_names(traces)
    if isinstance(labels, str):
        raise TypeError(f"labels must be a sequence of names, got the str {labels!r}")
    names = [escape_surrogates(str(label)) for label in labels]  # (as _Facts.put)
    if len(names) != len(traces):
        raise ValueError(f"labels has {len(names)} names for {len(traces)} traces")
    if len(set(names)) != len(names):
        raise ValueError(f"labels must be distinct, got {names}")
    return names


def _distinct_names(traces: Sequence[Trace]) -> list[str]:
    """Each trace's name (:func:`_base_name`), and where two are equal, the nearest
    qualifier that tells them apart in parentheses: ``run (monday)``, ``run (tuesday)``;
    ``r00000 (backend=chromium)`` when the parents are equal and the grandparents are not
    (as an editor's tabs tell two files of one name apart). A space before it lets a
    table break the name into two lines where the terminal is narrow."""
    names = [_base_name(trace) for trace in traces]
    groups: dict[str, list[int]] = {}
    for i, name in enumerate(names):
        groups.setdefault(name, []).append(i)
    for base, group in groups.items():
        if len(group) < 2:
            continue
        found = [_qualifiers(traces[i]) for i in group]
        depth = max(len(q) for q in found)
        candidates = [[q[d] if d < len(q) else "" for q in found] for d in range(depth)]
        if all(traces[i].path is not None for i in group):  # the folders up to one that differs
            candidates += [["/".join(reversed(q[:d])) for q in found] for d in range(2, depth + 1)]
        # the first that tells every one apart; else (one file given twice) the one that
        # tells the most apart, the rest numbered below
        best = max(candidates, key=lambda c: (len(set(c)) == len(c), len(set(c))), default=[])
        if len(set(best)) > 1:
            for i, qualifier in zip(group, best, strict=True):
                names[i] = f"{base} ({qualifier})" if qualifier else base
    labels: list[str] = []
    for name in names:  # the same file twice, or two traces alike in every way
        label, n = name, 1
        while label in labels or (n > 1 and label in names):
            n += 1
            label = f"{name} ({n})"
        labels.append(label)
    return labels


def compare(*traces: Trace | Sequence[Trace], labels: Sequence[str] | None = None,
            only_differences: bool = False) -> pd.DataFrame:
    """One column per trace, one row per ``(section, item)``.

    Sections: ``trace`` (backend, browser, messages, duration), ``dialogs`` (per type
    and message: how many were seen, the answers, who closed them, native or bridge),
    ``frames`` (frames and OOPIFs seen, max depth, navigations), ``commands``
    (totals, median latency in ms of each method every trace sent, error counts
    per method), ``console`` and ``faults``. A count a trace lacks reads 0; any
    other value it lacks reads NA.

    Columns are named by ``labels``, else so that they tell the runs apart: a loaded
    trace by its file name without ``.jsonl``/``.jsonl.gz``/``.jsonl.zst``
    (``chromium.native``), and where two names are equal, with the nearest folder that
    tells them apart (``chromium.native (monday)``, ``chromium.native (tuesday)``); a
    trace made here by its backend kind, with its start time where two are of one
    backend (``chromium (14:03:07)``); a file given twice numbered (``run (2)``).

    ``only_differences``: only the rows whose values are not the same in every trace
    (NA equal to NA), as ``DataFrame.compare`` keeps only what differs; none (an empty
    table) when the runs agree throughout.

    >>> import cdpnb
    >>> from cdpnb.cli import DATASETS
    >>> native = cdpnb.Trace.load(DATASETS / "chromium.native.jsonl.gz")
    >>> playwright = cdpnb.Trace.load(DATASETS / "chromium+playwright.native.jsonl.gz")
    >>> table = compare(native, playwright)
    >>> table.columns.tolist()
    ['chromium.native', 'chromium+playwright.native']
    >>> table.loc[("dialogs", 'alert "probe": closed_by')].tolist()
    ['agent', 'remote']
    >>> compare(native, native, only_differences=True).empty
    True
    """
    import pandas as pd

    if not isinstance(only_differences, bool):
        raise TypeError(f"only_differences must be True or False, got {only_differences!r}")

    flat: list[Trace] = []
    for item in traces:
        if isinstance(item, Trace):
            flat.append(item)
        elif isinstance(item, Sequence) and all(isinstance(t, Trace) for t in item):
            flat.extend(item)
        else:
            raise TypeError(f"compare() takes Trace objects, got {type(item).__name__}")
    if not flat:
        raise ValueError("compare() needs at least one trace")
    names = _labels(flat, labels)
    facts = [_facts(trace) for trace in flat]
    common = set.intersection(*(set(f.medians) for f in facts))
    for f in facts:
        for method in sorted(common):
            f.put("commands", f"median ms: {method}", round(f.medians[method], 3))
    order = {section: i for i, section in enumerate(SECTIONS)}
    items: dict[Item, None] = {}
    for f in facts:
        items.update(dict.fromkeys(f.values))
    index = sorted(items, key=lambda key: order[key[0]])  # stable: first seen within a section
    counts = set().union(*(f.counts for f in facts))
    columns = {name: [f.values.get(key, 0 if key in counts else pd.NA) for key in index]
               for name, f in zip(names, facts, strict=True)}
    table = pd.DataFrame(columns, index=pd.MultiIndex.from_tuples(index,
                                                                   names=["section", "item"]),
                         dtype=object)
    if only_differences:
        table = table[table.nunique(axis=1, dropna=False) > 1]
    return table
