"""Small inline SVG plots for a report: a run's outcomes as a row of squares, and
latencies as a strip of dots with each run's median. No script, no font, no file:
the SVG is text in the page, its numbers made here and its labels escaped."""

from __future__ import annotations

import math
from collections.abc import Sequence

from cdpnb.render import text

__all__ = ["STATUS_COLOURS", "latency_svg", "outcomes_svg"]

#: The matrix's colours, darker: a square of 8 px must read at a glance.
STATUS_COLOURS = {"ok": "#3a9a5b", "partial": "#d9a521", "fail": "#c0392b", "none": "#999"}
_SQUARE, _PER_LINE = 9, 40


def outcomes_svg(statuses: Sequence[str], label: str = "run") -> str:
    """One square per run, in run order, coloured by its status; each square's title
    says ``run N: status``."""
    squares = []
    for i, status in enumerate(statuses):
        x, y = (i % _PER_LINE) * (_SQUARE + 2), (i // _PER_LINE) * (_SQUARE + 2)
        colour = STATUS_COLOURS.get(status, STATUS_COLOURS["none"])
        squares.append(f'<rect x="{x}" y="{y}" width="{_SQUARE}" height="{_SQUARE}" '
                       f'fill="{colour}"><title>{text(label, 40)} {i}: {text(status, 40)}'
                       "</title></rect>")
    lines = max(1, math.ceil(len(statuses) / _PER_LINE))
    width = min(len(statuses), _PER_LINE) * (_SQUARE + 2)
    return (f'<svg class="plot" width="{max(width, 1)}" height="{lines * (_SQUARE + 2)}" '
            f'role="img" aria-label="outcomes over {len(statuses)} runs">'
            f'{"".join(squares)}</svg>')


def latency_svg(runs: Sequence[Sequence[float]], width: int = 260) -> str:
    """Latencies (ms) as dots on one axis, a row per run when there are a few runs of
    several samples each (else every value on one row), each row's median as a tick;
    a log axis when the values span more than a factor of 10. The axis's ends and the
    overall median are written below it."""
    values = [v for run in runs for v in run if math.isfinite(v) and v >= 0]
    if not values:
        return ""
    rows: list[Sequence[float]] = (list(runs) if 1 < len(runs) <= 10
                                   and any(len(r) > 1 for r in runs) else [values])
    low, high = min(values), max(values)
    logarithmic = low > 0 and high / low > 10
    def x(v: float) -> float:
        if high == low:
            return width / 2
        if logarithmic:
            return 4 + (width - 8) * (math.log(v) - math.log(low)) / (
                math.log(high) - math.log(low))
        return 4 + (width - 8) * (v - low) / (high - low)
    row_h = 12
    parts = []
    for i, run in enumerate(rows):
        y = 6 + i * row_h
        shown = [v for v in run if math.isfinite(v) and v >= 0]
        parts += [f'<circle cx="{x(v):.1f}" cy="{y}" r="2.2" fill="#3465a4" '
                  'fill-opacity="0.55"/>' for v in shown]
        if shown:
            mid = sorted(shown)[len(shown) // 2]
            parts.append(f'<line x1="{x(mid):.1f}" x2="{x(mid):.1f}" y1="{y - 5}" '
                         f'y2="{y + 5}" stroke="#111" stroke-width="1.5"><title>median '
                         f"{mid:.3g} ms</title></line>")
    axis_y = 6 + len(rows) * row_h
    median = sorted(values)[len(values) // 2]
    scale = "log" if logarithmic else "linear"
    parts.append(f'<line x1="4" x2="{width - 4}" y1="{axis_y - 4}" y2="{axis_y - 4}" '
                 'stroke="#888"/>')
    parts.append(f'<text x="4" y="{axis_y + 8}" font-size="10">{low:.3g}</text>'
                 f'<text x="{width / 2:.0f}" y="{axis_y + 8}" font-size="10" '
                 f'text-anchor="middle">median {median:.3g} ms ({len(values)}, {scale})</text>'
                 f'<text x="{width - 4}" y="{axis_y + 8}" font-size="10" '
                 f'text-anchor="end">{high:.3g}</text>')
    return (f'<svg class="plot" width="{width}" height="{axis_y + 12}" role="img" '
            f'aria-label="latencies in ms">{"".join(parts)}</svg>')
