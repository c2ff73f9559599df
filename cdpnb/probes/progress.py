"""The probe's default progress: a line in a notebook, a tqdm bar elsewhere.

In a notebook (on the kernel's own thread) the progress is a line of HTML updated in
place (``cdpnb.progress_line``), which ends as one summary line: a widget bar would stay
``0%| 0/240`` in the saved file and blank in an executed export. Elsewhere it is a tqdm
text bar on stderr, which fits itself to the terminal's width as it changes. A probe run
by ``cdpnb.sync.probe`` runs on cdpnb's engine thread, where a display message would be
filed under the wrong cell: there it gets the text bar (stream output from any thread
reaches the cell).
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator

from cdpnb.progress_line import ProgressLine, duration_text, on_kernel_thread
from cdpnb.terminal_text import inert

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
    if on_kernel_thread():
        with _notebook_line(total) as ticker:
            yield ticker
        return
    from tqdm.std import tqdm

    bar = tqdm(total=total, desc="probe", unit="check", dynamic_ncols=True, file=sys.stderr,
               leave=True)

    def tick(label: str) -> None:
        bar.set_postfix_str(inert(label), refresh=False)
        bar.update()

    try:
        yield tick
    finally:
        bar.close()


@contextlib.contextmanager
def _notebook_line(total: int) -> Iterator[Callable[[str], None]]:
    line = ProgressLine("probe", total)
    began = time.monotonic()
    done = 0

    def tick(label: str) -> None:
        nonlocal done
        done += 1
        line.update(done, label)

    line.update(0, force=True)
    try:
        yield tick
    except BaseException as stop:
        ended = "interrupted" if isinstance(stop, KeyboardInterrupt) else "stopped"
        line.close(f"{ended} after {done} of {total} checks · "
                   f"{duration_text(time.monotonic() - began)}")
        raise
    line.close(f"{total} checks · {duration_text(time.monotonic() - began)}")
