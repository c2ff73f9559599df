"""Where one check's run lies in its trace: its messages, its dialogs.

The probe notes each check's outcome in the trace as it finishes (a ``probe.check``
note with the check's name and run), one check after another on one supervisor. So a
check's messages are those after the previous check's note, up to and including its
own: the commands it sent, what the browser sent meanwhile, and cdpnb's notes (the
dialog answered, the evaluate timed). The first check's span starts at the trace's
start (the session's set-up is part of what it waited on).

The trace's events and dialogs tables are read once into plain lists: a report
slices them hundreds of times, and a slice of a list costs nothing next to a
DataFrame's.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from cdpnb.trace import Trace

__all__ = ["Span", "TraceIndex"]


@dataclass(frozen=True)
class Span:
    """One check's run in its trace: its messages as columns (``t`` in seconds since
    the trace started; ``kind``: command, reply, error, event, note, fault), the
    dialogs that opened in it (the trace's dialogs table's rows), when it started (s),
    the trace's protocol and what its recording redacted."""

    t: list[float]
    direction: list[str]
    kind: list[str]
    session: list[str]
    id: list[str]
    method: list[str]
    payload: list[str]
    dialogs: list[dict[str, Any]]
    start_s: float
    protocol: str
    redacted: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.t)


def _plain(value: object) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    shown = str(value)
    return "" if shown in ("<NA>", "nan", "None") else shown


class TraceIndex:
    """A trace's messages and dialogs as lists, and the span of each ``(check, run)``."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        events = trace.events()
        self.t = [float(v) for v in events["t"]]
        self.direction = [_plain(v) for v in events["direction"]]
        self.kind = [_plain(v) for v in events["kind"]]
        self.session = [_plain(v) for v in events["session_id"]]
        self.id = [_plain(v) for v in events["id"]]
        self.method = [_plain(v) for v in events["method"]]
        self.payload = [_plain(v) for v in events["payload"]]
        self.dialogs: list[dict[str, Any]] = [
            {str(k): (float(v) if k == "t" else _plain(v)) for k, v in row.items()}
            for row in trace.dialogs().to_dict("records")]
        redacted = trace.header.get("redacted") or []
        self.redacted = tuple(str(k) for k in redacted) if isinstance(redacted, list) else ()
        self.spans: dict[tuple[str, int], tuple[int, int]] = {}
        start = 0
        for position, (kind, method) in enumerate(zip(self.kind, self.method, strict=True)):
            if kind != "note" or method != "probe.check":
                continue
            try:
                params = json.loads(self.payload[position])
                key = (str(params["check"]), int(params.get("run", 0)))
            except (ValueError, KeyError, TypeError):
                continue
            self.spans.setdefault(key, (start, position + 1))
            start = position + 1

    def span(self, check: str, run: int) -> Span | None:
        """The messages of ``check``'s run ``run``, or None when the trace noted no
        such check (a check cut short, a trace recorded before notes were kept)."""
        found = self.spans.get((check, run))
        if found is None:
            return None
        start, end = found
        if end <= start:
            return None
        begin, last = self.t[start], self.t[end - 1]
        dialogs = [d for d in self.dialogs if begin <= d["t"] <= last]
        return Span(self.t[start:end], self.direction[start:end], self.kind[start:end],
                    self.session[start:end], self.id[start:end], self.method[start:end],
                    self.payload[start:end], dialogs, begin, self.trace.protocol,
                    self.redacted)
