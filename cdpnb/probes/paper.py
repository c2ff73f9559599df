"""The matrix as a table for a paper: Markdown or LaTeX, each cell's mark with a
footnote number where it is not ✓, and the footnotes that say why.

Capabilities are rows and backends columns (as the README's table): fourteen backends
fit a page's width as narrow columns of marks, where the reasons never would. Two
cells that fail for the same words share one footnote. Every word that came from an
endpoint or a page (a version, an error message) is made inert for a terminal and, in
LaTeX, escaped (:func:`latex_escape`): a ``_`` or a ``%`` in an error message must not
end a document's compile.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from cdpnb.probes.display import cell_kind, short_version
from cdpnb.terminal_text import inert

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Footnoted", "MatrixParts", "footnoted", "latex_escape", "latex_table",
           "markdown_table", "short_version"]


class MatrixParts(Protocol):
    """What the tables read of a probe result (``ProbeResult``, which calls them)."""

    def matrix_text(self, *, reasons: bool = ...) -> pd.DataFrame: ...
    def version_label(self, backend: str) -> str: ...


@dataclass(frozen=True)
class Footnoted:
    """The matrix as marks (capabilities × backends), each not-✓ cell with its
    footnote's number, and the footnotes in order (number ``i + 1`` is ``notes[i]``)."""

    backends: list[str]
    versions: list[str]
    rows: list[tuple[str, list[tuple[str, int | None]]]]
    notes: list[str]


def _why(cell: str) -> str:
    """A reason cell's words without its mark: ``✗ no Page domain`` -> ``no Page
    domain``; ``partial: check: why`` stays whole (the check's name says which)."""
    return cell[2:] if cell.startswith("✗ ") else cell


def footnoted(result: MatrixParts) -> Footnoted:
    """The matrix's marks with footnote numbers for every cell that is not ✓ (nor a
    word or a figure), one footnote per distinct reason."""
    marks = result.matrix_text(reasons=False)  # capabilities × backends
    whys = result.matrix_text(reasons=True)
    notes: dict[str, int] = {}
    rows: list[tuple[str, list[tuple[str, int | None]]]] = []
    for capability in marks.index:
        cells: list[tuple[str, int | None]] = []
        for backend in marks.columns:
            mark = str(marks.at[capability, backend])
            why = str(whys.at[capability, backend])
            number = None
            # (a mark whose reason says more: ✗ and ~, and a word that is not the whole
            # story, such as classic's "seen, frame unknown")
            if cell_kind(mark) != "ok" and why != mark:
                number = notes.setdefault(inert(_why(why)), len(notes) + 1)
            cells.append((inert(mark), number))
        rows.append((inert(str(capability)), cells))
    backends = [str(b) for b in marks.columns]
    versions = [inert(short_version(result.version_label(b))) for b in backends]
    return Footnoted([inert(b) for b in backends], versions, rows, list(notes))


_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def _md(value: str) -> str:
    # a pipe would end the cell, a line break the row
    return value.replace("|", "\\|").replace("\n", " ")


def markdown_table(result: MatrixParts) -> str:
    """The matrix as a Markdown table (capabilities as rows), each not-✓ mark with a
    superscript footnote number, and the numbered footnotes below it."""
    table = footnoted(result)
    head = ["capability", *(f"{b} {v}".strip() for b, v in
                            zip(table.backends, table.versions, strict=True))]
    lines = ["| " + " | ".join(_md(h) for h in head) + " |", "|" + "---|" * len(head)]
    for capability, cells in table.rows:
        shown = [mark + ("" if n is None else str(n).translate(_SUPERSCRIPT))
                 for mark, n in cells]
        lines.append("| " + " | ".join(_md(c) for c in [capability, *shown]) + " |")
    if table.notes:
        lines.append("")
        lines += [f"{i}. {_md(note)}" for i, note in enumerate(table.notes, 1)]
    return "\n".join(lines)


#: LaTeX's special characters, each as text (one pass: a replacement is never read
#: again), and the few non-ASCII marks the matrix and its reasons use, as pdflatex
#: without extra packages typesets them.
_LATEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
          "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
          "^": r"\textasciicircum{}", "<": r"\textless{}", ">": r"\textgreater{}",
          "…": r"\ldots{}", "—": "---", "–": "--", "→": r"$\rightarrow$",
          "✓": r"$\checkmark$", "✗": r"$\times$", "×": r"$\times$", "≥": r"$\geq$",
          "≤": r"$\leq$", "−": "-", "δ": r"$\delta$", "·": r"$\cdot$"}
_LATEX_SPECIAL = re.compile("|".join(re.escape(k) for k in _LATEX))
#: Any other character pdflatex's default input encoding may refuse: shown as its code.
_NOT_ASCII = re.compile(r"[^\x20-\x7e]")


def latex_escape(value: str) -> str:
    r"""``value`` as LaTeX text: ``_ & % # $ { } ~ ^ \`` escaped, a few marks as LaTeX
    writes them, and any other non-ASCII character as ``U+XXXX`` (a document that
    compiles beats a glyph).

    >>> latex_escape("a_b & 50% #1 $x {y}")
    'a\\_b \\& 50\\% \\#1 \\$x \\{y\\}'
    >>> latex_escape("~z ^w \\ …")
    '\\textasciitilde{}z \\textasciicircum{}w \\textbackslash{} \\ldots{}'
    """
    escaped = _LATEX_SPECIAL.sub(lambda m: _LATEX[m.group()], inert(value))
    return _NOT_ASCII.sub(lambda m: f"U+{ord(m.group()):04X}", escaped)


_MARKS = {"✓": r"$\checkmark$", "✗": r"$\times$", "~": r"$\sim$", "—": "---"}


def _latex_mark(mark: str, number: int | None) -> str:
    shown = _MARKS.get(mark, latex_escape(mark))
    return shown + ("" if number is None else rf"\textsuperscript{{{number}}}")


def latex_table(result: MatrixParts, *, standalone: bool = False,
                caption: str = "Capability matrix (cdpnb probe)",
                label: str = "tab:cdpnb-matrix") -> str:
    r"""The matrix as a LaTeX ``table`` (capabilities as rows, backends' names turned
    upright above their columns, scaled to the line's width), each not-✓ mark with a
    superscript number and the numbered footnotes below. It needs ``amssymb``
    (``\checkmark``) and ``graphicx`` (``\rotatebox``, ``\resizebox``);
    ``standalone=True`` wraps it in a document that loads them."""
    table = footnoted(result)
    head = " & ".join([r"\textbf{capability}", *(
        rf"\rotatebox{{90}}{{{latex_escape(f'{b} {v}'.strip())}}}"
        for b, v in zip(table.backends, table.versions, strict=True))])
    body = [" & ".join([latex_escape(capability),
                        *(_latex_mark(mark, n) for mark, n in cells)]) + r" \\"
            for capability, cells in table.rows]
    lines = [
        "% cdpnb's capability matrix; needs \\usepackage{amssymb,graphicx}",
        r"\begin{table}[htbp]",
        r"\centering",
        rf"\caption{{{latex_escape(caption)}}}",
        rf"\label{{{latex_escape(label)}}}",
        r"\resizebox{\linewidth}{!}{%",
        rf"\begin{{tabular}}{{l{'c' * len(table.backends)}}}",
        r"\hline",
        head + r" \\",
        r"\hline",
        *body,
        r"\hline",
        r"\end{tabular}}",
    ]
    if table.notes:
        lines += [r"\par\footnotesize", r"\begin{enumerate}",
                  *(rf"\item {latex_escape(note)}" for note in table.notes),
                  r"\end{enumerate}"]
    lines.append(r"\end{table}")
    text = "\n".join(lines)
    if standalone:
        text = "\n".join([r"\documentclass{article}", r"\usepackage[margin=1.5cm]{geometry}",
                          r"\usepackage{amssymb,graphicx}", r"\begin{document}", text,
                          r"\end{document}"])
    return text
