"""WebDriver BiDi reducers: browsing contexts, realms, user prompts and log entries,
folded into the same ``BrowserState`` as CDP.

The mapping: a top-level browsing context the supervisor owns (``cdpnb.pageTarget``
names it) or one a supervised page opened (``originalOpener``) is a page; its id is
both the page's ``target_id`` and its ``session_id`` (BiDi has no sessions on the
wire), and every frame of it has that ``session_id``. A child context is a frame
(``frame_id`` = context id, ``parent_frame_id`` = its parent). BiDi does not say
which frames run out of process, so ``is_oopif`` is False for every frame; nor does
it give a frame's name (``browsingContext.Info`` has none: Firefox ESR 153 and
chromium-bidi 17 send context, url, children, parent, originalOpener, userContext,
clientWindow), so ``name`` is None over BiDi rather than a guess. A window
realm without a sandbox is the frame's default JavaScript context. Contexts that are
not under a supervised page (other tabs, other clients' pages) are ignored.

Measured on Firefox ESR 153 (raw BiDi, pages with same-origin, srcdoc, cross-site and
nested cross-site iframes; the README's "Measured browser behaviour" has the table):

* ``userPromptOpened`` carries the frame's own context, for every kind of frame.
  ``userPromptClosed`` (``accepted``, ``userText``) comes ~40 ms after
  ``handleUserPrompt`` and before its reply.
* One prompt per tab is shown at a time. A prompt from another frame of the same tab
  waits, unannounced, until the shown one closes; its ``userPromptOpened`` then
  arrives just *before* the shown one's ``userPromptClosed``. ``handleUserPrompt``
  answers the tab's shown prompt whichever of the tab's contexts it names, so an
  answer is only ever sent for the oldest prompt of a tab.
* A navigation of the tab while a prompt is open: ``navigationStarted``, then the
  browser closes the prompt itself (``accepted: true``) and the navigation commits;
  the ``userPromptClosed`` mostly comes first, but 4 runs in 20 came ~4 ms after
  ``browsingContext.navigate``'s reply (``PageControl`` waits for it).
  A beforeunload prompt is the exception: the navigation waits for its answer.
* A frame removed with its prompt open: ``contextDestroyed``, then a
  ``userPromptClosed`` for the gone context (``accepted: true``); answering it then
  fails with "no such frame". Later dialogs on the page work (no crash).
* A tab closed with a prompt open: ``contextDestroyed`` only.

So a close that follows a navigation of the top context, or a removal of the frame,
is the browser's; a close nobody of ours asked for is someone else's (``remote``),
as over CDP (the attribution is shared: ``cdpnb.state.dialogs.closed_natively``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from cdpnb.protocol import Event, Note, Reply
from cdpnb.state.changes import (
    Change,
    DialogOpened,
    DialogUnanswerable,
    FrameAdded,
    FrameNavigated,
    FrameRemoved,
    PageClosed,
    PageOpened,
)
from cdpnb.state.console import MAX_TEXT, append_entry, bidi_entry_kind
from cdpnb.state.dialogs import (
    BROWSER_CLOSES,
    DIALOG_TYPES,
    bridged_dialogs_navigated,
    browser_handler_of,
    close_dialogs_of,
    closed_natively,
    closed_with_frames,
    closed_with_page,
    dialogs_gone_with_frames,
    native_dialog_opened,
)
from cdpnb.state.frames import descendants, ident
from cdpnb.state.models import BrowserState, ConsoleEntry, FrameInfo, PageInfo, PendingDialog
from cdpnb.state.pages import CLOSED_ON_REQUEST

#: ``add_context``, ``context_gone``, ``drop_frames``, ``origin_of`` and
#: ``walk_contexts`` are shared with WebDriver classic's reducers (``cdpnb.state.classic``),
#: whose frame walks are said in BiDi's ``browsingContext.Info`` shape.
__all__ = ["CLOSES_ON_FRAME_NAVIGATION", "PROMPT_HANDLERS", "add_context", "context_gone",
           "drop_frames", "origin_of", "page_of_context", "walk_contexts"]

Out = list[Change]

#: ``userPromptOpened.handler``: what the session's unhandledPromptBehavior does with
#: the prompt. cdpnb's session says ``ignore``; anything else closes it at once.
PROMPT_HANDLERS = ("accept", "dismiss", "ignore")


def page_of_context(state: BrowserState, context: str | None) -> PageInfo | None:
    """The supervised page a browsing context belongs to (itself, or an ancestor)."""
    seen: set[str] = set()
    current = context
    while current is not None and current not in seen:
        page = state.pages.get(current)
        if page is not None:
            return page
        seen.add(current)
        frame = state.frames.get(current)
        current = frame.parent_frame_id if frame is not None else None
    return None


def origin_of(url: str) -> str:
    scheme, sep, rest = url.partition("://")
    if not sep or scheme not in ("http", "https", "ws", "wss"):
        return ""
    return f"{scheme}://{rest.split('/', 1)[0].split('?', 1)[0].split('#', 1)[0]}"


def walk_contexts(info: Mapping[str, Any], parent: str | None) -> Iterator[tuple[Mapping[str, Any],
                                                                         str | None]]:
    """A BiDi ``browsingContext.Info`` and its children, each with its parent's id."""
    stack = [(info, parent)]
    while stack:
        node, up = stack.pop()
        yield node, up
        me = ident(node["context"], "context")
        stack.extend((child, me) for child in reversed(node.get("children") or ()))


def add_context(state: BrowserState, info: Mapping[str, Any], parent: str | None,
                 out: Out) -> BrowserState:
    """One context (with its children) into the page and frame tables, if ours."""
    for node, up in walk_contexts(info, parent):
        cid = ident(node["context"], "context")
        url = str(node.get("url", ""))
        if up is None:
            state = _top_context(state, cid, node, url, out)
            continue
        if up not in state.frames or cid in state.frames:
            continue  # not under a supervised page, or known already
        _no_cycle(state, cid, up)
        page = page_of_context(state, up)
        parent_origin = state.frames[up].origin
        frame = FrameInfo(frame_id=cid, parent_frame_id=up, url=url,
                          origin=origin_of(url) or parent_origin,
                          # (BiDi's Info has no name; WebDriver classic's walk says it)
                          name=str(node.get("name") or "") or None,
                          session_id=page.session_id if page is not None else None)
        state = state.evolve(frames={**state.frames, cid: frame})
        out.append(FrameAdded(frame))
    return state


def _no_cycle(state: BrowserState, cid: str, parent: str) -> None:
    current: str | None = parent
    seen: set[str] = set()
    while current is not None and current not in seen:
        if current == cid:
            raise ValueError(f"context {cid} would be its own ancestor (parent {parent})")
        seen.add(current)
        frame = state.frames.get(current)
        current = frame.parent_frame_id if frame is not None else None


def _top_context(state: BrowserState, cid: str, node: Mapping[str, Any], url: str,
                 out: Out) -> BrowserState:
    page = state.pages.get(cid)
    if page is None:
        opener = node.get("originalOpener")
        opener_page = page_of_context(state, opener) if isinstance(opener, str) else None
        if opener_page is None or not state.follow_popups:
            return state  # another tab: not ours
        page = PageInfo(session_id=cid, target_id=cid, opener_target_id=opener_page.target_id,
                        opener_frame_id=str(opener), url=url)
        state = state.evolve(pages={**state.pages, cid: page})
        out.append(PageOpened(page))
    if cid in state.frames:
        return state
    frame = FrameInfo(frame_id=cid, url=url, origin=origin_of(url), session_id=cid)
    out.append(FrameAdded(frame))
    return state.evolve(frames={**state.frames, cid: frame})


# -- browsingContext ----------------------------------------------------------------


def context_created(state: BrowserState, msg: Event, out: Out) -> BrowserState:
    parent = msg.params.get("parent")
    return add_context(state, msg.params,
                        ident(parent, "parent") if parent is not None else None, out)


def get_tree(state: BrowserState, msg: Reply, out: Out) -> BrowserState:
    """The reply to ``browsingContext.getTree``: what is there already (on attach)."""
    for info in msg.result["contexts"]:
        parent = info.get("parent")
        state = add_context(state, info, parent if isinstance(parent, str) else None, out)
    return state


def page_abandoned(state: BrowserState, msg: Note, out: Out) -> BrowserState:
    """``cdpnb.pageAbandoned {context}``: cdpnb left a page it is replacing open and
    stopped supervising it (a page Chromium would crash on if it were closed): it
    leaves the state as if its context were destroyed."""
    return context_gone(state, ident(msg.params["context"], "context"), msg.wall, out)


def context_destroyed(state: BrowserState, msg: Event, out: Out) -> BrowserState:
    return context_gone(state, ident(msg.params["context"], "context"), msg.wall, out)


def context_gone(state: BrowserState, cid: str, at: float, out: Out) -> BrowserState:
    if cid not in state.frames and cid not in state.pages:
        return state
    doomed = descendants({k: f.parent_frame_id for k, f in state.frames.items()}, {cid})
    page = state.pages.get(cid)
    if page is not None:
        # The page's dialogs end with it (measured: no userPromptClosed follows); a page
        # cdpnb is replacing takes them along as the replacement.
        pending = [d for d in state.pending_dialogs if d.page_session_id == cid]
        state = close_dialogs_of(state, pending, at,
                                 "cdpnb" if page.replacing else "browser",
                                 "page_replaced" if page.replacing else "page_closed", out)
        if not page.replacing:
            state = closed_with_page(state, cid, at, out)
    state = drop_frames(state, doomed, "remove" if page is None else "page_closed", out)
    if page is None:
        if (state.engine or "").startswith(CLOSES_ON_FRAME_NAVIGATION):
            # (the same engines close a removed frame's prompt, at times just before)
            state = closed_with_frames(state, doomed, at, out)
        return dialogs_gone_with_frames(state, doomed, at, "frame_removed", out)
    state = state.evolve(pages={k: v for k, v in state.pages.items() if k != cid})
    if page.main:
        gone = (None if page.replacing else CLOSED_ON_REQUEST if page.closing
                else "the page's browsing context was closed (not by cdpnb)")
        state = state.evolve(page_target_id=None, page_session_id=None, page_gone=gone)
    out.append(PageClosed(page, "replaced" if page.replacing else
                          "requested" if page.closing else "closed"))
    return state


def drop_frames(state: BrowserState, doomed: set[str], reason: str, out: Out) -> BrowserState:
    # In the frame table's order, not the set's: the same changes in every process.
    out.extend(FrameRemoved(f, reason) for k, f in state.frames.items() if k in doomed)
    return state.evolve(
        frames={k: v for k, v in state.frames.items() if k not in doomed},
        contexts={k: v for k, v in state.contexts.items() if k[1] not in doomed})


#: Engines (the BiDi session's ``browserName/version``) that close a frame's prompt
#: when its parent navigates it: Firefox ESR 153 does, 55-70 ms later (``accepted:
#: false``, measured); Chromium keeps it open and answerable, and the navigation
#: waits for the answer (measured over CDP and over chromium-bidi).
CLOSES_ON_FRAME_NAVIGATION = ("Firefox/",)


def navigation_started(state: BrowserState, msg: Event, out: Out) -> BrowserState:
    """A navigation of a page's top context: its open prompts (but beforeunload, which
    the navigation waits for) are about to be closed by the browser; so are those of a
    navigating frame and its children on Firefox (``CLOSES_ON_FRAME_NAVIGATION``).
    Bridged dialogs in the navigating context or under it end at once, whichever
    context navigates, on every engine."""
    cid = ident(msg.params["context"], "context")
    state = bridged_dialogs_navigated(state, cid, msg.wall, out)
    if cid in state.pages:
        closing = {d.id for d in state.pending_dialogs if d.page_session_id == cid}
    elif cid in state.frames and (state.engine or "").startswith(CLOSES_ON_FRAME_NAVIGATION):
        under = descendants({k: f.parent_frame_id for k, f in state.frames.items()}, {cid})
        closing = {d.id for d in state.pending_dialogs if d.frame_id in under}
    else:
        return state
    return _closed_by_the_navigation(state, closing, out)


def page_navigating(state: BrowserState, msg: Note, out: Out) -> BrowserState:
    """``cdpnb.pageNavigating``: cdpnb sends a navigation or reload of a page whose
    prompts are left to the browser. On Firefox (``CLOSES_ON_FRAME_NAVIGATION``) they
    are closed by it from now: Firefox ESR 153, leaving a document whose onload loops on
    alert(), sent no ``navigationStarted`` and its ``userPromptClosed`` came before any
    news of the new navigation (measured beside two busy processes), which read as
    someone else's close."""
    cid = ident(msg.params["session_id"], "session_id")
    if cid not in state.pages or not (state.engine or "").startswith(CLOSES_ON_FRAME_NAVIGATION):
        return state
    return _closed_by_the_navigation(
        state, {d.id for d in state.pending_dialogs if d.page_session_id == cid}, out)


def _closed_by_the_navigation(state: BrowserState, closing: set[str],
                              out: Out) -> BrowserState:
    changed = [d.evolve(unanswerable="navigation")
               for d in state.pending_dialogs
               if d.id in closing and d.via == "native" and d.type != "beforeunload"
               and d.unanswerable not in BROWSER_CLOSES]
    if not changed:
        return state
    out.extend(DialogUnanswerable(d) for d in changed)
    by_id = {d.id: d for d in changed}
    return state.evolve(pending_dialogs=tuple(by_id.get(d.id, d)
                                              for d in state.pending_dialogs))


def navigated(state: BrowserState, msg: Event, out: Out) -> BrowserState:
    """``navigationCommitted`` / ``fragmentNavigated`` / ``historyUpdated`` (and
    ``domContentLoaded`` / ``load``, which carry the URL of a document whose commit
    chromium-bidi did not announce): the frame's URL, and its page's for a top context
    (a new document's child contexts are destroyed by their own events)."""
    cid = ident(msg.params["context"], "context")
    if msg.method == "browsingContext.navigationCommitted":
        # A new document in one of a page's contexts (a reload's too: same URL).
        committed = page_of_context(state, cid)
        if committed is not None:
            state = state.evolve(pages={**state.pages, committed.session_id:
                                        committed.evolve(last_commit=msg.wall)})
        if cid in state.pages:
            # The left document's prompts are closed by the browser. Firefox ESR 153
            # sends no ``navigationStarted`` for a reload away from a document whose
            # alert is open (measured): the commit is the first word of it.
            state = navigation_started(state, msg, out)
    if cid in state.pages:
        state, stray = _top_document_loading(state, cid, msg)
        if stray:
            # The left document's news: its prompts are the browser's to close (Firefox
            # closed the loop's alert after it, before the commit, measured beside two
            # busy processes), and its URL is not the frame's any more.
            return navigation_started(state, msg, out)
    old = state.frames.get(cid)
    url = msg.params.get("url")
    # chromium-bidi 17 (Chromium 156) sends a cross-site iframe's first
    # ``domContentLoaded`` with ``url: ""``, before its ``navigationCommitted`` (measured):
    # no address, so no navigation.
    if old is None or not isinstance(url, str) or not url or url == old.url:
        return state
    origin = origin_of(url)
    parent = state.frames.get(old.parent_frame_id or "")
    if not origin and parent is not None:
        origin = parent.origin  # about:blank and about:srcdoc run with their parent's
    frame = old.evolve(url=url, origin=origin)
    out.append(FrameNavigated(frame))
    state = state.evolve(frames={**state.frames, cid: frame})
    page = state.pages.get(cid)
    if page is not None:
        state = state.evolve(pages={**state.pages, cid: page.evolve(url=url)})
    return state


def _top_document_loading(state: BrowserState, cid: str,
                          msg: Event) -> tuple[BrowserState, bool]:
    """Which navigation of page ``cid``'s top context committed, reached
    ``domContentLoaded`` and loaded; a ``load`` under a navigation's id that is not its
    document's own (before its ``domContentLoaded``, or a second one) is a stray load
    (``PageInfo.stray_load_at``). Measured on Firefox ESR 153, navigating away from
    ``onload = () => { for (;;) alert() }`` while its alert is open (9 runs): a
    ``load`` with the *old* URL under the new navigation's id, before the new
    ``navigationCommitted``, between it and the new document's ``domContentLoaded``,
    or after the new document's own ``load``; ``browsingContext.navigate`` then never
    replies (30 s), and in some runs the new document stays ``interactive``."""
    navigation = msg.params.get("navigation")
    if not isinstance(navigation, str):
        return state, False
    page = state.pages[cid]
    update: dict[str, object]
    if msg.method == "browsingContext.navigationCommitted":
        update = {"committed_navigation": navigation}
    elif msg.method == "browsingContext.domContentLoaded":
        update = {"content_loaded_navigation": navigation}
    elif msg.method != "browsingContext.load":
        return state, False
    elif page.content_loaded_navigation != navigation or page.loaded_navigation == navigation:
        update = {"stray_load_at": msg.wall}
    else:
        update = {"loaded_navigation": navigation}
    return (state.evolve(pages={**state.pages, cid: page.evolve(**update)}),
            "stray_load_at" in update)


# -- prompts ----------------------------------------------------------------------


def user_prompt_opened(state: BrowserState, msg: Event, out: Out) -> BrowserState:
    p = msg.params
    cid = ident(p["context"], "context")
    kind = p.get("type")
    if kind not in DIALOG_TYPES:
        raise ValueError(f"unknown prompt type {kind!r}")
    page = page_of_context(state, cid)
    if page is None:
        return state  # a prompt in a tab we do not supervise
    handler = p.get("handler")
    if handler is not None and handler not in PROMPT_HANDLERS:
        raise ValueError(f"unknown prompt handler {handler!r}")
    frame = state.frames.get(cid)
    seq = state.dialog_seq + 1
    closed_by_handler = handler in ("accept", "dismiss")
    dialog = PendingDialog(
        id=f"d-{seq}",
        type=kind,
        message=str(p.get("message", "")),
        default_prompt=str(p.get("defaultValue", "") or ""),
        frame_id=cid,
        session_id=page.session_id,
        url=frame.url if frame is not None else "",
        opened_at=msg.wall,
        has_browser_handler=browser_handler_of(state),
        # The session's unhandledPromptBehavior closes it at once: the browser's close.
        unanswerable="prompt_handler" if closed_by_handler else None,
        page_session_id=page.session_id,
    )
    if dialog.has_browser_handler and not closed_by_handler:
        # Chromium behind chromium-bidi overlaps as over CDP (measured: a cross-site
        # frame's prompt 20 ms after the page's closed the page's, "remote" as it was
        # read then, and every answer to the newer failed "no such alert").
        return native_dialog_opened(state, dialog, out)
    state = state.evolve(dialog_seq=seq, pending_dialogs=(*state.pending_dialogs, dialog))
    out.append(DialogOpened(dialog))
    if dialog.unanswerable is not None:
        out.append(DialogUnanswerable(dialog))
    return state


def user_prompt_closed(state: BrowserState, msg: Event, out: Out) -> BrowserState:
    p = msg.params
    cid = ident(p["context"], "context")
    dialog = next((d for d in state.pending_dialogs
                   if d.via == "native" and d.frame_id == cid), None)
    accepted = p.get("accepted")
    if not isinstance(accepted, bool):
        raise ValueError(f"userPromptClosed.accepted must be a boolean, got {accepted!r}")
    if dialog is None:
        return _closed_unannounced(state, msg, cid, accepted, out)
    text = p.get("userText")
    return closed_natively(state, dialog, dialog.page_session_id, msg.wall, accepted,
                           text if isinstance(text, str) else None, out)


#: A close of a prompt in a frame whose dialog cdpnb closed this recently (with its
#: frame, or its page) is that dialog's late news, not another prompt.
LATE_CLOSE_S = 1.0


def _closed_unannounced(state: BrowserState, msg: Event, cid: str, accepted: bool,
                        out: Out) -> BrowserState:
    """A prompt closed that was never announced: Firefox ESR 153 sends
    ``userPromptClosed`` alone for a prompt whose frame navigated ~10 ms after the call
    (measured). It is kept as a record the browser closed (``reason="unannounced"``;
    its message was never told), so that no dialog goes unrecorded."""
    page = page_of_context(state, cid)
    if page is None:
        return state  # closed with its frame or page already, or not ours
    if any(r.frame_id == cid and 0.0 <= msg.wall - r.closed_at <= LATE_CLOSE_S
           for r in state.recent_dialogs):
        return state  # the late news of one closed here already
    kind = msg.params.get("type")
    frame = state.frames.get(cid)
    seq = state.dialog_seq + 1
    dialog = PendingDialog(
        id=f"d-{seq}", type=kind if kind in DIALOG_TYPES else "alert", message="",
        frame_id=cid, session_id=page.session_id, url=frame.url if frame else "",
        opened_at=msg.wall, page_session_id=page.session_id)
    state = state.evolve(dialog_seq=seq)
    return close_dialogs_of(state, [dialog], msg.wall, "browser", "unannounced", out,
                            accepted=accepted)


# -- script realms ------------------------------------------------------------------


def realm_created(state: BrowserState, msg: Event, out: Out) -> BrowserState:
    p = msg.params
    if p.get("type") != "window" or p.get("sandbox"):
        return state
    cid = ident(p["context"], "context")
    frame = state.frames.get(cid)
    if frame is None:
        return state
    realm = ident(p["realm"], "realm")
    state = state.evolve(contexts={**state.contexts, (frame.session_id, cid): realm})
    origin = str(p.get("origin", ""))
    if origin and origin != "null" and origin != frame.origin:
        state = state.evolve(frames={**state.frames,
                                     cid: frame.evolve(origin=origin)})
    return state


def realm_destroyed(state: BrowserState, msg: Event, out: Out) -> BrowserState:
    realm = ident(msg.params["realm"], "realm")
    contexts = {k: v for k, v in state.contexts.items() if v != realm}
    return state.evolve(contexts=contexts) if len(contexts) != len(state.contexts) else state


# -- log --------------------------------------------------------------------------


def log_entry_added(state: BrowserState, msg: Event, out: Out) -> BrowserState:
    """``log.entryAdded`` at level error: console.error, uncaught exceptions and (Firefox)
    the browser's own messages (``bidi_entry_kind``)."""
    p = msg.params
    if p.get("level") != "error":
        return state
    source = p.get("source") or {}
    context = source.get("context") if isinstance(source, dict) else None
    page = page_of_context(state, context) if isinstance(context, str) else None
    if page is None:
        return state
    frames = (p.get("stackTrace") or {}).get("callFrames") or [{}]
    top = frames[0] if isinstance(frames[0], dict) else {}
    kind = bidi_entry_kind(p)
    return append_entry(state, ConsoleEntry(
        kind=kind, level="error", text=str(p.get("text") or "")[:MAX_TEXT],
        url=str(top.get("url", "")), line=top.get("lineNumber"),
        column=top.get("columnNumber"), session_id=page.session_id, at=msg.wall), out)


# -- cdpnb's own notes --------------------------------------------------------------


def bidi_session(state: BrowserState, msg: Note, out: Out) -> BrowserState:
    """``cdpnb.bidiSession``: the BiDi session the supervisor made, and its choices;
    its ``browser`` (``Firefox/153.7.0esr``) is the engine whose rules apply."""
    browser = msg.params.get("browser")
    return state.evolve(follow_popups=bool(msg.params.get("popups", True)),
                        engine=str(browser) if browser else state.engine)
