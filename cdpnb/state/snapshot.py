"""The snapshot a user sees: a bounded, JSON-able view of BrowserState."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from cdpnb.state.display import frame_tree_html, snapshot_html
from cdpnb.state.models import BrowserState, ConsoleEntry, DialogRecord, FrameInfo, PendingDialog

__all__ = ["FrameNode", "FrameTree", "Snapshot", "build_frame_tree", "snapshot_of"]

FRAME_TREE_ENTRIES = 30
FRAME_TREE_OOPIF_DEPTH = 2


class FrameNode(BaseModel):
    model_config = ConfigDict(frozen=True)

    frame_id: str
    url: str = ""
    origin: str = ""
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

    def _repr_html_(self) -> str:
        return frame_tree_html(self)


class Snapshot(BaseModel):
    """What the supervisor knows now. Frozen; cheap; never waits on the browser."""

    model_config = ConfigDict(frozen=True)

    connected: bool
    page_target_id: str | None
    pending_dialogs: tuple[PendingDialog, ...]
    recent_dialogs: tuple[DialogRecord, ...]
    frame_tree: FrameTree
    console_errors: tuple[ConsoleEntry, ...]

    def to_dict(self) -> dict[str, Any]:
        """The JSON layout of DESIGN.md (plus ``connected`` and ``page_target_id``)."""
        data = self.model_dump(mode="json")
        for d in data["pending_dialogs"]:
            d.pop("answering", None)
        return data

    def __repr__(self) -> str:
        return (
            f"<Snapshot connected={self.connected} frames={len(self.frame_tree)}"
            f"{' (truncated)' if self.frame_tree.truncated else ''}"
            f" pending_dialogs={len(self.pending_dialogs)}"
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
) -> FrameTree:
    """Depth-first frame tree under the page's top frame; ``None`` caps mean full."""
    top = next(
        (f for f in state.frames.values()
         if f.parent_frame_id is None and f.session_id == state.page_session_id),
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


def snapshot_of(state: BrowserState) -> Snapshot:
    return Snapshot(
        connected=state.connected,
        page_target_id=state.page_target_id,
        pending_dialogs=state.pending_dialogs,
        recent_dialogs=state.recent_dialogs,
        frame_tree=build_frame_tree(state),
        console_errors=state.console_errors,
    )
