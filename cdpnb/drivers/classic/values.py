"""``evaluate`` over WebDriver classic: values as the other protocols give them, and a
script's value kept across the dialog it opened.

Classic's ``execute/sync`` returns JSON, which loses what data JavaScript has beyond it.
Measured on chromedriver 156 and WebKitWebDriver 2.50.6: ``undefined``, ``NaN`` and
``±Infinity`` come back as null, ``-0`` as 0, a bigint, a function, a Map or a Symbol
as ``{}``; a node as a W3C element reference (both), ``window`` as a window reference
(chromedriver) or "javascript error: cannot serialize cyclic structures" (WebKit), a
Date as ``{}`` (chromedriver) or its ISO string (WebKit); a cyclic object fails. So the
value is described in the page (``EVALUATE_SCRIPT``, run by the ``classic.evaluate``
command: ``cdpnb.protocol.classic``): data in WebDriver BiDi's
``RemoteValue`` shape, read by ``cdpnb.protocol.js_values.from_remote_value`` as BiDi's
is (``Undefined``, ``nan``, ``-0.0``, ``±inf``, big ints, at any depth), and anything
else (a value holding anything else included) described as CDP describes it: a
``RemoteObject`` with its type, subtype, class name and description; a node of the
frame's own document carries its W3C element reference as ``object_id`` (what
``sup.classic("classic.elementClick", {"elementId": ...})`` takes).

The value is also kept in the page, keyed by the call, in a Map under one registered
symbol (deleted once read; of the finished ones the last 16 are kept): measured on both
servers, ``execute/sync`` of a script that opens a dialog answers null at once, and the
script goes on once the dialog is answered, so a ``prompt()``'s value would be lost. Every
value ``EVALUATE_SCRIPT`` returns is an object, so a bare null says the call returned
at a dialog, and the value is read back (``READ_BACK_SCRIPT``) once the dialog is
answered, as CDP's and BiDi's evaluate wait on the dialog. But the null does not say
whether the script was still running: measured on WebKitWebDriver 2.50, ``setTimeout(()
=> alert(1), 0); 0`` answered null too (the alert opened before the value went out),
and nothing of the page can be read while a dialog is open. So the call waits for the
dialog only when someone else answers it (an auto policy, a ``dialog`` handler or
stream: ``ProtocolDriver.dialogs_answered``); otherwise it returns None at once (the
caller is the one to answer, after it), as before.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from cdpnb.errors import CDPError, CommandTimeout, EvaluateError, EvaluateTimeout
from cdpnb.protocol.classic import (
    ANSWER_SLACK_S,
    ELEMENT_KEY,
    EVALUATE_SCRIPT,
    READ_BACK_SCRIPT,
    classic_error_name,
)
from cdpnb.protocol.js_values import RemoteObject, from_remote_value
from cdpnb.session.budget import Budget
from cdpnb.session.core import Core

__all__ = ["EVALUATE_SCRIPT", "READ_BACK_SCRIPT", "decode", "evaluate"]

#: How often a read back that met the dialog still open tries again (s).
RETRY_S = 0.025


def decode(answer: Any, frame_id: str | None) -> Any:
    """What ``EVALUATE_SCRIPT`` answered, as the value evaluate returns. A thrown value
    raises EvaluateError; an answer in no known shape is a TypeError naming it."""
    if isinstance(answer, dict) and "v" in answer and isinstance(answer["v"], dict):
        return from_remote_value(answer["v"], frame_id)
    if isinstance(answer, dict) and isinstance(answer.get("r"), dict):
        described: dict[str, Any] = answer["r"]
        element = answer.get("e")
        handle = element.get(ELEMENT_KEY) if isinstance(element, dict) else None
        subtype = described.get("subtype")
        class_name = described.get("className")
        return RemoteObject(
            type=str(described.get("type") or "object"),
            subtype=subtype if isinstance(subtype, str) else None,
            class_name=class_name if isinstance(class_name, str) else None,
            description=str(described.get("description") or ""),
            object_id=handle if isinstance(handle, str) else None,
            session_id=frame_id if isinstance(handle, str) else None)
    if isinstance(answer, dict) and isinstance(answer.get("thrown"), list):
        message, stack = [*map(str, answer["thrown"]), "", ""][:2]
        first = message.splitlines()[0] if message else "JavaScript exception"
        raise EvaluateError(first, stack or message)
    shown = repr(answer)
    raise TypeError(f"evaluate over WebDriver classic got an answer in no known shape: "
                    f"{shown[:120]}")


def _timed_out(budget: Budget, core: Core, why: str) -> EvaluateTimeout:
    core.note("cdpnb.evaluateTimedOut", {})
    return EvaluateTimeout(f"evaluate did not finish within its {budget.seconds:g} s budget"
                           f"{why}; WebDriver classic has no way to end a running script",
                           budget=budget.seconds, elapsed=budget.elapsed(),
                           ended_by="not terminated")


def _error_name(exc: CDPError) -> str:
    return classic_error_name(exc.message, exc.data)


async def _send(core: Core, method: str, params: dict[str, Any], route: dict[str, Any],
                budget: Budget, why: str) -> dict[str, Any]:
    """One ``classic.evaluate`` or ``classic.readBack`` under what is left of the budget
    (the server's timeouts too: ``cdpnb.protocol.classic``); the budget run out (ours,
    or the server's "script timeout"/"timeout" at it) is EvaluateTimeout."""
    left = budget.left()
    if left <= 0:
        raise _timed_out(budget, core, why)
    try:
        return await core.send(method, {**params, **route, "timeout": left},
                               timeout=left + 2 * ANSWER_SLACK_S)
    except CommandTimeout:
        raise _timed_out(budget, core, why) from None
    except CDPError as exc:
        name = _error_name(exc)
        if name in ("script timeout", "timeout"):
            raise _timed_out(budget, core, why) from None
        if name != "javascript error":
            raise
        core.note("cdpnb.evaluateFailed", {})
        text = exc.message.split(": ", 1)[-1] or "JavaScript exception"
        raise EvaluateError(text.splitlines()[0], text) from None


async def evaluate(core: Core, expression: str, route: dict[str, Any], frame_id: str | None,
                   budget: Budget, *, await_promise: bool,
                   answered: Callable[[], bool]) -> Any:
    """Evaluate ``expression`` in the frame ``route`` names (``frame_id``: its id, for the
    handles of what comes back); ``answered``: whether someone else answers a dialog.
    See the module's doc."""
    reply = await _send(core, "classic.evaluate", {
        "expression": expression, "awaitPromise": await_promise}, route, budget, "")
    answer, key = reply.get("value"), reply.get("key")
    window = route.get("window")
    while answer is None:  # returned at a dialog: its value once the dialog is answered
        try:
            kept = (await _send(core, "classic.readBack", {"key": key}, route, budget,
                                " (the script waits on a dialog it opened)")).get("value")
        except CDPError as exc:
            if _error_name(exc) != "unexpected alert open":
                raise
            if not answered():
                return None  # (the caller answers it, after this returns: see above)
            await _dialog_closed(core, window, budget)
            continue
        if kept is None:
            continue  # (returned at a dialog again)
        if not isinstance(kept, dict) or kept.get("missing"):
            raise EvaluateError(
                "the page's document went away while evaluate waited on the dialog its "
                "script opened (a navigation or a reload): the script's value is lost")
        answer = kept.get("done")
        if answer is None:
            raise TypeError("evaluate over WebDriver classic read back no value")
    return decode(answer, frame_id)


async def _dialog_closed(core: Core, window: Any, budget: Budget) -> None:
    """Wait (within the budget) until the polls know no dialog open in ``window``; a
    moment more when they have not seen it yet."""
    def clear(state: Any) -> bool:
        return not any(d.page_session_id == window for d in state.pending_dialogs)

    await asyncio.sleep(RETRY_S)
    with contextlib.suppress(TimeoutError):  # (the next read back says the budget ran out)
        await core.wait_until(clear, max(0.0, budget.left()))
