"""Engines whose page dialogs do not block: the state rules for them.

Measured on Lightpanda 1.0.2 (raw CDP, one page with a srcdoc frame and cross-site
frames, which it runs in one session: no site isolation):

- ``alert``/``confirm``/``prompt`` never block: page JS gets ``undefined`` / ``false``
  / ``null`` at once, and ``Page.javascriptDialogOpening`` arrives with
  ``hasBrowserHandler: false``, no ``frameId`` (its ``url`` is the calling frame's
  own URL) and ``defaultPrompt: ""`` whatever the default was. No
  ``javascriptDialogClosed`` ever follows, and ``Page.handleJavaScriptDialog`` always
  fails (-32000 "No dialog is showing").
- ``LP.handleJavaScriptDialog {accept, promptText}`` on the page session arms an
  answer for the NEXT dialog only: after ``{accept: true, promptText: "armed"}`` a
  ``prompt()`` returns "armed" and the one after it ``null``; after ``{accept: true}``
  a ``confirm()`` returns true.
- ``Browser.getVersion`` does not say it is Lightpanda (``product:
  "Chrome/124.0.6367.29"``, a macOS Chrome user agent); ``/json/version`` does
  (``"Browser": "Lightpanda/1.0"``). So the supervisor learns it from the backend it
  was given or from ``/json/version``, and says so with a ``cdpnb.dialogsNonBlocking``
  note, which the rules here fold (the same in a replay).

Such a dialog is never pending: it is recorded as opened and closed by the browser in
the same fold, ``reason="non_blocking"``, with ``page_value`` saying what page JS got
(an armed answer included). Nothing is ever sent to answer it, so no watchdog, policy
or recovery acts on it.
"""

from __future__ import annotations

import json

from cdpnb.protocol import Event, Note, Reply
from cdpnb.state.changes import Change, DialogOpened
from cdpnb.state.dialogs import _close, _record, page_session_of
from cdpnb.state.models import BrowserState, DialogAnswer, PendingDialog

__all__ = ["NON_BLOCKING", "dialogs_non_blocking", "non_blocking_dialog", "page_value",
           "prearmed"]

Out = list[Change]

#: The ``reason`` of a dialog the browser did not block on (also its ``unanswerable``).
NON_BLOCKING = "non_blocking"

#: What page JS gets from each call when nothing was armed (measured, Lightpanda 1.0.2).
_UNANSWERED = {"alert": "undefined", "confirm": "false", "prompt": "null",
               "beforeunload": "undefined"}


def dialogs_non_blocking(state: BrowserState, msg: Note, out: Out) -> BrowserState:
    """``cdpnb.dialogsNonBlocking {engine}``: this endpoint's dialogs do not block."""
    engine = msg.params.get("engine")
    return state.evolve(dialogs_block=False,
                        engine=str(engine) if engine is not None else state.engine)


def prearmed(state: BrowserState, msg: Reply, out: Out) -> BrowserState:
    """The reply to ``LP.handleJavaScriptDialog``: the next dialog gets this answer."""
    accept = msg.params.get("accept")
    if not isinstance(accept, bool):
        raise TypeError(f"LP.handleJavaScriptDialog accept must be a boolean, got {accept!r}")
    text = msg.params.get("promptText")
    return state.evolve(prearmed_answer=DialogAnswer(
        accept=accept, prompt_text=text if isinstance(text, str) else None))


def page_value(kind: str, armed: DialogAnswer | None) -> str:
    """What page JS got, as JavaScript source."""
    if armed is None:
        return _UNANSWERED[kind]
    if kind == "prompt":
        # An accepted prompt with no text armed: assumed "" as in Chromium (not measured).
        return json.dumps(armed.prompt_text or "") if armed.accept else "null"
    if kind == "confirm":
        return "true" if armed.accept else "false"
    return "undefined"


def non_blocking_dialog(state: BrowserState, msg: Event, out: Out) -> BrowserState:
    """After ``dialog_opening``: on an engine whose dialogs do not block, the dialog
    that just opened is closed by the browser already. Its frame is the page's frame
    with the event's URL when exactly one has it (the event names none)."""
    if state.dialogs_block or not out or not isinstance(out[-1], DialogOpened):
        return state
    opened = out[-1].dialog
    dialog = opened.evolve(unanswerable=NON_BLOCKING,
                           frame_id=opened.frame_id or _frame_by_url(state, opened))
    out[-1] = DialogOpened(dialog)
    armed = state.prearmed_answer
    state = state.evolve(
        pending_dialogs=tuple(dialog if d.id == dialog.id else d
                              for d in state.pending_dialogs),
        prearmed_answer=None)
    if armed is None:
        record = _record(dialog, msg.wall, "browser", False, None, NON_BLOCKING)
    else:  # whoever armed it answered it (through sup.cdp, say): an agent's answer
        record = _record(dialog, msg.wall, "agent", armed.accept,
                         (armed.prompt_text or "") if dialog.type == "prompt" else None,
                         "prearmed")
    record = record.evolve(page_value=page_value(dialog.type, armed),
                           accepted=None if dialog.type == "alert" else record.accepted)
    return _close(state, dialog, record, out)


def _frame_by_url(state: BrowserState, dialog: PendingDialog) -> str | None:
    if not dialog.url:
        return None
    found = [f.frame_id for f in state.frames.values()
             if f.url == dialog.url
             and page_session_of(state, f.session_id) == dialog.page_session_id]
    return found[0] if len(found) == 1 else None
