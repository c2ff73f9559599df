"""The public ``Supervisor``: awaitable from any loop, living on the engine loop."""

from __future__ import annotations

import asyncio
import functools
import logging
import os
from collections.abc import Callable, Coroutine, Iterable
from typing import TYPE_CHECKING, Any, Concatenate, Literal, ParamSpec, TypeVar

from cdpnb._version import __version__
from cdpnb.drivers.bidi.driver import BiDiDriver
from cdpnb.drivers.cdp.driver import CDPDriver
from cdpnb.drivers.classic.driver import ClassicDriver
from cdpnb.drivers.wip.driver import WIPDriver
from cdpnb.errors import (
    CommandTimeout,
    EvaluateError,
    SupervisorStopped,
    TargetGone,
    UnknownFrame,
    WaitTimeout,
)
from cdpnb.protocol.credentials import redact_url
from cdpnb.protocol.js_calls import call_expression
from cdpnb.protocol.js_values import RemoteObject, call_argument
from cdpnb.runtime.closing import starting
from cdpnb.runtime.engine import engine
from cdpnb.runtime.interrupts import interrupted, wake_for_signals
from cdpnb.runtime.threads import in_own_thread
from cdpnb.session.actions import (
    POLL_DELAYS_S,
    SELECTOR_STATES,
    SelectorState,
    check_fill,
    click_spec,
    state_holds,
    until_there,
)
from cdpnb.session.budget import Budget
from cdpnb.session.core import Core
from cdpnb.session.driver import ProtocolDriver
from cdpnb.session.existing_pages import pages_left_open
from cdpnb.session.options import Policy, SupervisorOptions, check_timeout
from cdpnb.session.results import (
    ClickResult,
    ClosePageResult,
    NavigateResult,
    SetContentResult,
)
from cdpnb.state import (
    BrowserState,
    DialogRecord,
    FrameTree,
    PageNode,
    PendingDialog,
    Snapshot,
)
from cdpnb.state.changes import PageHazard
from cdpnb.state.routing import frame_of
from cdpnb.state.snapshot import (
    FRAME_TREE_ENTRIES,
    FRAME_TREE_OOPIF_DEPTH,
    build_frame_tree,
    snapshot_of,
)
from cdpnb.supervisor.context import SupervisorContext
from cdpnb.supervisor.dialogs import DialogAction, DialogControl
from cdpnb.supervisor.endpoint import HasCdpUrl, bridge_reason, endpoint_of
from cdpnb.supervisor.events import (
    STREAM_BUFFER,
    EventHub,
    EventName,
    EventStream,
    Handler,
    SupervisorEvent,
    answer_sender,
    check_buffer,
    check_event_names,
    check_stream_timeout,
)
from cdpnb.supervisor.existing_dialogs import let_go_of_dialogs
from cdpnb.supervisor.hints import Hints
from cdpnb.supervisor.page_control import PageControl
from cdpnb.supervisor.page_reactions import PageReactions
from cdpnb.supervisor.reconnect import Reconnector
from cdpnb.supervisor.recovery import Recovery
from cdpnb.trace import Recorder
from cdpnb.trace.private_files import private_file
from cdpnb.transport import Connector, Transport, connect_websocket
from cdpnb.views import VIEWS

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["HasCdpUrl", "Supervisor"]

log = logging.getLogger("cdpnb.supervisor")
T = TypeVar("T")
P = ParamSpec("P")

#: The driver of each protocol an endpoint may speak (what its transport says), by the
#: name of the protocol it drives.
DRIVERS: dict[str, type[CDPDriver] | type[BiDiDriver] | type[ClassicDriver]] = {
    driver.name: driver for driver in (CDPDriver, BiDiDriver, WIPDriver, ClassicDriver)}



def _check_flag(name: str, value: object) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {value!r}")


async def _open(connector: Connector, url: str, timeout: float) -> Transport:
    return await connector(url, timeout)


def supervised(method: Callable[Concatenate[Supervisor, P], Coroutine[Any, Any, T]]
               ) -> Callable[Concatenate[Supervisor, P], Coroutine[Any, Any, T]]:
    """A public coroutine of the supervisor, run as the user's call
    (``Supervisor._call``): pending hints warned before and after, refused once the
    supervisor is stopped, a page's script error with cdpnb's frames cut. Its body
    checks its arguments and does the work; there is no private twin."""

    async def call(self: Supervisor, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await self._call(method(self, *args, **kwargs), method.__name__)

    # A traceback names the frame after its code: "in evaluate", as the user called it,
    # not "in call" for every method.
    call.__code__ = call.__code__.replace(co_name=method.__name__,
                                          co_qualname=method.__qualname__)
    return functools.wraps(method)(call)


class Supervisor:
    """One persistent connection (CDP or WebDriver BiDi) supervising a page: its own, or
    one that exists already (``start(page=...)``).

    Start it with ``await Supervisor.start(url)`` (``stop()`` it when done), or with
    ``async with Supervisor.start(url) as sup:`` (stopped on leaving the block; ``async
    with await Supervisor.start(url)`` works as well). Every coroutine method can be
    awaited from any event loop; the work runs on cdpnb's engine loop. The protocol is
    its driver's (``cdpnb.session.driver``), chosen once from what the endpoint
    speaks; nothing here speaks a protocol itself.
    """

    def __init__(self, url: str, options: SupervisorOptions,
                 recorder: Recorder | None = None, connector: Connector | None = None,
                 bridge_key: str | None = None, bridge_script: str | None = None, *,
                 protocol: str = "cdp", backend_info: dict[str, Any] | None = None) -> None:
        #: The endpoint the supervisor is connected to (a WebSocket or WebDriver URL);
        #: ``url`` is its page's.
        self.endpoint = url
        self.options = options
        self._core = Core(url, command_timeout_s=options.command_timeout_s,
                          connect_timeout_s=options.connect_timeout_s, connector=connector)
        self.recorder = recorder
        if recorder is not None:
            recorder.auto_flush = False  # the core flushes per batch of frames it reads
        self._core.recorder = recorder
        #: Advice cdpnb has for this endpoint or page (also issued as CdpnbWarning).
        self._hint = Hints()
        self.hints: list[str] = self._hint.given
        self._warn_pending = self._hint.warn_pending
        # The protocol's driver, then what is written once above it; each is given what
        # it needs as it is made.
        driver_class = DRIVERS.get(protocol, CDPDriver)  # (an unknown one: connect says so)
        self._driver: ProtocolDriver = driver_class(
            self._core, popups=options.popups, bypass_csp=options.bypass_csp,
            bridge_key=bridge_key, bridge_script=bridge_script, backend_info=backend_info,
            hint=self._hint)
        self._bridge = self._driver.bridge
        #: What the controllers written once share (the supervisor's life included).
        self._context = SupervisorContext(self._core, self._driver, options, self._hint)
        self._recovery = Recovery(self._context)
        reactions = PageReactions(self._context, self._recovery)
        self._dialogs = DialogControl(
            self._core, options.policy, options.dialog_timeout_s, self._bridge,
            self._driver.native_answer, on_fast_remote=reactions.fast_remote_close,
            on_unanswerable=self._recovery.on_unanswerable, on_closed=self._recovery.on_closed)
        #: navigate, reload, set_content, close_page (cdpnb.supervisor.page_control).
        self._page_control = PageControl(self._context, self._dialogs, self._recovery)
        self._core.subscribe(self._dialogs.on_fold, changes=DialogControl.CHANGES, now=True)
        self._core.subscribe(self._recovery.freeze_at_once, changes=[PageHazard], now=True)
        self._core.subscribe(reactions, changes=PageReactions.CHANGES)
        #: Events for sup.on() / sup.events(), from the fold's changes.
        self._events = EventHub(
            self._core,
            answer_sender(lambda dialog_id, accept, text: self._dialogs.reply_now(
                accept, text, dialog_id), lambda: self._context.stopped, redact_url(url)),
            self._event_answer_failed)
        # (WebDriver classic's evaluate waits for a dialog its script met only then)
        self._driver.dialogs_answered = lambda: (
            options.policy in ("auto_accept", "auto_dismiss") or self._events.watching("dialog"))
        if recorder is not None:  # a trace that cannot be written is said, not just logged
            recorder.on_error = self._hint
        self._reconnector = Reconnector(self._context, dropped=self._dropped,
                                        down_for_good=self._events.end_streams)
        self._core.on_lost = self._reconnector.on_lost

    # -- lifecycle ----------------------------------------------------------------------

    @classmethod
    @starting
    async def start(
        cls,
        url: str | HasCdpUrl,
        *,
        policy: Policy = "must_respond",
        dialog_timeout_s: float = 300.0,
        command_timeout_s: float = 30.0,
        connect_timeout_s: float = 10.0,
        reconnect_attempts: int = 3,
        bridge: bool | Literal["auto"] = "auto",
        bypass_csp: bool = False,
        record: str | os.PathLike[str] | None = None,
        redact: bool | Iterable[str] = False,
        record_meta: dict[str, Any] | None = None,
        popups: bool = True,
        reopen_page: bool = False,
        transport: Connector | None = None,
        page: str = "new",
    ) -> Supervisor:
        """Connect to ``url`` (``ws://…/devtools/browser/…``, ``http://host:port``, or a
        backend from ``cdpnb.launch``), create and attach the supervisor's own page,
        and start supervising: ``await`` it for the Supervisor, or enter it with ``async
        with`` (stopped on leaving the block). The protocol is the endpoint's: CDP where
        ``/json/version`` names a WebSocket, WebDriver classic on a WebDriver server
        (``GET /status``: a new session, dialogs polled), WebDriver BiDi at ``/session``,
        the WebKit Inspector Protocol where WebKit's words answer (``sup.protocol``).

        ``page="first"`` supervises the first page the browser has instead (the first
        ``page`` target of ``Target.getTargets``; over WebDriver BiDi the first
        top-level context), creating one only if there is none; a target id (a context
        id over BiDi) supervises that page, and UnknownPage names the pages there are
        if it has none such. An existing page is supervised as one of cdpnb's own: its
        frames and OOPIFs already there, its popups, the bridge in its loaded documents,
        dialogs from then on; a dialog already open in it blocks it (PageBlocked over
        CDP: no session attached later can see or answer it). ``stop()`` leaves a page
        cdpnb did not create (and the pages it opened) open, dismissing its open
        dialogs, and a reconnect takes the same page back.

        ``popups`` supervises the pages the supervised page opens (``window.open``,
        ``target=_blank``), recursively: their dialogs, frames and OOPIFs, with their
        opener in ``snapshot().pages``. ``reopen_page`` opens a fresh page when the
        supervisor's own is closed by someone else (otherwise calls raise TargetGone
        and ``alive`` is False). ``transport`` replaces the WebSocket (``await
        transport(url, timeout)`` returns the connection; see ``cdpnb.testing``).

        ``bridge`` answers alert/confirm/prompt over intercepted XHR instead of
        natively (for endpoints that auto-dismiss native dialogs); ``"auto"`` turns it
        on for such backends, and as soon as a native dialog is closed by someone else
        within milliseconds. ``bypass_csp`` lets it work on pages whose CSP blocks it.

        ``record=path`` writes every message to a JSONL trace (``.jsonl.gz`` for
        gzip); ``redact`` hides prompt answers, typed text, URL credentials (and the
        Basic header made of them), cookies and authorization headers in it (True for
        all, or some of ``cdpnb.trace.REDACTIONS``; each place is one entry of
        ``cdpnb.trace.redaction.SECRETS``).
        """
        endpoint = endpoint_of(url, transport)
        _check_flag("popups", popups)
        _check_flag("reopen_page", reopen_page)
        options = SupervisorOptions(
            policy=policy,
            dialog_timeout_s=dialog_timeout_s,
            command_timeout_s=command_timeout_s,
            connect_timeout_s=connect_timeout_s,
            reconnect_attempts=reconnect_attempts,
            bridge=bridge,
            bypass_csp=bypass_csp,
            popups=popups,
            reopen_page=reopen_page,
            page=page,
        )
        recorder = None
        backend = endpoint.backend
        if record is not None:
            if backend is not None:
                backend = {**backend, "cdp_url": redact_url(str(backend.get("cdp_url", "")))}
            recorder = Recorder(record, redact=redact, endpoint=redact_url(endpoint.url),
                                backend=backend, meta=record_meta,
                                cdpnb_version=__version__)
        elif redact:
            raise ValueError("redact= applies to a recording; pass record=path as well")
        # The transport says what the endpoint speaks, so the driver is chosen once,
        # before anything is sent.
        try:
            opened = await engine.run(_open(endpoint.transport or connect_websocket,
                                            endpoint.url, options.connect_timeout_s))
        except BaseException:
            if recorder is not None:
                recorder.close()
            raise
        try:
            supervisor = cls(endpoint.url, options, recorder, endpoint.transport,
                             endpoint.bridge_key, endpoint.bridge_script,
                             protocol=str(getattr(opened, "protocol", "cdp")),
                             backend_info=backend)
        except BaseException:
            await engine.run(in_own_thread(opened.close))
            if recorder is not None:
                recorder.close()
            raise
        supervisor._bridge_reason = bridge_reason(options.bridge, endpoint)
        supervisor._bridge.enabled = supervisor._bridge_reason is not None
        await engine.run(supervisor._start(opened))
        return supervisor

    _bridge_reason: str | None = None

    async def _start(self, transport: Transport) -> None:
        try:
            generation = await self._core.connect(transport)
            self._context.adopted_page = await self._driver.start(self.options.page,
                                                                  self._bridge_reason)
            self._core.connection_ready(generation)
        except BaseException:
            self._context.stopped = True
            await self._driver.abandon_start()
            await self._core.close()
            if self.recorder is not None:
                self.recorder.close()
            raise

    async def stop(self) -> None:
        """Close the page target this supervisor created and the connection. Idempotent.
        The hints not issued yet are issued once it has stopped: under ``-W error`` a
        hint raised first would leave the connection and the page open."""
        if not self._context.stopped:
            self._context.stopped = True
            try:
                await engine.run(self._stop())
            finally:
                self._events.close()
        self._warn_pending()

    async def _stop(self) -> None:
        core = self._core
        # What the supervisor knew when asked to stop stays its state: closing its pages
        # is recorded in the trace, but a snapshot after stop shows the pages it had.
        self._last_state = core.settled_state()
        self._reconnector.cancel()
        # Waits end before the pages close (closing one can open a beforeunload dialog).
        self._dialogs.stop_watchdogs()
        left = pages_left_open(core.state, self._context.adopted_page)  # not cdpnb's to close
        if core.connected and left:
            await let_go_of_dialogs(core.state, self._dialogs, left)
            self._last_state = core.settled_state()
        core.fail_waiters(SupervisorStopped(
            f"supervisor for {redact_url(self.endpoint)} stopped while waiting"))
        if core.connected:
            await self._driver.close_pages(left)
        await core.close()
        if self.recorder is not None:
            self.recorder.close()

    async def __aenter__(self) -> Supervisor:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def _dropped(self) -> None:
        self._dialogs.stop_watchdogs()  # the core has ended every wait already
        self._driver.connection_lost()

    async def _call(self, coro: Coroutine[Any, Any, T], name: str = "") -> T:
        try:
            self._warn_pending()
        except BaseException:  # warnings as errors: nothing ran
            coro.close()
            raise
        if self._context.stopped:
            coro.close()
            raise SupervisorStopped(f"supervisor for {redact_url(self.endpoint)} is stopped")
        # On the caller's own loop: the core is thread-safe, and a command's reply wakes
        # this loop directly (one thread hop per round trip).
        stop_waking = wake_for_signals()  # (a notebook's Ctrl-C lands within a tick)
        try:
            result = await coro
        except EvaluateError as exc:
            # The page's script threw: its message and JS stack are the error, and the
            # frames between here and where cdpnb read the reply would bury them.
            self._warn_pending(exc)
            raise exc.with_traceback(None)  # noqa: B904 (a caller's context stays)
        except (asyncio.CancelledError, KeyboardInterrupt) as exc:
            # A Ctrl-C in a notebook cell (ipykernel cancels the cell) or a script: one
            # line, not the engine's frames; the supervisor carries on (its waits end
            # with the call, its background work is the engine's).
            self._warn_pending(exc)
            raise interrupted(exc, name) from None
        except BaseException as exc:
            self._warn_pending(exc)  # (a hint raised by a filter: a note on exc)
            raise
        finally:
            stop_waking()
        self._warn_pending()
        return result

    # -- state (never blocks) -------------------------------------------------------------

    _last_state: BrowserState | None = None

    @property
    def state(self) -> BrowserState:
        """The raw folded state (frozen); ``snapshot()`` is the bounded view. After
        ``stop()``, the state as it was when the supervisor was asked to stop."""
        if self._last_state is not None:
            return self._last_state
        return self._core.state

    def snapshot(self) -> Snapshot:
        self._warn_pending()
        return snapshot_of(self.state)

    def frame_tree(self, full: bool = True, page: str | None = None) -> FrameTree:
        """The frame tree of the supervisor's page, or of the supervised page whose
        target id is ``page`` (a popup, see ``pages``); ``full=True`` ignores the
        snapshot's caps."""
        state = self.state
        session = None
        if page is not None:
            if not isinstance(page, str):
                raise TypeError(f"page must be a page target id (str), got {page!r}")
            session = next((p.session_id for p in state.pages.values() if p.target_id == page),
                           None)
            if session is None:
                known = ", ".join(p.target_id for p in state.pages.values()) or "none"
                raise UnknownFrame(f"no supervised page has target id {page!r} (pages: {known})")
        caps: tuple[int | None, int | None] = (
            (None, None) if full else (FRAME_TREE_ENTRIES, FRAME_TREE_OOPIF_DEPTH))
        return build_frame_tree(state, *caps, page_session_id=session)

    @property
    def pages(self) -> tuple[PageNode, ...]:
        """The supervised pages: the supervisor's own first, then those it opened."""
        return snapshot_of(self.state).pages

    @property
    def connected(self) -> bool:
        return not self._context.stopped and self._core.connected

    @property
    def stopped(self) -> bool:
        return self._context.stopped

    @property
    def alive(self) -> bool:
        """Connected (or still trying to reconnect) with its page there, answering: False
        while a script cdpnb could not end holds the target (``hints`` says so)."""
        if self._core.connection.phase == "gave_up" or self._core.held is not None:
            # (As folded: the reconnect loop's own flag is cleared a moment later, on its
            # task; seen under load as alive just after giving up.)
            return False
        reconnecting = self._reconnector.reconnecting
        if self._core.state.page_gone is not None and not self.options.reopen_page:
            return False
        return not self._context.stopped and (self._core.connected or reconnecting)

    @property
    def reconnects(self) -> int:
        """How many times the supervisor reconnected after a drop."""
        return self._core.state.counters.get("reconnects", 0)

    @property
    def page_target_id(self) -> str | None:
        return self.state.page_target_id

    @property
    def url(self) -> str | None:
        """The URL of the supervisor's page (its top frame's document, same-document
        navigations included), as Playwright's ``page.url``; None when it has no page.
        The endpoint the supervisor is connected to is ``endpoint``."""
        state = self.state
        page = state.pages.get(state.page_session_id or "")
        return page.url if page is not None else None

    @property
    def page_session_id(self) -> str | None:
        return self.state.page_session_id

    @property
    def bridge_enabled(self) -> bool:
        """Whether alert/confirm/prompt are answered through the dialog bridge (once
        switched on, True when it is in place in the page and the frames attached)."""
        return self._bridge.enabled and not self._bridge.installing

    @property
    def protocol(self) -> str:
        """What the endpoint speaks: ``"cdp"``, ``"bidi"`` (WebDriver BiDi), ``"wip"``
        (the WebKit Inspector Protocol: Bun's inspector; ``sup.cdp()`` sends its raw
        commands, and ``evaluate`` gives the same values and errors as over CDP) or
        ``"classic"`` (WebDriver classic). ``cdpnb.protocol.protocol_spec(sup.protocol)``
        holds its facts."""
        return self._driver.name

    @property
    def browser_version(self) -> dict[str, Any]:
        """What the browser says it is (``Browser.getVersion``; over WebDriver BiDi, the
        session's capabilities); empty where the endpoint does not say."""
        return self._driver.browser_version

    @property
    def unsupported(self) -> dict[str, str]:
        """Commands this endpoint lacks (e.g. ``Page.enable`` on Node), with its error."""
        return dict(self._core.unsupported)

    @property
    def policy(self) -> Policy:
        return self.options.policy

    def stats(self) -> dict[str, int]:
        return self._core.counters()

    def view(self, *, refresh_s: float = 0.25) -> Any:
        """A live ipywidgets view: frame tree, pending dialogs with Accept/Dismiss
        buttons, recent dialogs, console errors, connection state. Updates are
        throttled to one per ``refresh_s`` and applied on the thread that called
        ``view()`` (the kernel's)."""
        return VIEWS.make(self, refresh_s=refresh_s)  # cdpnb.notebook, loaded on use

    def __repr__(self) -> str:
        state = "stopped" if self._context.stopped else ("connected" if self.connected else "down")
        return (f"<Supervisor {redact_url(self.endpoint)} {state} policy={self.options.policy} "
                f"pending_dialogs={len(self.state.pending_dialogs)}>")

    # -- commands -------------------------------------------------------------------------

    @supervised
    async def cdp(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        frame_id: str | None = None,
        timeout: float | None = None,
        *,
        browser: bool = False,
        session_id: str | None = None,
    ) -> dict[str, Any]:
        """Send a raw CDP command and return its ``result``: to the page by default, to
        the OOPIF ``frame_id``, to the browser itself (``browser=True``), or to any
        attached ``session_id``. ``timeout`` bounds the call; a script-running command
        (``Runtime.evaluate``, ``Runtime.callFunctionOn``, …) still running then is
        ended with ``Runtime.terminateExecution`` and raises EvaluateTimeout."""
        self._driver.require("cdp()")
        budget = self._budget(timeout)
        if sum((frame_id is not None, browser, session_id is not None)) > 1:
            raise ValueError("pass at most one of frame_id, browser=True and session_id")
        if session_id is not None and not isinstance(session_id, str):
            raise TypeError(f"session_id must be a str, got {type(session_id).__name__}")
        if not isinstance(method, str) or not method:
            raise TypeError(f"method must be a CDP method name such as 'Runtime.evaluate', "
                            f"got {method!r}")
        return await self._driver.send_raw(method, params, budget, frame_id=frame_id,
                                           browser=browser, session_id=session_id)

    @supervised
    async def bidi(self, method: str, params: dict[str, Any] | None = None,
                   timeout: float | None = None) -> dict[str, Any]:
        """Send a raw WebDriver BiDi command (``"browsingContext.print"``, ``"input.
        performActions"``, …) and return its ``result``. Name the browsing context in
        ``params``: a frame's context is its ``frame_id``, the page's is
        ``page_target_id``. Errors raise CDPError with the BiDi error name first."""
        self._driver.require("bidi()")
        if not isinstance(method, str) or "." not in method:
            raise TypeError(f"method must be a BiDi method name such as "
                            f"'browsingContext.navigate', got {method!r}")
        if params is not None and not isinstance(params, dict):
            raise TypeError(f"params must be a dict, got {type(params).__name__}")
        return await self._driver.send_raw(method, params, self._budget(timeout))

    @supervised
    async def classic(self, method: str, params: dict[str, Any] | None = None,
                      timeout: float | None = None) -> dict[str, Any]:
        """Send a raw WebDriver classic command (``"classic.getTitle"``,
        ``"classic.executeScript"`` with ``{"script", "args"}``, …; the names are in
        ``cdpnb.protocol.classic.COMMANDS``) and return its result (``{"value": ...}``).
        ``window`` (a handle) and ``frame`` (frame indexes from the top) in ``params``
        switch there first. Errors raise CDPError with the W3C error code first."""
        self._driver.require("classic()")
        if not isinstance(method, str) or not method.startswith("classic."):
            raise TypeError(f"method must be a WebDriver classic command name such as "
                            f"'classic.getTitle', got {method!r}")
        if params is not None and not isinstance(params, dict):
            raise TypeError(f"params must be a dict, got {type(params).__name__}")
        return await self._driver.send_raw(method, params, self._budget(timeout))

    @supervised
    async def evaluate(
        self, expression: str, arg: Any = None, *, frame_id: str | None = None,
        timeout: float | None = None, await_promise: bool = True, user_gesture: bool = False,
    ) -> Any:
        """Evaluate ``expression`` in the page, an OOPIF or an in-process frame
        (``frame_id``) and return its value; as Playwright's ``page.evaluate``, an
        ``expression`` that is a function (``"() => document.title"``, ``"(x) => x *
        2"``, ``"function (a) {…}"``, ``"async () => …"``) is called, with ``arg`` (none
        when ``arg`` is None), and its result returned (a promise awaited). ``arg`` is
        data: JSON's values and the ones JSON loses (``cdpnb.Undefined``, ``NaN``,
        ``-0.0``, ``±inf``, big ints as bigint). The same on every protocol.

        Data comes back by value (``undefined`` as ``cdpnb.Undefined``, ``NaN``,
        ``-0``, ``±Infinity``, bigint as int); anything else (a DOM node, a function)
        as a :class:`~cdpnb.protocol.js_values.RemoteObject`. A JavaScript exception
        raises EvaluateError with the JS message and stack. ``timeout`` (default: the
        supervisor's ``command_timeout_s``) bounds the whole call; a script still
        running then is ended and EvaluateTimeout raised, and the page stays usable.
        ``user_gesture`` makes the call count as a user activation.
        """
        if not isinstance(expression, str):
            raise TypeError(f"expression must be a str of JavaScript (an expression or a "
                            f"function), got {type(expression).__name__}")
        if frame_id is not None and not isinstance(frame_id, str):
            raise TypeError(f"frame_id must be a str, got {type(frame_id).__name__}")
        script = call_expression(expression, arg)
        budget = self._budget(timeout)
        _check_flag("await_promise", await_promise)
        _check_flag("user_gesture", user_gesture)
        return await self._driver.evaluate(script, frame_id, budget,
                                           await_promise=await_promise,
                                           user_gesture=user_gesture)

    @supervised
    async def accessibility(self, frame_id: str | None = None,
                            timeout: float | None = None) -> pd.DataFrame:
        """The accessibility tree of every frame, OOPIFs included, as one DataFrame:
        ``ref``, ``role``, ``name``, ``frame_id``, ``backend_dom_node_id`` (empty where
        the mapping is missing or ambiguous), ``ignored``, ``depth``, … in document
        order. ``frame_id`` keeps that frame and the frames inside it; refs are the
        same as in the full table. Refs (``role:name``, ``#n`` for the n-th duplicate)
        are what ``evaluate_on`` and ``click`` take."""
        self._driver.require("accessibility()")
        budget = self._budget(timeout)
        if frame_id is not None:
            frame_of(self._core.state, frame_id)
        return await self._driver.accessibility(frame_id, budget)

    @supervised
    async def evaluate_on(self, ref: str | RemoteObject, function: str, *args: Any,
                          timeout: float | None = None, await_promise: bool = True,
                          user_gesture: bool = False) -> Any:
        """Call ``function`` (JS source, e.g. ``"function (el) { return el.id }"``)
        with the element behind ``ref`` (or a RemoteObject) as its first argument and
        ``args`` after it, in the frame that element lives in. Values come back as
        from ``evaluate``; a ref whose element is gone raises StaleRef."""
        if not isinstance(function, str):
            raise TypeError(f"function must be a str of JavaScript source, got "
                            f"{type(function).__name__}")
        if not isinstance(ref, str | RemoteObject):
            raise TypeError(f"ref must be a ref str (from sup.accessibility()) or a "
                            f"RemoteObject, got {type(ref).__name__}")
        if isinstance(ref, RemoteObject) and not ref.object_id:
            raise ValueError("ref is a RemoteObject without an object_id")
        self._driver.require("evaluate_on()")
        arguments = [call_argument(a, f"args[{i}]") for i, a in enumerate(args)]
        budget = self._budget(timeout)
        _check_flag("await_promise", await_promise)
        _check_flag("user_gesture", user_gesture)
        return await self._driver.evaluate_on(ref, function, arguments, budget,
                                              await_promise=await_promise,
                                              user_gesture=user_gesture)

    @supervised
    async def click(self, selector: str | None = None, *, ref: str | None = None,
                    x: float | None = None, y: float | None = None,
                    frame_id: str | None = None,
                    timeout: float | None = None) -> ClickResult:
        """Click as a user would, on one of: the first element the CSS ``selector``
        matches in ``frame_id`` (the page by default; any frame of ``frame_tree()``),
        the element behind ``ref=`` (from ``accessibility()``, CDP only), or the point
        ``x=``, ``y=`` (CSS pixels in ``frame_id``'s viewport). As Playwright's click, it
        waits for the element to be there and visible, up to ``timeout`` (default: the
        supervisor's ``command_timeout_s``), then NoSuchElement (none matched) or
        ElementNotClickable (none visible). The selector is resolved where the page's
        script cannot reach (an isolated world, a sandbox, the WebDriver server's own
        search), so a page cannot steer it. An element is scrolled into view and clicked
        at the centre of its box; the click is a real mouse move, press and release (a
        user activation, which ``beforeunload`` needs). It ends when the release is
        handled or a dialog it opened arrives, and returns a ClickResult: ``selector`` /
        ``ref``, ``frame_id``, ``x``, ``y`` (where, in that frame's viewport) and
        ``dialog_id`` (None, or the dialog the click opened). BlockedByDialog while a
        dialog is open in the page."""
        how = click_spec(selector, ref=ref, x=x, y=y, frame_id=frame_id)
        if how.ref is not None:
            self._driver.require("click(ref)")
        elif how.point is not None:
            self._driver.require("click(point)")
        budget = self._budget(timeout)
        return await until_there(lambda: self._driver.click(how, budget), budget)

    @supervised
    async def fill(self, selector: str, text: str, *, frame_id: str | None = None,
                   timeout: float | None = None) -> None:
        """Type ``text`` into the field the CSS ``selector`` matches (an ``<input>``, a
        ``<textarea>``, a contenteditable element) in the page or ``frame_id``, replacing
        what it holds, as Playwright's ``fill``: it waits (up to ``timeout``) for the
        element to be there, visible, enabled and writable, focuses it, selects its
        content and types over it; ``""`` empties it. Over CDP the text is inserted at
        once (``Input.insertText``: one ``input`` event), over WebDriver BiDi and classic
        typed key by key (an ``input`` event per character); a date or time input gets
        its value set, with ``input`` and ``change``, on every protocol. The typed text
        is what ``redact=`` calls ``typed_text``. ElementNotClickable for an element that
        takes no text (a checkbox, a ``<div>``); BlockedByDialog while a dialog is open
        in the page."""
        how = check_fill(selector, text, frame_id)
        budget = self._budget(timeout)
        await until_there(lambda: self._driver.fill(how, text, budget), budget)

    @supervised
    async def wait_for_selector(self, selector: str, *, state: SelectorState = "visible",
                                frame_id: str | None = None,
                                timeout: float | None = None) -> None:
        """Wait until the CSS ``selector`` matches, in the page or ``frame_id``, an
        element that is ``state``, Playwright's states: ``"visible"`` (the default: a box
        with an area, not ``visibility: hidden``), ``"attached"`` (any), or no longer:
        ``"hidden"`` (none visible), ``"detached"`` (none). Returns at once when it
        holds already; WaitTimeout after ``timeout`` (default: the supervisor's
        ``command_timeout_s``). Looked at every 20–250 ms, from where the page's script
        cannot reach, across navigations."""
        spec = check_fill(selector, "", frame_id)
        if state not in SELECTOR_STATES:
            raise ValueError(f"state must be one of {', '.join(SELECTOR_STATES)}; got "
                             f"{state!r}")
        budget = self._budget(timeout)
        looks = 0
        while True:
            try:
                found = await self._driver.query(spec, budget)
            except TargetGone as exc:  # (the frame navigated between two looks)
                if not getattr(exc, "not_yet", False):
                    raise
                found = None
            except CommandTimeout:
                if budget.left() > 0:  # (not a look the budget's end cut short)
                    raise
                found = None
            if found is not None and state_holds(state, found):
                return
            delay = POLL_DELAYS_S[min(looks, len(POLL_DELAYS_S) - 1)]
            looks += 1
            if budget.left() <= delay:
                where = f"frame {frame_id}" if frame_id is not None else "the page"
                seen = {None: "it could not be looked at", "absent": "none matched",
                        "hidden": "one matched, not visible",
                        "visible": "one matched, visible"}[found]
                raise WaitTimeout(f"selector {selector!r} was not {state} in {where} within "
                                  f"{budget.seconds:g} s (last look: {seen})")
            await asyncio.sleep(delay)

    @supervised
    async def screenshot(self, frame_id: str | None = None, *,
                         path: str | os.PathLike[str] | None = None,
                         timeout: float | None = None) -> bytes:
        """A PNG of what the page shows now (its viewport), or of frame ``frame_id``'s
        box in it (scrolled into view first): CDP's ``Page.captureScreenshot``, BiDi's
        ``browsingContext.captureScreenshot``, classic's screenshot (of the frame's
        element for a frame). With ``path``, also written there, readable by its owner
        only (0600: a screenshot may show what a trace would redact)."""
        if frame_id is not None and not isinstance(frame_id, str):
            raise TypeError(f"frame_id must be a str, got {type(frame_id).__name__}")
        target = None if path is None else os.fspath(path)
        if target is not None and not isinstance(target, str):
            raise TypeError(f"path must be a str or os.PathLike, got {path!r}")
        budget = self._budget(timeout)
        if frame_id is not None:
            frame_of(self._core.state, frame_id)
        png = await self._driver.screenshot(frame_id, budget)
        if target is not None:
            with private_file(target) as file:  # (0600 from its creation)
                file.write(png)
        return png

    @supervised
    async def release_objects(self) -> None:
        """Release every handle cdpnb's evaluate has kept (RemoteObjects it returned)
        in the page and every OOPIF; their ``object_id``s stop working. Over WebDriver
        BiDi evaluate keeps no handles, so there is nothing to release."""
        await self._driver.release_objects(self.options.command_timeout_s)

    def _budget(self, timeout: float | None) -> Budget:
        limit = check_timeout("timeout", timeout, allow_none=True)
        return Budget(self.options.command_timeout_s if limit is None else limit)

    @supervised
    async def navigate(self, url: str, timeout: float = 30.0, *,
                       frame_id: str | None = None) -> NavigateResult:
        """Navigate the supervisor's page to ``url`` and wait for its load event; with
        ``frame_id``, that frame alone (a child frame, an OOPIF, a popup's top frame),
        waiting for its new document's load. Returns a NavigateResult (``url``,
        ``frame_id``, ``loader_id``). Dialogs the navigation would wait on are
        dismissed first (``closed_by="cdpnb"``, ``reason="navigation"``); a
        beforeunload dialog is left for you to answer. See
        ``cdpnb.supervisor.page_control``."""
        if not isinstance(url, str) or not url:
            raise TypeError(f"url must be a non-empty str, got {url!r}")
        limit = check_timeout("timeout", timeout)
        assert limit is not None
        if frame_id is not None and not isinstance(frame_id, str):
            raise TypeError(f"frame_id must be a str, got {type(frame_id).__name__}")
        return await self._page_control.navigate(url, frame_id, limit)

    @supervised
    async def reload(self, *, timeout: float = 30.0) -> NavigateResult:
        """Reload the supervisor's page and wait for the new document's load. A
        beforeunload dialog holds it as it holds a navigation (answer it from another
        task); dismissing it raises NavigationError and the page stays."""
        limit = check_timeout("timeout", timeout)
        assert limit is not None
        return await self._page_control.reload(limit)

    @supervised
    async def set_content(self, html: str, *, frame_id: str | None = None,
                          timeout: float = 30.0) -> SetContentResult:
        """Replace the document of the page (or of ``frame_id``) with ``html``, as
        Playwright's ``page.setContent`` (``document.open/write/close``), and wait for its
        load. A dialog the new content opens and the policy leaves to you ends the wait
        at once: a SetContentResult with ``loaded`` False and its ``dialog_id`` (the
        document loads once it is answered); otherwise ``loaded`` True."""
        if not isinstance(html, str):
            raise TypeError(f"html must be a str, got {type(html).__name__}")
        limit = check_timeout("timeout", timeout)
        assert limit is not None
        if frame_id is not None and not isinstance(frame_id, str):
            raise TypeError(f"frame_id must be a str, got {type(frame_id).__name__}")
        return await self._page_control.set_content(html, frame_id, limit)

    @supervised
    async def close_page(self, page: str | None = None, *, run_beforeunload: bool = False,
                         timeout: float = 30.0) -> ClosePageResult:
        """Close a supervised page: ``page`` is a target id from ``sup.pages`` (a popup's,
        or the supervisor's own), None the supervisor's own. At once, without
        beforeunload; or with ``run_beforeunload=True`` its beforeunload handler runs,
        and a beforeunload dialog it opens (after a user activation) ends the wait:
        ``respond("accept", dialog_id=...)`` closes the page, ``"dismiss"`` keeps it.
        Returns a ClosePageResult (``page``, ``closed``, ``dialog_id``). The close is
        yours: no "closed by someone else" hint; the supervisor's own page closed leaves
        ``alive`` False and calls raise TargetGone, unless ``reopen_page=True`` (a fresh
        page)."""
        if page is not None and not isinstance(page, str):
            raise TypeError(f"page must be a page target id (a str, see sup.pages) or None, "
                            f"got {page!r}")
        _check_flag("run_beforeunload", run_beforeunload)
        limit = check_timeout("timeout", timeout)
        assert limit is not None
        return await self._page_control.close_page(page, run_beforeunload, limit)

    @supervised
    async def wait_for(self, predicate: Callable[[BrowserState], bool],
                       timeout: float = 10.0) -> BrowserState:
        """The first state (now, or after a message) for which ``predicate`` holds;
        checked as each message is folded (on the receiving thread), so nothing is missed
        between polls. ``predicate`` must be quick and must not block."""
        if not callable(predicate):
            raise TypeError(f"predicate must be a callable taking a BrowserState, "
                            f"got {predicate!r}")
        limit = check_timeout("timeout", timeout)
        assert limit is not None
        try:
            return await self._core.wait_until(predicate, limit)
        except TimeoutError:
            name = getattr(predicate, "__name__", "the predicate")
            raise WaitTimeout(f"the state did not satisfy {name} within {limit:g} s") from None

    @supervised
    async def annotate(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Put a note of your own into the message stream (and the trace), e.g.
        ``await sup.annotate("experiment.phase", {"name": "warm-up"})``."""
        if not isinstance(method, str) or "." not in method or method.startswith("cdpnb."):
            raise ValueError(f"method must look like 'area.name' (not cdpnb.*), got {method!r}")
        if params is not None and not isinstance(params, dict):
            raise TypeError(f"params must be a dict, got {type(params).__name__}")
        self._core.note(method, dict(params or {}))

    # -- events ---------------------------------------------------------------------------

    def on(self, event: EventName, handler: Handler) -> Handler:
        """Call ``handler(ev)`` for every ``event`` from now on (names as Playwright's:
        ``dialog``, ``dialogclosed``, ``frameattached``, ``framenavigated``,
        ``framedetached``, ``frameswapped``, ``page``, ``pageclosed``, ``console`` (the
        errors ``console_errors`` keeps, not every message); see ``cdpnb.EVENT_NAMES``),
        across every supervised page. ``ev`` is a
        ``SupervisorEvent``; a dialog handler may answer with ``ev.accept(text)`` /
        ``ev.dismiss()`` (the policy's watchdog still answers a dialog nobody does).

        The handler runs on the loop of the thread that called ``on`` when one is
        running there (a notebook cell, a coroutine), else on the supervisor's event
        thread; it may be a plain function or a coroutine function. Returns
        ``handler`` (for ``off``)."""
        self._listen(event, handler, once=False, on_thread=False)
        return handler

    def once(self, event: EventName, handler: Handler) -> Handler:
        """``on``, for the next ``event`` only."""
        self._listen(event, handler, once=True, on_thread=False)
        return handler

    def _listen(self, event: EventName, handler: Handler, *, once: bool,
                on_thread: bool) -> None:
        (name,) = check_event_names([event])
        if not callable(handler):
            raise TypeError(f"handler must be callable (a function taking the event), "
                            f"got {handler!r}")
        self._events.listen(name, handler, once=once, on_thread=on_thread)

    def off(self, event: EventName, handler: Handler | None = None) -> int:
        """Remove ``handler`` from ``event`` (every handler of it when None); returns
        how many were removed."""
        (name,) = check_event_names([event])
        return self._events.unlisten(name, handler)

    def events(self, *names: EventName, timeout: float | None = None,
               buffer: int = STREAM_BUFFER) -> EventStream:
        """The events named (all when none is), from now on, as a stream:
        ``async for ev in sup.events("dialog")`` or, blocking, ``for ev in …``.
        With ``timeout``, a loop over it ends once no event came for that long
        (``stream.next_event()`` raises WaitTimeout instead); the stream ends when
        closed (``with``/``async with`` closes it) or when the supervisor stops. It
        holds up to ``buffer`` unread events (the oldest go, counted in ``dropped``)."""
        chosen = check_event_names(names)
        return self._events.stream(chosen, check_stream_timeout(timeout), check_buffer(buffer))

    @supervised
    async def wait_for_event(self, event: EventName,
                             predicate: Callable[[SupervisorEvent], bool] | None = None, *,
                             timeout: float = 10.0) -> SupervisorEvent:
        """The next ``event`` (a name of ``cdpnb.EVENT_NAMES``) from now on for which
        ``predicate(ev)`` holds (any, without one), as Playwright's
        ``page.wait_for_event``; WaitTimeout after ``timeout`` seconds. To catch the
        event of an action you start, make the stream first: ``async with
        sup.events("dialog") as stream:`` then act, then ``await
        stream.next_event()``."""
        (name,) = check_event_names([event])
        if predicate is not None and not callable(predicate):
            raise TypeError(f"predicate must be a callable taking the event, got "
                            f"{predicate!r}")
        limit = check_timeout("timeout", timeout)
        assert limit is not None
        held = ("" if predicate is None else
                f" for which {getattr(predicate, '__name__', 'the predicate')} held")
        loop = asyncio.get_running_loop()
        with self._events.stream(frozenset({name}), limit, STREAM_BUFFER) as stream:
            deadline = loop.time() + limit
            while True:
                try:
                    left = deadline - loop.time()
                    if left <= 0:
                        raise WaitTimeout("")
                    ev = await stream.next_event(left)
                except WaitTimeout:
                    raise WaitTimeout(f"no {name} event{held} within {limit:g} s") from None
                except StopAsyncIteration:
                    raise SupervisorStopped(f"supervisor for {redact_url(self.endpoint)} "
                                            f"stopped while waiting for a {name} event"
                                            ) from None
                if predicate is None or predicate(ev):
                    return ev

    def _event_answer_failed(self, error: BaseException) -> None:
        self._hint(f"a dialog handler's answer failed and nobody awaited it: "
                   f"{type(error).__name__}: {error}")

    # -- dialogs --------------------------------------------------------------------------

    @supervised
    async def wait_for_dialog(self, timeout: float | None = None) -> PendingDialog:
        """The oldest open dialog, or the next one to open within ``timeout`` seconds."""
        return await self._dialogs.wait(timeout)

    @supervised
    async def respond(
        self, action: DialogAction, prompt_text: str | None = None,
        dialog_id: str | None = None,
    ) -> DialogRecord:
        """Answer an open dialog: ``"accept"`` (with ``prompt_text`` for a prompt) or
        ``"dismiss"``. Returns the closed dialog's record."""
        return await self._dialogs.respond(action, prompt_text, dialog_id)
