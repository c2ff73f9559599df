"""Pure state: frozen models and reducers folding one CDP message at a time."""

from cdpnb.state import changes
from cdpnb.state.changes import Change
from cdpnb.state.models import (
    CLOSED_BY,
    BrowserState,
    ConnectionPhase,
    ConsoleEntry,
    DialogAnswer,
    DialogRecord,
    FrameInfo,
    PageInfo,
    PendingDialog,
    SessionInfo,
)
from cdpnb.state.reducer import Folded, fold, fold_all
from cdpnb.state.snapshot import (
    FrameNode,
    FrameTree,
    PageNode,
    Snapshot,
    build_frame_tree,
    snapshot_of,
)

__all__ = [
    "CLOSED_BY",
    "BrowserState",
    "Change",
    "ConnectionPhase",
    "ConsoleEntry",
    "DialogAnswer",
    "DialogRecord",
    "Folded",
    "FrameInfo",
    "FrameNode",
    "FrameTree",
    "PageInfo",
    "PageNode",
    "PendingDialog",
    "SessionInfo",
    "Snapshot",
    "build_frame_tree",
    "changes",
    "fold",
    "fold_all",
    "snapshot_of",
]
