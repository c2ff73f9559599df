"""WebDriver classic reducers: pages, frames and dialogs from the replies of cdpnb's own
classic commands (classic has no events), folded into the same ``BrowserState``.

The mapping: the supervised page is a window handle (``cdpnb.pageTarget`` names it;
it is both its ``target_id`` and its ``session_id``); its frames come from
``classic.frameTree`` (cdpnb walks them by switching, ``cdpnb.protocol.classic``), in
BiDi's ``browsingContext.Info`` shape, with path ids (``<handle>/0/1``).

Windows: a window that joins the session while it is supervised is a page the supervised
pages opened (``cdpnb.classicWindowOpened``, cdpnb's call: classic names no opener, so
``opener_target_id`` is the window that was current); a supervised window missing from
``classic.getWindowHandles`` has closed.

Dialogs are what the polls say (``classic.getAlertText``): a message while none is open
for the window is a dialog opened, of unknown type (``"unknown"``: classic tells no
type) in an unknown frame (``frame_id`` None: classic tells no frame); "no such alert"
while one is open is its close, by cdpnb's answer if one was under way, otherwise by
the browser or someone else. ``classic.answerAlert``'s reply is cdpnb's answer landing.
Measured (WebKitWebDriver 2.50, chromedriver 156): classic shows dialogs of the current
window only, whichever of its frames opened them, and never a beforeunload dialog (the
browser accepts it itself).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cdpnb.protocol import ErrorReply, Note, Reply
from cdpnb.protocol.classic import classic_error_name
from cdpnb.state.bidi import add_context, context_gone, drop_frames, origin_of, walk_contexts
from cdpnb.state.changes import Change, DialogOpened, FrameAdded, FrameNavigated, PageOpened
from cdpnb.state.dialogs import browser_handler_of, close_dialogs_of, closed_natively
from cdpnb.state.frames import descendants, ident
from cdpnb.state.models import BrowserState, FrameInfo, PageInfo, PendingDialog

__all__ = ["answer_refused", "answered", "frame_tree", "open_in", "poll_failed", "polled",
           "window_opened", "windows"]

Out = list[Change]


def frame_tree(state: BrowserState, msg: Reply, out: Out) -> BrowserState:
    """``classic.frameTree``: the window's frames now; those gone leave, those new join,
    those at a new address navigated. Each frame's name is its ``window.name`` as the
    walk read it ("" is None, as over CDP)."""
    contexts = msg.result.get("contexts") or []
    if not contexts:
        return state
    top = contexts[0]
    window = ident(top["context"], "context")
    if window not in state.pages:
        return state
    now = {ident(node["context"], "context"): (up, str(node.get("url", "")))
           for node, up in walk_contexts(top, None)}
    names = {ident(node["context"], "context"): str(node.get("name") or "") or None
             for node, _up in walk_contexts(top, None)}
    # A frame its parent listed but the walk could not enter (``"entered": False``) is
    # kept as it was, its known frames with it: nothing was seen of them this time.
    unentered = {cid for node, _up in walk_contexts(top, None)
                 if node.get("entered") is False
                 for cid in [ident(node["context"], "context")]}
    kept = descendants({k: f.parent_frame_id for k, f in state.frames.items()},
                       unentered) if unentered else set()
    mine = [k for k, f in state.frames.items()
            if f.session_id == window and k != window and k not in kept]
    # A frame whose parent changed is another frame at that path: it leaves and joins.
    doomed = {k for k in mine if k not in now or now[k][0] != state.frames[k].parent_frame_id}
    if doomed:
        state = drop_frames(state, doomed, "remove", out)
    for cid, (_up, url) in now.items():
        old = state.frames.get(cid)
        if old is None or not url or url == old.url:
            continue
        parent = state.frames.get(old.parent_frame_id or "")
        frame = old.evolve(url=url, name=names.get(cid),
                           origin=origin_of(url) or (parent.origin if parent else ""))
        out.append(FrameNavigated(frame))
        state = state.evolve(frames={**state.frames, cid: frame})
        page = state.pages.get(cid)
        if page is not None:
            state = state.evolve(pages={**state.pages, cid: page.evolve(url=url)})
    state = add_context(state, _entered(top, state.frames), None, out)
    renamed = {cid: state.frames[cid].evolve(name=name)
               for cid, name in names.items()
               if cid in state.frames and state.frames[cid].name != name}
    return state.evolve(frames={**state.frames, **renamed}) if renamed else state


def _entered(node: dict[str, Any], known: Mapping[str, FrameInfo]) -> dict[str, Any]:
    """``node`` without the frames the walk could not enter that are not known yet (they
    join at the walk that enters them, with their address)."""
    children = [_entered(child, known) for child in node.get("children") or ()
                if child.get("entered") is not False or child.get("context") in known]
    return {**node, "children": children}


def _window_of(msg: Reply | ErrorReply) -> str | None:
    window = msg.params.get("window")
    return window if isinstance(window, str) else None


def open_in(state: BrowserState, window: str) -> PendingDialog | None:
    """The native dialog ``window`` is known to show (classic shows one a window)."""
    return next((d for d in state.pending_dialogs
                 if d.via == "native" and d.page_session_id == window), None)


def polled(state: BrowserState, msg: Reply, out: Out) -> BrowserState:
    """``classic.getAlertText`` answered a message: the window shows a dialog."""
    window = _window_of(msg)
    text = msg.result.get("value")
    page = state.pages.get(window or "")
    if page is None or not isinstance(text, str):
        return state
    shown = open_in(state, page.session_id)
    if shown is not None:
        if shown.message == text:
            return state  # the same dialog, still open
        # Another message: the one we knew closed unseen and a new one opened.
        state = closed_natively(state, shown, page.session_id, msg.wall, None, None, out)
    seq = state.dialog_seq + 1
    # (the window's address as last walked: the page's own is set only once it changes)
    top = state.frames.get(page.session_id)
    dialog = PendingDialog(
        id=f"d-{seq}", type="unknown", message=text, frame_id=None,
        session_id=page.session_id, url=page.url or (top.url if top is not None else ""),
        opened_at=msg.wall,
        has_browser_handler=browser_handler_of(state), page_session_id=page.session_id)
    out.append(DialogOpened(dialog))
    return state.evolve(dialog_seq=seq, pending_dialogs=(*state.pending_dialogs, dialog))


def poll_failed(state: BrowserState, msg: ErrorReply, out: Out) -> BrowserState:
    """``classic.getAlertText`` said "no such alert": a dialog open for the window has
    closed (by our answer if one was under way: its reply may come after this poll's;
    by the browser when the top document the poll read is another one: see
    ``_navigated_since``)."""
    if msg.method != "classic.getAlertText" or classic_error_name(
            msg.message, msg.data) != "no such alert":
        return state
    window = _window_of(msg)
    shown = open_in(state, window or "")
    if shown is None:
        return state
    if shown.answering is None and _navigated_since(shown, msg.data):
        return close_dialogs_of(state, [shown], msg.wall, "browser", "navigation", out)
    return closed_natively(state, shown, shown.page_session_id, msg.wall, None, None, out)


def _navigated_since(dialog: PendingDialog, read: Any) -> bool:
    """Whether the window's top document, as the poll read it (``url``,
    ``time_origin_ms``), is not the one that showed ``dialog``: its address changed, or
    it began after the dialog was seen. Measured on chromedriver 156: a page that
    navigates or reloads itself while its cross-site iframe shows an alert has the
    browser close the alert (WebKit 2.50 instead holds the page's timer until it is
    answered). Limit: classic does not tell which frame showed the dialog, so a close by
    someone else followed at once by a navigation (``alert(); location = …``, or a
    navigation before the next poll, 25 ms) reads as the navigation's too."""
    if not isinstance(read, dict):
        return False
    url, began = read.get("url"), read.get("time_origin_ms")
    if isinstance(began, int | float) and not isinstance(began, bool):
        # The document's beginning decides when it was read: the address alone can
        # change without a new document (a fragment, pushState; the dialog's url is the
        # window's as last walked). Both clocks are the machine's (cdpnb's wall clock,
        # the browser's timeOrigin): a server on another host whose clock is ahead
        # would make a close read as a navigation's.
        return began / 1000 > dialog.opened_at
    return isinstance(url, str) and bool(dialog.url) \
        and url.partition("#")[0] != dialog.url.partition("#")[0]


def answered(state: BrowserState, msg: Reply, out: Out) -> BrowserState:
    """``classic.answerAlert`` succeeded: the dialog it was for closed by that answer
    (a prompt's type is learnt here: text was taken, or refused by an alert/confirm)."""
    window = _window_of(msg)
    shown = open_in(state, window or "")
    if shown is None or shown.answering is None:
        return state
    accept = msg.params.get("accept")
    text = msg.params.get("text") if msg.result.get("prompt") else None
    prompt: Any = msg.result.get("prompt")
    if prompt is True:
        shown = shown.evolve(type="prompt")
    state = closed_natively(state, shown, shown.page_session_id, msg.wall,
                            accept if isinstance(accept, bool) else None,
                            text if isinstance(text, str) else None, out)
    after = msg.result.get("after")
    if isinstance(after, str) and window is not None:
        # The window showed a dialog again right after the answer: another one.
        return polled(state, Reply(msg.id, "classic.getAlertText",
                                   {"value": after, "window": window}, None,
                                   {"window": window}, msg.wall, msg.mono), out)
    return state


def answer_refused(state: BrowserState, msg: ErrorReply, out: Out) -> BrowserState:
    """``classic.answerAlert`` failed "no such alert": nothing is open, or another dialog
    is (its message differs): the dialog it was for was closed before our answer, by
    someone else (a page cannot close its own dialog: its script is blocked in it).

    Only the dialog the answer was for: one our answer is on its way to, showing the
    message it expected. A poll may have seen the other message first (the refusal's
    reply comes after it): that poll closed the answered dialog and opened the one now
    shown, which the refusal leaves open (it was closed as someone else's, and then
    seen again as a third dialog: 1 run in 20, scripted)."""
    if msg.method != "classic.answerAlert":
        return state
    window = _window_of(msg)
    shown = open_in(state, window or "")
    if shown is None or classic_error_name(msg.message, msg.data) != "no such alert":
        return state
    expected = msg.params.get("expect")
    if shown.answering is None or (isinstance(expected, str) and shown.message != expected):
        return state
    return close_dialogs_of(state, [shown], msg.wall, "remote", None, out)


def window_opened(state: BrowserState, msg: Note, out: Out) -> BrowserState:
    """``cdpnb.classicWindowOpened {handle, opener}``: a new window in the session, a
    popup of the supervised pages (when popups are followed)."""
    handle = ident(msg.params["handle"], "handle")
    if handle in state.pages or not state.follow_popups or state.page_target_id is None:
        return state
    opener = msg.params.get("opener")
    page = PageInfo(session_id=handle, target_id=handle,
                    opener_target_id=opener if isinstance(opener, str) else None)
    state = state.evolve(pages={**state.pages, handle: page})
    out.append(PageOpened(page))
    frame = FrameInfo(frame_id=handle, url="", origin="", session_id=handle)
    out.append(FrameAdded(frame))
    return state.evolve(frames={**state.frames, handle: frame})


def windows(state: BrowserState, msg: Reply, out: Out) -> BrowserState:
    """``classic.getWindowHandles``: a supervised window no longer listed has closed."""
    handles = msg.result.get("value")
    if not isinstance(handles, list):
        return state
    for gone in [h for h in state.pages if h not in handles]:
        state = context_gone(state, gone, msg.wall, out)
    return state
