"""The public ``Supervisor``: awaitable from any loop, living on the engine loop."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import os
import threading
import warnings
from collections.abc import Callable, Coroutine, Iterable
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

from cdpnb._version import __version__
from cdpnb.errors import (
    CDPError,
    CdpnbError,
    CdpnbWarning,
    CommandTimeout,
    ConnectionLost,
    EvaluateError,
    FrameNotRoutable,
    ProtocolMismatch,
    StaleRef,
    SupervisorStopped,
    TargetGone,
    UnknownFrame,
    WaitTimeout,
)
from cdpnb.playback.script import is_replay_url
from cdpnb.protocol import Message
from cdpnb.protocol.credentials import redact_url
from cdpnb.runtime.engine import engine
from cdpnb.state import (
    BrowserState,
    Change,
    DialogRecord,
    FrameTree,
    PageNode,
    PendingDialog,
    Snapshot,
)
from cdpnb.state.changes import (
    PageClosed,
    PageHazard,
    PageOpened,
)
from cdpnb.state.snapshot import (
    FRAME_TREE_ENTRIES,
    FRAME_TREE_OOPIF_DEPTH,
    build_frame_tree,
    snapshot_of,
)
from cdpnb.supervisor import engines
from cdpnb.supervisor.accessibility import (
    AXSnapshot,
    RefTarget,
    make_ref,
    parse_ref,
    resolve,
    take_snapshot,
    to_frame,
)
from cdpnb.supervisor.actions import ClickSpec, click_in_frame, click_ref, click_spec
from cdpnb.supervisor.attach import ChildAttacher, attach_page
from cdpnb.supervisor.bidi import BiDiSession, SessionHeld
from cdpnb.supervisor.bidi_actions import click as bidi_click
from cdpnb.supervisor.bidi_bridge import BiDiDialogBridge, foreign_request
from cdpnb.supervisor.bridge import BRIDGE_CHANGES, DialogBridge
from cdpnb.supervisor.core import Core
from cdpnb.supervisor.dialogs import DialogControl
from cdpnb.supervisor.evaluation import OBJECT_GROUP, Budget, Evaluator, context_gone
from cdpnb.supervisor.events import (
    STREAM_BUFFER,
    EventHub,
    EventName,
    EventStream,
    Handler,
    answer_sender,
    check_buffer,
    check_event_names,
    check_stream_timeout,
)
from cdpnb.supervisor.existing import attach_chosen_page, let_go_of_dialogs, pages_left_open
from cdpnb.supervisor.options import Policy, SupervisorOptions, check_timeout
from cdpnb.supervisor.page_control import PageControl
from cdpnb.supervisor.pages import PageAttacher
from cdpnb.supervisor.recovery import Recovery
from cdpnb.supervisor.routing import context_for_frame, frame_of, session_for_frame
from cdpnb.supervisor.values import RemoteObject, call_argument
from cdpnb.trace import Recorder
from cdpnb.transport import Connector

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["HasCdpUrl", "Supervisor"]

log = logging.getLogger("cdpnb.supervisor")
T = TypeVar("T")



def _check_flag(name: str, value: object) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {value!r}")


class HasCdpUrl(Protocol):
    """A backend from ``cdpnb.launch`` (or anything with a ``cdp_url``)."""

    @property
    def cdp_url(self) -> str: ...


#: Backend kinds known to close native dialogs themselves: "auto" bridges them.
AUTO_DISMISSING_KINDS = frozenset({"chromium+playwright"})

#: How long evaluate() waits for a just-committed frame's execution context.
CONTEXT_GRACE_S = 2.0


class Supervisor:
    """One persistent CDP connection supervising a page target: its own, or one that
    exists already (``start(page=...)``).

    Start it with ``await Supervisor.start(url)``. Every coroutine method can be
    awaited from any event loop; the work runs on cdpnb's engine loop.
    """

    def __init__(self, url: str, options: SupervisorOptions,
                 recorder: Recorder | None = None, connector: Connector | None = None,
                 bridge_key: str | None = None, bridge_script: str | None = None) -> None:
        self.url = url
        self.options = options
        self._core = Core(url, command_timeout_s=options.command_timeout_s,
                          connect_timeout_s=options.connect_timeout_s, connector=connector)
        self.recorder = recorder
        if recorder is not None:
            recorder.auto_flush = False  # the core flushes per batch of frames it reads
        self._core.recorder = recorder
        self._bridge = DialogBridge(self._core, bypass_csp=options.bypass_csp, key=bridge_key,
                                    script=bridge_script)
        self._pages = PageAttacher(self._core, self._bridge)
        self._dialogs = DialogControl(self._core, options.policy, options.dialog_timeout_s,
                                      self._bridge)
        self._recovery = Recovery(self._core, self._pages, self._bridge, self._hint)
        self._dialogs.on_fast_remote = self._on_fast_remote
        self._dialogs.on_unanswerable = self._recovery.on_unanswerable
        self._dialogs.on_closed = self._recovery.on_closed
        self._children = ChildAttacher(self._core, self._bridge)
        self._evaluator = Evaluator(self._core)
        #: The WebDriver BiDi session, used when the endpoint speaks BiDi.
        self._bidi = BiDiSession(self._core, popups=options.popups)
        #: navigate, reload, set_content, close_page (cdpnb.supervisor.page_control).
        self._page_control = PageControl(self._core, self._dialogs, self._recovery, self._bidi,
                                         self._evaluate, policy=options.policy,
                                         reopen_page=options.reopen_page)
        #: Refs of the last accessibility snapshot, for evaluate_on and click.
        self._refs: dict[str, RefTarget] = {}
        self._core.subscribe(self._children, methods=["Target.attachedToTarget"])
        self._core.subscribe(self._pages, methods=["Target.attachedToTarget"])
        self._core.subscribe(self._dialogs, changes=DialogControl.CHANGES)
        # On the receiving thread: a paused bridge call becomes its dialog in the same
        # breath, whatever the engine loop is busy with.
        self._unsubscribe_bridge = self._core.subscribe(
            self._bridge, methods=["Fetch.requestPaused"], changes=BRIDGE_CHANGES, now=True)
        self._core.subscribe(self._recovery.freeze_at_once, changes=[PageHazard], now=True)
        self._core.subscribe(self._on_changes, changes=[PageHazard, PageClosed, PageOpened])
        #: Events for sup.on() / sup.events(), from the fold's changes.
        self._events = EventHub(
            self._core,
            answer_sender(self._answer_event, engine.submit, lambda: self._stopped,
                          redact_url(url)),
            self._event_answer_failed)
        #: Advice cdpnb has for this endpoint or page (also issued as CdpnbWarning).
        self.hints: list[str] = []
        self._unwarned: list[str] = []
        self._hint_lock = threading.Lock()
        if recorder is not None:  # a trace that cannot be written is said, not just logged
            recorder.on_error = self._hint
        self._core.on_lost = self._on_lost
        self._reconnecting: concurrent.futures.Future[None] | None = None
        #: Connections (by generation) reconnect attempts opened and did not make good:
        #: their loss is the attempt's business (read and written on the engine loop).
        self._attempts: set[int] = set()
        self._gave_up: str | None = None  # why, once reconnecting gave up
        self._stopped = False
        self.reconnects = 0
        self.browser_version: dict[str, Any] = {}

    # -- lifecycle ----------------------------------------------------------------------

    @classmethod
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
        and start supervising.

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
        gzip); ``redact`` hides prompt answers, typed text and URL credentials in
        it (True for all, or some of ``cdpnb.trace.REDACTIONS``).
        """
        backend: dict[str, Any] | None = None
        bridge_key: str | None = None
        bridge_script: str | None = None
        if not isinstance(url, str) and isinstance(getattr(url, "cdp_url", None), str):
            describe = getattr(url, "describe", None)
            backend = describe() if callable(describe) else None
            recorded_key = getattr(url, "bridge_key", None)  # a replay plays its recording's
            bridge_key = recorded_key if isinstance(recorded_key, str) else None
            recorded_script = getattr(url, "bridge_script", None)
            bridge_script = recorded_script if isinstance(recorded_script, str) else None
            connect = getattr(url, "connect_transport", None)
            if transport is None and callable(connect):
                transport = connect  # e.g. cdpnb.testing.ScriptedBrowser
            url = url.cdp_url
        if transport is not None and not callable(transport):
            raise TypeError(f"transport must be an async callable (url, timeout) -> "
                            f"transport, got {transport!r}")
        _check_flag("popups", popups)
        _check_flag("reopen_page", reopen_page)
        if not isinstance(url, str) or not url:
            raise TypeError(f"url must be a CDP URL string or a backend, got {url!r}")
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
        if record is not None:
            if backend is not None:
                backend = {**backend, "cdp_url": redact_url(str(backend.get("cdp_url", "")))}
            recorder = Recorder(record, redact=redact, endpoint=redact_url(url),
                                backend=backend, meta=record_meta,
                                cdpnb_version=__version__)
        elif redact:
            raise ValueError("redact= applies to a recording; pass record=path as well")
        supervisor = cls(url, options, recorder, transport, bridge_key, bridge_script)
        kind = (backend or {}).get("kind")
        if options.bridge is True:
            supervisor._bridge_reason = "bridge=True"
        elif options.bridge == "auto" and kind in AUTO_DISMISSING_KINDS:
            supervisor._bridge_reason = f"bridge='auto': {kind} auto-dismisses native dialogs"
        supervisor._bridge.enabled = supervisor._bridge_reason is not None
        supervisor._backend_info = backend
        await engine.run(supervisor._start())
        return supervisor

    _bridge_reason: str | None = None
    _backend_info: dict[str, Any] | None = None
    #: The existing page ``start(page=...)`` adopted (its target or context id): stop()
    #: leaves it open. None when the supervisor created its page.
    _adopted_page: str | None = None

    async def _version(self) -> None:
        with contextlib.suppress(CDPError):
            # What the browser is, in the trace; Node and some proxies lack it.
            self.browser_version = await self._core.send("Browser.getVersion")
        # Engines whose quirks the state must know (Lightpanda's non-blocking dialogs).
        await engines.identify(self._core, self.url, self._backend_info)

    async def _start(self) -> None:
        try:
            await self._core.connect()
            if self._core.protocol == "bidi":
                await self._start_bidi()
                return
            if self._bridge_reason is not None:
                self._core.note("cdpnb.bridgeEnabled", {"reason": self._bridge_reason})
            # Browser.getVersion takes as long as the attach's first round trips: overlap.
            _, self._adopted_page = await asyncio.gather(
                self._version(), attach_chosen_page(self._core, self.options.page, self._bridge))
            if self.options.popups and not self._core.state.direct:
                await self._pages.enable()
        except BaseException:
            self._stopped = True
            if self._core.protocol == "bidi" and self._bidi.session_id is not None:
                # Measured on Firefox ESR 153: the browser keeps the one BiDi session of
                # a connection that closed without session.end, and refuses every later
                # session.new ("Maximum number of active sessions"): a start that failed
                # after session.new ends what it made, or the browser is lost to cdpnb.
                with contextlib.suppress(CdpnbError):
                    await self._bidi.stop(leave=pages_left_open(self._core.state,
                                                                self._bidi.adopted))
            await self._core.close()
            if self.recorder is not None:
                self.recorder.close()
            raise

    async def _start_bidi(self) -> None:
        self._dialogs.send_native_answer = self._bidi.answer
        self._recovery.open_bidi_page = self._bidi.open_page
        self._use_bidi_bridge()
        if self.options.bypass_csp:
            self._hint("bypass_csp has no WebDriver BiDi equivalent: under a CSP that blocks "
                       "the bridge, dialogs fall back to native ones")
        self.browser_version = await self._bidi.start(page=self.options.page)
        self._adopted_page = self._bidi.adopted
        if self._bridge.enabled:
            assert self._bridge_reason is not None
            self._core.note("cdpnb.bridgeEnabled", {"reason": self._bridge_reason})
            await self._bridge.install_everywhere()

    def _use_bidi_bridge(self) -> None:
        """The same bridge (key, switch) answered over BiDi's network interception."""
        old = self._bridge
        bridge = BiDiDialogBridge(self._core, bypass_csp=False, key=old.key,
                                  script=old.recorded_script)
        bridge.enabled = old.enabled
        self._core.unrecorded = foreign_request
        self._unsubscribe_bridge()
        self._bridge = bridge
        for holder in (self._pages, self._dialogs, self._recovery, self._children):
            holder.bridge = bridge
        self._unsubscribe_bridge = self._core.subscribe(
            bridge, methods=["network.beforeRequestSent"], changes=BRIDGE_CHANGES, now=True)

    async def stop(self) -> None:
        """Close the page target this supervisor created and the connection. Idempotent."""
        self._warn_pending()
        if self._stopped:
            return
        self._stopped = True
        try:
            await engine.run(self._stop())
        finally:
            self._events.close()
        self._warn_pending()

    async def _stop(self) -> None:
        core = self._core
        # What the supervisor knew when asked to stop stays its state: closing its pages
        # is recorded in the trace, but a snapshot after stop shows the pages it had.
        self._last_state = core.state
        if self._reconnecting is not None:
            self._reconnecting.cancel()
        # Waits end before the pages close (closing one can open a beforeunload dialog).
        self._dialogs.stop_watchdogs()
        left = pages_left_open(core.state, self._adopted_page)  # not cdpnb's to close
        if core.connected and left:
            await let_go_of_dialogs(core.state, self._dialogs, left)
            self._last_state = core.state
        core.fail_waiters(SupervisorStopped(
            f"supervisor for {redact_url(self.url)} stopped while waiting"))
        if core.connected and core.protocol == "bidi":
            await self._bidi.stop(leave=left)
        elif core.connected:
            # Popups first (they were opened by our page), then our own page. A page
            # with a crash hazard is left open, frozen: closing it would end the browser.
            # Pages cdpnb did not create are left: closing the connection detaches them.
            pages = sorted((p for p in core.state.pages.values() if p.target_id not in left),
                           key=lambda p: p.main)
            for page in pages:
                try:
                    if page.hazard is not None:
                        await core.send("Page.setWebLifecycleState", {"state": "frozen"},
                                        session_id=page.session_id, timeout=2.0)
                        await core.send("Target.detachFromTarget",
                                        {"sessionId": page.session_id}, timeout=2.0)
                    else:
                        await core.send("Target.closeTarget", {"targetId": page.target_id},
                                        timeout=2.0)
                except (CDPError, CommandTimeout, ConnectionLost, TargetGone) as exc:
                    log.info("cdpnb: closing page target %s failed: %s", page.target_id, exc)
        await core.close()
        if self.recorder is not None:
            self.recorder.close()

    async def __aenter__(self) -> Supervisor:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def _hint(self, text: str) -> None:
        """Advice for the user: kept in ``hints``, and issued once as a CdpnbWarning at
        the user's next call (from their own thread and line, so ``warnings`` filters,
        ``catch_warnings`` and ``pytest.warns`` work as for any warning)."""
        with self._hint_lock:
            if text in self.hints:
                return
            self.hints.append(text)
            self._unwarned.append(text)

    def _warn_pending(self) -> None:
        with self._hint_lock:
            pending, self._unwarned = self._unwarned, []
        for text in pending:
            warnings.warn(text, CdpnbWarning, stacklevel=3)

    def _on_fast_remote(self, record: DialogRecord) -> None:
        """A native dialog closed by someone else within milliseconds: the browser's own
        closes (supersession, navigation, frame removal) are attributed to the browser
        by the reducers, so this one is an auto-dismissing client."""
        if self._bridge.enabled or is_replay_url(self._core.ws_url or ""):
            # A replay plays closes as fast as it is asked to: its timings are not a client's.
            return
        hint = (f"{record.id} ({record.type}) was closed by someone else {record.open_ms:.1f} ms "
                f"after it opened: a client on {redact_url(self.url)} auto-dismisses native "
                "dialogs (Playwright with no dialog handler, a cloud CDP proxy).")
        if self.options.bridge == "auto":
            hint += " The dialog bridge is now on; dialogs from here on are answered through it."
            self._bridge.switch_on("fast-remote-dismissal")
        else:
            hint += " Start the supervisor with bridge=True to answer them yourself."
        if not any("auto-dismisses native dialogs" in h for h in self.hints):
            self._hint(hint)

    def _on_changes(self, message: Message, changes: tuple[Change, ...]) -> None:
        for change in changes:
            if type(change) is PageHazard:
                assert isinstance(change, PageHazard)
                self._recovery.on_hazard(change.page)
            elif type(change) is PageClosed:
                assert isinstance(change, PageClosed)
                self._page_closed(change)
            elif (type(change) is PageOpened and not change.page.main
                  and self._core.protocol == "bidi" and self._bridge.enabled):
                # Over CDP the page attacher installs it; a BiDi popup is a new context.
                assert isinstance(change, PageOpened)
                self._core.spawn(self._bridge.install_everywhere(change.page.session_id),
                                 name="cdpnb-bridge-popup")

    def _page_closed(self, change: PageClosed) -> None:
        if not change.page.main or change.reason not in ("closed", "requested") \
                or self._stopped:
            return
        asked = change.reason == "requested"  # close_page(): no advice, it was asked for
        if self.options.reopen_page:
            if not asked:
                self._hint(f"the supervisor's page {change.page.target_id} was closed by "
                           "someone else; a fresh page replaces it (reopen_page=True).")
            reopen = (self._bidi.open_page() if self._core.protocol == "bidi" else
                      attach_page(self._core, bridge=self._bridge, pages=self._pages))
            self._core.spawn(reopen, name="cdpnb-reopen-page")
        elif not asked:
            self._hint(f"the supervisor's page {change.page.target_id} was closed by someone "
                       "else; calls on it raise TargetGone (start with reopen_page=True to "
                       "get a fresh page instead).")

    def _on_lost(self, reason: str, generation: int) -> None:
        if generation in self._attempts:
            # A connection a reconnect attempt opened and has not made good ends in that
            # attempt's hands (it fails, tries again or gives up), however late the news;
            # news come after the giving up must not change why the supervisor is down.
            if self._gave_up is not None:
                self._core.last_disconnect_reason = self._gave_up
            return
        self._dialogs.stop_watchdogs()  # the core has ended every wait already
        self._pages.reset()
        if self._stopped or self.options.reconnect_attempts == 0:
            if not self._stopped:
                self._events.end_streams()  # (no reconnect: nothing more will come)
            return
        target = self._core.state.page_target_id
        self._reconnecting = self._core.spawn(self._reconnect(target), name="cdpnb-reconnect")

    async def _reconnect(self, target_id: str | None) -> None:
        core = self._core
        dropped = core.last_disconnect_reason
        for attempt in range(self.options.reconnect_attempts):
            await asyncio.sleep(self.options.reconnect_backoff_s * 2**attempt)
            if self._stopped:
                return
            opened = 0  # (the connection this attempt opened, once it has)
            try:
                # Added in the same engine-loop step connect() returns in: the news of
                # its end, which comes on this loop, cannot come before.
                opened = await core.connect()
                self._attempts.add(opened)
                if core.protocol == "bidi":
                    await self._resume_bidi(target_id)
                else:
                    await attach_page(core, reuse_target_id=target_id, bridge=self._bridge,
                                      replace_wedged=target_id != self._adopted_page)
                    if self.options.popups and not core.state.direct:
                        await self._pages.enable()
            except SessionHeld as exc:
                await core.end_connection()
                self._give_up(f"{dropped}; {exc}")
                self._hint(str(exc))
                return
            except Exception as exc:  # any failure to set up: close what it opened
                log.info("cdpnb: reconnect %d to %s failed: %s: %s", attempt + 1,
                         redact_url(self.url), type(exc).__name__, exc)
                await core.end_connection()  # (opened, but not set up)
                core.last_disconnect_reason = dropped  # (not the attempt's own end)
                continue
            if not core.connected:
                # Lost again as its last reply landed: the loss's own news is this
                # attempt's business (its connection is one of _attempts): try again.
                log.info("cdpnb: reconnect %d to %s was lost as it finished", attempt + 1,
                         redact_url(self.url))
                continue
            self._attempts.discard(opened)  # made good: its loss is news from now on
            self.reconnects += 1
            core.stats["reconnects"] += 1
            log.info("cdpnb: reconnected to %s", redact_url(self.url))
            return
        self._give_up(f"{dropped}; gave up after {self.options.reconnect_attempts} "
                      "reconnect attempts")

    def _give_up(self, reason: str) -> None:
        self._gave_up = self._core.last_disconnect_reason = reason
        self._core.stats["reconnect-gave-up"] += 1
        self._events.end_streams()

    async def _resume_bidi(self, target_id: str | None) -> None:
        """A new BiDi session after a drop: its subscriptions, the bridge's intercept and
        preload scripts are new; the page is taken back when it is still there."""
        core = self._core
        await self._bidi.start(reuse_context=target_id)
        if target_id is not None and core.state.page_target_id != target_id:
            core.stats["page-replaced"] += 1
            self._hint(f"the supervisor's page {target_id} was gone after the connection "
                       "dropped (chromium-bidi starts a new browser for each connection): "
                       f"a new, blank tab {core.state.page_target_id} replaces it")
        if self._bridge.enabled:
            self._bridge.forget_sessions()
            await self._bridge.install_everywhere()

    async def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        try:
            self._warn_pending()
        except BaseException:  # warnings as errors: nothing ran
            coro.close()
            raise
        if self._stopped:
            coro.close()
            raise SupervisorStopped(f"supervisor for {redact_url(self.url)} is stopped")
        # On the caller's own loop: the core is thread-safe, and a command's reply wakes
        # this loop directly (one thread hop per round trip).
        try:
            return await coro
        except EvaluateError as exc:
            # The page's script threw: its message and JS stack are the error, and the
            # frames between here and where cdpnb read the reply would bury them.
            raise exc.with_traceback(None)  # noqa: B904 (a caller's context stays)
        finally:
            self._warn_pending()

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
        return not self._stopped and self._core.connected

    @property
    def stopped(self) -> bool:
        return self._stopped

    @property
    def alive(self) -> bool:
        """Connected (or still trying to reconnect) with its page there."""
        reconnecting = self._reconnecting is not None and not self._reconnecting.done()
        if self._core.state.page_gone is not None and not self.options.reopen_page:
            return False
        return not self._stopped and (self._core.connected or reconnecting)

    @property
    def page_target_id(self) -> str | None:
        return self.state.page_target_id

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
        """What the endpoint speaks: ``"cdp"`` or ``"bidi"`` (WebDriver BiDi)."""
        return self._core.protocol

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
        # Imported here: widgets are the notebook layer's, loaded only when asked for.
        from cdpnb.notebook.supervisor_view import SupervisorView

        return SupervisorView(self, refresh_s=refresh_s)

    def __repr__(self) -> str:
        state = "stopped" if self._stopped else ("connected" if self.connected else "down")
        return (f"<Supervisor {redact_url(self.url)} {state} policy={self.options.policy} "
                f"pending_dialogs={len(self.state.pending_dialogs)}>")

    # -- commands -------------------------------------------------------------------------

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
        self._require("cdp", "cdp()", "sup.bidi(method, params) sends a raw BiDi command")
        budget = self._budget(timeout)
        if sum((frame_id is not None, browser, session_id is not None)) > 1:
            raise ValueError("pass at most one of frame_id, browser=True and session_id")
        if session_id is not None and not isinstance(session_id, str):
            raise TypeError(f"session_id must be a str, got {type(session_id).__name__}")
        if not isinstance(method, str) or not method:
            raise TypeError(f"method must be a CDP method name such as 'Runtime.evaluate', "
                            f"got {method!r}")
        return await self._call(self._cdp(method, params, frame_id, budget, browser, session_id))

    async def bidi(self, method: str, params: dict[str, Any] | None = None,
                   timeout: float | None = None) -> dict[str, Any]:
        """Send a raw WebDriver BiDi command (``"browsingContext.print"``, ``"input.
        performActions"``, …) and return its ``result``. Name the browsing context in
        ``params``: a frame's context is its ``frame_id``, the page's is
        ``page_target_id``. Errors raise CDPError with the BiDi error name first."""
        self._require("bidi", "bidi()", "sup.cdp(method, params) sends a raw CDP command")
        if not isinstance(method, str) or "." not in method:
            raise TypeError(f"method must be a BiDi method name such as "
                            f"'browsingContext.navigate', got {method!r}")
        if params is not None and not isinstance(params, dict):
            raise TypeError(f"params must be a dict, got {type(params).__name__}")
        budget = self._budget(timeout)
        return await self._call(self._core.send(method, params, None, budget.seconds))

    def _require(self, protocol: str, call: str, instead: str) -> None:
        if self._core.protocol != protocol:
            names = {"cdp": "the Chrome DevTools Protocol", "bidi": "WebDriver BiDi"}
            raise ProtocolMismatch(f"{call} needs an endpoint that speaks {names[protocol]}; "
                                   f"{redact_url(self.url)} speaks "
                                   f"{names[self._core.protocol]} ({instead})")

    async def _cdp(self, method: str, params: dict[str, Any] | None, frame_id: str | None,
                   budget: Budget, browser: bool,
                   session_id: str | None) -> dict[str, Any]:
        if browser:
            session = None
        elif session_id is not None:
            session = session_id
        else:
            session = session_for_frame(self._core.state, frame_id)
        return await self._evaluator.send(method, params, session, budget)

    async def evaluate(
        self, expression: str, frame_id: str | None = None, timeout: float | None = None,
        *, await_promise: bool = True, user_gesture: bool = False,
    ) -> Any:
        """Evaluate ``expression`` in the page, an OOPIF or an in-process frame and
        return its value.

        Data comes back by value (``undefined`` as ``cdpnb.Undefined``, ``NaN``,
        ``-0``, ``±Infinity``, bigint as int); anything else (a DOM node, a function)
        as a :class:`~cdpnb.supervisor.values.RemoteObject`. A JavaScript exception
        raises EvaluateError with the JS message and stack. ``timeout`` (default: the
        supervisor's ``command_timeout_s``) bounds the whole call; a script still
        running then is ended and EvaluateTimeout raised, and the page stays usable.
        ``user_gesture`` makes the call count as a user activation.
        """
        if not isinstance(expression, str):
            raise TypeError(f"expression must be a str, got {type(expression).__name__}")
        budget = self._budget(timeout)
        _check_flag("await_promise", await_promise)
        _check_flag("user_gesture", user_gesture)
        if self._core.protocol == "bidi":
            return await self._call(self._bidi.evaluate(frame_id, expression, budget,
                                                        await_promise=await_promise,
                                                        user_gesture=user_gesture))
        return await self._call(self._evaluate(expression, frame_id, budget, await_promise,
                                               user_gesture))

    async def _evaluate(self, expression: str, frame_id: str | None, budget: Budget,
                        await_promise: bool, user_gesture: bool) -> Any:
        for attempt in (1, 2):
            session, context = await self._context(frame_id, budget)
            try:
                return await self._evaluator.evaluate(session, context, expression, budget,
                                                      await_promise=await_promise,
                                                      user_gesture=user_gesture)
            except CDPError as exc:
                # The frame navigated between the lookup and the call: nothing ran.
                if attempt == 2 or context is None or not context_gone(exc):
                    raise
                self._core.stats["evaluate-retries"] += 1
        raise AssertionError("unreachable")

    async def _context(self, frame_id: str | None,
                       budget: Budget) -> tuple[str | None, int | None]:
        try:
            return context_for_frame(self._core.state, frame_id)
        except FrameNotRoutable:
            # A frame that just committed gets its execution context a moment later.
            def ready(state: BrowserState) -> bool:
                try:
                    context_for_frame(state, frame_id)
                except (FrameNotRoutable, UnknownFrame):
                    return False
                return True

            with contextlib.suppress(TimeoutError):
                await self._core.wait_until(ready, min(CONTEXT_GRACE_S, budget.left()))
            return context_for_frame(self._core.state, frame_id)

    async def accessibility(self, frame_id: str | None = None,
                            timeout: float | None = None) -> pd.DataFrame:
        """The accessibility tree of every frame, OOPIFs included, as one DataFrame:
        ``ref``, ``role``, ``name``, ``frame_id``, ``backend_dom_node_id`` (empty where
        the mapping is missing or ambiguous), ``ignored``, ``depth``, … in document
        order. ``frame_id`` keeps that frame and the frames inside it; refs are the
        same as in the full table. Refs (``role:name``, ``#n`` for the n-th duplicate)
        are what ``evaluate_on`` and ``click`` take."""
        self._require("cdp", "accessibility()", "WebDriver BiDi has no accessibility tree; "
                      "evaluate() and bidi('input.performActions', ...) work over it")
        budget = self._budget(timeout)
        if frame_id is not None:
            frame_of(self._core.state, frame_id)
        return await self._call(self._accessibility(frame_id, budget))

    async def _accessibility(self, frame_id: str | None, budget: Budget) -> pd.DataFrame:
        snap = await self._take_ax_snapshot(budget)
        return to_frame(snap.for_frame(self._core.state, frame_id), snap.skipped)

    async def _take_ax_snapshot(self, budget: Budget) -> AXSnapshot:
        snap = await take_snapshot(self._core, budget)
        self._refs = snap.targets()
        self._core.stats["accessibility-snapshots"] += 1
        return snap

    async def _target(self, ref: str, budget: Budget) -> RefTarget:
        ref = make_ref(*parse_ref(ref))  # one spelling: 'button:OK#1' is 'button:OK'
        target = self._refs.get(ref)
        if target is None:
            # Refs are derived from the page, so one not seen yet may be there now. The
            # refs already handed out stay as they were: only the missing one is added.
            snap = await take_snapshot(self._core, budget)
            if snap.skipped:
                raise StaleRef(ref, "it is not in the last accessibility snapshot, and a "
                                    f"new one could not read every frame ({snap.skipped})")
            target = snap.targets().get(ref)
            if target is not None:
                self._refs[ref] = target
        if target is None:
            raise StaleRef(ref, "no element on the page has it now (sup.accessibility() "
                                "lists the refs there are)")
        return target

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
        self._require("cdp", "evaluate_on()", "refs come from CDP's accessibility tree")
        arguments = [call_argument(a, f"args[{i}]") for i, a in enumerate(args)]
        budget = self._budget(timeout)
        _check_flag("await_promise", await_promise)
        _check_flag("user_gesture", user_gesture)
        return await self._call(self._evaluate_on(ref, function, arguments, budget,
                                                  await_promise, user_gesture))

    async def _evaluate_on(self, ref: str | RemoteObject, function: str,
                           arguments: list[dict[str, Any]], budget: Budget,
                           await_promise: bool, user_gesture: bool) -> Any:
        if isinstance(ref, RemoteObject):
            assert ref.object_id is not None
            session, element = ref.session_id, ref.object_id
        else:
            target = await self._target(ref, budget)
            element = await resolve(self._core, target, budget, OBJECT_GROUP)
            session = target.session_id
        # The element goes in as the first argument; `this` is the element as well. The
        # newline ends a trailing `//` comment in the caller's source.
        wrapped = f"function (...a) {{ return ({function}\n).apply(this, [this, ...a]); }}"
        try:
            return await self._evaluator.call_on(session, element, wrapped, arguments, budget,
                                                 await_promise=await_promise,
                                                 user_gesture=user_gesture)
        finally:
            if not isinstance(ref, RemoteObject):  # the caller's own handle stays theirs
                self._evaluator.release(session, element)

    async def click(self, ref: str | None = None, *, selector: str | None = None,
                    x: float | None = None, y: float | None = None,
                    frame_id: str | None = None,
                    timeout: float | None = None) -> dict[str, Any]:
        """Click as a user would, on one of: the element behind ``ref`` (from
        ``accessibility()``, CDP only), the first element ``selector`` (CSS) matches in
        ``frame_id`` (the page by default; any frame of ``frame_tree()``), or the point
        ``x``, ``y`` (CSS pixels in ``frame_id``'s viewport). An element is scrolled into
        view and clicked at the centre of its box; the click is a real mouse move, press
        and release (a user activation, which ``beforeunload`` needs). It ends when the
        release is handled or a dialog it opened arrives, and returns ``ref`` /
        ``selector``, ``frame_id``, ``x``, ``y`` (where, in that frame's viewport) and
        ``dialog_id`` (None, or the dialog the click opened). NoSuchElement when the
        selector matches nothing; BlockedByDialog while a dialog is open in the page."""
        how = click_spec(ref, selector=selector, x=x, y=y, frame_id=frame_id)
        if how.ref is not None:
            self._require("cdp", "click(ref)", "refs come from CDP's accessibility tree; "
                          "click(selector=...) and click(x=..., y=...) work over it")
        budget = self._budget(timeout)
        return await self._call(self._click(how, budget))

    async def _click(self, how: ClickSpec, budget: Budget) -> dict[str, Any]:
        if self._core.protocol == "bidi":
            return await bidi_click(self._core, how, self._bidi.context_for(how.frame_id),
                                    budget)
        if how.ref is None:
            session, context = await self._context(how.frame_id, budget)
            return await click_in_frame(self._core, how, session, context, budget)
        target = await self._target(how.ref, budget)
        # Still the same element? The handle is only the proof; it is not kept.
        self._evaluator.release(target.session_id,
                                await resolve(self._core, target, budget, OBJECT_GROUP))
        return await click_ref(self._core, how, target, budget)

    async def release_objects(self) -> None:
        """Release every handle cdpnb's evaluate has kept (RemoteObjects it returned)
        in the page and every OOPIF; their ``object_id``s stop working. Over WebDriver
        BiDi evaluate keeps no handles, so there is nothing to release."""
        if self._core.protocol == "bidi":
            return
        await self._call(self._release_objects())

    async def _release_objects(self) -> None:
        state = self._core.state
        sessions = {state.page_session_id} | {f.session_id for f in state.frames.values()
                                              if f.is_oopif}
        sessions.discard(None)  # not connected to a page: nothing to release
        await asyncio.gather(*(self._evaluator.release_group(s, self.options.command_timeout_s)
                               for s in sessions), return_exceptions=True)

    def _budget(self, timeout: float | None) -> Budget:
        limit = check_timeout("timeout", timeout, allow_none=True)
        return Budget(self.options.command_timeout_s if limit is None else limit)

    async def navigate(self, url: str, timeout: float = 30.0, *,
                       frame_id: str | None = None) -> dict[str, Any]:
        """Navigate the supervisor's page to ``url`` and wait for its load event; with
        ``frame_id``, that frame alone (a child frame, an OOPIF, a popup's top frame),
        waiting for its new document's load. Dialogs the navigation would wait on are
        dismissed first (``closed_by="cdpnb"``, ``reason="navigation"``); a
        beforeunload dialog is left for you to answer. See
        ``cdpnb.supervisor.page_control``."""
        if not isinstance(url, str) or not url:
            raise TypeError(f"url must be a non-empty str, got {url!r}")
        limit = check_timeout("timeout", timeout)
        assert limit is not None
        if frame_id is not None and not isinstance(frame_id, str):
            raise TypeError(f"frame_id must be a str, got {type(frame_id).__name__}")
        return await self._call(self._page_control.navigate(url, frame_id, limit))

    async def reload(self, *, timeout: float = 30.0) -> dict[str, Any]:
        """Reload the supervisor's page and wait for the new document's load. A
        beforeunload dialog holds it as it holds a navigation (answer it from another
        task); dismissing it raises NavigationError and the page stays."""
        limit = check_timeout("timeout", timeout)
        assert limit is not None
        return await self._call(self._page_control.reload(limit))

    async def set_content(self, html: str, *, frame_id: str | None = None,
                          timeout: float = 30.0) -> dict[str, Any]:
        """Replace the document of the page (or of ``frame_id``) with ``html``, as
        Playwright's ``page.setContent`` (``document.open/write/close``), and wait for its
        load. A dialog the new content opens and the policy leaves to you ends the wait
        at once: ``{"frame_id", "loaded": False, "dialog_id"}`` (the document loads once
        it is answered); otherwise ``{"frame_id", "loaded": True, "dialog_id": None}``."""
        if not isinstance(html, str):
            raise TypeError(f"html must be a str, got {type(html).__name__}")
        limit = check_timeout("timeout", timeout)
        assert limit is not None
        if frame_id is not None and not isinstance(frame_id, str):
            raise TypeError(f"frame_id must be a str, got {type(frame_id).__name__}")
        return await self._call(self._page_control.set_content(html, frame_id, limit))

    async def close_page(self, page: str | None = None, *, run_beforeunload: bool = False,
                         timeout: float = 30.0) -> dict[str, Any]:
        """Close a supervised page: ``page`` is a target id from ``sup.pages`` (a popup's,
        or the supervisor's own), None the supervisor's own. At once, without
        beforeunload; or with ``run_beforeunload=True`` its beforeunload handler runs,
        and a beforeunload dialog it opens (after a user activation) ends the wait:
        ``respond("accept", dialog_id=...)`` closes the page, ``"dismiss"`` keeps it.
        Returns ``{"page", "closed", "dialog_id"}``. The close is yours: no "closed by
        someone else" hint; the supervisor's own page closed leaves ``alive`` False
        and calls raise TargetGone, unless ``reopen_page=True`` (a fresh page)."""
        if page is not None and not isinstance(page, str):
            raise TypeError(f"page must be a page target id (a str, see sup.pages) or None, "
                            f"got {page!r}")
        _check_flag("run_beforeunload", run_beforeunload)
        limit = check_timeout("timeout", timeout)
        assert limit is not None
        return await self._call(self._page_control.close_page(page, run_beforeunload, limit))

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
            return await self._call(self._core.wait_until(predicate, limit))
        except TimeoutError:
            name = getattr(predicate, "__name__", "the predicate")
            raise WaitTimeout(f"the state did not satisfy {name} within {limit:g} s") from None

    async def annotate(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Put a note of your own into the message stream (and the trace), e.g.
        ``await sup.annotate("experiment.phase", {"name": "warm-up"})``."""
        if not isinstance(method, str) or "." not in method or method.startswith("cdpnb."):
            raise ValueError(f"method must look like 'area.name' (not cdpnb.*), got {method!r}")
        if params is not None and not isinstance(params, dict):
            raise TypeError(f"params must be a dict, got {type(params).__name__}")
        await self._call(self._annotate(method, dict(params or {})))

    async def _annotate(self, method: str, params: dict[str, Any]) -> None:
        self._core.note(method, params)

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
        ``timeout`` bounds each wait for the next event (WaitTimeout); the stream ends
        when closed (``with``/``async with`` closes it) or when the supervisor stops.
        It holds up to ``buffer`` unread events (the oldest go, counted in
        ``dropped``)."""
        chosen = check_event_names(names)
        return self._events.stream(chosen, check_stream_timeout(timeout), check_buffer(buffer))

    async def _answer_event(self, dialog_id: str, accept: bool,
                            prompt_text: str | None) -> DialogRecord:
        return await self._dialogs.respond("accept" if accept else "dismiss", prompt_text,
                                           dialog_id)

    def _event_answer_failed(self, error: BaseException) -> None:
        self._hint(f"a dialog handler's answer failed and nobody awaited it: "
                   f"{type(error).__name__}: {error}")

    # -- dialogs --------------------------------------------------------------------------

    async def wait_for_dialog(self, timeout: float | None = None) -> PendingDialog:
        """The oldest open dialog, or the next one to open within ``timeout`` seconds."""
        return await self._call(self._dialogs.wait(timeout))

    async def respond(
        self, action: str, prompt_text: str | None = None, dialog_id: str | None = None
    ) -> DialogRecord:
        """Answer an open dialog: ``"accept"`` (with ``prompt_text`` for a prompt) or
        ``"dismiss"``. Returns the closed dialog's record."""
        return await self._call(self._dialogs.respond(action, prompt_text, dialog_id))
