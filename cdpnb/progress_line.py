"""A progress line for a notebook: plain HTML updated in place, a summary when done.

A leaf module (stdlib; IPython imported when a line is shown), so the campaign and the
probe can both use it without loading the notebook layer.

A widget progress bar (tqdm's) keeps in the notebook file the text it had when first
displayed (``0%| 0/240``), and an export of a notebook executed by nbclient shows
nothing where it was (nbconvert draws widgets with a manager it loads from a CDN).
This line is a ``text/html`` + ``text/plain`` output with a ``display_id``: each update
replaces the stored bundle, so the file, every export and every front end show the
last state, and ``close`` leaves one summary line in its place.
"""

from __future__ import annotations

import html
import sys
import threading
import time
import uuid

from cdpnb.terminal_text import inert

__all__ = ["UPDATE_INTERVAL_S", "ProgressLine", "duration_text", "in_kernel", "on_kernel_thread"]

#: The notebook's own UI font, as the views' static snapshots use it.
STYLE = "font-family:var(--jp-ui-font-family,sans-serif);font-size:12px"

#: Updates are sent at most this often; ``close`` is always sent.
UPDATE_INTERVAL_S = 0.5


def in_kernel() -> bool:
    """Whether this runs in a Jupyter kernel (an IPython shell with a kernel)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return getattr(shell, "kernel", None) is not None


def on_kernel_thread() -> bool:
    """Whether a display from here reaches the running cell: in a kernel, on its own
    (main) thread. From another thread (cdpnb's engine, a user's) a display message may
    be dropped or filed under the wrong cell, while text on stderr reaches it."""
    return in_kernel() and threading.current_thread() is threading.main_thread()


def duration_text(seconds: float) -> str:
    """``4.2s``, ``42s``, ``3m12s``, ``1h05m``: short, and never a float's noise."""
    if seconds < 10:
        return f"{seconds:.1f}s"
    whole = round(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


class ProgressLine:
    """``label`` and a bar, ``done``/``total`` and a detail, updated in one output.

    ``update`` sends at most every ``UPDATE_INTERVAL_S``; ``close(summary)`` replaces the
    line with ``label: summary``. Details and summaries are text (escaped here).
    Call it from the kernel's thread (the thread running the cell).
    """

    def __init__(self, label: str, total: int) -> None:
        if not isinstance(label, str):
            raise TypeError(f"label must be a str, got {type(label).__name__}")
        if not isinstance(total, int) or isinstance(total, bool):
            raise TypeError(f"total must be an int, got {type(total).__name__}")
        if total < 0:
            raise ValueError(f"total must be 0 or more, got {total}")
        self.label = label
        self.total = total
        self.display_id = f"cdpnb-progress-{uuid.uuid4().hex}"
        self.began = time.monotonic()
        self.sent = 0
        self.closed = False
        self._last_sent = 0.0

    def _bundle(self, plain: str, body: str) -> dict[str, str]:
        return {"text/plain": plain,
                "text/html": f'<div class="cdpnb-progress" style="{STYLE}">{body}</div>'}

    def _publish(self, bundle: dict[str, str]) -> None:
        from IPython.display import display, update_display

        if self.sent == 0:
            display(bundle, raw=True, display_id=self.display_id)
        else:
            update_display(bundle, raw=True, display_id=self.display_id)
        self.sent += 1
        self._last_sent = time.monotonic()

    def update(self, done: int, detail: str = "", *, force: bool = False) -> bool:
        """Show ``done`` of ``total`` and ``detail``; True if it was sent now."""
        if not isinstance(done, int) or isinstance(done, bool):
            raise TypeError(f"done must be an int, got {type(done).__name__}")
        if self.closed:
            raise RuntimeError(f"the {self.label} progress line is closed")
        if not force and self.sent and time.monotonic() - self._last_sent < UPDATE_INTERVAL_S:
            return False
        share = done / self.total if self.total else 1.0
        label = html.escape(self.label)
        counts = f"{done}/{self.total} ({share:.0%})"
        plain = inert(f"{self.label} {counts}" + (f" · {detail}" if detail else ""))
        body = (f"<b>{label}</b> <progress max=\"{self.total}\" value=\"{done}\" "
                f'style="vertical-align:middle;width:12em"></progress> {counts}'
                + (f" · {html.escape(inert(detail))}" if detail else ""))
        self._publish(self._bundle(plain, body))
        return True

    def close(self, summary: str) -> None:
        """Replace the line with ``label: summary`` (once)."""
        if self.closed:
            return
        self.closed = True
        plain = inert(f"{self.label}: {summary}")
        body = f"<b>{html.escape(self.label)}</b>: {html.escape(inert(summary))}"
        self._publish(self._bundle(plain, body))
