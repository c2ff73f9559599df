"""Dialog reducer: opened, being answered, closed — and by whom.

``closed_by`` cannot be read from CDP, so the supervisor folds a note
(``cdpnb.dialogAnswering``) before it sends ``Page.handleJavaScriptDialog`` and
another (``cdpnb.dialogAnswered``) with the outcome. A ``javascriptDialogClosed``
for a dialog with no answer on its way was closed by someone else: ``remote``.
"""

from __future__ import annotations

from typing import Any

from cdpnb.protocol import Event, Note
from cdpnb.state.models import BrowserState, DialogAnswer, DialogRecord, PendingDialog

RECENT_DIALOGS_KEPT = 20
DIALOG_TYPES = ("alert", "confirm", "prompt", "beforeunload")


def dialog_opening(state: BrowserState, msg: Event) -> BrowserState:
    p = msg.params
    kind = p.get("type")
    if kind not in DIALOG_TYPES:
        raise ValueError(f"unknown dialog type {kind!r}")
    seq = state.dialog_seq + 1
    frame_id = p.get("frameId")
    dialog = PendingDialog(
        id=f"d-{seq}",
        type=kind,
        message=str(p.get("message", "")),
        default_prompt=str(p.get("defaultPrompt", "") or ""),
        frame_id=str(frame_id) if frame_id else None,
        session_id=msg.session_id,
        url=str(p.get("url", "")),
        opened_at=msg.wall,
        has_browser_handler=p.get("hasBrowserHandler"),
        via="bridge" if msg.method == "cdpnb.bridgeDialogOpening" else "native",
    )
    return state.evolve(dialog_seq=seq, pending_dialogs=(*state.pending_dialogs, dialog))


def close_dialog(
    state: BrowserState,
    dialog: PendingDialog,
    at: float,
    closed_by: Any,
    accepted: bool | None,
    prompt_text: str | None,
) -> BrowserState:
    record = DialogRecord(
        id=dialog.id,
        type=dialog.type,
        message=dialog.message,
        default_prompt=dialog.default_prompt,
        frame_id=dialog.frame_id,
        session_id=dialog.session_id,
        url=dialog.url,
        opened_at=dialog.opened_at,
        closed_at=at,
        closed_by=closed_by,
        accepted=accepted,
        prompt_text=prompt_text if dialog.type == "prompt" and accepted else None,
        via=dialog.via,
    )
    return state.evolve(
        pending_dialogs=tuple(d for d in state.pending_dialogs if d.id != dialog.id),
        recent_dialogs=(*state.recent_dialogs, record)[-RECENT_DIALOGS_KEPT:],
        dialogs_closed_total=state.dialogs_closed_total + 1,
    )


def _closing_candidate(state: BrowserState, msg: Event) -> PendingDialog | None:
    native = [d for d in state.pending_dialogs if d.via == "native"]
    frame_id = msg.params.get("frameId")
    for pool in (
        [d for d in native if frame_id and d.frame_id == frame_id],
        [d for d in native if d.session_id == msg.session_id and d.answering],
        [d for d in native if d.session_id == msg.session_id],
        native,
    ):
        if pool:
            # Chromium shows one dialog per page at a time; the oldest is the open one.
            return pool[0]
    return None


def dialog_closed(state: BrowserState, msg: Event) -> BrowserState:
    dialog = _closing_candidate(state, msg)
    if dialog is None:
        return state
    accepted = msg.params.get("result")
    user_input = msg.params.get("userInput")
    answer = dialog.answering
    closed_by = answer.closed_by if answer else "remote"
    if answer is not None and accepted is not None and bool(accepted) != answer.accept:
        # Our answer was on its way, but the dialog closed the other way: someone else
        # (an auto-dismissing client) got there first.
        closed_by = "remote"
    prompt_text = user_input if isinstance(user_input, str) else None
    if answer and answer.accept and prompt_text is None:
        prompt_text = answer.prompt_text
    return close_dialog(state, dialog, msg.wall, closed_by,
                        bool(accepted) if accepted is not None else None, prompt_text)


def _find(state: BrowserState, dialog_id: Any) -> PendingDialog | None:
    return next((d for d in state.pending_dialogs if d.id == dialog_id), None)


def dialog_answering(state: BrowserState, msg: Note) -> BrowserState:
    """``cdpnb.dialogAnswering``: we are about to answer ``dialog_id``."""
    p = msg.params
    dialog = _find(state, p["dialog_id"])
    if dialog is None:
        return state
    answer = DialogAnswer(accept=bool(p["accept"]), prompt_text=p.get("prompt_text"),
                          closed_by=p.get("closed_by", "agent"))
    updated = dialog.model_copy(update={"answering": answer})
    pending = tuple(updated if d.id == dialog.id else d for d in state.pending_dialogs)
    return state.evolve(pending_dialogs=pending)


def dialog_answered(state: BrowserState, msg: Note) -> BrowserState:
    """``cdpnb.dialogAnswered``: the outcome of our answer (``ok`` or ``error``)."""
    dialog = _find(state, msg.params["dialog_id"])
    if dialog is None and not msg.params.get("ok"):
        return _reattribute_to_remote(state, str(msg.params["dialog_id"]))
    if dialog is None or dialog.answering is None:
        return state
    if msg.params.get("ok"):
        answer = dialog.answering
        text = answer.prompt_text
        if answer.accept and dialog.type == "prompt" and text is None:
            text = ""
        return close_dialog(state, dialog, msg.wall, answer.closed_by, answer.accept, text)
    # The browser refused: the dialog is not answered by us, whatever we intended.
    updated = dialog.model_copy(update={"answering": None})
    pending = tuple(updated if d.id == dialog.id else d for d in state.pending_dialogs)
    return state.evolve(pending_dialogs=pending)


def _reattribute_to_remote(state: BrowserState, dialog_id: str) -> BrowserState:
    """Our answer failed, yet the dialog had closed as if we answered it: it was not us."""
    records = list(state.recent_dialogs)
    for i, record in enumerate(records):
        if record.id == dialog_id and record.closed_by != "remote":
            prompt_text = record.prompt_text if record.accepted else None
            records[i] = record.model_copy(update={"closed_by": "remote",
                                                   "prompt_text": prompt_text})
            return state.evolve(recent_dialogs=tuple(records))
    return state


def close_all_pending(state: BrowserState, at: float) -> BrowserState:
    for dialog in state.pending_dialogs:
        state = close_dialog(state, dialog, at, "remote", None, None)
    return state
