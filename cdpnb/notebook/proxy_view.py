"""``px.view()``: a running proxy followed live — each client connection's recording,
its dialogs with who closed them (``client``, ``fault``, ``browser``), its frame tree,
and what the fault rules did. Every string from the page is escaped; lists bounded.

It redraws on the kernel's loop (``Refresher``: ipykernel 7 drops widget messages sent
from other threads) when a connection's folded state changed, at most every
``refresh_s``; once the proxy is closed it shows its final state and stops.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from cdpnb.notebook.refresh import Refresher
from cdpnb.render import text
from cdpnb.render.state import dialogs_html, frame_tree_html
from cdpnb.state.snapshot import snapshot_of

if TYPE_CHECKING:
    from cdpnb.proxy import Proxy
    from cdpnb.state import BrowserState

__all__ = ["ProxyView"]


class ProxyView:
    def __init__(self, px: Proxy, refresh_s: float = 0.5) -> None:
        self.px = px
        self.html = widgets.HTML(self.render())
        self.widget = widgets.VBox([self.html])
        self._seen: tuple[BrowserState, ...] = self._states()
        self.refresher = Refresher(self._tick, refresh_s)

    def _states(self) -> tuple[BrowserState, ...]:
        if self.px.mode != "record":
            return ()
        return tuple(self.px.state(n) for n in range(1, self.px.connections_recorded + 1))

    def _tick(self) -> bool:
        states = self._states()
        if len(states) != len(self._seen) or any(
                a is not b for a, b in zip(states, self._seen, strict=True)):
            self._seen = states
            self.html.value = self.render()
        if self.px.closed:
            self.html.value = self.render()
            return False
        return True

    def render(self) -> str:
        px = self.px
        state = "closed" if px.closed else "serving"
        head = (f"<div><b>cdpnb proxy</b> ({text(px.mode)}, {text(px.protocol)}) at "
                f"<code>{text(px.url)}</code> — {state}, {px.connections} connection(s)</div>")
        if px.mode == "replay":
            said = "every command matched" if px.divergence is None else str(px.divergence)
            return head + f"<div>{text(said)}</div>"
        parts = [head]
        for number, path in enumerate(px.recordings, start=1):
            folded = px.state(number) if number <= px.connections_recorded else None
            parts.append(f"<h4>connection {number}: <code>{text(str(path))}</code></h4>")
            if folded is None:
                continue
            snap = snapshot_of(folded)
            faults = sum(px.fault_acts(number).values())
            dialogs: list[Any] = [*snap.recent_dialogs, *snap.pending_dialogs]
            parts.append(f"<div>{len(folded.frames)} frames · {folded.dialog_seq} dialogs "
                         f"({len(folded.pending_dialogs)} open)"
                         + (f" · {faults} fault acts" if faults else "") + "</div>")
            parts.append(dialogs_html(dialogs))
            parts.append(frame_tree_html(snap.frame_tree))
        return "".join(parts)

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)

    def _repr_html_(self) -> str:
        return self.render()

    def __repr__(self) -> str:
        return f"<ProxyView of {self.px!r}>"


def view(px: Proxy, refresh_s: float = 0.5) -> Any:
    return ProxyView(px, refresh_s)
