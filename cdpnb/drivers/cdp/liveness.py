"""Liveness a driver learns from what its endpoint says, where no socket's end tells it.

The transport says most deaths (a socket closed or dropped; a WebDriver server or session
gone, ``cdpnb.transport.classic``; a browser gone behind cdpnb's chromium-bidi wrapper,
``cdpnb.transport.wire.FAR_END_GONE``). What only the protocol's words show is watched
here, and said the same way: ``Core.end_for_good`` ends the connection as lost, with
what died as the reason, and the supervisor does not reconnect (``reconnect.py``).

- :class:`RuntimeExit`: node's inspector, measured on node 20.20: ``process.exit()``
  inside ``Runtime.evaluate`` sends ``Runtime.executionContextDestroyed`` for the
  runtime's one context about 1 ms later and never replies to the evaluate; the process
  then waits ("Waiting for the debugger to disconnect...") with its socket open, so the
  evaluate used to wait its whole budget and then the next call failed "Cannot find
  context with specified id". Deno 2.9.8 and Bun 1.4.5 exit at once (the socket drops).
"""

from __future__ import annotations

from cdpnb.protocol import Event, Message
from cdpnb.session.core import Core
from cdpnb.state import Change

__all__ = ["RuntimeExit"]


class RuntimeExit:
    """A core listener (``now``) for a runtime's (node's) execution contexts: the
    destruction of its main context (default, and in no frame: a page's contexts all
    have a frame) means the runtime exited."""

    METHODS = ("Runtime.executionContextCreated", "Runtime.executionContextDestroyed")

    def __init__(self, core: Core) -> None:
        self.core = core
        #: The runtime's main context: (its id, its name: node's says its pid).
        self._main: tuple[int, str] | None = None

    def __call__(self, message: Message, _: tuple[Change, ...]) -> None:
        core = self.core
        if not isinstance(message, Event) or message.session_id is not None \
                or not core.state.direct:
            return
        params = message.params
        if message.method == "Runtime.executionContextCreated":
            context = params.get("context")
            context = context if isinstance(context, dict) else {}
            aux = context.get("auxData")
            aux = aux if isinstance(aux, dict) else {}
            if aux.get("isDefault") and not aux.get("frameId") \
                    and isinstance(context.get("id"), int):
                self._main = (context["id"], str(context.get("name") or "")[:100])
            return
        main = self._main
        if main is None or params.get("executionContextId") != main[0]:
            return
        self._main = None
        who = f"the runtime {main[1]}" if main[1] else "the runtime"
        gone = (f"{who} exited: its only execution context was destroyed (process.exit(), "
                "or the end of its script); node waits for its debugger to leave before it "
                "ends, so cdpnb closed the connection")
        core.after_this_message(lambda: core.end_for_good(gone))
