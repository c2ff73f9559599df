"""``fold(state, message) -> state``: the one code path for live sessions and replay.

The rules are data: which reducer handles which (kind, method). A message no rule
names leaves the state as it is. A rule that meets a malformed known event
(missing keys, wrong types) leaves the state untouched and counts it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from cdpnb.protocol import Command, ErrorReply, Event, Message, Note, Reply
from cdpnb.state import connection, console, dialogs, frames
from cdpnb.state.models import BrowserState

__all__ = ["EVENT_RULES", "NOTE_RULES", "REPLY_RULES", "fold", "fold_all"]

Rule = Callable[[BrowserState, Any], BrowserState]

EVENT_RULES: dict[str, Rule] = {
    "Target.attachedToTarget": frames.attached_to_target,
    "Target.detachedFromTarget": frames.detached_from_target,
    "Target.targetInfoChanged": frames.target_info_changed,
    "Inspector.targetCrashed": frames.target_crashed,
    "Inspector.targetReloadedAfterCrash": frames.target_reloaded_after_crash,
    "Page.frameAttached": frames.frame_attached,
    "Page.frameNavigated": frames.frame_navigated,
    "Page.frameDetached": frames.frame_detached,
    "Page.navigatedWithinDocument": frames.navigated_within_document,
    "Page.javascriptDialogOpening": dialogs.dialog_opening,
    "Page.javascriptDialogClosed": dialogs.dialog_closed,
    "Runtime.executionContextCreated": frames.context_created,
    "Runtime.executionContextDestroyed": frames.context_destroyed,
    "Runtime.executionContextsCleared": frames.contexts_cleared,
    "Runtime.consoleAPICalled": console.console_api_called,
    "Runtime.exceptionThrown": console.exception_thrown,
}

REPLY_RULES: dict[str, Rule] = {
    "Page.getFrameTree": frames.frame_tree,
}

NOTE_RULES: dict[str, Rule] = {
    "cdpnb.connected": connection.connected,
    "cdpnb.disconnected": connection.disconnected,
    "cdpnb.pageTarget": frames.page_target,
    "cdpnb.dialogAnswering": dialogs.dialog_answering,
    "cdpnb.dialogAnswered": dialogs.dialog_answered,
    "cdpnb.bridgeDialogOpening": dialogs.dialog_opening,
}


def _rule_for(message: Message) -> Rule | None:
    kind = type(message)
    if kind is Event:
        return EVENT_RULES.get(message.method)
    if kind is Reply:
        return REPLY_RULES.get(message.method)
    if kind is Note:
        return NOTE_RULES.get(message.method)
    if kind in (Command, ErrorReply):
        return None
    raise TypeError(f"fold() takes a protocol message, got {kind.__name__}")


def fold(state: BrowserState, message: Message) -> BrowserState:
    """The state after ``message``. Pure: same inputs, same output."""
    rule = _rule_for(message)
    if rule is None:
        return state
    try:
        return rule(state, message)
    except (LookupError, TypeError, ValueError, AttributeError, ArithmeticError,
            RecursionError) as exc:  # RecursionError: str() of a value nested too deep
        key = f"malformed:{message.method}"
        counters = {**state.counters, key: state.counters.get(key, 0) + 1}
        _ = exc  # the reason is visible in the supervisor's log, not in state
        return state.evolve(counters=counters)


def fold_all(messages: Iterable[Message], state: BrowserState | None = None) -> BrowserState:
    """Fold a whole stream, e.g. a recorded trace."""
    current = state if state is not None else BrowserState()
    for message in messages:
        current = fold(current, message)
    return current
