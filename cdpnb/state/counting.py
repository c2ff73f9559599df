"""The counters of ``stats()``, as the fold keeps them (``BrowserState.counters``).

Every counted occurrence is in the message stream, so a replay of a trace counts what
the live supervisor counted: either cdpnb said it in a note (``cdpnb.clicked``, one
``cdpnb.evaluated`` per evaluate call with its duration) or it follows from what the
fold already sees (a refused ``Log.enable``, a page marked hazardous, a dialog cdpnb
released, the connection's life in ``cdpnb.state.connection``). Each name is spelled
once, here or where its reducer counts it, and every move of a counter is said by a
``Counted`` change (a ``malformed:`` one by its ``Malformed`` change).
"""

from __future__ import annotations

from cdpnb.protocol import ErrorReply, Note
from cdpnb.state.changes import Change, Counted
from cdpnb.state.models import BrowserState

__all__ = ["DURATION_BUCKETS_MS", "OCCURRENCES", "REFUSALS", "count", "count_all",
           "duration_bucket",
           "evaluated", "occurred", "orphaned", "refused"]

Out = list[Change]

#: Notes that each count one occurrence: note method -> the counter it moves.
OCCURRENCES: dict[str, str] = {
    "cdpnb.commandTimedOut": "command-timeouts",      # {id, method}: no reply in time
    "cdpnb.listenerFailed": "listener-errors",        # {method}: a stream listener raised
    "cdpnb.taskFailed": "background-errors",          # {task, error}: background work failed
    "cdpnb.handlerFailed": "handler-errors",          # {event}: a sup.on() handler raised
    "cdpnb.evaluateRetried": "evaluate-retries",      # sent again (nothing had run)
    "cdpnb.evaluateTimedOut": "evaluate-timeouts",    # a script past its budget
    "cdpnb.scriptTerminated": "evaluate-terminations",  # ... ended by terminateExecution
    "cdpnb.evaluateFailed": "evaluate-errors",        # the page's script threw
    "cdpnb.evaluateByReference": "evaluate-by-reference",  # a RemoteObject handed back
    "cdpnb.byValueFellBack": "evaluate-by-value-fallbacks",  # described, not copied
    "cdpnb.pageAdopted": "pages-adopted",             # {session_id}: a popup set up
    "cdpnb.pageSetupFailed": "page-setup-failures",   # {session_id}
    "cdpnb.childSetUp": "children-set-up",            # {session_id}: an OOPIF or worker
    "cdpnb.childSetupFailed": "child-setup-failures",  # {session_id}
    "cdpnb.clicked": "clicks",
    "cdpnb.accessibilitySnapshot": "accessibility-snapshots",
    "cdpnb.pageReplaced": "pages-replaced",           # {target_id, reason}: a fresh page
    "cdpnb.popupClosed": "popups-closed",             # {target_id, reason}
}

#: Commands whose error reply counts as a refusal: method -> its counter.
REFUSALS: dict[str, str] = {"Log.enable": "log-enable-refused"}

#: An evaluate call's duration is counted in the first bucket it fits (``evaluate-ms-le-
#: 10`` ... ``evaluate-ms-le-10000``), else in ``evaluate-ms-gt-10000``.
DURATION_BUCKETS_MS = (10, 100, 1000, 10000)


def count(state: BrowserState, name: str, out: Out, by: int = 1) -> BrowserState:
    """``state`` with counter ``name`` moved by ``by``, said by a ``Counted`` change."""
    if by == 0:
        return state
    out.append(Counted(name, by))
    return state.evolve(counters={**state.counters, name: state.counters.get(name, 0) + by})


def count_all(state: BrowserState, moves: dict[str, int], out: Out) -> BrowserState:
    """``count`` for several counters in one new state (an evaluate moves four: one
    copy of the state instead of four is a quarter of the note's cost, measured)."""
    counters = dict(state.counters)
    for name, by in moves.items():
        if by:
            out.append(Counted(name, by))
            counters[name] = counters.get(name, 0) + by
    return state.evolve(counters=counters)


def duration_bucket(ms: int) -> str:
    """The counter of an evaluate call that took ``ms`` milliseconds."""
    fits = next((b for b in DURATION_BUCKETS_MS if ms <= b), None)
    return f"evaluate-ms-le-{fits}" if fits is not None else \
        f"evaluate-ms-gt-{DURATION_BUCKETS_MS[-1]}"


def occurred(state: BrowserState, msg: Note, out: Out) -> BrowserState:
    """A note of ``OCCURRENCES``: one more of what it says."""
    return count(state, OCCURRENCES[msg.method], out)


def evaluated(state: BrowserState, msg: Note, out: Out) -> BrowserState:
    """``cdpnb.evaluated {ms}``: one evaluate call ended (answered, thrown or timed out;
    not cut short by the connection's end), with how long it took, on every protocol
    (``cdpnb.session.evaluate_count``). ``{}``, counted with no duration, is what
    WebDriver BiDi and classic traces recorded before 2026-12-07 hold."""
    if "ms" not in msg.params:
        return count(state, "evaluate-calls", out)
    ms = msg.params["ms"]
    if not isinstance(ms, int) or isinstance(ms, bool) or ms < 0:
        raise ValueError(f"cdpnb.evaluated: ms must be a whole number >= 0, got {ms!r}")
    longest = state.counters.get("evaluate-ms-max", 0)
    return count_all(state, {"evaluate-calls": 1, "evaluate-ms-total": ms,
                             "evaluate-ms-max": max(0, ms - longest),
                             duration_bucket(ms): 1}, out)


def orphaned(state: BrowserState, msg: Note, out: Out) -> BrowserState:
    """``cdpnb.commandsOrphaned {ids, why}``: commands that will get no reply, their
    session gone (a target detached, a renderer crashed)."""
    ids = msg.params["ids"]
    if not isinstance(ids, list):
        raise TypeError(f"cdpnb.commandsOrphaned: ids must be a list, got {type(ids).__name__}")
    return count(state, "commands-orphaned", out, len(ids))


def refused(state: BrowserState, msg: ErrorReply, out: Out) -> BrowserState:
    """An error reply to a command of ``REFUSALS``."""
    name = REFUSALS.get(msg.method)
    return state if name is None else count(state, name, out)
