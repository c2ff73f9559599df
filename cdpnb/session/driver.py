"""The seam between one supervisor and the protocol its endpoint speaks.

A ``ProtocolDriver`` does, in its protocol's words, what the supervisor asks of a
browser: start (or resume after a drop) with its page, evaluate, click, send a raw
command, answer a dialog natively, end a page, open a fresh one, close its pages at
stop. It owns its protocol's dialog bridge and the listeners that only its protocol
needs. Everything above it (dialog control and the policies, recovery, popups, page
control, the reconnect loop, events) is written once, in the supervisor's terms, so a
promise made there holds on every path. The driver is chosen once, from what the
transport says it speaks, before the supervisor exists (``supervisor.DRIVERS``, one
per ``ProtocolSpec``: CDP, WebDriver BiDi, WIP, WebDriver classic).

A call one protocol cannot make is named in its driver's ``lacks`` table, with what
works instead; ``require`` turns it into a ProtocolMismatch naming both.
"""

from __future__ import annotations

import abc
from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

from cdpnb.errors import CDPError, EndpointError, ProtocolMismatch
from cdpnb.protocol import PROTOCOL_SPECS
from cdpnb.protocol.credentials import redact_url
from cdpnb.protocol.js_values import RemoteObject
from cdpnb.session.actions import ClickSpec, ElementState
from cdpnb.session.bridge import DialogBridge
from cdpnb.session.budget import Budget
from cdpnb.session.core import Core
from cdpnb.session.results import ClickResult, NavigateResult
from cdpnb.state import BrowserState, PageInfo, PendingDialog

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["PROTOCOL_NAMES", "Command", "Navigated", "PageSender", "ProtocolDriver",
           "SessionHeld"]

#: What each protocol is called in an error, by name (from its spec).
PROTOCOL_NAMES: dict[str, str] = {spec.name: spec.title for spec in PROTOCOL_SPECS}

#: ``send(method, params)`` on one page's own CDP session (recovery's tool).
PageSender = Callable[[str, dict[str, Any] | None], Awaitable[dict[str, Any]]]


class SessionHeld(EndpointError):
    """The endpoint keeps the session of a dropped connection and refuses a new one:
    trying again cannot help."""


class Command(NamedTuple):
    """One command as a driver words it."""

    method: str
    params: dict[str, Any]
    session_id: str | None


class Navigated(NamedTuple):
    """What a navigation's reply says."""

    #: The new document's loader (CDP) or navigation (BiDi) id; None: same-document.
    loader: str | None
    #: The reply came before the load, which is to be watched for in the events.
    await_load: bool
    #: Why the browser refused the navigation (its own words), or None.
    error: str | None = None


class ProtocolDriver(abc.ABC):
    """One supervisor's protocol: built with its core before the first command."""

    #: ``"cdp"``, ``"bidi"``, ``"wip"`` or ``"classic"``: what ``Supervisor.protocol``
    #: says (a ``ProtocolSpec``'s name).
    name: ClassVar[str]
    #: Calls this protocol cannot make (``"accessibility()"``), with what works instead.
    lacks: ClassVar[Mapping[str, str]] = {}
    #: The protocol a call in ``lacks`` needs, where it is not the first other one.
    needs: ClassVar[Mapping[str, str]] = {}
    #: A navigation's reply comes once the new document has loaded (BiDi's ``wait:
    #: complete``); else it comes at once and the load is watched for in the events.
    replies_after_load: ClassVar[bool] = False
    #: A frame may leave the tree for a moment while it navigates, so its removal does
    #: not end a wait for its load.
    frames_flicker: ClassVar[bool] = False
    #: Open native dialogs of a page are dismissed before its navigation, or the page
    #: is wedged (Chromium over CDP); else the browser closes them itself.
    dismiss_before_navigating: ClassVar[bool] = False
    #: Open native dialogs of a page are dismissed before it is closed (WebDriver
    #: classic: closing a window that shows one fails "unexpected alert open").
    dismiss_before_closing: ClassVar[bool] = False
    #: The protocol can intercept requests, so the dialog bridge can answer dialogs
    #: before a client that auto-dismisses them (not over WebDriver classic).
    has_bridge: ClassVar[bool] = True

    def __init__(self, core: Core, bridge: DialogBridge, hint: Callable[[str], None]) -> None:
        self.core = core
        #: Advice for the user (the supervisor's ``hints``).
        self.hint = hint
        #: The dialog bridge over this protocol's request interception.
        self.bridge = bridge
        #: What the browser says it is (``Browser.getVersion``, BiDi's capabilities).
        self.browser_version: dict[str, Any] = {}
        #: Whether a dialog is answered without the caller (an auto policy, a ``dialog``
        #: handler or stream): the supervisor sets it once its events exist.
        self.dialogs_answered: Callable[[], bool] = lambda: False

    def require(self, call: str) -> None:
        """ProtocolMismatch when this protocol cannot make ``call``."""
        instead = self.lacks.get(call)
        if instead is None:
            return
        other = self.needs.get(call) or next(name for name in PROTOCOL_NAMES
                                             if name != self.name)
        raise ProtocolMismatch(f"{call} needs an endpoint that speaks {PROTOCOL_NAMES[other]}; "
                               f"{redact_url(self.core.url)} speaks "
                               f"{PROTOCOL_NAMES[self.name]} ({instead})")

    # -- the connection's life ------------------------------------------------------------

    @abc.abstractmethod
    async def start(self, page: str, bridge_reason: str | None) -> str | None:
        """Set up the first connection and the supervised page (``page``: "new",
        "first" or an id); the id of the existing page it adopted, or None."""

    @abc.abstractmethod
    async def resume(self, target_id: str | None, *, adopted: str | None) -> None:
        """Set up a new connection after a drop, taking ``target_id`` back if it is there
        (``adopted``: the page cdpnb did not create, never replaced as wedged)."""

    @abc.abstractmethod
    async def abandon_start(self) -> None:
        """A start that failed half-way: end what the browser keeps past the connection."""

    @abc.abstractmethod
    async def close_pages(self, leave: Collection[str]) -> None:
        """At stop: close the supervised pages (popups first) but those in ``leave``."""

    def connection_lost(self) -> None:  # noqa: B027 (a hook: most do nothing)
        """The connection ended (before any reconnect): forget per-connection work."""

    # -- pages ----------------------------------------------------------------------------

    @abc.abstractmethod
    async def open_page(self) -> None:
        """A fresh page for the supervisor (its own was closed or replaced)."""

    @abc.abstractmethod
    async def end_page(self, page: PageInfo) -> None:
        """Close ``page``, or abandon it (left open, frozen) when it has a crash hazard."""

    @abc.abstractmethod
    async def page_sender(self, page: PageInfo) -> PageSender:
        """CDP on ``page``'s own session (directly, or through a BiDi server's CDP)."""

    def freeze_at_once(self, page: PageInfo) -> None:  # noqa: B027 (a hook: most do nothing)
        """On the reader's thread, as a crash hazard is folded: stop the page's script."""

    def page_opened(self, page: PageInfo) -> None:  # noqa: B027 (a hook: most do nothing)
        """A popup joined the supervision (its set-up where the attacher does not)."""

    # -- navigation: the commands and what their replies say -----------------------------

    @abc.abstractmethod
    async def navigate_page(self, url: str, page: PageInfo, timeout: float) -> NavigateResult:
        """Navigate ``page`` (the supervisor's own, prepared by page control: nothing in
        the way) to ``url`` and wait for its load."""

    @abc.abstractmethod
    def navigate_command(self, url: str, frame_id: str, page: PageInfo) -> Command:
        """Navigate ``frame_id`` (any frame of ``page``, its top one included)."""

    @abc.abstractmethod
    def reload_command(self, page: PageInfo) -> Command:
        """Reload ``page``."""

    @abc.abstractmethod
    def close_command(self, page: PageInfo, run_beforeunload: bool) -> Command:
        """Close ``page``, running its beforeunload handler or not."""

    @abc.abstractmethod
    def navigated(self, reply: dict[str, Any]) -> Navigated:
        """What a navigation's (or reload's) reply says."""

    @abc.abstractmethod
    def navigation_refused(self, error: CDPError) -> str | None:
        """When ``error`` (a navigation command's) means the browser refused that
        navigation: what to add to the NavigationError ("" for nothing); None when it is
        some other error, raised as it is."""

    def holds_navigations(self, state: BrowserState) -> bool:
        """Whether an open native dialog anywhere on a page holds every navigation of its
        frames (and its renderer's script), or only those of its own frame and below."""
        return (state.engine or "").startswith("Chrome/")

    # -- dialogs --------------------------------------------------------------------------

    @abc.abstractmethod
    def native_answer(self, dialog: PendingDialog, accept: bool,
                      prompt_text: str | None) -> Command:
        """The protocol's own command that answers a native dialog."""

    # -- commands -------------------------------------------------------------------------

    @abc.abstractmethod
    async def evaluate(self, expression: str, frame_id: str | None, budget: Budget, *,
                       await_promise: bool, user_gesture: bool) -> Any:
        """``expression``'s value in ``frame_id`` (the page when None)."""

    @abc.abstractmethod
    async def send_raw(self, method: str, params: dict[str, Any] | None, budget: Budget, *,
                       frame_id: str | None = None, browser: bool = False,
                       session_id: str | None = None) -> dict[str, Any]:
        """One raw command of this protocol and its result."""

    @abc.abstractmethod
    async def click(self, how: ClickSpec, budget: Budget) -> ClickResult:
        """A user's click, one attempt (see ``Supervisor.click``: errors marked
        ``not_yet`` are tried again while its budget lasts)."""

    @abc.abstractmethod
    async def fill(self, how: ClickSpec, text: str, budget: Budget) -> None:
        """Type ``text`` over the field ``how.selector`` matches, one attempt (see
        ``Supervisor.fill``)."""

    @abc.abstractmethod
    async def query(self, how: ClickSpec, budget: Budget) -> ElementState:
        """One look at ``how.selector`` in ``how.frame_id`` (see
        ``Supervisor.wait_for_selector``)."""

    @abc.abstractmethod
    async def screenshot(self, frame_id: str | None, budget: Budget) -> bytes:
        """A PNG of the page's viewport, or of frame ``frame_id``'s box in it."""

    async def release_objects(self, timeout: float) -> None:  # noqa: B027 (a hook)
        """Release the handles evaluate kept (none kept: nothing to do)."""

    async def accessibility(self, frame_id: str | None, budget: Budget) -> pd.DataFrame:
        self.require("accessibility()")
        raise NotImplementedError  # pragma: no cover (a driver without it lacks it)

    async def evaluate_on(self, ref: str | RemoteObject, function: str,
                          arguments: list[dict[str, Any]], budget: Budget, *,
                          await_promise: bool, user_gesture: bool) -> Any:
        self.require("evaluate_on()")
        raise NotImplementedError  # pragma: no cover (a driver without it lacks it)
