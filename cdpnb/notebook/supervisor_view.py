"""``sup.view()``: the live widget of one supervisor.

Frame tree (OOPIF boundaries, session ids), pending dialogs with Accept / Dismiss
buttons and an answer box for prompts, recent dialogs, console errors, connection
state. Every string from the page is escaped; every list is bounded.

Its output's static snapshot follows the redraws (``snapshot.py``); once the
supervisor stops (or the view is closed) the output is that snapshot alone, the
final state, in the notebook and in every export of it.
"""

from __future__ import annotations

import concurrent.futures
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from cdpnb.notebook.refresh import Refresher
from cdpnb.notebook.snapshot import SnapshotDisplay
from cdpnb.notebook.static import widget_bundle
from cdpnb.protocol.credentials import redact_url
from cdpnb.render import MAX_ROWS, WRAP, badge, clip, short_repr, table, text, when
from cdpnb.render.state import dialogs_html, frame_tree_html, frame_tree_text
from cdpnb.runtime.engine import engine
from cdpnb.state import DialogRecord, PendingDialog
from cdpnb.state.snapshot import FrameNode, FrameTree
from cdpnb.supervisor.dialogs import DialogAction
from cdpnb.terminal_text import inert

if TYPE_CHECKING:
    from cdpnb.state import BrowserState
    from cdpnb.supervisor import Supervisor

__all__ = ["DialogRow", "SupervisorView"]


class DialogRow:
    """One pending dialog: what it says, an answer box (prompts), two buttons.

    The buttons call ``sup.respond`` without blocking the kernel: the answer runs
    on the engine thread and its outcome is written back on the widgets' thread.
    """

    def __init__(self, view: SupervisorView, dialog: PendingDialog) -> None:
        self.dialog = dialog
        self._view = view
        where = "OOPIF " if view.is_oopif(dialog.frame_id) else ""
        frame = text(clip(dialog.frame_id, 12))
        via = badge("bridge", "#27a") if dialog.via == "bridge" else ""
        self.label = widgets.HTML(
            f"{badge(dialog.type, '#b50')} {via} <b>{text(dialog.message)}</b> "
            f'<span style="color:#777">{text(dialog.id)} in {where}frame {frame}</span>')
        self.answer = widgets.Text(value=dialog.default_prompt, placeholder="prompt answer",
                                   layout=widgets.Layout(width="16em"))
        self.accept = widgets.Button(description="Accept", button_style="success")
        self.dismiss = widgets.Button(description="Dismiss", button_style="warning")
        self.status = widgets.HTML("")
        self.accept.on_click(lambda _: self.respond("accept"))
        self.dismiss.on_click(lambda _: self.respond("dismiss"))
        controls: list[widgets.Widget] = [self.accept, self.dismiss, self.status]
        if dialog.type == "prompt":
            controls.insert(0, self.answer)
        self.widget = widgets.VBox([self.label, widgets.HBox(controls)])
        #: The answer's outcome once it is known: a DialogRecord or the error.
        self.outcome: DialogRecord | BaseException | None = None

    def respond(self, action: DialogAction) -> concurrent.futures.Future[DialogRecord]:
        """Answer this dialog (what the buttons do); returns the engine's future."""
        self.accept.disabled = self.dismiss.disabled = True
        self.status.value = f"<i>{text(action)}ing…</i>"
        wants_text = action == "accept" and self.dialog.type == "prompt"
        prompt = self.answer.value if wants_text else None
        future = engine.submit(self._view.supervisor.respond(action, prompt, self.dialog.id))
        future.add_done_callback(self._view.on_widget_thread(self._answered))
        return future

    def _answered(self, future: concurrent.futures.Future[DialogRecord]) -> None:
        error = future.exception()
        if error is None:
            record = future.result()
            self.outcome = record
            self.status.value = f"closed by {text(record.closed_by)}"
        else:
            self.outcome = error
            self.status.value = (f'<span style="color:#a33">{text(type(error).__name__)}: '
                                 f"{text(error)}</span>")
            self.accept.disabled = self.dismiss.disabled = False
        self._view.refresh()


class SupervisorView:
    """The live view of a supervisor; display it, or read its widgets' state.

    ``tree_nodes`` are the frame tree's nodes as shown, ``rows`` the pending
    dialogs' controls by dialog id, ``widget`` the ipywidgets box itself, ``snapshot``
    its output in the notebook (the widget, or the static snapshot kept current).
    """

    def __init__(self, supervisor: Supervisor, *, refresh_s: float = 0.25) -> None:
        self.supervisor = supervisor
        self.header = widgets.HTML()
        self.tree = widgets.HTML()
        self.pending = widgets.VBox()
        self.recent = widgets.HTML()
        self.console = widgets.HTML()
        self.widget = widgets.VBox([
            self.header,
            widgets.HTML("<b>frames</b>"), self.tree,
            widgets.HTML("<b>pending dialogs</b>"), self.pending,
            widgets.HTML("<b>recent dialogs</b>"), self.recent,
            widgets.HTML("<b>console errors</b>"), self.console,
        ])
        self.rows: dict[str, DialogRow] = {}
        self.tree_nodes: tuple[FrameNode, ...] = ()
        self._last_tree: FrameTree | None = None
        self.redraws = 0
        self._shown: BrowserState | None = None
        self._last_header: tuple[object, ...] = ()
        self._final_redraw = False
        self._closed = False
        # While a dialog waits in the view, its live widget is not redrawn under the
        # user's pointer (an updated output is a new widget view: see snapshot.py).
        self.snapshot = SnapshotDisplay(self.widget, self._snapshot, hold=lambda: bool(self.rows),
                                        at_cell_end=self._at_cell_end)
        self._refresher = Refresher(self._tick, refresh_s)
        self.refresh()

    # -- threads --------------------------------------------------------------------

    def on_widget_thread(self, fn: Any) -> Any:
        """``fn`` wrapped to run on the loop that owns the widgets (when there is one)."""
        loop = self._refresher.loop

        def call(*args: Any) -> None:
            if loop is None or loop.is_closed():
                fn(*args)
            else:
                loop.call_soon_threadsafe(fn, *args)

        return call

    @property
    def live(self) -> bool:
        """Whether it still redraws by itself (stops once the supervisor is stopped)."""
        return self._refresher.running

    def _tick(self) -> bool:
        self.refresh()
        if self.supervisor.stopped:
            if self._final_redraw:
                self.snapshot.finish()
                return False
            self._final_redraw = True
        return not self._closed

    def _at_cell_end(self) -> None:
        # A cell that stopped the supervisor ends with the final state in its outputs
        # (nbclient keeps only what arrives while the cell runs; the next tick is late).
        if self._closed or self.snapshot.finished:
            return
        self.refresh()
        if self.supervisor.stopped:
            self._refresher.stop()
            self.snapshot.finish()

    def close(self) -> None:
        """Stop redrawing and close the widgets; the output keeps the last state shown."""
        self._closed = True
        self._refresher.stop()
        self.snapshot.finish()
        self.widget.close()

    # -- drawing ----------------------------------------------------------------------

    def is_oopif(self, frame_id: str | None) -> bool:
        frame = self.supervisor.state.frames.get(frame_id or "")
        return bool(frame and frame.is_oopif)

    def refresh(self) -> bool:
        """Redraw now if the state changed since the last redraw; True if it did."""
        state = self.supervisor.state
        if state is self._shown and not self._header_changed():
            return False
        self._shown = state
        self.redraws += 1
        self._draw_header()
        tree = self.supervisor.frame_tree(full=False)
        if tree.top is None and self._last_tree is not None and not self.supervisor.connected:
            # The reducers forget frames when the connection ends; a reader still
            # wants to see the page the dialogs came from.
            self.tree.value = ('<div style="color:#777">as last seen while connected</div>'
                               + frame_tree_html(self._last_tree))
        else:
            self._last_tree = tree if tree.top is not None else self._last_tree
            self.tree_nodes = tuple(n for n in (tree.top, *tree.children) if n is not None)
            self.tree.value = frame_tree_html(tree)
        self._draw_pending(state.pending_dialogs)
        self.recent.value = dialogs_html(reversed(state.recent_dialogs), MAX_ROWS // 2)
        self.console.value = _console_html(state)
        self.snapshot.changed()
        return True

    def _header_state(self) -> tuple[object, ...]:
        sup = self.supervisor
        return (sup.stopped, sup.connected, sup.bridge_enabled, len(sup.hints), sup.reconnects)

    def _header_changed(self) -> bool:
        return self._header_state() != self._last_header

    def _draw_header(self) -> None:
        sup = self.supervisor
        self._last_header = self._header_state()
        if sup.stopped:
            state = badge("stopped", "#777")
        elif sup.connected:
            state = badge("connected", "#2a7")
        else:
            state = badge("reconnecting" if sup.alive else "down", "#a33")
        bridge = badge("bridge on", "#27a") if sup.bridge_enabled else ""
        hints = "".join(f'<div style="color:#b50">{text(h, 400)}</div>' for h in sup.hints[-3:])
        self.header.value = (
            f'<div style="{WRAP}"><b>cdpnb supervisor</b> {state} {bridge} policy '
            f"{text(sup.policy)} · reconnects {sup.reconnects} · "
            f'<span style="overflow-wrap:anywhere">{text(redact_url(sup.endpoint))}</span>'
            f'{hints}</div>')

    def _draw_pending(self, pending: tuple[PendingDialog, ...]) -> None:
        ids = [d.id for d in pending]
        for gone in [i for i in self.rows if i not in ids]:
            self.rows.pop(gone).widget.close()
        for dialog in pending[:MAX_ROWS]:
            if dialog.id not in self.rows:
                self.rows[dialog.id] = DialogRow(self, dialog)
        children = [self.rows[i].widget for i in ids[:MAX_ROWS]]
        if len(ids) > MAX_ROWS:
            children.append(widgets.HTML(f"… {len(ids) - MAX_ROWS} more"))
        if not children:
            children = [widgets.HTML('<span style="color:#777">none</span>')]
        self.pending.children = children

    # -- display ----------------------------------------------------------------------

    def static_html(self) -> str:
        """What the view shows now, as HTML (the pending dialogs without their buttons)."""
        self.refresh()
        pending = self.supervisor.state.pending_dialogs
        return (f"<div>{self.header.value}</div><b>frames</b>{self.tree.value}"
                f"<b>pending dialogs</b>{dialogs_html(pending, MAX_ROWS)}"
                f"<b>recent dialogs</b>{self.recent.value}"
                f"<b>console errors</b>{self.console.value}")

    def static_text(self) -> str:
        """What the view shows now, as plain text (page text shown escaped)."""
        sup = self.supervisor
        state = sup.state
        status = ("stopped" if sup.stopped else "connected" if sup.connected
                  else "reconnecting" if sup.alive else "down")
        tree = self._last_tree if self._last_tree is not None else sup.frame_tree(full=False)
        lines = [inert(f"cdpnb supervisor {status} · policy {sup.policy} · reconnects "
                       f"{sup.reconnects} · {redact_url(sup.endpoint)}"),
                 frame_tree_text(tree) if tree.top is not None else "no frames yet"]
        pending = state.pending_dialogs
        lines.append(f"pending dialogs: {len(pending)}" + "".join(
            f"\n  {d.type} {short_repr(d.message)} ({d.id})" for d in pending[:3]))
        recent = state.recent_dialogs
        lines.append(f"recent dialogs: {len(recent)}" + "".join(
            f"\n  {r.type} {short_repr(r.message)} closed by {r.closed_by}"
            for r in reversed(recent[-3:])))
        lines.append(f"console errors: {state.console_errors_total}")
        return "\n".join(lines)

    def _snapshot(self) -> tuple[str, str]:
        html = self.static_html()  # (redraws first, if the state changed)
        return self.static_text(), html

    def _ipython_display_(self) -> None:
        self.snapshot.show()

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return widget_bundle(self.widget, repr(self), self.static_html(), **kwargs)

    def __repr__(self) -> str:
        sup = self.supervisor
        return (f"<SupervisorView {redact_url(sup.endpoint)} frames={len(self.tree_nodes)} "
                f"pending={len(self.rows)} redraws={self.redraws} live={self.live}>")


def _console_html(state: BrowserState) -> str:
    rows = [[when(e.at), e.level, e.text, e.url] for e in reversed(state.console_errors)]
    return table(("at (UTC)", "level", "text", "url"), rows, max_rows=MAX_ROWS // 2,
                 total=state.console_errors_total)

