"""The same scenario across protocols: for each dialog check, every backend's dialog
steps in one vocabulary (:mod:`cdpnb.report.lifecycle`), lined up, so a reader sees
where the engines differ: an extra event, a missing close, another order.

Each row is a backend's first run of the check, grouped by protocol (CDP, BiDi,
classic, WIP). The steps most backends show are the usual ones; a row that differs
says how (``no closed``, ``2× opened``, ``another order``).
"""

from __future__ import annotations

from collections import Counter

from cdpnb.probes import CHECKS
from cdpnb.probes.display import cell_kind
from cdpnb.probes.run import PROTOCOLS
from cdpnb.render import clip, text
from cdpnb.report.cells import ResultView
from cdpnb.report.evidence import Evidence
from cdpnb.report.lifecycle import Step, signature

__all__ = ["DIALOG_CHECKS", "difference", "protocols_html"]

#: The checks that open a dialog (natively or through the bridge).
DIALOG_CHECKS = [c.name for c in CHECKS if c.name.startswith(("dialog.", "bridge.",
                                                                "finding."))]


def difference(steps: tuple[str, ...], usual: tuple[str, ...]) -> str:
    """How ``steps`` differ from ``usual``, in words ("" when they do not).

    >>> difference(("opened", "closed"), ("opened", "answered", "closed"))
    'no answered'
    >>> difference(("opened", "closed", "answered"), ("opened", "answered", "closed"))
    'another order'
    """
    if steps == usual:
        return ""
    if not steps:
        return "no dialog step at all"
    have, want = Counter(steps), Counter(usual)
    said = [f"no {w}" if have[w] == 0 else f"{have[w]}× {w} (usually {want[w]})"
            for w in want if have[w] < want[w]]
    said += [f"extra {w}" if want[w] == 0 else f"{have[w]}× {w} (usually {want[w]})"
             for w in have if have[w] > want[w]]
    return ", ".join(said) or "another order"


def _chips(steps: list[Step]) -> str:
    if not steps:
        return '<span class="quiet">none</span>'
    opened = next((s.t_ms for s in steps if s.word == "opened"), steps[0].t_ms)
    return " ".join(
        f'<span class="chip" title="{text(f"{s.method} ({s.via})", 120)}">'
        f"{text(s.word, 20)} {s.t_ms - opened:+.1f}</span>" for s in steps)


def protocols_html(view: ResultView, evidence: Evidence) -> str:
    """One block per dialog check: every backend's steps, lined up."""
    order = {p: i for i, p in enumerate(PROTOCOLS)}
    backends = sorted(view.backends, key=lambda b: (
        order.get(view.mark(b, "protocol"), len(order)), view.backends.index(b)))
    blocks = []
    for k, check in enumerate(DIALOG_CHECKS):
        capability = next(c.capability for c in CHECKS if c.name == check)
        rows: list[tuple[str, str, list[Step]]] = []
        for backend in backends:
            runs = [r for r in view.checks(backend, capability) if r.check == check]
            if not runs or backend in view.unprobed:
                continue
            first = min(runs, key=lambda r: r.run)
            rows.append((backend, first.status,
                         evidence.steps(evidence.span(view.source, first)[0])))
        if not rows:
            continue
        seen = Counter(signature(steps) for _, _, steps in rows)
        usual = seen.most_common(1)[0][0]
        body = []
        differing = 0
        for backend, status, steps in rows:
            said = difference(signature(steps), usual)
            differing += bool(said)
            opened = next((s for s in steps if s.word == "opened"), None)
            frame = "" if opened is None else (opened.frame or "frame not named") + (
                f" ({clip(opened.frame_id, 12)})" if opened.frame_id else "")
            mark = view.mark(backend, capability)
            body.append(
                f'<tr><td class="nw">{text(backend, 60)}</td>'
                f"<td>{text(view.mark(backend, 'protocol'), 10)}</td>"
                f'<td class="{cell_kind(mark)}"><a href="#{view.cell_id(backend, capability)}">'
                f"{text(status, 12)}</a></td><td class=\"nw\">{_chips(steps)}</td>"
                f"<td>{text(frame, 120)}</td><td class=\"sur\">{text(said, 120)}</td></tr>")
        usual_text = " → ".join(usual) or "no dialog step"
        blocks.append(
            f'<details id="p{view.index}-{k}"><summary><b>{text(check, 60)}</b> — usually '
            f"{text(usual_text, 80)}; {differing} of {len(rows)} backends differ</summary>"
            '<table class="pr"><thead><tr><th>backend</th><th>protocol</th><th>outcome</th>'
            "<th>steps (ms since opened)</th><th>frame of the dialog</th><th>differs</th>"
            f'</tr></thead><tbody>{"".join(body)}</tbody></table></details>')
    return "".join(blocks)
