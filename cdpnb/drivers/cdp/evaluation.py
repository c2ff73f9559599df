"""Running page script under one budget: evaluate, call-on-object, and their cleanup.

Measured on Chromium 156 (main frame and OOPIF alike):

- ``Runtime.evaluate{timeout}`` ends a *synchronous* hang by itself: the reply is
  ``-32000 Execution was terminated`` (``-32603 Internal error`` with
  ``awaitPromise``) at the timeout, and the page is usable at once.
- It does not cover script that runs later: a hang after ``await`` (a microtask or
  a timer), or a promise that never settles, gets no reply at all. A hang of that
  kind blocks the renderer, so every later command to it waits too.
- ``Runtime.terminateExecution`` is answered in ~2 ms even mid-hang (Chromium
  handles it off the main thread) and ends the hang; sent to an idle page it is
  harmless (the next script and the page's timers run normally).
- ``Runtime.callFunctionOn`` has no timeout parameter: terminateExecution only.

So: the in-page timeout fires a share of the budget before the deadline (the
reply's margin, :func:`reply_margin`); if no reply has come by the deadline,
terminateExecution goes to that session (waiting at most ``HEADROOM_S`` for it), unless
the script is merely waiting on an open dialog.

A target that answers nothing after that (not even terminateExecution: Bun's inspector
has none, and answers nothing while a script runs) is *held* by a script cdpnb could
not end: ``Core.held`` says so (``alive`` is False) until any reply from it is read, a
hint says it once, and a probe (``Runtime.evaluate`` of ``0``, queued behind the
script) brings that reply when the script ends, if nothing else does first.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from cdpnb.errors import (
    CDPError,
    CommandTimeout,
    EvaluateError,
    EvaluateTimeout,
)
from cdpnb.protocol.connection import ReplyReader
from cdpnb.protocol.deep_values import read_script_reply
from cdpnb.protocol.js_values import (
    MAX_DEPTH,
    NeedsValue,
    RemoteObject,
    decode,
    describe,
    raise_for_exception,
)
from cdpnb.session.budget import HEADROOM_S, Budget
from cdpnb.session.core import Core
from cdpnb.session.evaluate_count import counted
from cdpnb.state import BrowserState, PendingDialog

__all__ = ["HELD_PROBE_S", "OBJECT_GROUP", "SCRIPT_METHODS", "Evaluator", "context_gone"]

#: How long one probe of a held target waits for its reply before the next goes (each
#: one that times out is counted in ``command-timeouts``).
HELD_PROBE_S = 600.0
#: Object group of every handle cdpnb's evaluate creates (released per session).
OBJECT_GROUP = "cdpnb"
#: Commands that run page script: a timeout on them ends that script too.
SCRIPT_METHODS = frozenset({"Runtime.evaluate", "Runtime.callFunctionOn",
                            "Runtime.awaitPromise", "Runtime.runScript"})
#: What Chromium answers when a script was terminated (sync hang / under awaitPromise).
_TERMINATED = ((-32000, "Execution was terminated"), (-32603, "Internal error"))
#: (Bun 1.4.5 says "Object has too long reference chain" of an array holding a bigint.)
_NOT_BY_VALUE = ("couldn't be returned by value", "reference chain is too long",
                 "too long reference chain")
_DEEP = {"serialization": "deep", "maxDepth": MAX_DEPTH}
_THIS = "function () { return this; }"


def context_gone(exc: CDPError) -> bool:
    """The execution context was replaced before the script ran: safe to retry."""
    return "Cannot find context with specified id" in exc.message


def _terminated(exc: CDPError) -> bool:
    return (exc.code, exc.message) in _TERMINATED


def blocking_dialog(state: BrowserState, session_id: str | None) -> PendingDialog | None:
    """An open dialog in a frame that ``session_id`` renders: its script waits, not hangs."""
    for dialog in state.pending_dialogs:
        frame = state.frames.get(dialog.frame_id or "")
        # A dialog whose frame is not known counts too: terminating a script that only
        # waits for an answer would lose what it does next, so doubt spares it.
        if frame is None or frame.session_id == session_id:
            return dialog
    return None


class Evaluator:
    """Runs page script for one supervisor, and notes what ``stats()`` counts of it
    (``cdpnb.state.counting``)."""

    def __init__(self, core: Core, hint: Callable[[str], None] | None = None) -> None:
        self.core = core
        self.hint: Callable[[str], None] = hint or (lambda _: None)
        #: False once the endpoint rejected ``serializationOptions``.
        self.deep = True

    # -- public entry points ---------------------------------------------------------

    async def evaluate(self, session: str | None, context: int | None, expression: str,
                       budget: Budget, *, await_promise: bool, user_gesture: bool) -> Any:
        params: dict[str, Any] = {"expression": expression, "awaitPromise": await_promise,
                                  "objectGroup": OBJECT_GROUP, "userGesture": user_gesture}
        if context is not None:
            params["contextId"] = context
        with counted(self.core):  # (one cdpnb.evaluated {ms} per call)
            reply = await self._script("Runtime.evaluate", params, session, budget)
            return await self._value(reply, session, budget)

    async def call_on(self, session: str | None, object_id: str, function: str,
                      arguments: list[dict[str, Any]], budget: Budget, *,
                      await_promise: bool, user_gesture: bool) -> Any:
        params: dict[str, Any] = {"functionDeclaration": function, "objectId": object_id,
                                  "arguments": arguments, "awaitPromise": await_promise,
                                  "objectGroup": OBJECT_GROUP, "userGesture": user_gesture}
        with counted(self.core):  # (one cdpnb.evaluated {ms} per call)
            reply = await self._script("Runtime.callFunctionOn", params, session, budget)
            return await self._value(reply, session, budget)

    async def send(self, method: str, params: dict[str, Any] | None, session: str | None,
                   budget: Budget) -> dict[str, Any]:
        """A raw command under the budget; a script-running one that times out is ended."""
        if method not in SCRIPT_METHODS:
            return await self.core.send(method, params, session, budget.seconds)
        return await self._guarded(method, params or {}, session, budget, None)

    async def release_group(self, session: str | None, timeout: float) -> None:
        await self.core.send("Runtime.releaseObjectGroup", {"objectGroup": OBJECT_GROUP},
                             session, timeout)

    # -- the guarded send --------------------------------------------------------------

    async def _script(self, method: str, params: dict[str, Any], session: str | None,
                      budget: Budget) -> dict[str, Any]:
        in_page = method == "Runtime.evaluate"
        if self.deep:
            try:
                return await self._guarded(method, {**params, "serializationOptions": _DEEP},
                                           session, budget, in_page,
                                           reply_reader=read_script_reply)
            except CDPError as exc:
                # -32602: the endpoint validates params and lacks deep serialisation;
                # nothing ran, so sending again without it is safe.
                if exc.code != -32602 or "serializationOptions" not in exc.message:
                    raise
                self.deep = False
                self.core.note("cdpnb.evaluateRetried", {}, session)
        return await self._guarded(method, params, session, budget, in_page)

    async def _guarded(self, method: str, params: dict[str, Any], session: str | None,
                       budget: Budget, in_page: bool | None, *,
                       reply_reader: ReplyReader | None = None) -> dict[str, Any]:
        if budget.left() <= 0:
            raise EvaluateTimeout(
                f"{method}: the {budget.seconds:g} s budget was spent before it could be sent "
                "(waiting for the frame's execution context)", budget=budget.seconds,
                elapsed=budget.elapsed(), ended_by="not sent", session_id=session)
        in_page_ms = budget.in_page_ms() if in_page else None
        if in_page_ms is not None:
            params = {**params, "timeout": in_page_ms}
        sent_at = time.monotonic()
        try:
            return await self.core.send(method, params, session, budget.left(),
                                        reply_reader=reply_reader)
        except CommandTimeout:
            ended_by, how = await self._end_script(session)
            self.core.note("cdpnb.evaluateTimedOut", {}, session)
            raise EvaluateTimeout(
                f"{method} did not finish within its {budget.seconds:g} s budget; {how}",
                budget=budget.seconds, elapsed=budget.elapsed(), ended_by=ended_by,
                session_id=session) from None
        except CDPError as exc:
            if not _terminated(exc):
                raise
            ran_ms = (time.monotonic() - sent_at) * 1000
            if in_page_ms is not None and ran_ms >= in_page_ms * 0.9:
                self.core.note("cdpnb.evaluateTimedOut", {}, session)
                raise EvaluateTimeout(
                    f"{method} did not finish within its {budget.seconds:g} s budget; the "
                    f"in-page timeout ({in_page_ms} ms) terminated it", budget=budget.seconds,
                    elapsed=budget.elapsed(), ended_by="in-page timeout",
                    session_id=session) from None
            raise EvaluateError(f"the script was terminated by someone else after "
                                f"{ran_ms:.0f} ms ({exc.message})") from None

    async def _end_script(self, session: str | None) -> tuple[str, str]:
        """(``ended_by``, what happened in words) after a reply did not come in time."""
        dialog = blocking_dialog(self.core.state, session)
        if dialog is not None:
            # Not a hang: the script waits in alert/confirm/prompt. Terminating would
            # kill it once the dialog is answered; leave that to whoever answers.
            how = ("answer it with respond()" if dialog.answerable else
                   f"the browser cannot answer it ({dialog.unanswerable}); cdpnb frees the "
                   "page")
            return "not terminated", (f"not terminated: it waits on the open {dialog.type} "
                                      f"dialog {dialog.id} ({how})")
        try:
            await self.core.send("Runtime.terminateExecution", None, session, HEADROOM_S)
        except CommandTimeout:
            return "terminate failed", ("Runtime.terminateExecution got no answer: "
                                        f"{self.hold(session)}")
        except CDPError as exc:
            return "terminate failed", (f"Runtime.terminateExecution failed ({exc}); the "
                                        "page may still be busy")
        self.core.note("cdpnb.scriptTerminated", {}, session)
        return "terminateExecution", ("Runtime.terminateExecution ended it; the page is "
                                      "usable again")

    def hold(self, session: str | None) -> str:
        """Say that a script cdpnb could not end holds the target behind ``session``
        (it answers nothing): ``Core.held`` until a probe is answered. What it means, in
        words."""
        core = self.core
        said = ("the script still runs and the target answers nothing until it ends: "
                "every later command waits behind it; `alive` is False until it answers "
                "again (closing the backend ends it)")
        if core.hold(session, f"a script cdpnb could not end holds the target ({said})"):
            self.hint(f"{core.link}: a script cdpnb could not end holds the target: {said}")
            core.spawn(self._until_answered(session), name="cdpnb-held-probe")
        return said

    async def _until_answered(self, session: str | None) -> None:
        """Probe the held target until it answers (its script ended); the core frees it
        at the first reply it reads from it, this one or any other."""
        core = self.core
        while core.held is not None:
            try:
                await core.send("Runtime.evaluate", {"expression": "0"}, session, HELD_PROBE_S)
            except CommandTimeout:
                continue
            except CDPError:
                pass  # (an answer all the same)
            return

    # -- results -----------------------------------------------------------------------

    async def _value(self, reply: dict[str, Any], session: str | None, budget: Budget) -> Any:
        remote = reply.get("result") or {}
        try:
            raise_for_exception(reply)
        except EvaluateError:
            self.core.note("cdpnb.evaluateFailed", {}, session)
            # Neither the thrown value nor the result is handed out: release both.
            thrown = ((reply.get("exceptionDetails") or {}).get("exception") or {})
            for handle in (thrown.get("objectId"), remote.get("objectId")):
                if isinstance(handle, str):
                    self.release(session, handle)
            raise
        value = decode(remote, session)
        if isinstance(value, NeedsValue):
            value = await self._by_value(remote, value.object_id, session, budget)
        if isinstance(value, RemoteObject):
            self.core.note("cdpnb.evaluateByReference", {}, session)
        elif isinstance(remote.get("objectId"), str):
            self.release(session, remote["objectId"])
        return value

    async def _by_value(self, remote: dict[str, Any], object_id: str, session: str | None,
                        budget: Budget) -> Any:
        params = {"functionDeclaration": _THIS, "objectId": object_id, "returnByValue": True}
        try:
            reply = await self._guarded("Runtime.callFunctionOn", params, session, budget, None)
        except CDPError as exc:
            if not any(text in exc.message for text in _NOT_BY_VALUE):
                raise
            self.core.note("cdpnb.byValueFellBack", {}, session)
            return describe(remote, session)
        return decode(reply.get("result") or {}, session)

    def release(self, session: str | None, object_id: str) -> None:
        """Release one handle, off the caller's path (the value is already in hand)."""
        self.core.spawn(self.core.send("Runtime.releaseObject", {"objectId": object_id},
                                       session), name="cdpnb-release-object")

