"""A view's output in a notebook: its live widget where a widget front end shows it,
its static snapshot everywhere else, and that snapshot kept current in both.

What a notebook file keeps of an output is its mime bundle. A widget's bundle says
only "model <id>": a front end with the widget manager draws the model, everything
else falls back to the bundle's ``text/html``. So a view is displayed with a
``display_id``, and each time it redraws its snapshot is sent again as an
``update_display_data``: the front end replaces the stored bundle, and a notebook
saved then (JupyterLab saves no widget state by default) exports what the view showed
last, not what it showed when first displayed.

Which bundle goes out depends on who is watching. nbclient (``jupyter nbconvert
--execute``, papermill) stores every widget's state, and nbconvert then prefers the
widget over ``text/html`` and loads a widget manager from a CDN to draw it: blank
offline, and blank on every page that runs no scripts. A kernel cannot ask its client
whether it draws widgets, so cdpnb finds out: the first view opens two small models
joined by ``jsdlink``; a widget manager that creates them copies the one value into
the other and sends it back, and nobody else does. Until that answer arrives a view is
displayed as its static snapshot (kept current); when it arrives every view still
live becomes its widget. Measured with JupyterLab 4.6.6, jupyterlab_widgets 3.0.17 and
ipywidgets 8.1.9 in Chromium 156: the answer arrives once the kernel is idle after the
cell that opened the models (comm messages wait behind a running cell), and ipywidgets'
own control comm (``Widget._control_comm``) is still unopened then, so it cannot tell.

A front end draws an updated widget output afresh (JupyterLab's widget renderer
empties its node and makes a new view; measured there: a focused text box loses
focus, and the marks a script left on the old nodes are gone), so
a live widget's snapshot is sent only after the view has been still for
``QUIET_S`` (or ``MAX_WAIT_S`` after its first unsent change), and not while the view
asks for input (a dialog waiting for its answer). A static snapshot is plain HTML, so
it goes out at most every ``STATIC_INTERVAL_S`` and at the end of every cell: nbclient
keeps only the messages of the cell it runs, so a cell ends with every snapshot sent.

When a view can no longer change (its supervisor stopped, or it was closed) its output
becomes the static snapshot for good, in every front end: a widget output then adds
nothing, and a static one exports the same everywhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import time
import uuid
import weakref
from collections.abc import Callable
from typing import Any

from cdpnb.notebook.static import static_bundle, widget_bundle
from cdpnb.progress_line import in_kernel

__all__ = ["MAX_WAIT_S", "QUIET_S", "STATIC_INTERVAL_S", "SnapshotDisplay", "widgets_drawn"]

_log = logging.getLogger(__name__)

#: A static snapshot is sent at most this often (and at the end of every cell).
STATIC_INTERVAL_S = 0.5
#: A live widget's snapshot waits until the view has not changed for this long ...
QUIET_S = 1.0
#: ... or this long after its first unsent change, whichever comes first.
MAX_WAIT_S = 5.0


class SnapshotDisplay:
    """One view's output: shown by ``show()``, told of each redraw by ``changed()``,
    made static for good by ``finish()``.

    ``render`` gives what the view shows now as ``(text, html)``, both already safe
    (page text escaped, made inert); ``hold`` says the view waits for input, and a live
    widget is not redrawn under the user meanwhile; ``at_cell_end`` runs first at the end
    of every cell (a view redraws there, and notices its supervisor stopped).
    """

    def __init__(self, widget: Any, render: Callable[[], tuple[str, str]], *,
                 hold: Callable[[], bool] | None = None,
                 at_cell_end: Callable[[], None] | None = None) -> None:
        self.widget = widget
        self._render = render
        self._hold = hold
        self._at_cell_end = at_cell_end
        self.display_id = f"cdpnb-{uuid.uuid4().hex}"
        #: Outputs published (display_data) and updates sent (update_display_data).
        self.displays = 0
        self.updates = 0
        #: Whether the last bundle sent carries the live widget, and whether the view is done.
        self.widget_shown = False
        self.finished = False
        self._sent_html: str | None = None
        self._last_sent = 0.0
        self._first_unsent: float | None = None
        self._last_change = 0.0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timer: asyncio.TimerHandle | None = None

    @property
    def shown(self) -> bool:
        return self.displays > 0

    # -- what the view calls ----------------------------------------------------------

    def show(self) -> None:
        """Display the view (``_ipython_display_``): every display of one view shares its
        display id, so each of them shows the latest snapshot."""
        from IPython.display import display

        if self._loop is None:
            with contextlib.suppress(RuntimeError):
                self._loop = asyncio.get_running_loop()
        if in_kernel():
            _registry.add(self)
            _probe()
        live = not self.finished and widgets_drawn()
        display(self._bundle(live), raw=True, display_id=self.display_id)
        self.displays += 1
        self.widget_shown = live

    def changed(self) -> None:
        """The view redrew: send its snapshot when due."""
        if not self.shown or self.finished:
            return
        now = time.monotonic()
        self._last_change = now
        if self._first_unsent is None:
            self._first_unsent = now
        self._schedule()

    def finish(self) -> None:
        """The view is done: its outputs become the final static snapshot."""
        if self.finished:
            return
        self.finished = True
        self._cancel()
        if self.shown:
            self._send(live=False)

    # -- sending ----------------------------------------------------------------------

    def _bundle(self, live: bool, rendered: tuple[str, str] | None = None) -> dict[str, Any]:
        text, html = rendered if rendered is not None else self._render()
        self._sent_html = html
        self._last_sent = time.monotonic()
        self._first_unsent = None
        if live:
            bundle: dict[str, Any] = widget_bundle(self.widget, text, html)
            return bundle
        return static_bundle(text, html)

    def _send(self, *, live: bool, rendered: tuple[str, str] | None = None) -> None:
        from IPython.display import update_display

        update_display(self._bundle(live, rendered), raw=True, display_id=self.display_id)
        self.updates += 1
        self.widget_shown = live

    def flush(self) -> bool:
        """Send the snapshot now if it changed since it was last sent (a live widget's
        not while the view holds); True if it went out."""
        if not self.shown or self.finished or self._first_unsent is None:
            return False
        if self.widget_shown and self._hold is not None and self._hold():
            return False
        rendered = self._render()
        if rendered[1] == self._sent_html:
            self._first_unsent = None
            return False
        self._send(live=self.widget_shown, rendered=rendered)
        return True

    def _due_in(self) -> float:
        now = time.monotonic()
        if not self.widget_shown:
            return self._last_sent + STATIC_INTERVAL_S - now
        first = self._first_unsent if self._first_unsent is not None else now
        return min(self._last_change + QUIET_S, first + MAX_WAIT_S) - now

    def _schedule(self) -> None:
        if self._timer is not None:
            return
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        # An empty context, as Refresher's ticks (see refresh.py): the update then goes
        # out under the request the kernel handles when it fires.
        self._timer = loop.call_later(max(0.0, self._due_in()), self._on_timer,
                                      context=contextvars.Context())

    def _on_timer(self) -> None:
        self._timer = None
        if self._first_unsent is None or self.finished:
            return
        if self._due_in() > 0.01:
            self._schedule()
            return
        if self.widget_shown and self._hold is not None and self._hold():
            self._last_change = time.monotonic()  # ask again after another quiet time
            self._first_unsent = self._last_change
            self._schedule()
            return
        self.flush()

    def _cancel(self) -> None:
        if self._timer is not None:
            with contextlib.suppress(RuntimeError):
                self._timer.cancel()
            self._timer = None

    # -- the kernel's events ----------------------------------------------------------

    def _cell_ended(self) -> None:
        if self._at_cell_end is not None:
            self._at_cell_end()
        if not self.widget_shown:  # (a live widget keeps to its quiet time)
            self.flush()

    def _widgets_seen(self) -> None:
        if self.shown and not self.finished and not self.widget_shown:
            self._send(live=True)


#: The views displayed in this kernel (weakly: a view nobody holds cannot change).
_registry: weakref.WeakSet[SnapshotDisplay] = weakref.WeakSet()


class _WidgetFrontEnd:
    """Whether a widget manager creates this kernel's widget models (see the module
    docstring): a ``jsdlink`` from a model holding 1 to one holding 0 runs only where
    a manager made both, and the copy comes back to the kernel as an update."""

    def __init__(self) -> None:
        import ipywidgets as widgets
        from IPython import get_ipython

        self.drawn = False
        self.source = widgets.IntText(value=1)
        self.target = widgets.IntText(value=0)
        self.link = widgets.jsdlink((self.source, "value"), (self.target, "value"))
        self.target.observe(self._copied, names="value")
        shell = get_ipython()
        if shell is not None:
            shell.events.register("post_run_cell", _cell_ended)

    def _copied(self, change: dict[str, Any]) -> None:
        if change["new"] == 1 and not self.drawn:
            self.drawn = True
            for snapshot in list(_registry):
                snapshot._widgets_seen()


_front_end: _WidgetFrontEnd | None = None


def _probe() -> None:
    global _front_end
    if _front_end is None:
        _front_end = _WidgetFrontEnd()


def widgets_drawn() -> bool:
    """Whether a widget front end has been seen drawing this kernel's widgets."""
    return _front_end is not None and _front_end.drawn


def _cell_ended(*_: object) -> None:
    for snapshot in list(_registry):
        # One view whose render fails must not keep the others' snapshots stale (nor
        # print a traceback after every cell): it is logged, the others flush.
        try:
            snapshot._cell_ended()
        except Exception:
            _log.exception("a view's snapshot could not be sent at the end of a cell")
