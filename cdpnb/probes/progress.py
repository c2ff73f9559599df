"""The probe's default progress: a tqdm bar, as a widget in a notebook.

``tqdm.auto`` picks an ipywidgets bar in a Jupyter kernel and a text bar on stderr
elsewhere; the text bar fits itself to the terminal's width as it changes. A
widget bar is only made on the thread that owns the widgets: a probe run by
``cdpnb.sync.probe`` runs on cdpnb's engine thread, and ipykernel drops widget
updates sent from other threads, so there it gets the text bar (stream output
from any thread reaches the cell).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator

from cdpnb.terminal_text import inert
from cdpnb.transport.engine import engine

__all__ = ["Progress", "progress_for"]

#: What ``probe(progress=...)`` takes: True for the default bar, False/None for
#: none, or a callable given one label per finished check.
Progress = bool | Callable[[str], None] | None


@contextlib.contextmanager
def progress_for(progress: Progress, total: int) -> Iterator[Callable[[str], None]]:
    """A callable to tick once per finished check; the bar closes on exit."""
    if callable(progress):
        yield progress
        return
    if not progress:
        yield lambda _label: None
        return
    if engine.in_engine():
        from tqdm.std import tqdm
    else:
        from tqdm.auto import tqdm
    bar = tqdm(total=total, desc="probe", unit="check", dynamic_ncols=True, file=sys.stderr,
               leave=True)

    def tick(label: str) -> None:
        bar.set_postfix_str(inert(label), refresh=False)
        bar.update()

    try:
        yield tick
    finally:
        bar.close()
