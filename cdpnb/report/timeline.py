"""One check's messages as a readable timeline (HTML): when (ms since the check
began), which way, which session, the method and what it carried, the dialog's steps
marked with their word.

A check's span holds from a dozen messages to a few hundred (a latency check's 30
round trips, a page's frames coming and going). The table keeps the first and the
last messages, every dialog step, every error and fault and cdpnb's own notes; the
runs between are one row each that counts what they held (``… 14 messages: 6×
script.realmCreated, …``). Every payload is page-controlled text: escaped (and cut) by
:func:`cdpnb.render.text`, never written as markup.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from cdpnb.render import clip, text
from cdpnb.report.lifecycle import Step
from cdpnb.report.spans import Span

__all__ = ["HEAD", "PAYLOAD_CHARS", "TAIL", "messages_html", "steps_html"]

#: Messages kept at each end of a span; the steps, errors, faults and notes are kept
#: wherever they are.
HEAD, TAIL = 8, 10
#: Characters of a payload shown in a row (the trace has the rest).
PAYLOAD_CHARS = 140
_ARROWS = {"send": "→", "recv": "←", "note": "·", "fault": "!"}
#: cdpnb's notes kept wherever they are: the dialog's handling and the check's outcome.
_KEPT_NOTES = ("cdpnb.dialog", "cdpnb.bridge", "probe.")


def messages_html(span: Span, steps: Sequence[Step]) -> str:
    """The span's messages as a table, bounded (see the module)."""
    marked = {step.position: step for step in steps}
    kinds, methods = span.kind, span.method
    n = len(kinds)
    keep = [i < HEAD or i >= n - TAIL or i in marked or kinds[i] in ("error", "fault")
            or (kinds[i] == "note" and methods[i].startswith(_KEPT_NOTES)) for i in range(n)]
    rows: list[str] = []
    skipped: list[int] = []

    def flush() -> None:
        if skipped:
            counts = Counter(methods[i] for i in skipped).most_common(4)
            what = ", ".join(f"{c}× {m}" for m, c in counts)
            more = "" if len(counts) < 4 else ", …"
            rows.append(f'<tr class="gap"><td colspan="6">… {len(skipped)} messages: '
                        f"{text(what, 300)}{more}</td></tr>")
            skipped.clear()

    for i in range(n):
        if not keep[i]:
            skipped.append(i)
            continue
        flush()
        step = marked.get(i)
        t_ms = (span.t[i] - span.start_s) * 1000
        session = span.session[i]
        word = f'<b class="w">{text(step.word, 20)}</b> ' if step is not None else ""
        css = ' class="k"' if step is not None else (
            ' class="e"' if kinds[i] in ("error", "fault") else "")
        rows.append(
            f"<tr{css}><td>{t_ms:.1f}</td><td>{_ARROWS.get(span.direction[i], '?')}</td>"
            f'<td title="{text(session, 80)}">{text(session, 8)}</td>'
            f"<td>{text(span.id[i], 12)}</td><td>{word}{text(methods[i], 80)}</td>"
            f'<td class="p">{text(span.payload[i], PAYLOAD_CHARS)}</td></tr>')
    flush()
    return ('<table class="tl"><thead><tr><th>ms</th><th></th><th>session</th><th>id</th>'
            f'<th>message</th><th>payload</th></tr></thead><tbody>{"".join(rows)}'
            "</tbody></table>")


def steps_html(steps: Sequence[Step]) -> str:
    """The dialog's steps in the common vocabulary: when (ms since the check began, and
    since it opened), through what, the wire message, and for ``opened`` the dialog's
    type, message and frame."""
    if not steps:
        return '<p class="quiet">No dialog step in this check\'s messages.</p>'
    opened = next((s.t_ms for s in steps if s.word == "opened"), steps[0].t_ms)
    rows = []
    for step in steps:
        what = ""
        if step.word == "opened":
            frame = step.frame or "frame not named"
            fid = f" ({clip(step.frame_id, 12)})" if step.frame_id else ""
            what = f"{step.dialog_type or 'dialog'} “{step.message}” in {frame}{fid}"
        rows.append(f"<tr><td><b>{text(step.word, 20)}</b></td><td>{step.t_ms:.1f}</td>"
                    f"<td>{step.t_ms - opened:+.1f}</td><td>{text(step.via, 10)}</td>"
                    f"<td>{text(step.method, 60)}</td><td>{text(what, 300)}</td></tr>")
    return ('<table class="st"><thead><tr><th>step</th><th>ms</th><th>since opened</th>'
            "<th>via</th><th>message</th><th>dialog</th></tr></thead>"
            f'<tbody>{"".join(rows)}</tbody></table>')
