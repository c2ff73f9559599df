"""The WebKit Inspector Protocol under one supervisor: Bun's inspector.

WIP is framed as CDP and a runtime's inspector is one target with no pages (as node's),
so the CDP driver's attach, raw commands and everything above it work as they are; the
difference is in running script, which this driver's evaluator does in WIP's words
through :mod:`cdpnb.protocol.wip` (what is sent and what comes back are recorded as the
wire carried them; only the evaluator sees them made CDP's). ``sup.cdp(method,
params)`` sends a raw WIP command and returns WIP's reply as it is (``wasThrown``, no
``exceptionDetails``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from cdpnb.drivers.cdp.driver import CDPDriver
from cdpnb.drivers.cdp.evaluation import OBJECT_GROUP, Evaluator
from cdpnb.errors import CDPError, CommandTimeout
from cdpnb.protocol import wip
from cdpnb.session.budget import HEADROOM_S, Budget
from cdpnb.session.core import Core
from cdpnb.session.evaluate_count import counted

__all__ = ["WIPDriver", "WIPEvaluator"]


class WIPEvaluator(Evaluator):
    """The evaluator of a WIP endpoint: the same results and errors as over CDP.

    No in-page timeout (WIP's ``Runtime.evaluate`` has none) and no deep serialisation
    (a plain object or array is fetched by value from its handle, as on node); a
    Promise is awaited with ``Runtime.awaitPromise`` (measured on Bun 1.4.5:
    ``Runtime.evaluate`` ignores ``awaitPromise`` and replies with the Promise), its
    handle released once awaited.

    No way to end a script either: Bun 1.4.5 answers ``Runtime.terminateExecution``
    -32601 "'Runtime.terminateExecution' was not found" when idle, and nothing at all
    while a script runs (its inspector answers on the script's thread). So a budget
    spent is followed by one probe (``Runtime.evaluate`` of ``0``): answered, the script
    only waits (a Promise) and the runtime is free; unanswered, the script holds the
    runtime (``Evaluator.hold``: ``alive`` False, a hint) until it ends."""

    def __init__(self, core: Core, hint: Callable[[str], None] | None = None) -> None:
        super().__init__(core, hint)
        self.deep = False

    async def _end_script(self, session: str | None) -> tuple[str, str]:
        cannot = "WIP has no way to end a running script (Bun: no Runtime.terminateExecution)"
        try:
            await self.core.send("Runtime.evaluate", {"expression": "0"}, session, HEADROOM_S)
        except CommandTimeout:
            return "not terminated", f"{cannot}; {self.hold(session)}"
        except CDPError:
            pass  # (answered: the runtime is free)
        return "not terminated", (f"{cannot}; it still waits, and the runtime answers "
                                  "other commands meanwhile")

    async def evaluate(self, session: str | None, context: int | None, expression: str,
                       budget: Budget, *, await_promise: bool, user_gesture: bool) -> Any:
        params: dict[str, Any] = {"expression": expression, "objectGroup": OBJECT_GROUP,
                                  "userGesture": user_gesture}
        if context is not None:
            params["contextId"] = context
        with counted(self.core):  # (one cdpnb.evaluated {ms} per call)
            reply = await self._guarded("Runtime.evaluate",
                                        wip.script_params("Runtime.evaluate", params),
                                        session, budget, None)
            promise = wip.promise_to_await(reply) if await_promise else None
            if promise is not None:
                try:
                    reply = await self._guarded("Runtime.awaitPromise",
                                                wip.await_params(promise), session, budget,
                                                None)
                finally:
                    self.release(session, promise)
            return await self._value(wip.as_cdp_reply(reply), session, budget)

    async def call_on(self, session: str | None, object_id: str, function: str,
                      arguments: list[dict[str, Any]], budget: Budget, *,
                      await_promise: bool, user_gesture: bool) -> Any:
        # Bun 1.4.5's callFunctionOn honours awaitPromise (measured), unlike evaluate.
        params: dict[str, Any] = {"functionDeclaration": function, "objectId": object_id,
                                  "arguments": arguments, "awaitPromise": await_promise,
                                  "objectGroup": OBJECT_GROUP, "userGesture": user_gesture}
        with counted(self.core):  # (one cdpnb.evaluated {ms} per call)
            reply = await self._guarded("Runtime.callFunctionOn",
                                        wip.script_params("Runtime.callFunctionOn", params),
                                        session, budget, None)
            return await self._value(wip.as_cdp_reply(reply), session, budget)


class WIPDriver(CDPDriver):
    """The CDP driver, with a WIP evaluator: what ``Supervisor.protocol`` calls ``wip``."""

    name: ClassVar[str] = "wip"
    lacks: ClassVar[dict[str, str]] = {
        "bidi()": "sup.cdp(method, params) sends a raw WIP command",
        "classic()": "sup.cdp(method, params) sends a raw WIP command"}
    needs: ClassVar[dict[str, str]] = {"bidi()": "bidi", "classic()": "classic"}
    evaluator_class: ClassVar[type[Evaluator]] = WIPEvaluator
