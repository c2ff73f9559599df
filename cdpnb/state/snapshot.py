"""The snapshot a user sees: a bounded, JSON-able view of BrowserState."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from cdpnb.render.state import frame_tree_html, frame_tree_text, snapshot_html
from cdpnb.state.models import BrowserState, ConsoleEntry, DialogRecord, FrameInfo, PendingDialog

__all__ = ["FrameNode", "FrameTree", "PageNode", "Snapshot", "build_frame_tree", "snapshot_of"]

FRAME_TREE_ENTRIES = 30
FRAME_TREE_OOPIF_DEPTH = 2
#: Native dialogs are one per frame and bridged ones too, so a page with hundreds of
#: frames can hold hundreds: the snapshot shows the oldest (answer those first).
PENDING_DIALOGS_SHOWN = 20
PAGES_SHOWN = 20


class FrameNode(BaseModel):
    """One frame of a ``FrameTree``: ``depth`` below the top frame, ``oopif_depth``
    OOPIFs on the way down (itself included)."""

    model_config = ConfigDict(frozen=True)

    frame_id: str
    url: str = ""
    origin: str = ""
    #: The frame's name (``<iframe name>``, or ``window.name`` as of its last new
    #: document), as the browser reports it; None when it has none, and always None over
    #: WebDriver BiDi, which does not report names. Page-controlled text.
    name: str | None = None
    parent_frame_id: str | None = None
    is_oopif: bool = False
    session_id: str | None = None
    depth: int = 0
    oopif_depth: int = 0


class FrameTree(BaseModel):
    model_config = ConfigDict(frozen=True)

    top: FrameNode | None = None
    children: tuple[FrameNode, ...] = ()
    truncated: bool = False

    def __len__(self) -> int:
        return len(self.children) + (1 if self.top else 0)

    def find(self, frame_id: str) -> FrameNode | None:
        if self.top is not None and self.top.frame_id == frame_id:
            return self.top
        return next((c for c in self.children if c.frame_id == frame_id), None)

    def __str__(self) -> str:
        """The tree as indented text, one frame a line (names quoted, page text
        clipped, control characters escaped)."""
        return frame_tree_text(self)

    def _repr_html_(self) -> str:
        return frame_tree_html(self)


class PageNode(BaseModel):
    """One supervised page: the supervisor's own (``main``) or one it opened."""

    model_config = ConfigDict(frozen=True)

    target_id: str
    session_id: str
    url: str = ""
    main: bool = False
    opener_target_id: str | None = None
    opener_frame_id: str | None = None
    frames: int = 0
    pending_dialogs: int = 0
    hazard: str | None = None


class Snapshot(BaseModel):
    """What the supervisor knows now. Frozen; cheap; never waits on the browser."""

    model_config = ConfigDict(frozen=True)

    connected: bool
    page_target_id: str | None
    pending_dialogs: tuple[PendingDialog, ...]
    recent_dialogs: tuple[DialogRecord, ...]
    frame_tree: FrameTree
    console_errors: tuple[ConsoleEntry, ...]
    #: True when more dialogs are open than ``pending_dialogs`` shows (the oldest 20);
    #: ``pending_total`` is how many are open.
    pending_truncated: bool = False
    pending_total: int = 0
    #: Supervised pages: the supervisor's own first, then the pages it opened.
    pages: tuple[PageNode, ...] = ()
    pages_truncated: bool = False
    #: Why the supervisor's own page is gone, or None while it is there.
    page_gone: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON layout of docs/architecture.md (plus ``connected``, ``page_target_id``,
        ``pages`` and the ``*_truncated`` flags)."""
        data = self.model_dump(mode="json")
        for d in data["pending_dialogs"]:
            d.pop("answering", None)
        return data

    def __repr__(self) -> str:
        more = "+" if self.pending_truncated else ""
        popups = f" pages={len(self.pages)}" if len(self.pages) > 1 else ""
        return (
            f"<Snapshot connected={self.connected} frames={len(self.frame_tree)}"
            f"{' (truncated)' if self.frame_tree.truncated else ''}{popups}"
            f" pending_dialogs={len(self.pending_dialogs)}{more}"
            f" recent_dialogs={len(self.recent_dialogs)}"
            f" console_errors={len(self.console_errors)}>"
        )

    __str__ = __repr__

    def _repr_html_(self) -> str:
        return snapshot_html(self)


def _node(frame: FrameInfo, depth: int, oopif_depth: int) -> FrameNode:
    return FrameNode(
        frame_id=frame.frame_id,
        url=frame.url,
        origin=frame.origin,
        name=frame.name,
        parent_frame_id=frame.parent_frame_id,
        is_oopif=frame.is_oopif,
        session_id=frame.session_id if frame.is_oopif else None,
        depth=depth,
        oopif_depth=oopif_depth,
    )


def build_frame_tree(
    state: BrowserState,
    max_entries: int | None = FRAME_TREE_ENTRIES,
    max_oopif_depth: int | None = FRAME_TREE_OOPIF_DEPTH,
    page_session_id: str | None = None,
) -> FrameTree:
    """Depth-first frame tree under a page's top frame (the supervisor's own page, or
    the page of ``page_session_id``); ``None`` caps mean full."""
    session = page_session_id if page_session_id is not None else state.page_session_id
    top = next(
        (f for f in state.frames.values()
         if f.parent_frame_id is None and f.session_id == session),
        None,
    )
    if top is None:
        return FrameTree()
    children_of: dict[str, list[FrameInfo]] = {}
    for f in state.frames.values():
        if f.parent_frame_id is not None:
            children_of.setdefault(f.parent_frame_id, []).append(f)
    out: list[FrameNode] = []
    truncated = False
    stack = [(c, 1, int(c.is_oopif)) for c in reversed(children_of.get(top.frame_id, []))]
    while stack:
        frame, depth, oopif_depth = stack.pop()
        too_deep = max_oopif_depth is not None and oopif_depth > max_oopif_depth
        too_many = max_entries is not None and len(out) >= max_entries
        if too_deep or too_many:
            truncated = True
            continue
        out.append(_node(frame, depth, oopif_depth))
        for child in reversed(children_of.get(frame.frame_id, [])):
            stack.append((child, depth + 1, oopif_depth + int(child.is_oopif)))
    return FrameTree(top=_node(top, 0, 0), children=tuple(out), truncated=truncated)


def _page_nodes(state: BrowserState) -> list[PageNode]:
    frames: dict[str | None, int] = {}
    for f in state.frames.values():
        frames[f.session_id] = frames.get(f.session_id, 0) + 1
    dialogs: dict[str | None, int] = {}
    for d in state.pending_dialogs:
        dialogs[d.page_session_id] = dialogs.get(d.page_session_id, 0) + 1
    children: dict[str | None, str | None] = {
        s.session_id: s.parent_session_id for s in state.sessions.values()}

    def page_of(session: str | None) -> str | None:
        seen = set()
        while session is not None and session not in state.pages and session not in seen:
            seen.add(session)
            session = children.get(session)
        return session

    frame_count: dict[str | None, int] = {}
    for session, n in frames.items():
        owner = page_of(session)
        frame_count[owner] = frame_count.get(owner, 0) + n
    nodes = [PageNode(target_id=p.target_id, session_id=p.session_id, url=p.url, main=p.main,
                      opener_target_id=p.opener_target_id, opener_frame_id=p.opener_frame_id,
                      frames=frame_count.get(p.session_id, 0),
                      pending_dialogs=dialogs.get(p.session_id, 0), hazard=p.hazard)
             for p in state.pages.values()]
    nodes.sort(key=lambda n: not n.main)  # stable: the supervisor's own page first
    return nodes


def snapshot_of(state: BrowserState) -> Snapshot:
    pages = _page_nodes(state)
    return Snapshot(
        connected=state.connected,
        page_target_id=state.page_target_id,
        pending_dialogs=state.pending_dialogs[:PENDING_DIALOGS_SHOWN],
        pending_truncated=len(state.pending_dialogs) > PENDING_DIALOGS_SHOWN,
        pending_total=len(state.pending_dialogs),
        recent_dialogs=state.recent_dialogs,
        frame_tree=build_frame_tree(state),
        console_errors=state.console_errors,
        pages=tuple(pages[:PAGES_SHOWN]),
        pages_truncated=len(pages) > PAGES_SHOWN,
        page_gone=state.page_gone,
    )
