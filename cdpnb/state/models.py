"""Frozen state and snapshot models. Reducers build new instances; nothing mutates."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal, Self

from pydantic import BaseModel, ConfigDict, Field

from cdpnb.render.state import dialog_html, dialog_repr, state_repr

__all__ = [
    "CLOSED_BY",
    "BrowserState",
    "ConnectionPhase",
    "ConsoleEntry",
    "DialogAnswer",
    "DialogRecord",
    "FrameInfo",
    "PageInfo",
    "PendingDialog",
    "Phase",
    "SessionInfo",
]

#: ``unknown``: WebDriver classic tells a dialog's message only (``cdpnb.state.classic``).
DialogType = Literal["alert", "confirm", "prompt", "beforeunload", "unknown"]
#: Who ended a dialog. ``agent``: respond(); ``auto_policy``: auto_dismiss/auto_accept;
#: ``watchdog``: must_respond's timeout; ``remote``: someone else answered it (another
#: client, a proxy, a person); ``browser``: the browser closed it itself, or it went
#: with its frame or page (``reason`` says which); ``cdpnb``: cdpnb released it or gave
#: up on it (``reason``: released, page_replaced, disconnected), or dismissed it first
#: (``navigation``, ``page_closing``: over WebDriver classic). In a recording of
#: ``cdpnb proxy``: ``client``, the proxied client answered it (its own
#: handleJavaScriptDialog / handleUserPrompt); ``fault``, a fault rule of the proxy did.
ClosedBy = Literal["agent", "auto_policy", "watchdog", "remote", "browser", "cdpnb",
                   "client", "fault"]
CLOSED_BY: tuple[str, ...] = ("agent", "auto_policy", "watchdog", "remote", "browser", "cdpnb",
                               "client", "fault")


_new = object.__new__
_set = object.__setattr__


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    #: The model's field names, for ``evolve`` (pydantic's ``model_fields`` is a
    #: property: 1.6 µs a look).
    _field_names: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        cls._field_names = frozenset(cls.model_fields)

    def evolve(self, **changes: Any) -> Self:
        """A copy with ``changes``, not validated: reducers pass well-typed values (a
        message's wrong types are refused where they are read, and a state built from
        outside data, ``model_validate``, is validated whole).

        Every reducer's change is one of these (44k copies in 200k real trace lines), and
        pydantic's ``model_copy`` costs 4.4 µs a copy of ``BrowserState`` (``__copy__``
        copies ``__dict__``, extra and fields-set through ``copy.copy``); this is 2.2 µs
        (measured, CPython 3.11): one ``dict`` copy and the model's four slots set. The
        copy is what ``model_copy(update=changes)`` gives (``==``, ``model_dump``,
        ``model_fields_set``), but a name that is not a field is an error here, not an
        attribute pydantic would keep without a word."""
        kind = type(self)
        if not changes.keys() <= kind._field_names:
            unknown = sorted(set(changes) - kind._field_names)
            raise TypeError(f"{kind.__name__} has no field {', '.join(unknown)}")
        copied = _new(kind)
        fields = self.__dict__.copy()
        fields.update(changes)
        _set(copied, "__dict__", fields)
        _set(copied, "__pydantic_fields_set__", self.__pydantic_fields_set__ | changes.keys())
        _set(copied, "__pydantic_extra__", None)
        _set(copied, "__pydantic_private__", None)
        return copied


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


class PageInfo(_Frozen):
    """A page target under supervision: the supervisor's own, or one it opened."""

    session_id: str
    target_id: str
    #: The page (target id) and frame that opened this one (window.open, a link with
    #: target=_blank); None for the supervisor's own page.
    opener_target_id: str | None = None
    opener_frame_id: str | None = None
    url: str = ""
    main: bool = False
    #: Why this page is dangerous to touch (a Chromium bug cdpnb knows of), or None.
    hazard: str | None = None
    #: Set while cdpnb replaces this page (its dialogs then close as page_replaced).
    replacing: bool = False
    #: Set once ``close_page()`` asked the browser to close this page (the
    #: ``cdpnb.pageClosing`` note): its end is then the close asked for (``PageClosed``
    #: reason ``requested``), not someone else's. Cleared when a beforeunload dialog on
    #: it is dismissed: the page stays.
    closing: bool = False
    #: When (wall-clock s) a frame of this page last committed a new document.
    last_commit: float | None = None
    #: WebDriver BiDi: the navigation last committed in the page's top context, the last
    #: one whose ``domContentLoaded`` came and the last one whose ``load`` came.
    committed_navigation: str | None = None
    content_loaded_navigation: str | None = None
    loaded_navigation: str | None = None
    #: When (wall-clock s) the browser reported a ``load`` under the committed navigation
    #: that was not the new document's own (before its ``domContentLoaded``, or a second
    #: one): the load of the document it left, whose ``onload`` had just been ended. The
    #: navigation then never replies (Firefox ESR 153, measured:
    #: ``cdpnb.state.bidi._top_document_loading``).
    stray_load_at: float | None = None


class DialogAnswer(_Frozen):
    """An answer we have sent and not yet seen confirmed."""

    accept: bool
    prompt_text: str | None = None
    closed_by: ClosedBy = "agent"
    #: Why cdpnb answers it itself (``released``, ``navigation``); None for an answer.
    reason: str | None = None
    #: The dialog the browser closed with this answer when it was not this one.
    delivered_to: str | None = None


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
    #: Why the browser cannot answer this dialog (see ``cdpnb.state.dialogs``), or None
    #: when it is the one the browser would answer.
    unanswerable: str | None = None
    #: For a bridged dialog: the paused Fetch request that answers it.
    request_id: str | None = None
    #: The page target whose dialog this is (its top session receives native dialogs).
    page_session_id: str | None = None

    @property
    def answerable(self) -> bool:
        return self.unanswerable is None

    def __repr__(self) -> str:
        return dialog_repr(self)

    __str__ = __repr__

    def _repr_html_(self) -> str:
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
    #: Why it closed when nobody answered it (superseded, navigation, frame_removed,
    #: page_closed, released, ...); ``misdelivered`` when an answer meant for
    #: ``answer_for`` reached it instead.
    reason: str | None = None
    answer_for: str | None = None
    #: Whether it was accepted: the answer it was closed with when that was ours or a
    #: client's, else the browser's report.
    accepted: bool | None = None
    #: The browser's own report when it says otherwise than ``accepted`` (None when it
    #: agrees): Firefox ESR 153 reports every alert closed ``accepted: true``, dismissed
    #: or not, where Chromium 156 reports the answer given (measured), so an alert's
    #: record holds the answer and the same call gives the same record on every engine.
    browser_accepted: bool | None = None
    prompt_text: str | None = None
    via: Literal["native", "bridge"] = "native"
    page_session_id: str | None = None
    #: What the page's ``alert``/``confirm``/``prompt`` call returned, as JavaScript
    #: (``undefined``, ``false``, ``null``, ``"text"``), when the browser did not block
    #: on it (reason ``non_blocking``, see ``cdpnb.state.engines``); None otherwise.
    page_value: str | None = None

    @property
    def open_ms(self) -> float:
        return (self.closed_at - self.opened_at) * 1000.0

    def __repr__(self) -> str:
        return dialog_repr(self)

    __str__ = __repr__

    def _repr_html_(self) -> str:
        return dialog_html(self)


class ConsoleEntry(_Frozen):
    """A console error, an uncaught exception, or an error the browser itself reported
    (``kind="browser"``: a frame refused by ``X-Frame-Options``, a failed load, a CSP
    violation; CDP's ``Log.entryAdded``)."""

    kind: Literal["console", "exception", "browser"]
    level: str
    text: str
    url: str = ""
    line: int | None = None
    column: int | None = None
    session_id: str | None = None
    at: float
    #: What reported a ``browser`` entry, as CDP's ``Log.entryAdded`` names it
    #: (``network``, ``security``, ``violation``, ``intervention``, ``other``, ...); None
    #: for the other kinds and over WebDriver BiDi, which does not say.
    source: str | None = None


Phase = Literal["down", "connecting", "up", "lost", "reconnecting", "gave_up"]


class ConnectionPhase(_Frozen):
    """Where the supervisor's connection is in its life (the table machine of
    ``cdpnb.state.connection``): ``down`` (none opened yet), ``connecting`` (the first
    connection open, being set up), ``up`` (set up and in use), ``lost`` (the one in use
    ended), ``reconnecting`` (attempts to get one back; the connections they open are
    theirs until one is set up), ``gave_up`` (no more attempts)."""

    phase: Phase = "down"
    #: The newest connection (1 for the first, then 2, ...); 0 before any.
    generation: int = 0
    #: Why the supervisor was last down: the loss of the connection that was in use
    #: (kept while reconnecting, and once up again), or why reconnecting gave up; None
    #: until the first loss.
    reason: str | None = None


class BrowserState(_Frozen):
    """Everything the supervisor knows, folded from the message stream."""

    connected: bool = False
    #: The connection's life (``cdpnb.connected`` / ``disconnected`` / ``connectionReady``
    #: / ``reconnectGaveUp`` notes).
    connection: ConnectionPhase = ConnectionPhase()
    page_target_id: str | None = None
    page_session_id: str | None = None
    #: Why the supervisor's own page is gone (closed by someone else, crashed), or None.
    page_gone: str | None = None
    #: Supervised pages by session: the supervisor's own and the pages it opened.
    pages: Mapping[str, PageInfo] = Field(default_factory=dict)
    sessions: Mapping[str, SessionInfo] = Field(default_factory=dict)
    frames: Mapping[str, FrameInfo] = Field(default_factory=dict)
    # (session id, frame id) -> default execution context id (CDP), or realm id (BiDi)
    contexts: Mapping[tuple[str | None, str], int | str] = Field(default_factory=dict)
    #: Sessions whose renderer crashed and has not been reloaded since.
    crashed_sessions: frozenset[str] = frozenset()
    #: Frames whose OOPIF session ended while their ``<iframe>`` may stay: back in the
    #: parent's process (``FrameSwapped``) once the parent reports their next document,
    #: removed if it detaches them first (measured: removing a cross-site iframe ends its
    #: session first, then the parent's ``frameDetached``).
    rejoining: frozenset[str] = frozenset()
    pending_dialogs: tuple[PendingDialog, ...] = ()
    recent_dialogs: tuple[DialogRecord, ...] = ()
    console_errors: tuple[ConsoleEntry, ...] = ()
    dialog_seq: int = 0
    dialogs_closed_total: int = 0
    console_errors_total: int = 0
    counters: Mapping[str, int] = Field(default_factory=dict)
    #: Commands the endpoint does not have (method -> its error), from -32601 replies.
    unsupported: Mapping[str, str] = Field(default_factory=dict)
    #: The endpoint is a single target (Node's inspector): no Target domain for pages.
    direct: bool = False
    #: Whether dialogs go through the dialog bridge (``cdpnb.bridgeEnabled`` notes).
    bridge_enabled: bool = False
    #: The protocol the endpoint speaks: ``cdp``, ``bidi`` (WebDriver BiDi), ``wip``
    #: (the WebKit Inspector Protocol, folded as CDP) or ``classic`` (WebDriver classic),
    #: from the ``cdpnb.connected`` note.
    protocol: Literal["cdp", "bidi", "wip", "classic"] = "cdp"
    #: Over BiDi: whether pages opened by supervised pages are supervised too (the
    #: ``cdpnb.bidiSession`` note; over CDP the supervisor simply does not attach them).
    follow_popups: bool = True
    #: False once the endpoint is known to run page dialogs without blocking (Lightpanda:
    #: ``cdpnb.dialogsNonBlocking``); each of its dialogs is then closed on arrival.
    dialogs_block: bool = True
    #: The engine whose quirks the state applies (``"Lightpanda/1.0"``), or None.
    engine: str | None = None
    #: An answer armed in advance for the next non-blocking dialog
    #: (``LP.handleJavaScriptDialog``), not used yet.
    prearmed_answer: DialogAnswer | None = None

    def __repr__(self) -> str:
        """One short line (``cdpnb.render.state.state_repr``): a notebook cell ending in
        ``await sup.wait_for(...)`` shows it, and pydantic's own repr of every field ran
        to kilobytes. The fields, ``==`` and pickling are pydantic's."""
        return state_repr(self)

    __str__ = __repr__
    # (No HTML of its own: the bounded, escaped view of a state is its snapshot's,
    # ``cdpnb.state.snapshot.snapshot_of(state)``, which is built on this module.)
