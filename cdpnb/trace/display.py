"""The HTML repr of a trace: a summary always, the dialogs only when cheap to fold."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cdpnb.render import badge, table, text, when
from cdpnb.state.display import dialogs_html

if TYPE_CHECKING:
    from cdpnb.trace.trace import Trace

__all__ = ["FOLD_IN_REPR_LIMIT", "trace_html"]

#: Above this many messages the repr shows the summary only: a repr must stay quick.
FOLD_IN_REPR_LIMIT = 20_000


def trace_html(trace: Trace) -> str:
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
        state_now = trace.final_state()
        closed = list(reversed(state_now.recent_dialogs))
        parts.append(f"<div><b>dialogs</b>: {state_now.dialog_seq} opened, "
                     f"{len(state_now.pending_dialogs)} still open at the end; last closed:</div>")
        parts.append(dialogs_html(closed, max_rows=5))
    else:
        parts.append("<div>(large trace: <code>.dialogs()</code>, <code>.timeline()</code> "
                     "and <code>.view()</code> show its contents)</div>")
    parts.append("</div>")
    return "".join(parts)
