"""``fold(state, message) -> Folded(state, changes)``: the one code path for live
sessions and replay.

Everything that affects the state lives in ``cdpnb.state``, and the transitions are
tables: which rule handles which (kind, method). A rule takes the state, the message
and a list to append the changes it makes to (``cdpnb.state.changes``), and returns
the new state. A message no rule names leaves the state as it is, with no changes. A
rule that meets a malformed known message (missing keys, wrong types) leaves the state
untouched, counts it, and reports a ``Malformed`` change. The counters of ``stats()``
are counted here too (``cdpnb.state.counting``), from cdpnb's notes and from what the
fold already sees, and the connection's life is a machine of its own
(``cdpnb.state.connection``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from cdpnb.protocol import Command, ErrorReply, Event, Message, Note, Reply
from cdpnb.state import (
    bidi,
    classic,
    connection,
    console,
    counting,
    dialogs,
    engines,
    frames,
    pages,
)
from cdpnb.state.changes import Change, Malformed
from cdpnb.state.models import BrowserState

__all__ = ["CONSOLE_ONLY", "COUNTS_ONLY", "ERROR_RULE", "EVENT_RULES", "NOTE_RULES",
           "REPLY_RULES", "Folded", "fold", "fold_all"]

Rule = Callable[[BrowserState, Any, list[Change]], BrowserState]


class Folded(NamedTuple):
    """The state after a message, and what the message changed (in order)."""

    state: BrowserState
    changes: tuple[Change, ...]


def _chain(*rules: Rule) -> Rule:
    def chained(state: BrowserState, message: Any, out: list[Change]) -> BrowserState:
        for rule in rules:
            state = rule(state, message, out)
        return state

    chained.__name__ = "+".join(r.__name__ for r in rules)
    return chained


EVENT_RULES: dict[str, Rule] = {
    "Target.attachedToTarget": _chain(frames.attached_to_target, pages.page_attached),
    "Target.detachedFromTarget": pages.page_detached,
    "Target.targetInfoChanged": frames.target_info_changed,
    "Inspector.targetCrashed": pages.page_crashed,
    "Inspector.targetReloadedAfterCrash": frames.target_reloaded_after_crash,
    "Page.frameAttached": frames.frame_attached,
    "Page.frameNavigated": frames.frame_navigated,
    "Page.frameDetached": frames.frame_detached,
    "Page.frameRequestedNavigation": dialogs.navigation_requested,
    "Page.frameStartedNavigating": dialogs.navigation_started,
    "Page.navigatedWithinDocument": frames.navigated_within_document,
    "Page.javascriptDialogOpening": _chain(dialogs.dialog_opening, engines.non_blocking_dialog),
    "Page.javascriptDialogClosed": dialogs.dialog_closed,
    "Runtime.executionContextCreated": frames.context_created,
    "Runtime.executionContextDestroyed": frames.context_destroyed,
    "Runtime.executionContextsCleared": frames.contexts_cleared,
    "Runtime.consoleAPICalled": console.console_api_called,
    "Runtime.exceptionThrown": console.exception_thrown,
    "Log.entryAdded": console.log_entry_added,
    # WebDriver BiDi (cdpnb.state.bidi): its module names never collide with CDP's.
    "browsingContext.contextCreated": bidi.context_created,
    "browsingContext.contextDestroyed": bidi.context_destroyed,
    "browsingContext.navigationStarted": bidi.navigation_started,
    "browsingContext.navigationCommitted": bidi.navigated,
    "browsingContext.fragmentNavigated": bidi.navigated,
    "browsingContext.historyUpdated": bidi.navigated,
    # chromium-bidi 17 sends no navigationCommitted for a noopener popup's first
    # document: its URL comes with domContentLoaded and load (measured).
    "browsingContext.domContentLoaded": bidi.navigated,
    "browsingContext.load": bidi.navigated,
    "browsingContext.userPromptOpened": bidi.user_prompt_opened,
    "browsingContext.userPromptClosed": bidi.user_prompt_closed,
    "script.realmCreated": bidi.realm_created,
    "script.realmDestroyed": bidi.realm_destroyed,
    "log.entryAdded": bidi.log_entry_added,
}

#: Events whose rules write the console buffer and nothing else (``console_errors``,
#: ``console_errors_total``, a ``malformed:`` counter; ``ConsoleError`` and
#: ``Malformed`` changes): a question about anything else (``Trace.dialogs``) may fold
#: without them. ``tests/test_dialog_model.py`` holds each rule to it.
CONSOLE_ONLY = frozenset({"Runtime.consoleAPICalled", "Runtime.exceptionThrown",
                          "Log.entryAdded", "log.entryAdded"})

#: cdpnb's notes whose rules move counters and nothing else (``counters``; ``Counted``
#: and ``Malformed`` changes): a question about the dialogs or the frames may fold
#: without them too (an evaluate's note is one line in twelve that those tables fold in a
#: real trace). ``tests/test_dialog_model.py`` holds each rule to it.
COUNTS_ONLY = frozenset({"cdpnb.evaluated", "cdpnb.commandsOrphaned", *counting.OCCURRENCES})

REPLY_RULES: dict[str, Rule] = {
    "Page.getFrameTree": frames.frame_tree,
    "Fetch.fulfillRequest": dialogs.bridge_fulfilled,
    "browsingContext.getTree": bidi.get_tree,
    "network.provideResponse": dialogs.bridge_fulfilled,
    "LP.handleJavaScriptDialog": engines.prearmed,
    # WebDriver classic (cdpnb.state.classic): no events, so its state is what cdpnb's
    # own commands were answered.
    "classic.frameTree": classic.frame_tree,
    "classic.getAlertText": classic.polled,
    "classic.answerAlert": classic.answered,
    "classic.getWindowHandles": classic.windows,
}

NOTE_RULES: dict[str, Rule] = {
    "cdpnb.connected": connection.connected,
    "cdpnb.disconnected": connection.disconnected,
    "cdpnb.connectionReady": connection.ready,
    "cdpnb.reconnectGaveUp": connection.gave_up,
    "cdpnb.pageTarget": pages.page_target,
    "cdpnb.pageReplacing": pages.page_replacing,
    "cdpnb.pageClosing": pages.page_closing,
    "cdpnb.directTarget": pages.direct_target,
    "cdpnb.bridgeEnabled": pages.bridge_enabled,
    "cdpnb.dialogAnswering": dialogs.dialog_answering,
    "cdpnb.dialogAnswered": dialogs.dialog_answered,
    "cdpnb.bridgeDialogOpening": dialogs.bridge_dialog_opening,
    "cdpnb.bridgeRequestRefused": dialogs.bridge_request_refused,
    "cdpnb.bidiSession": bidi.bidi_session,
    "cdpnb.classicSession": bidi.bidi_session,  # (the same choices: engine, popups)
    "cdpnb.classicWindowOpened": classic.window_opened,
    "cdpnb.pageAbandoned": bidi.page_abandoned,
    "cdpnb.pageNavigating": bidi.page_navigating,
    "cdpnb.dialogsNonBlocking": engines.dialogs_non_blocking,
    "cdpnb.evaluated": counting.evaluated,
    "cdpnb.commandsOrphaned": counting.orphaned,
    **dict.fromkeys(counting.OCCURRENCES, counting.occurred),
}

#: Every error reply: -32601 marks a capability the endpoint lacks, whatever the
#: command; some commands' refusals are counted.
ERROR_RULE: Rule = _chain(pages.method_missing, counting.refused, classic.poll_failed,
                          classic.answer_refused)


def _rule_for(message: Message) -> Rule | None:
    kind = type(message)
    if kind is Event:
        return EVENT_RULES.get(message.method)
    if kind is Reply:
        return REPLY_RULES.get(message.method)
    if kind is Note:
        return NOTE_RULES.get(message.method)
    if kind is ErrorReply:
        return ERROR_RULE
    if kind is Command:
        return None
    raise TypeError(f"fold() takes a protocol message, got {kind.__name__}")


_NOTHING: tuple[Change, ...] = ()


def fold(state: BrowserState, message: Message) -> Folded:
    """The state after ``message`` and the changes it made. Pure: same inputs, same
    output; an unchanged state is the same object."""
    rule = _rule_for(message)
    if rule is None:
        return Folded(state, _NOTHING)
    out: list[Change] = []
    try:
        return Folded(rule(state, message, out), tuple(out))
    except (LookupError, TypeError, ValueError, AttributeError, ArithmeticError,
            RecursionError) as exc:  # RecursionError: str() of a value nested too deep
        key = f"malformed:{message.method}"
        counters = {**state.counters, key: state.counters.get(key, 0) + 1}
        try:
            error = f"{type(exc).__name__}: {exc}"
        except RecursionError:
            error = type(exc).__name__
        return Folded(state.evolve(counters=counters), (Malformed(message.method, error),))


def fold_all(messages: Iterable[Message], state: BrowserState | None = None) -> BrowserState:
    """Fold a whole stream, e.g. a recorded trace."""
    current = state if state is not None else BrowserState()
    for message in messages:
        current = fold(current, message).state
    return current
