"""A result's matrix (HTML) as the CLI shows it: capabilities as rows, backends as
columns (their names upright, so fourteen fit an ordinary width and no name breaks
inside a word), each cell coloured as ``cdpnb probe`` colours it and a link to its
evidence."""

from __future__ import annotations

from collections.abc import Collection

from cdpnb.probes.display import cell_kind, cell_symbol
from cdpnb.render import text
from cdpnb.report.cells import ResultView, short_version

__all__ = ["LEGEND", "matrix_html"]

LEGEND = ("✓ works · ~ partly · ✗ does not · frame? seen, frame unknown · words: how the "
          "engine does it · figures: median ms · ! not what the measured facts predict · "
          "≈ outcomes differ between runs · a framed cell changed since the result above. "
          "Click a cell for its evidence.")


def matrix_html(view: ResultView, changed: Collection[tuple[str, str]] = ()) -> str:
    """The matrix of ``view``; ``changed`` cells (backend, capability) are framed."""
    result = view.source.result
    head = "".join(
        f'<th class="b" title="{text(result.version_label(b), 200)}"><span>{text(b, 60)}'
        f' <small>{text(short_version(result.version_label(b)), 16)}</small></span></th>'
        for b in view.backends)
    protocols = "".join(f'<td class="info">{text(view.mark(b, "protocol"), 12)}</td>'
                        for b in view.backends)
    rows = [f'<tr><td class="cap">protocol</td>{protocols}</tr>']
    latency = set(result.latency_capabilities())
    for capability in view.capabilities:
        cells = []
        for backend in view.backends:
            mark = view.mark(backend, capability)
            css = [cell_kind(mark)]
            flags = ""
            if any(view.surprising(r) for r in view.checks(backend, capability)):
                flags += "!"
                css.append("sur")
            if view.flaky(backend, capability):
                flags += "≈"
            if (backend, capability) in changed:
                css.append("chg")
            title = view.why(backend, capability)
            cells.append(f'<td class="{" ".join(css)}"><a href="#'
                         f'{view.cell_id(backend, capability)}" title="{text(title, 600)}">'
                         f"{text(cell_symbol(mark), 12)}{flags}</a></td>")
        style = ' class="cap lat"' if capability in latency else ' class="cap"'
        rows.append(f"<tr><td{style}>{text(capability, 80)}</td>{''.join(cells)}</tr>")
    checks = len(result.results)
    surprises = sum(view.surprising(r) for r in result.results)
    said = f"{surprises} not as expected" if surprises else "every cell as expected"
    return (f'<section class="mx" id="{view.matrix_id()}"><h2>{text(view.label, 120)}</h2>'
            f'<p class="meta">{len(view.backends)} backends · {checks} checks · {said}</p>'
            f'<div class="scroll"><table class="m"><thead><tr><th class="cap">capability</th>'
            f'{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>'
            f'<p class="legend">{text(LEGEND, 600)}</p></section>')
