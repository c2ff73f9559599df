"""Dialog reducer: the browser's dialog model, as measured, in one place.

What Debian Chromium 156 and chromium-headless-shell 156 do (measured with raw CDP on
a page with cross-site iframes; the README's "Measured browser behaviour" has the
whole table). Both: native dialogs from every frame of a page (main, srcdoc, OOPIF)
arrive on that page target's top session with ``frameId``; ``javascriptDialogClosed``
carries ``frameId`` too, and comes before the reply to ``handleJavaScriptDialog``;
only the top session can answer, and there is no dialog id in the answer: the
browser answers the dialog it holds the page's one handle for.

* **Overlap** (a second frame opens a dialog while one is open). ``chromium``
  (``hasBrowserHandler: true``) closes the older one itself within 0–3 ms (``Closed``,
  result false) and loses the handle of the newer one: every answer then fails with
  -32602 "No dialog is showing" and its frame stays blocked. A same-document
  navigation of the top frame closes it (result false) and keeps the page.
  ``headless-shell`` keeps both open and answers the *newest*; the older one can never
  be answered again, even after the newest closed; only a new page frees its frame.
* **Navigation** of the top frame (browser-initiated) while a dialog is open:
  ``chromium`` closes it (``Closed`` result false, after ``frameStartedNavigating``);
  ``headless-shell`` sends nothing, the navigation never commits, every answer fails
  with "Not attached to an active page" and the page is stuck until closed.
* **Frame removed** with its dialog open (an OOPIF whose ``<iframe>`` went): no
  ``Closed``, ever. Answering it crashed the browser (SIGSEGV). On ``chromium`` any
  later dialog, navigation, reload or close of that page crashes the browser too.
* An OOPIF navigated by its parent while its dialog is open keeps it answerable; the
  navigation completes after the answer.

So: at most one native dialog per page is answerable, and the reducer always knows
which (``PendingDialog.unanswerable`` is None for it and says why for the others). An
answer is only ever sent for that one; when the browser closes a dialog that was not
the one our answer was for, the record says so (``reason="misdelivered"``).

``closed_by`` cannot be read from CDP: the supervisor folds ``cdpnb.dialogAnswering``
before it sends an answer and ``cdpnb.dialogAnswered`` with the outcome. A ``Closed``
that no answer, rule or release of ours explains was someone else's: ``remote``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from cdpnb.protocol import Event, Note, Reply
from cdpnb.state.changes import (
    BridgeRequestAbandoned,
    BridgeRequestRefused,
    Change,
    DialogAmended,
    DialogClosed,
    DialogOpened,
    DialogUnanswerable,
    PageHazard,
)
from cdpnb.state.counting import count
from cdpnb.state.models import BrowserState, DialogAnswer, DialogRecord, PendingDialog

__all__ = [
    "BROWSER_CLOSES",
    "DANGLING_DIALOG_ENGINES",
    "DIALOG_TYPES",
    "FAST_REMOTE_MS",
    "PAGE_CLOSE_CLOSES_S",
    "RECENT_DIALOGS_KEPT",
    "UNANSWERABLE",
    "answerable_dialog",
    "answerable_on",
    "bridged_dialogs_navigated",
    "browser_handler_of",
    "close_all_pending",
    "close_dialogs_of",
    "closed_natively",
    "closed_with_frames",
    "closed_with_page",
    "dialogs_gone_with_frames",
    "native_dialog_opened",
    "navigation_requested",
    "navigation_started",
    "same_target",
]

Out = list[Change]

RECENT_DIALOGS_KEPT = 20
DIALOG_TYPES = ("alert", "confirm", "prompt", "beforeunload")
#: A native dialog closed by someone else this fast was not closed by a person.
FAST_REMOTE_MS = 50.0
#: A dialog closed this soon before its page's end (or, on Firefox, its frame's
#: removal) closed with it (see ``closed_with_page``; 8-25 ms measured on Chromium,
#: ~50 ms on Firefox; the rest is room for a loaded machine).
PAGE_CLOSE_CLOSES_S = 0.1
#: Page text is untrusted: a bridged call's message and default are kept this long.
MAX_BRIDGE_TEXT = 10_000

#: A second dialog opens on a page while another is open there. By the page's
#: ``hasBrowserHandler``: (what every open one becomes, what the new one becomes).
OVERLAP: dict[bool | None, tuple[str, str | None]] = {
    True: ("superseded", "orphaned"),     # chromium: closes the old, loses the new
    False: ("handle_taken", None),        # headless-shell: answers the newest only
    None: ("handle_taken", None),         # unknown builds: the cautious reading
}
#: A different-document navigation of the top frame starts while a dialog is open.
NAVIGATION: dict[bool | None, str] = {True: "navigation", False: "wedged", None: "wedged"}
#: Reasons whose dialog the browser is about to close itself: its Closed is the browser's.
BROWSER_CLOSES = frozenset({"superseded", "navigation", "prompt_handler"})
#: Measured on chromium: when a frame of a page commits a new document while the page
#: has a dialog open (an OOPIF still loading when the top frame opened its dialog), the
#: dialog is closed (result false) within a millisecond or two. A close that soon after
#: a commit made while it was open is the browser's.
COMMIT_CLOSES_S = 0.02

#: Why a dialog cannot be answered, in words (``{other}`` names the answerable one).
UNANSWERABLE: dict[str, str] = {
    "superseded": "a dialog opened in another frame of this page, and Chromium closes "
                  "the older one itself",
    "orphaned": "it superseded another dialog, and Chromium then loses the page's dialog "
                "handle (every answer fails with \"No dialog is showing\"); cdpnb "
                "releases it with a same-document navigation of the top frame",
    "handle_taken": "a newer dialog ({other}) holds the page's only dialog handle: "
                    "headless-shell answers the newest dialog and never this one again; "
                    "cdpnb replaces the page once no answerable dialog is left on it",
    "navigation": "the page started navigating, and the browser closes the dialog itself",
    "prompt_handler": "the WebDriver BiDi session's unhandledPromptBehavior answers it "
                      "itself",
    "wedged": "the page started navigating while it was open: the browser can no longer "
              "answer it (\"Not attached to an active page\") and the page is stuck "
              "until cdpnb replaces it",
    "handle_lost": "the browser says no dialog is showing: it holds no handle for it",
    "non_blocking": "this browser does not block on dialogs: page JS got its value at once "
                    "(see the record's page_value) and there is nothing to answer",
}
#: Error texts of a failed Page.handleJavaScriptDialog that mean "never answerable".
ANSWER_ERRORS: dict[str, str] = {
    "No dialog is showing": "handle_lost",
    "Not attached to an active page": "wedged",
}


# -- helpers ------------------------------------------------------------------------------


def _replace(state: BrowserState, updated: Iterable[PendingDialog]) -> BrowserState:
    by_id = {d.id: d for d in updated}
    if not by_id:
        return state
    return state.evolve(pending_dialogs=tuple(by_id.get(d.id, d) for d in state.pending_dialogs))


def _find(state: BrowserState, dialog_id: Any) -> PendingDialog | None:
    return next((d for d in state.pending_dialogs if d.id == dialog_id), None)


def _native_on(state: BrowserState, page: str | None) -> list[PendingDialog]:
    return [d for d in state.pending_dialogs if d.via == "native" and d.page_session_id == page]


def answerable_dialog(state: BrowserState, page: str | None) -> PendingDialog | None:
    """The native dialog the browser would answer on ``page`` (a page session), if any."""
    return next((d for d in _native_on(state, page) if d.unanswerable is None), None)


def page_session_of(state: BrowserState, session_id: str | None) -> str | None:
    """The supervised page session a session belongs to (itself, or an ancestor)."""
    seen: set[str] = set()
    current = session_id
    while current is not None and current not in seen:
        if current in state.pages:
            return current
        seen.add(current)
        info = state.sessions.get(current)
        current = info.parent_session_id if info is not None else None
    return state.page_session_id if session_id is None else None


# -- opening ------------------------------------------------------------------------------


def same_target(state: BrowserState, one: str | None, other: str | None) -> bool:
    """Whether two sessions are attached to the same target (a client may attach a page
    twice on one connection: chrome-devtools-mcp does)."""
    a, b = state.sessions.get(one or ""), state.sessions.get(other or "")
    return a is not None and b is not None and a.target_id == b.target_id


def answerable_on(state: BrowserState, session: str | None) -> PendingDialog | None:
    """The dialog the browser answers for a ``Page.handleJavaScriptDialog`` sent on
    ``session``: the answerable one on it, or on another session of the same page
    (the dialog is kept on the session that announced it first)."""
    found = answerable_dialog(state, session)
    if found is not None:
        return found
    return next((d for d in state.pending_dialogs if d.via == "native"
                 and d.unanswerable is None and same_target(state, d.page_session_id, session)),
                None)


def dialog_opening(state: BrowserState, msg: Event, out: Out) -> BrowserState:
    """``Page.javascriptDialogOpening`` on a page's top session. Chromium 156 announces a
    dialog on every session attached to its page (measured: a page attached twice gets
    the opening and the closing twice): one dialog, kept on the first session."""
    p = msg.params
    kind = p.get("type")
    if kind not in DIALOG_TYPES:
        raise ValueError(f"unknown dialog type {kind!r}")
    handler = p.get("hasBrowserHandler")
    if handler is not None and not isinstance(handler, bool):
        raise ValueError(f"hasBrowserHandler must be a boolean, got {handler!r}")
    page = msg.session_id
    frame_id = p.get("frameId")
    if any(d.via == "native" and d.frame_id == (str(frame_id) if frame_id else None)
           and d.page_session_id != page and same_target(state, d.page_session_id, page)
           for d in state.pending_dialogs):
        return count(state, "dialogs-announced-again", out)
    dialog = PendingDialog(
        id=f"d-{state.dialog_seq + 1}",
        type=kind,
        message=str(p.get("message", "")),
        default_prompt=str(p.get("defaultPrompt", "") or ""),
        frame_id=str(frame_id) if frame_id else None,
        session_id=page,
        url=str(p.get("url", "")),
        opened_at=msg.wall,
        has_browser_handler=handler,
        page_session_id=page,
    )
    return native_dialog_opened(state, dialog, out)


def native_dialog_opened(state: BrowserState, dialog: PendingDialog, out: Out) -> BrowserState:
    """A native dialog opened on its page (``dialog.page_session_id``): what it and the
    page's other open dialogs become, by the browser's overlap model (``OVERLAP``, by
    ``dialog.has_browser_handler``). The one opening for CDP's
    ``javascriptDialogOpening`` and, on Chromium, BiDi's ``userPromptOpened``."""
    older_becomes, newer_becomes = OVERLAP[dialog.has_browser_handler]
    changed: list[PendingDialog] = []
    overlapped = False
    for d in _native_on(state, dialog.page_session_id):
        if d.unanswerable in BROWSER_CLOSES:
            continue  # already on its way out
        overlapped = True
        if older_becomes == "handle_taken" and d.unanswerable is not None:
            continue  # it lost the handle before; nothing new
        changed.append(d.evolve(unanswerable=older_becomes))
    if overlapped:
        dialog = dialog.evolve(unanswerable=newer_becomes)
    state = _replace(state, changed)
    state = state.evolve(dialog_seq=state.dialog_seq + 1,
                         pending_dialogs=(*state.pending_dialogs, dialog))
    out.append(DialogOpened(dialog))
    out.extend(DialogUnanswerable(d) for d in changed)
    if dialog.unanswerable is not None:
        out.append(DialogUnanswerable(dialog))
    return count(state, "dialog-overlaps", out) if overlapped else state


def bridge_dialog_opening(state: BrowserState, msg: Note, out: Out) -> BrowserState:
    """``cdpnb.bridgeDialogOpening``: a bridged call the bridge checked (secret, shape).

    The frame comes from the paused request (the browser), the URL from the frame
    table: nothing the page wrote is trusted beyond the message and the default. A
    frame's bridged call blocks its script, so a second one from the same frame while
    one is pending cannot be the page's own: it is refused, never a dialog.
    """
    p = msg.params
    kind = p["type"]
    if kind not in ("alert", "confirm", "prompt"):
        raise ValueError(f"unknown bridged dialog type {kind!r}")
    request_id = str(p["requestId"])
    frame_id = p.get("frameId")
    frame_id = str(frame_id) if frame_id else None
    if frame_id is not None and any(d.via == "bridge" and d.frame_id == frame_id
                                    for d in state.pending_dialogs):
        out.append(BridgeRequestRefused(msg.session_id, request_id, frame_id,
                                        "its frame already has a bridged dialog open"))
        return count(state, "bridge-refused", out)
    frame = state.frames.get(frame_id or "")
    seq = state.dialog_seq + 1
    dialog = PendingDialog(
        id=f"d-{seq}",
        type=kind,
        message=str(p.get("message", ""))[:MAX_BRIDGE_TEXT],
        default_prompt=str(p.get("defaultPrompt", "") or "")[:MAX_BRIDGE_TEXT],
        frame_id=frame_id,
        session_id=msg.session_id,
        url=frame.url if frame is not None else "",
        opened_at=msg.wall,
        via="bridge",
        request_id=request_id,
        page_session_id=page_session_of(state, msg.session_id),
    )
    out.append(DialogOpened(dialog))
    return state.evolve(dialog_seq=seq, pending_dialogs=(*state.pending_dialogs, dialog))


def bridge_request_refused(state: BrowserState, msg: Note, out: Out) -> BrowserState:
    """``cdpnb.bridgeRequestRefused``: the bridge turned away a request (no secret, bad
    shape); it never becomes a dialog."""
    p = msg.params
    frame_id = p.get("frameId")
    out.append(BridgeRequestRefused(msg.session_id, str(p["requestId"]),
                                    str(frame_id) if frame_id else None, str(p["reason"])))
    return count(state, "bridge-refused", out)


# -- closing ------------------------------------------------------------------------------


def _record(dialog: PendingDialog, at: float, closed_by: Any, accepted: bool | None,
            prompt_text: str | None, reason: str | None = None,
            answer_for: str | None = None) -> DialogRecord:
    return DialogRecord(
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
        reason=reason,
        answer_for=answer_for,
        accepted=accepted,
        prompt_text=prompt_text if dialog.type == "prompt" and accepted else None,
        via=dialog.via,
        page_session_id=dialog.page_session_id,
    )


def _close(state: BrowserState, dialog: PendingDialog, record: DialogRecord,
           out: Out) -> BrowserState:
    state = state.evolve(
        pending_dialogs=tuple(d for d in state.pending_dialogs if d.id != dialog.id),
        recent_dialogs=(*state.recent_dialogs, record)[-RECENT_DIALOGS_KEPT:],
        dialogs_closed_total=state.dialogs_closed_total + 1,
    )
    if (record.closed_by == "remote" and record.via == "native"
            and record.open_ms <= FAST_REMOTE_MS):
        state = count(state, "fast-remote-dismissals", out)
    if record.closed_by == "watchdog":
        state = count(state, "watchdog-dismissals", out)
    if record.closed_by == "cdpnb" and record.reason == "released":
        state = count(state, "dialogs-released", out)
    page = state.pages.get(record.page_session_id or "")
    if (record.type == "beforeunload" and record.accepted is False and page is not None
            and page.closing):
        # A close_page(run_beforeunload=True) the page asked about and was told no: the
        # page stays (measured: Chromium 156 and Firefox ESR 153 keep it, and its later
        # end is no longer the close asked for).
        state = state.evolve(pages={**state.pages, page.session_id: page.evolve(closing=False)})
    out.append(DialogClosed(record))
    return state


def _closing_candidate(state: BrowserState, msg: Event) -> PendingDialog | None:
    native = _native_on(state, msg.session_id)
    frame_id = msg.params.get("frameId")
    if frame_id:
        return next((d for d in native if d.frame_id == frame_id), None)
    # Endpoints without frameId in Closed (older Chromium): ours, then the answerable one.
    for pool in ([d for d in native if d.answering], [d for d in native if d.answerable],
                 native):
        if pool:
            return pool[0]
    return None


def dialog_closed(state: BrowserState, msg: Event, out: Out) -> BrowserState:
    """``Page.javascriptDialogClosed``: who closed it, and whether an answer of ours
    reached a dialog it was not meant for."""
    dialog = _closing_candidate(state, msg)
    if dialog is None:
        return state
    accepted_raw = msg.params.get("result")
    accepted = bool(accepted_raw) if accepted_raw is not None else None
    user_input = msg.params.get("userInput")
    prompt_text = user_input if isinstance(user_input, str) else None
    return closed_natively(state, dialog, msg.session_id, msg.wall, accepted, prompt_text, out)


def closed_natively(state: BrowserState, dialog: PendingDialog, page_session: str | None,
                    at: float, accepted: bool | None, prompt_text: str | None,
                    out: Out) -> BrowserState:
    """The browser reports ``dialog`` (on page ``page_session``) closed at ``at``: by
    our answer, by a rule of the browser's, misdelivered, or by someone else. The one
    attribution for CDP's ``javascriptDialogClosed`` and BiDi's ``userPromptClosed``."""
    answer = dialog.answering
    if answer is not None:
        closed_by = answer.closed_by
        reason = answer.reason
        if accepted is not None and accepted != answer.accept and dialog.type != "alert":
            # Our answer was on its way, but it closed the other way: someone else
            # (an auto-dismissing client) got there first. Not for an alert: it has one
            # button, and Firefox ESR 153 reports every alert closed ``accepted: true``,
            # dismissed or not (measured), so its result says nothing about who closed it.
            closed_by, reason = "remote", None
        if answer.accept and prompt_text is None:
            prompt_text = answer.prompt_text
        record = _record(dialog, at, closed_by, accepted, prompt_text, reason)
        if dialog.type == "alert" and accepted is not None and accepted != answer.accept:
            # One button, closed by our answer: the record holds the answer given, and the
            # browser's other word beside it (Firefox's every-alert-accepted).
            record = record.evolve(accepted=answer.accept, browser_accepted=accepted)
        return _close(state, dialog, record, out)
    if dialog.unanswerable in BROWSER_CLOSES:
        return _close(state, dialog, _record(dialog, at, "browser", accepted,
                                             prompt_text, dialog.unanswerable), out)
    page = state.pages.get(page_session or "")
    if page is not None and page.replacing:
        # Closed as cdpnb closes the page it replaces (Chromium 156 reports the wedged
        # dialog closed just before the target goes: measured), not by someone else.
        return _close(state, dialog, _record(dialog, at, "cdpnb", accepted, prompt_text,
                                             "page_replaced"), out)
    committed = page.last_commit if page is not None else None
    if (dialog.has_browser_handler and committed is not None
            and dialog.opened_at <= committed <= at
            and at - committed <= COMMIT_CLOSES_S):
        return _close(state, dialog, _record(dialog, at, "browser", accepted,
                                             prompt_text, "navigation"), out)
    meant_for = next((d for d in _native_on(state, page_session)
                      if d.answering is not None and d.answering.delivered_to is None
                      and d.answering.reason != "released" and d.id != dialog.id), None)
    if meant_for is not None and meant_for.answering is not None and (
            accepted is None or accepted == meant_for.answering.accept):
        # The browser answered the dialog it held the handle of, not the one we named:
        # a newer dialog opened while our answer was on its way (headless-shell).
        sent = meant_for.answering
        state = _replace(state, [meant_for.evolve(
            answering=sent.evolve(delivered_to=dialog.id))])
        state = count(state, "answers-misdelivered", out)
        return _close(state, dialog, _record(dialog, at, sent.closed_by, accepted,
                                             prompt_text, "misdelivered", meant_for.id), out)
    return _close(state, dialog, _record(dialog, at, "remote", accepted, prompt_text),
                  out)


def bridge_fulfilled(state: BrowserState, msg: Reply, out: Out) -> BrowserState:
    """The reply to ``Fetch.fulfillRequest`` (BiDi: ``network.provideResponse``) for a
    bridged dialog being answered: the
    page's call has its answer, so the dialog is closed here, in stream order (before
    anything the page does next can be folded)."""
    # CDP's Fetch.fulfillRequest names it requestId, BiDi's network.provideResponse request.
    request_id = msg.params.get("requestId", msg.params.get("request"))
    dialog = next((d for d in state.pending_dialogs
                   if d.via == "bridge" and d.request_id == request_id
                   and d.answering is not None), None)
    if dialog is None or dialog.answering is None:
        return state
    answer = dialog.answering
    text = answer.prompt_text
    if answer.accept and dialog.type == "prompt" and text is None:
        text = ""
    return _close(state, dialog, _record(dialog, msg.wall, answer.closed_by, answer.accept,
                                         text, answer.reason), out)


def dialog_answering(state: BrowserState, msg: Note, out: Out) -> BrowserState:
    """``cdpnb.dialogAnswering``: an answer to ``dialog_id`` is about to be sent
    (``closed_by="cdpnb"`` with a ``reason``: cdpnb frees the dialog itself, e.g. a
    release of an unanswerable one, or a dismissal before navigating)."""
    p = msg.params
    dialog = _find(state, p["dialog_id"])
    if dialog is None:
        return state
    reason = p.get("reason")
    answer = DialogAnswer(accept=bool(p["accept"]), prompt_text=p.get("prompt_text"),
                          closed_by=p.get("closed_by", "agent"),
                          reason=str(reason) if reason else None)
    return _replace(state, [dialog.evolve(answering=answer)])


def dialog_answered(state: BrowserState, msg: Note, out: Out) -> BrowserState:
    """``cdpnb.dialogAnswered``: the outcome of our answer (``ok`` or ``error``)."""
    p = msg.params
    dialog = _find(state, p["dialog_id"])
    if dialog is None:
        if not p.get("ok"):
            return _reattribute_to_remote(state, str(p["dialog_id"]), out)
        return state
    answer = dialog.answering
    if answer is None:
        return state
    if p.get("ok"):
        if answer.delivered_to is not None:
            # The browser took the answer, for another dialog: this one is still open,
            # and (the newer one holding the handle) can no longer be answered.
            updated = dialog.evolve(answering=None)
            if not updated.answerable:
                out.append(DialogUnanswerable(updated))
            return _replace(state, [updated])
        # No Closed came (bridged dialogs have none): the answer's success closes it.
        text = answer.prompt_text
        if answer.accept and dialog.type == "prompt" and text is None:
            text = ""
        return _close(state, dialog, _record(dialog, msg.wall, answer.closed_by,
                                             answer.accept, text, answer.reason), out)
    # The browser refused: not answered by us, whatever we intended.
    lost = next((why for text, why in ANSWER_ERRORS.items()
                 if text in str(p.get("error", ""))), None)
    update: dict[str, Any] = {"answering": None}
    if lost is not None and dialog.via == "native" and dialog.unanswerable is None:
        update["unanswerable"] = lost
    updated = dialog.evolve(**update)
    if not updated.answerable:
        # Said again when it was already so: nothing of ours is on its way any more.
        out.append(DialogUnanswerable(updated))
    return _replace(state, [updated])


def _reattribute_to_remote(state: BrowserState, dialog_id: str, out: Out) -> BrowserState:
    """Our answer failed, yet the dialog had closed as if we answered it: it was not us."""
    records = list(state.recent_dialogs)
    for i, record in enumerate(records):
        if record.id == dialog_id and record.closed_by not in ("remote", "browser"):
            prompt_text = record.prompt_text if record.accepted else None
            records[i] = record.evolve(closed_by="remote", reason=None,
                                       prompt_text=prompt_text)
            out.append(DialogAmended(records[i]))
            return state.evolve(recent_dialogs=tuple(records))
    return state


# -- dialogs that end with their frame, page or connection --------------------------------


def close_dialogs_of(state: BrowserState, dialogs: Iterable[PendingDialog], at: float,
                     closed_by: str, reason: str | None, out: Out, *,
                     accepted: bool | None = None) -> BrowserState:
    """Close ``dialogs`` in state: they cannot be answered. A bridged one's paused call
    is abandoned (``BridgeRequestAbandoned``: the bridge lets it go with a dismissal)."""
    for dialog in list(dialogs):
        state = _close(state, dialog, _record(dialog, at, closed_by, accepted, None, reason),
                       out)
        if dialog.via == "bridge" and dialog.request_id:
            out.append(BridgeRequestAbandoned(dialog.session_id, dialog.request_id, dialog.id))
    return state


def _within(state: BrowserState, frame_id: str | None, root: str) -> bool:
    """Whether ``frame_id`` is ``root`` or a frame under it (by the frame table)."""
    seen: set[str] = set()
    while frame_id is not None and frame_id not in seen:
        if frame_id == root:
            return True
        seen.add(frame_id)
        frame = state.frames.get(frame_id)
        frame_id = frame.parent_frame_id if frame is not None else None
    return False


def bridged_dialogs_navigated(state: BrowserState, frame_id: str, at: float,
                              out: Out) -> BrowserState:
    """A different-document navigation of ``frame_id`` started (CDP's
    ``frameStartedNavigating``, BiDi's ``navigationStarted``): the bridged dialogs open
    in it or in a frame under it end with their documents, closed by the browser's
    navigation as Chromium and Firefox close a native one.

    Measured on Chromium 156 before this rule: a bridged call blocks its renderer in a
    synchronous XHR, so a same-site navigation never committed while it was paused; a
    cross-site frame's paused call was aborted when its parent navigated, the script
    fell back to the native dialog in the unloading frame, and Chromium died (2 of 6
    runs). Over BiDi the navigation completed and the dialog stayed pending for good.
    Ended here, at the start, the call is let go with a dismissal before the browser
    unloads anything."""
    doomed = [d for d in state.pending_dialogs
              if d.via == "bridge" and d.answering is None and _within(state, d.frame_id,
                                                                       frame_id)]
    return close_dialogs_of(state, doomed, at, "browser", "navigation", out)


def dialogs_gone_with_frames(state: BrowserState, gone: set[str], at: float, reason: str,
                             out: Out) -> BrowserState:
    """Frames ``gone`` left the tree: their open dialogs went with them. The browser
    sends no Closed for those, and answering one crashed it (chromium and
    headless-shell 156), so they are closed here and never answered. On chromium the
    page keeps a dangling dialog that crashes the browser at its next dialog,
    navigation or close: the page is marked with that hazard."""
    doomed = [d for d in state.pending_dialogs if d.frame_id in gone]
    if not doomed:
        return state
    replaced = [d for d in doomed if (page := state.pages.get(d.page_session_id or ""))
                is not None and page.replacing]
    # A page cdpnb is replacing takes its frames along first: that is the replacement.
    state = close_dialogs_of(state, replaced, at, "cdpnb", "page_replaced", out)
    doomed = [d for d in doomed if d not in replaced]
    state = close_dialogs_of(state, doomed, at, "browser", reason, out)
    for dialog in doomed:
        page = state.pages.get(dialog.page_session_id or "")
        # (hasBrowserHandler: CDP says it, chromium True and headless-shell False; over
        # BiDi the state says it for the engines it knows, see browser_handler_of)
        if dialog.via == "native" and dialog.has_browser_handler is True \
                and page is not None and page.hazard is None:
            hazard = (f"{dialog.id} ({dialog.type}) was open in frame {dialog.frame_id} when "
                      "that frame went; Chromium 156 keeps a dangling dialog and crashes "
                      "(SIGSEGV) at this page's next native dialog, navigation, reload or "
                      "close")
            page = page.evolve(hazard=hazard)
            state = state.evolve(pages={**state.pages, page.session_id: page})
            out.append(PageHazard(page))
            state = count(state, "pages-hazardous", out)
    return state


#: Engines (BiDi's ``browserName/version``) that keep the dangling dialog of a frame
#: removed with its dialog open and crash at the page's next one: Chromium over
#: chromium-bidi (measured: the next ``confirm()`` ended the browser), where the
#: ``hasBrowserHandler`` fact of CDP is not told.
DANGLING_DIALOG_ENGINES = ("Chrome/",)


def browser_handler_of(state: BrowserState) -> bool | None:
    """``hasBrowserHandler`` for an endpoint that does not tell it (WebDriver BiDi): True
    for Chromium (``DANGLING_DIALOG_ENGINES``, measured over chromium-bidi: the same
    overlap, ghost-dialog and release behaviour as over CDP), None (unknown) else."""
    return True if (state.engine or "").startswith(DANGLING_DIALOG_ENGINES) else None


#: ``frameStartedNavigating``'s navigation types that keep the document. Every other
#: (``differentDocument``, ``reload``, ``reloadBypassingCache``, ``restore``,
#: ``historyDifferentDocument``…) replaces it: Chromium 156 closes an open alert when a
#: reload starts as when a navigation does (measured).
SAME_DOCUMENT = frozenset({"sameDocument", "historySameDocument"})


def navigation_started(state: BrowserState, msg: Event, out: Out) -> BrowserState:
    """``Page.frameStartedNavigating``: a different-document navigation of a page's top
    frame makes its open native dialogs unanswerable (chromium closes them;
    headless-shell is stuck). A beforeunload dialog is exempt: the navigation waits for
    its answer. Bridged dialogs in the navigating frame or under it end at once
    (``bridged_dialogs_navigated``)."""
    p = msg.params
    if p.get("navigationType") in SAME_DOCUMENT:
        return state
    frame_id = p.get("frameId")
    if isinstance(frame_id, str):
        state = bridged_dialogs_navigated(state, frame_id, msg.wall, out)
    page = state.pages.get(msg.session_id or "")
    if page is None or frame_id != page.target_id:
        return state
    changed = [d.evolve(unanswerable=NAVIGATION[d.has_browser_handler])
               for d in _native_on(state, page.session_id)
               if d.type != "beforeunload" and d.unanswerable not in BROWSER_CLOSES]
    out.extend(DialogUnanswerable(d) for d in changed)
    return _replace(state, changed)


def navigation_requested(state: BrowserState, msg: Event, out: Out) -> BrowserState:
    """``Page.frameRequestedNavigation``: a frame's document asked to navigate it (a
    script, a link, a form) in place (``disposition`` ``currentTab``; not a new tab,
    not a download). Chromium 156 sends it before ``frameStartedNavigating`` (7-8 ms
    before, beside two CPU-bound processes): bridged dialogs in that frame or under it
    end here, the sooner to let their calls go before the old document unloads."""
    p = msg.params
    frame_id = p.get("frameId")
    if p.get("disposition", "currentTab") != "currentTab" or not isinstance(frame_id, str):
        return state
    return bridged_dialogs_navigated(state, frame_id, msg.wall, out)


def closed_with_page(state: BrowserState, page_session: str, at: float,
                     out: Out) -> BrowserState:
    """A page closed (not by cdpnb): its dialogs that closed just before, with no answer
    of ours and not accepted, closed with it, not by someone else: their records are
    amended to ``browser`` / ``page_closed`` (``DialogAmended``).

    Measured on Chromium 156 (CDP and chromium-bidi): a tab closed with its native
    dialog open (``Target.closeTarget``, ``browsingContext.close``) first reports the
    dialog closed (result false), then its detach 8-25 ms later; read alone, the close
    looked like another client dismissing the dialog within 50 ms, and cdpnb warned of
    an auto-dismisser and turned the bridge on. Headless-shell and Firefox report no
    close, only the page's end."""
    return _closed_just_before(state, lambda r: r.page_session_id == page_session, at,
                               "page_closed", out)


def closed_with_frames(state: BrowserState, frames: set[str], at: float,
                       out: Out) -> BrowserState:
    """Frames went (removed): their dialogs that closed just before, unanswered by us,
    went with them (``browser`` / ``frame_removed``). Firefox ESR 153 reports a removed
    frame's prompt closed either just after its ``contextDestroyed`` or, as often,
    ~50 ms before it (measured): that close is the removal's, not someone else's. For
    the engines that do that only (``cdpnb.state.bidi``): Chromium sends no close for a
    removed frame's dialog, so there a close before the removal was someone else's (an
    auto-dismissing client, and then a probe moving on within milliseconds)."""
    return _closed_just_before(state, lambda r: r.frame_id in frames, at, "frame_removed",
                               out)


def _closed_just_before(state: BrowserState, match: Callable[[DialogRecord], bool],
                        at: float, reason: str, out: Out) -> BrowserState:
    """Amend the ``remote`` records that ``match`` and closed within
    PAGE_CLOSE_CLOSES_S before ``at`` (not accepted: an end dismisses) to the browser's
    close for ``reason``."""
    records = list(state.recent_dialogs)
    amended = fast = 0
    for i, record in enumerate(records):
        if (record.closed_by == "remote" and record.reason is None
                and record.accepted is not True and match(record)
                and 0.0 <= at - record.closed_at <= PAGE_CLOSE_CLOSES_S):
            records[i] = record.evolve(closed_by="browser", reason=reason)
            out.append(DialogAmended(records[i]))
            amended += 1
            if record.via == "native" and record.open_ms <= FAST_REMOTE_MS:
                fast += 1  # counted as one by _close: it was not
    if not amended:
        return state
    state = state.evolve(recent_dialogs=tuple(records))
    return count(state, "fast-remote-dismissals", out,
                 -min(fast, state.counters.get("fast-remote-dismissals", 0)))


def close_all_pending(state: BrowserState, at: float, reason: str, out: Out) -> BrowserState:
    """Every open dialog, closed in state: the connection that could answer them is gone."""
    return close_dialogs_of(state, state.pending_dialogs, at, "cdpnb", reason, out)
