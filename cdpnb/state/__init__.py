"""Pure state: frozen models and reducers folding one CDP message at a time."""

from cdpnb.state.models import (
    BrowserState,
    ConsoleEntry,
    DialogAnswer,
    DialogRecord,
    FrameInfo,
    PendingDialog,
    SessionInfo,
)
from cdpnb.state.reducer import fold, fold_all
from cdpnb.state.snapshot import FrameNode, FrameTree, Snapshot, build_frame_tree, snapshot_of

__all__ = [
    "BrowserState",
    "ConsoleEntry",
    "DialogAnswer",
    "DialogRecord",
    "FrameInfo",
    "FrameNode",
    "FrameTree",
    "PendingDialog",
    "SessionInfo",
    "Snapshot",
    "build_frame_tree",
    "fold",
    "fold_all",
    "snapshot_of",
]
