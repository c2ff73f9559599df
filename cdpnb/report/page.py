"""The report as one HTML document: the sections in reading order, the style sheet,
and nothing the page could fetch.

No script at all: a cell's evidence is a section shown while the address's fragment
names it (CSS ``:target``; ``:has(:target)`` for an anchor inside one), so a cell is a
plain link and the back button works. The Content-Security-Policy says
``default-src 'none'`` (inline style only): even text that escaped its escaping could
neither run nor load anything. The only links are fragments of this page.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from cdpnb._version import __version__
from cdpnb.probes import CheckResult
from cdpnb.render import text
from cdpnb.report.cells import ResultView
from cdpnb.report.diff import Change, changes
from cdpnb.report.evidence import Evidence
from cdpnb.report.matrix import matrix_html
from cdpnb.report.plots import latency_svg, outcomes_svg
from cdpnb.report.protocols import protocols_html
from cdpnb.report.repeats import spread

__all__ = ["CSP", "STYLE", "document"]

CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; "
       "form-action 'none'")

STYLE = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1d1d1d;
 margin:0 auto;padding:0 1.5em 4em;max-width:1400px}
h1{font-size:22px;margin:.8em 0 .2em}h2{font-size:18px;margin:1.2em 0 .3em}
h3{font-size:15px;margin:1em 0 .3em}h4{font-size:14px;margin:1em 0 .2em;font-family:monospace}
h5{font-size:13px;font-weight:normal;margin:.8em 0 .2em}
a{color:#1a4f99}.meta,.legend,.quiet{color:#666;font-size:12px}
.scroll{overflow-x:auto}table{border-collapse:collapse}
.m{font-size:13px}.m td,.m th{border:1px solid #d4d4d4;padding:2px 3px;text-align:center}
.m th.b{vertical-align:bottom;padding:4px 2px}
.m th.b span{writing-mode:vertical-rl;transform:rotate(180deg);white-space:nowrap}
.m th.b small{color:#666;font-weight:normal}
.m td.cap,.m th.cap{text-align:left;min-width:7em;max-width:12em}.m td.lat{font-style:italic}
.m a{display:block;color:inherit;text-decoration:none;min-width:1.6em;white-space:nowrap}
.m a:hover{text-decoration:underline}
.ok{background:#dff3e6}.fail{background:#f8dddd}.partial{background:#fbefd5}
.none{background:#eeeeee}.info{background:#e3ecf7}
td.sur{color:#a00;font-weight:bold}.m td.chg{outline:3px solid #1a4f99;outline-offset:-3px}
span.sur{color:#a00;font-weight:bold}
.mk{padding:0 5px;border-radius:3px}
section.ev{display:none;border-top:3px solid #888;margin-top:1.5em}
section.ev:target,section.ev:has(:target),#all:target~section.ev{display:block}
.back{font-size:13px}
.chk{border-left:3px solid #ccc;padding-left:.8em;margin:.6em 0}
.tl,.st,.pr,.rn{font-size:12px}.tl td,.st td,.pr td,.rn td,.tl th,.st th,.pr th,.rn th{
 padding:1px 6px;vertical-align:top;text-align:left;border-bottom:1px solid #eee}
.tl{font-family:ui-monospace,monospace;width:100%}.tl td{white-space:nowrap}
.tl td.p{white-space:pre-wrap;overflow-wrap:anywhere;color:#444}
.tl tr.k{background:#fff3bf}.tl tr.e{background:#fde2e2}.tl tr.gap td{color:#888;font-style:italic}
.w{background:#1a4f99;color:#fff;border-radius:3px;padding:0 4px;font-weight:normal}
.chip{display:inline-block;background:#eef2f8;border:1px solid #c9d3e3;border-radius:3px;
 padding:0 4px;margin:1px 0;font-family:ui-monospace,monospace;white-space:nowrap}
.nw{white-space:nowrap}
.side{display:grid;grid-template-columns:1fr 1fr;gap:1.2em}.side>div{min-width:0;overflow-x:auto}
.side .tl td,.side .st td{white-space:normal;overflow-wrap:anywhere}
details{margin:.3em 0}summary{cursor:pointer}svg.plot{vertical-align:middle}
nav a{margin-right:1em}
"""


def document(views: Sequence[ResultView], evidence: Evidence) -> str:
    """The whole report of ``views`` (results, in the order compared)."""
    pairs = [changes(views[i - 1], views[i]) for i in range(1, len(views))]
    changed: dict[int, set[tuple[str, str]]] = {}
    every: list[Change] = []
    for found, _, _ in pairs:
        every += found
        for change in found:
            changed.setdefault(change.new, set()).add((change.backend_new, change.capability))
    repeated = [v for v in views if v.repeated()]
    nav = [f'<a href="#{v.matrix_id()}">{text(v.label, 60)}</a>' for v in views]
    if len(views) > 1:
        nav.insert(0, '<a href="#changed">what changed</a>')
    if repeated:
        nav.append('<a href="#runs">over the runs</a>')
    nav += ['<a href="#protocols">across protocols</a>',
            '<a href="#all">every cell\'s evidence</a>']
    made = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    body = [f'<header id="top"><h1>cdpnb capability report</h1><p class="meta">made {made} '
            f"by cdpnb {text(__version__, 20)} from {len(views)} result"
            f'{"s" if len(views) != 1 else ""}. Every matrix cell links to its evidence: '
            "the check's messages from its trace, the reason it is not ✓, the outcome it "
            f'was held against.</p><nav>{" ".join(nav)}</nav></header>']
    if len(views) > 1:
        body.append(_changed_html(views, pairs))
    body += [matrix_html(v, changed.get(v.index, set())) for v in views]
    if repeated:
        body.append(_runs_html(repeated))
    body.append('<section id="protocols"><h2>The same scenario across protocols</h2>'
                '<p class="meta">Each dialog check on every backend, its steps in one '
                "vocabulary (opened, answered, closed) with the wire message on hover, lined "
                "up by protocol; a row that differs from the usual steps says how.</p>")
    for view in views:
        body.append(f"<h3>{text(view.label, 120)}</h3>{protocols_html(view, evidence)}")
    body.append('</section><p><a href="#all">show every cell\'s evidence</a> · '
                '<a href="#top">top</a></p><div id="all"></div>')
    for n, change in enumerate(every):
        body.append(_side_by_side(views, change, n, evidence))
    for view in views:
        for backend in view.backends:
            for capability in view.capabilities:
                anchor = view.cell_id(backend, capability)
                body.append(
                    f'<section class="ev" id="{anchor}"><h2>{text(backend, 80)} · '
                    f"{text(capability, 80)}</h2><p><a class=\"back\" "
                    f'href="#{view.matrix_id()}">↑ back to the matrix</a></p>'
                    f"{evidence.cell_html(view, backend, capability, anchor)}</section>")
    return ('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            '<meta name="referrer" content="no-referrer">'
            '<meta name="viewport" content="width=device-width,initial-scale=1">'
            f"<title>cdpnb capability report</title><style>{STYLE}</style></head>"
            f'<body><main>{"".join(body)}</main></body></html>\n')


def _changed_html(views: Sequence[ResultView],
                  pairs: list[tuple[list[Change], list[str], list[str]]]) -> str:
    parts = ['<section id="changed"><h2>What changed</h2>']
    n = 0
    for i, (found, only_old, only_new) in enumerate(pairs, 1):
        old, new = views[i - 1], views[i]
        parts.append(f"<h3>{text(old.label, 80)} → {text(new.label, 80)}: "
                     f"{len(found)} cell{'s' if len(found) != 1 else ''} changed</h3>")
        if found:
            items = []
            for change in found:
                items.append(f'<li><a href="#d{n}">{text(change.backend, 80)} · '
                             f"{text(change.capability, 80)}</a>: "
                             f"{text(change.before, 60)} → {text(change.after, 60)}</li>")
                n += 1
            parts.append(f'<ul>{"".join(items)}</ul>')
        for backends, where in ((only_old, old.label), (only_new, new.label)):
            if backends:
                parts.append(f'<p class="meta">only in {text(where, 80)}: '
                             f'{text(", ".join(backends), 400)}</p>')
    parts.append("</section>")
    return "".join(parts)


def _side_by_side(views: Sequence[ResultView], change: Change, n: int,
                  evidence: Evidence) -> str:
    old, new = views[change.old], views[change.new]
    columns = "".join(
        f"<div><h3>{text(view.label, 80)}: {text(mark, 60)}</h3>"
        f"{evidence.cell_html(view, backend, change.capability, f'd{n}{side}')}</div>"
        for view, backend, mark, side in ((old, change.backend_old, change.before, "a"),
                                          (new, change.backend_new, change.after, "b")))
    return (f'<section class="ev" id="d{n}"><h2>Changed: {text(change.backend, 80)} · '
            f"{text(change.capability, 80)}: {text(change.before, 60)} → "
            f'{text(change.after, 60)}</h2><p><a class="back" href="#changed">↑ back to '
            f'what changed</a> · <a class="back" href="#{new.matrix_id()}">the matrix</a></p>'
            f'<div class="side">{columns}</div></section>')


def _runs_html(views: Sequence[ResultView]) -> str:
    parts = ['<section id="runs"><h2>Over the runs</h2><p class="meta">Each check that ran '
             "more than once: its outcomes in run order, its success and flake rates with "
             "95% Wilson intervals, its latencies (a dot per value, a tick per median). "
             "Flakiest first.</p>"]
    for view in views:
        rows = []
        for backend in view.backends:
            for capability in view.capabilities:
                by_check: dict[str, list[CheckResult]] = {}
                for r in view.checks(backend, capability):
                    by_check.setdefault(r.check, []).append(r)
                for check, runs in by_check.items():
                    if len(runs) < 2:
                        continue
                    found = spread(runs)
                    values = [list(r.samples) or ([r.value] if r.value is not None else [])
                              for r in runs if r.status == "ok"]
                    rows.append((found.flake_rate, backend, check, capability, found, values))
        rows.sort(key=lambda row: (-row[0], row[1], row[2]))
        body = "".join(
            f'<tr><td class="nw"><a href="#{view.cell_id(backend, capability)}">'
            f"{text(backend, 60)} · {text(check, 60)}</a></td>"
            f"<td>{outcomes_svg(found.statuses)}</td><td>{text(found.describe(), 200)}</td>"
            f"<td>{latency_svg(values, 200) if check.startswith('latency.') else ''}</td></tr>"
            for _, backend, check, capability, found, values in rows)
        parts.append(f'<h3>{text(view.label, 120)}</h3><table class="rn"><thead><tr>'
                     "<th>check</th><th>outcomes</th><th>rates</th><th>latencies</th></tr>"
                     f"</thead><tbody>{body}</tbody></table>")
    parts.append("</section>")
    return "".join(parts)
