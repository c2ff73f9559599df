"""Frozen state and snapshot models. Reducers build new instances; nothing mutates."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "BrowserState",
    "ConsoleEntry",
    "DialogAnswer",
    "DialogRecord",
    "FrameInfo",
    "PendingDialog",
    "SessionInfo",
]

DialogType = Literal["alert", "confirm", "prompt", "beforeunload"]
ClosedBy = Literal["agent", "auto_policy", "watchdog", "remote"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SessionInfo(_Frozen):
    """A CDP session attached to a target (the page or an OOPIF child)."""

    session_id: str
    target_id: str
    type: str
    url: str = ""
    parent_session_id: str | None = None
    waiting_for_debugger: bool = False


class FrameInfo(_Frozen):
    """One frame, whichever session owns it."""

    frame_id: str
    parent_frame_id: str | None = None
    url: str = ""
    origin: str = ""
    name: str | None = None
    session_id: str | None = None
    is_oopif: bool = False


class DialogAnswer(_Frozen):
    """An answer we have sent and not yet seen confirmed."""

    accept: bool
    prompt_text: str | None = None
    closed_by: ClosedBy = "agent"


class PendingDialog(_Frozen):
    """A JavaScript dialog that is open now."""

    id: str
    type: DialogType
    message: str
    default_prompt: str = ""
    frame_id: str | None = None
    session_id: str | None = None
    url: str = ""
    opened_at: float
    has_browser_handler: bool | None = None
    via: Literal["native", "bridge"] = "native"
    answering: DialogAnswer | None = None

    def __repr__(self) -> str:
        from cdpnb.state.display import dialog_repr  # display imports these models
        return dialog_repr(self)

    __str__ = __repr__

    def _repr_html_(self) -> str:
        from cdpnb.state.display import dialog_html
        return dialog_html(self)


class DialogRecord(_Frozen):
    """A dialog that has closed, and how."""

    id: str
    type: DialogType
    message: str
    default_prompt: str = ""
    frame_id: str | None = None
    session_id: str | None = None
    url: str = ""
    opened_at: float
    closed_at: float
    closed_by: ClosedBy
    accepted: bool | None = None
    prompt_text: str | None = None
    via: Literal["native", "bridge"] = "native"

    @property
    def open_ms(self) -> float:
        return (self.closed_at - self.opened_at) * 1000.0

    def __repr__(self) -> str:
        from cdpnb.state.display import dialog_repr  # display imports these models
        return dialog_repr(self)

    __str__ = __repr__

    def _repr_html_(self) -> str:
        from cdpnb.state.display import dialog_html
        return dialog_html(self)


class ConsoleEntry(_Frozen):
    """A console error or an uncaught exception."""

    kind: Literal["console", "exception"]
    level: str
    text: str
    url: str = ""
    line: int | None = None
    column: int | None = None
    session_id: str | None = None
    at: float


class BrowserState(_Frozen):
    """Everything the supervisor knows, folded from the message stream."""

    connected: bool = False
    page_target_id: str | None = None
    page_session_id: str | None = None
    sessions: Mapping[str, SessionInfo] = Field(default_factory=dict)
    frames: Mapping[str, FrameInfo] = Field(default_factory=dict)
    # (session id, frame id) -> default execution context id
    contexts: Mapping[tuple[str | None, str], int] = Field(default_factory=dict)
    #: Sessions whose renderer crashed and has not been reloaded since.
    crashed_sessions: frozenset[str] = frozenset()
    pending_dialogs: tuple[PendingDialog, ...] = ()
    recent_dialogs: tuple[DialogRecord, ...] = ()
    console_errors: tuple[ConsoleEntry, ...] = ()
    dialog_seq: int = 0
    dialogs_closed_total: int = 0
    console_errors_total: int = 0
    counters: Mapping[str, int] = Field(default_factory=dict)

    def evolve(self, **changes: Any) -> BrowserState:
        """A copy with ``changes``; no validation, reducers pass well-typed values."""
        return self.model_copy(update=changes)
