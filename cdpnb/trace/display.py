"""The HTML repr of a trace: a summary always, the dialogs only when cheap to fold."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from cdpnb.render import badge, table, text, when
from cdpnb.render.state import dialogs_html
from cdpnb.state import BrowserState

__all__ = ["DIALOGS_SHOWN", "FOLD_IN_REPR_LIMIT", "Shown", "trace_html"]


class Shown(Protocol):
    """What the repr reads of a trace (``Trace`` is one)."""

    @property
    def path(self) -> Path | None: ...
    @property
    def problems(self) -> tuple[str, ...]: ...
    @property
    def complete(self) -> bool: ...
    @property
    def truncated(self) -> bool: ...
    @property
    def label(self) -> str: ...
    @property
    def started_at(self) -> float: ...
    def __len__(self) -> int: ...
    def summary(self) -> dict[str, Any]: ...
    def final_state(self) -> BrowserState: ...

#: Above this many messages the repr shows the summary only: a repr must stay quick.
FOLD_IN_REPR_LIMIT = 20_000


def trace_html(trace: Shown) -> str:
    summary = trace.summary()
    if trace.complete:
        state = badge("complete", "#2a7")
    else:
        state = badge("truncated" if trace.truncated else "incomplete", "#a33")
    kinds = table(("kind", "records"), sorted(summary["by_kind"].items()))
    where = text(trace.path.name if trace.path is not None else "(in memory)")
    parts = [
        '<div style="font-family:var(--jp-ui-font-family,sans-serif);font-size:12px">',
        f"<b>cdpnb trace</b> {where} {state} <b>{text(trace.label)}</b>",
        f"<div>{summary['messages']} records over {summary['duration_s']:.1f} s, "
        f"started {text(when(trace.started_at))} UTC</div>",
        kinds,
    ]
    if trace.problems:
        parts.append(table(("problem",), [[p] for p in trace.problems], max_rows=5))
    if len(trace) <= FOLD_IN_REPR_LIMIT:
        parts.append(_dialogs_part(trace))
    else:
        parts.append("<div>(large trace: <code>.dialogs()</code>, <code>.timeline()</code> "
                     "and <code>.view()</code> show its contents)</div>")
    parts.append("</div>")
    return "".join(parts)


#: Closed dialogs the repr lists (the newest).
DIALOGS_SHOWN = 5


def _dialogs_part(trace: Shown) -> str:
    """How many dialogs opened, how many are still open, and the newest closed ones,
    with one count: the state keeps only the last ``RECENT_DIALOGS_KEPT`` records, so
    the "… N more" line counts every dialog that closed, not the ones kept."""
    state = trace.final_state()
    opened, still_open = state.dialog_seq, len(state.pending_dialogs)
    head = f"<div><b>dialogs</b>: {opened} opened, {still_open} still open at the end"
    if not state.recent_dialogs:
        return head + "</div>"
    closed = max(opened - still_open, len(state.recent_dialogs))
    newest = list(reversed(state.recent_dialogs))[:DIALOGS_SHOWN]
    where = ("; <code>.dialogs()</code> has every one" if closed > len(newest) else "")
    return (f"{head}; the last {len(newest)} closed, newest first{where}:</div>"
            + dialogs_html(newest, max_rows=DIALOGS_SHOWN, total=closed))
