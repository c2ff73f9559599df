"""What a fold changed, as data: the reducers' answer to "what just happened?".

``fold(state, message)`` returns the new state and a tuple of these. The supervisor
(dialog policies, the watchdog, the bridge, page adoption), the widgets and the trace
tables act on them; none of them peeks at ``pending_dialogs[-1]`` or compares two
states, so a live run and a replay of its trace react to the same changes. Each is a
small frozen dataclass naming what changed and carrying the model it is about.
"""

from __future__ import annotations

from dataclasses import dataclass

from cdpnb.state.models import (
    ConnectionPhase,
    ConsoleEntry,
    DialogRecord,
    FrameInfo,
    PageInfo,
    PendingDialog,
    SessionInfo,
)

__all__ = [
    "BridgeEnabled",
    "BridgeRequestAbandoned",
    "BridgeRequestRefused",
    "CapabilityMissing",
    "Change",
    "ConnectionChanged",
    "ConsoleError",
    "Counted",
    "DialogAmended",
    "DialogClosed",
    "DialogOpened",
    "DialogUnanswerable",
    "FrameAdded",
    "FrameNavigated",
    "FrameRemoved",
    "FrameSwapReported",
    "FrameSwapped",
    "Malformed",
    "PageClosed",
    "PageHazard",
    "PageOpened",
    "PhaseChanged",
    "SessionAttached",
    "SessionDetached",
]


@dataclass(frozen=True, slots=True)
class DialogOpened:
    """A dialog opened (native, or a bridged call); it is in ``pending_dialogs``."""

    dialog: PendingDialog


@dataclass(frozen=True, slots=True)
class DialogClosed:
    """A dialog closed; ``record`` says by whom (``closed_by``) and why (``reason``)."""

    record: DialogRecord


@dataclass(frozen=True, slots=True)
class DialogAmended:
    """A closed dialog's record was corrected (an answer that had seemed ours failed)."""

    record: DialogRecord


@dataclass(frozen=True, slots=True)
class DialogUnanswerable:
    """The browser can no longer answer this open dialog (``dialog.unanswerable``
    says why); it is never answered, and the supervisor frees its page."""

    dialog: PendingDialog


@dataclass(frozen=True, slots=True)
class PageOpened:
    """A page joined the supervision: the supervisor's own, or one a supervised page
    opened (a popup, a link with target=_blank)."""

    page: PageInfo


@dataclass(frozen=True, slots=True)
class PageClosed:
    """A supervised page ended: ``reason`` is closed (by someone else), requested
    (``close_page()``), crashed or replaced."""

    page: PageInfo
    reason: str


@dataclass(frozen=True, slots=True)
class PageHazard:
    """A supervised page is in a state where touching it crashes the browser
    (``page.hazard`` says which measured bug)."""

    page: PageInfo


@dataclass(frozen=True, slots=True)
class FrameAdded:
    frame: FrameInfo


@dataclass(frozen=True, slots=True)
class FrameNavigated:
    frame: FrameInfo


@dataclass(frozen=True, slots=True)
class FrameRemoved:
    """A frame left the tree: ``reason`` is remove (its element went), navigated (an
    ancestor loaded a new document) or session_gone (its OOPIF session ended)."""

    frame: FrameInfo
    reason: str


@dataclass(frozen=True, slots=True)
class FrameSwapped:
    """A frame moved to another renderer process and stays in the tree: it became an
    out-of-process iframe (``frame.is_oopif``, its own session) or came back into its
    parent's process. CDP only: over WebDriver BiDi a frame's process is not visible."""

    frame: FrameInfo


@dataclass(frozen=True, slots=True)
class FrameSwapReported:
    """A session said one of its frames moved to another process (CDP
    ``Page.frameDetached`` with reason ``swap``, sent by the process it left, as it
    becomes an OOPIF): the frame stays in the tree. ``session_id`` is the session that
    said so. ``FrameSwapped`` is the move as the tree sees it (the frame's new
    session); this one fires no event, it is what ``trace.frames()`` shows as
    ``swapped``."""

    frame: FrameInfo
    session_id: str | None


@dataclass(frozen=True, slots=True)
class SessionAttached:
    """A target session attached; ``frame``: the frame an ``iframe`` session renders
    (its target), as the tree holds it now."""

    session: SessionInfo
    frame: FrameInfo | None = None


@dataclass(frozen=True, slots=True)
class SessionDetached:
    """A target session ended (or went with the session it was attached through);
    ``frame``: the frame an ``iframe`` session rendered, as the tree held it before."""

    session: SessionInfo
    frame: FrameInfo | None = None


@dataclass(frozen=True, slots=True)
class CapabilityMissing:
    """The endpoint answered ``method`` with -32601: it does not have it."""

    method: str
    error: str


@dataclass(frozen=True, slots=True)
class BridgeEnabled:
    reason: str


@dataclass(frozen=True, slots=True)
class BridgeRequestRefused:
    """A request to the bridge host that is not a dialog; it is answered with an
    error and the page gets nothing from it."""

    session_id: str | None
    request_id: str
    frame_id: str | None
    reason: str


@dataclass(frozen=True, slots=True)
class BridgeRequestAbandoned:
    """A bridged dialog ended without an answer (its frame navigated or went, its page
    closed): the page's paused call is still to be let go, with a dismissal, so that
    nothing waits on it and the page's script never falls back to a native dialog in
    a document that is going away."""

    session_id: str | None
    request_id: str
    dialog_id: str


@dataclass(frozen=True, slots=True)
class ConnectionChanged:
    connected: bool
    reason: str


@dataclass(frozen=True, slots=True)
class PhaseChanged:
    """The connection moved in its life (``cdpnb.state.connection``): a new connection,
    set up, lost, reconnecting, given up."""

    connection: ConnectionPhase


@dataclass(frozen=True, slots=True)
class Counted:
    """A counter of ``stats()`` moved by ``by`` (``cdpnb.state.counting``); a
    ``malformed:`` one is said by its ``Malformed`` change instead."""

    name: str
    by: int


@dataclass(frozen=True, slots=True)
class ConsoleError:
    entry: ConsoleEntry


@dataclass(frozen=True, slots=True)
class Malformed:
    """A known message the reducers could not read (missing keys, wrong types)."""

    method: str
    error: str


Change = (
    DialogOpened | DialogClosed | DialogAmended | DialogUnanswerable | PageOpened
    | PageClosed | PageHazard | FrameAdded | FrameNavigated | FrameRemoved | FrameSwapped
    | FrameSwapReported | SessionAttached | SessionDetached | CapabilityMissing | BridgeEnabled
    | BridgeRequestRefused | BridgeRequestAbandoned | ConnectionChanged | PhaseChanged
    | Counted | ConsoleError | Malformed
)
