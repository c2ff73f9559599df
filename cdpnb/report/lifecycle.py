"""A dialog's lifecycle on any protocol, in one vocabulary: ``opened``, ``answered``,
``closed`` (and ``answer refused``), each with the wire message that said it, when,
and through what (``native``: the protocol's own dialog messages; ``bridge``: cdpnb's
dialog bridge, a request the page makes that cdpnb intercepts and answers).

The same scenario says these in other words on each protocol (CDP's are WIP's too:
WIP is framed as CDP):

- opened: CDP ``Page.javascriptDialogOpening``; BiDi
  ``browsingContext.userPromptOpened``; classic a ``classic.getAlertText`` poll answered
  with a text.
- answered: CDP ``Page.handleJavaScriptDialog``; BiDi
  ``browsingContext.handleUserPrompt``; classic ``classic.answerAlert`` (or accept /
  dismiss).
- closed: CDP ``Page.javascriptDialogClosed``; BiDi ``browsingContext.userPromptClosed``;
  classic a poll answered "no such alert".

Through the bridge: ``Fetch.requestPaused`` / ``network.beforeRequestSent`` for the
bridge's host is ``opened``, ``Fetch.fulfillRequest`` / ``network.provideResponse``
``answered``, and its reply ``closed`` (the page's call returns with the answer).
Classic never names a frame, nor sends an event: a dialog is seen when a poll finds
one, closed when a poll finds none (polls that find the same dialog again are not
steps). A reply that refuses an answer is ``answer refused`` (the dialog was gone:
someone else closed it first).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cdpnb.report.spans import Span

__all__ = ["BRIDGE_HOST", "VOCABULARY", "Step", "lifecycle", "signature"]

#: The host the dialog bridge's requests go to (reserved: ``.invalid`` never resolves).
BRIDGE_HOST = "cdpnb-bridge.invalid"

#: (message kind, method) -> (step, via): the steps said by one message whatever it holds.
VOCABULARY: dict[tuple[str, str], tuple[str, str]] = {
    ("event", "Page.javascriptDialogOpening"): ("opened", "native"),
    ("command", "Page.handleJavaScriptDialog"): ("answered", "native"),
    ("error", "Page.handleJavaScriptDialog"): ("answer refused", "native"),
    ("event", "Page.javascriptDialogClosed"): ("closed", "native"),
    ("event", "browsingContext.userPromptOpened"): ("opened", "native"),
    ("command", "browsingContext.handleUserPrompt"): ("answered", "native"),
    ("error", "browsingContext.handleUserPrompt"): ("answer refused", "native"),
    ("event", "browsingContext.userPromptClosed"): ("closed", "native"),
    ("command", "classic.answerAlert"): ("answered", "native"),
    ("command", "classic.acceptAlert"): ("answered", "native"),
    ("command", "classic.dismissAlert"): ("answered", "native"),
    ("error", "classic.answerAlert"): ("answer refused", "native"),
    ("command", "Fetch.fulfillRequest"): ("answered", "bridge"),
    ("reply", "Fetch.fulfillRequest"): ("closed", "bridge"),
    ("command", "network.provideResponse"): ("answered", "bridge"),
    ("reply", "network.provideResponse"): ("closed", "bridge"),
}
#: Messages that are a step only when they are the bridge's request.
_BRIDGE_OPENING = {("event", "Fetch.requestPaused"), ("event", "network.beforeRequestSent")}
_POLL = "classic.getAlertText"


@dataclass(frozen=True)
class Step:
    """One step of a dialog's life: ``word`` (the vocabulary), ``t_ms`` since the check
    began, the wire ``method``, ``via`` (native / bridge), ``position`` (the message's
    row in the span), and for ``opened`` the dialog's type, message and frame (page
    text: escape it where shown)."""

    word: str
    t_ms: float
    method: str
    via: str
    position: int
    dialog_type: str = ""
    message: str = ""
    frame: str = ""
    frame_id: str = ""


def lifecycle(span: Span) -> list[Step]:
    """The dialog steps of a span, in the order they were recorded."""
    steps: list[Step] = []
    open_polled = False  # classic: a poll found a dialog, none has found it gone since
    start = span.start_s
    rows = zip(span.kind, span.method, span.payload, span.t, strict=True)
    for position, (kind, method, payload, t) in enumerate(rows):
        t_ms = (float(t) - start) * 1000
        found = VOCABULARY.get((kind, method))
        if (found is None and (kind, method) in _BRIDGE_OPENING
                and BRIDGE_HOST in str(payload) and _blocked(method, payload)):
            found = ("opened", "bridge")
        if found is None and method == _POLL:
            if kind == "reply" and not open_polled:
                found, open_polled = ("opened", "native"), True
            elif kind == "error" and open_polled and "no such alert" in str(payload):
                found, open_polled = ("closed", "native"), False
        if found is None:
            continue
        word, via = found
        step = Step(word, t_ms, method, via, position)
        if word == "opened":
            step = _with_dialog(step, span, float(t))
        steps.append(step)
    return steps


def _blocked(method: str, payload: object) -> bool:
    """A BiDi request event is the bridge's only when the intercept paused it (cdpnb's
    intercept: ``isBlocked``); CDP's ``Fetch.requestPaused`` always is."""
    if method != "network.beforeRequestSent":
        return True
    try:
        params: Any = json.loads(str(payload))
    except ValueError:
        return False
    return isinstance(params, dict) and bool(params.get("isBlocked"))


def _with_dialog(step: Step, span: Span, t: float) -> Step:
    """The opened step with what the dialogs table says of the dialog it opened (the
    one whose opening is nearest in time): type, message, frame."""
    if not span.dialogs:
        return step
    row = min(span.dialogs, key=lambda d: abs(float(d["t"]) - t))
    frame_id = str(row.get("frame_id") or "")
    # (A dialog whose protocol names no frame, classic's, has the page's URL in the
    # table: not the frame's, so not shown as one.)
    return Step(step.word, step.t_ms, step.method, step.via, step.position,
                str(row.get("type") or ""), str(row.get("message") or ""),
                str(row.get("url") or "") if frame_id else "", frame_id)


def signature(steps: list[Step]) -> tuple[str, ...]:
    """The order of the steps' words: what lines up (or does not) across protocols."""
    return tuple(step.word for step in steps)
