"""Every exception cdpnb raises, in one place so users can catch by family."""

from __future__ import annotations

from typing import Any

__all__ = [
    "COMMAND_FAILURES",
    "BackendNotStarted",
    "BlockedByDialog",
    "BrowserNotFound",
    "BrowserStartError",
    "CDPError",
    "CdpnbError",
    "CdpnbWarning",
    "CommandTimeout",
    "ConnectionLost",
    "DialogError",
    "DialogNotAnswerable",
    "DialogResponseFailed",
    "ElementNotClickable",
    "EndpointError",
    "EvaluateError",
    "EvaluateTimeout",
    "FrameNotRoutable",
    "NavigationError",
    "NoPendingDialog",
    "NoSuchElement",
    "PageBlocked",
    "PicklesWhole",
    "ProtocolMismatch",
    "ReplayDiverged",
    "SeveralPendingDialogs",
    "StaleRef",
    "SupervisorStopped",
    "TargetGone",
    "UnknownDialog",
    "UnknownFrame",
    "UnknownPage",
    "WaitTimeout",
]


def _rebuilt(cls: type[BaseException], args: tuple[Any, ...]) -> BaseException:
    """An exception of ``cls`` holding ``args``, made without running ``__init__`` (its
    attributes follow from the pickled state)."""
    error = cls.__new__(cls, *args)
    # An OSError subclass with an __init__ of its own leaves args unset in __new__.
    error.args = args
    return error


class PicklesWhole(Exception):
    """An exception that pickles with its message and every attribute, whatever its
    ``__init__`` takes: errors cross Dask workers and processes.

    BaseException's own ``__reduce__`` calls ``cls(*self.args)``, i.e. ``__init__`` with
    the finished message only, which fails for an ``__init__`` with other required
    arguments (``NoSuchElement(message, selector=..., frame_id=...)``) and silently
    rebuilds different attributes for one whose arguments are positional with
    defaults. Rebuilding through ``__new__`` and the instance's ``__dict__`` needs no
    knowledge of any subclass's signature, so a new error class cannot get it wrong.
    """

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuilt, (type(self), self.args), dict(self.__dict__))


class CdpnbError(PicklesWhole):
    """Base class of every error raised by cdpnb."""


class CDPError(CdpnbError):
    """The browser answered a command with an ``error`` reply."""

    def __init__(
        self,
        code: int,
        message: str,
        method: str | None = None,
        session_id: str | None = None,
        data: Any = None,
    ) -> None:
        self.code = code
        self.message = message
        self.method = method
        self.session_id = session_id
        self.data = data
        where = f" on session {session_id}" if session_id else ""
        # A BiDi error's name is already the start of its message.
        bidi = isinstance(data, dict) and set(data) == {"error"}
        detail = f" ({data})" if data and not bidi else ""
        name = method or "<unknown method>"
        super().__init__(f"{name}{where} failed: [{code}] {message}{detail}")


class BackendNotStarted(CdpnbError, RuntimeError):
    """A backend's endpoint was asked for before the backend was started (or after it
    was closed): ``backend = await cdpnb.launch(kind)``, or use it in a ``with`` block."""


class CommandTimeout(CdpnbError, TimeoutError):
    """No reply arrived within the command's timeout."""


class WaitTimeout(CdpnbError, TimeoutError):
    """Something awaited (a dialog, a load) did not happen in time."""


class ConnectionLost(CdpnbError, ConnectionError):
    """The CDP WebSocket closed; calls in flight fail with this at once."""


class SupervisorStopped(CdpnbError):
    """The supervisor was stopped (or never connected); it takes no more calls."""


class EndpointError(CdpnbError, ConnectionError):
    """A CDP endpoint could not be resolved or reached."""


class ReplayDiverged(CdpnbError, AssertionError):
    """A client replayed against a recording (``cdpnb.proxy(replay=...)``) sent a
    command the recording has no answer for; the message names the first divergence:
    the command received, the one recorded at that point, and what differs."""


class BrowserNotFound(CdpnbError, FileNotFoundError):
    """The browser binary is missing; the message names the package to install."""


class BrowserStartError(CdpnbError, RuntimeError):
    """The browser process started but did not expose a DevTools endpoint."""


class NavigationError(CdpnbError):
    """``Page.navigate`` reported an error (``errorText``), e.g. ``net::ERR_ABORTED``."""


class EvaluateError(CdpnbError):
    """JavaScript run by ``evaluate`` threw; carries the JS message and stack."""

    def __init__(self, message: str, stack: str | None = None) -> None:
        self.js_message = message
        self.stack = stack
        super().__init__(message if not stack else f"{message}\n{stack}")


class EvaluateTimeout(CommandTimeout):
    """Script run by ``evaluate``/``evaluate_on`` (or a script-running ``cdp`` command)
    outlived its budget. It is a CommandTimeout, so one ``except`` catches both.

    ``ended_by`` says what stopped it: ``"in-page timeout"`` (Runtime.evaluate's own
    ``timeout``), ``"terminateExecution"`` (sent when no reply came),
    ``"not terminated"`` (the script waits on an open dialog, which is not a hang),
    ``"terminate failed"``, or ``"not sent"`` (the budget went on the context wait).
    """

    def __init__(self, message: str, *, budget: float, elapsed: float, ended_by: str,
                 session_id: str | None = None) -> None:
        self.budget = budget
        self.elapsed = elapsed
        self.ended_by = ended_by
        self.session_id = session_id
        super().__init__(message)


class TargetGone(CdpnbError):
    """The target a command went to ended before it replied: an OOPIF removed or
    navigated to another process, a closed page, a crashed renderer. No reply will
    come, so the call fails at once instead of at its timeout."""


class StaleRef(CdpnbError, LookupError):
    """An accessibility ref that names no element now (unknown, or its node is gone)."""

    def __init__(self, ref: str, why: str) -> None:
        self.ref = ref
        self.why = why
        super().__init__(f"ref {ref!r} is stale: {why}")


class ElementNotClickable(CdpnbError):
    """The element behind a ref exists but has no box to click (hidden, zero size)."""


class NoSuchElement(CdpnbError, LookupError):
    """No element matches ``selector`` in frame ``frame_id`` (the page's top frame when
    none was named); Puppeteer's "No element found for selector"."""

    def __init__(self, message: str, *, selector: str, frame_id: str | None) -> None:
        self.selector = selector
        self.frame_id = frame_id
        super().__init__(message)


class BlockedByDialog(CdpnbError):
    """A dialog open in the page holds what was asked (WebDriver's "unexpected alert
    open"): a click while one is open would be dropped or left waiting by the browser.
    Answer it with ``respond(dialog_id=...)`` first; ``dialog_id`` names it."""

    def __init__(self, message: str, *, dialog_id: str) -> None:
        self.dialog_id = dialog_id
        super().__init__(message)


class UnknownFrame(CdpnbError, LookupError):
    """A frame id that is not in the supervisor's frame tree."""


class UnknownPage(UnknownFrame):
    """``Supervisor.start(page=...)`` or ``close_page(...)`` named a page there is not;
    ``existing`` lists the page target (or top-level browsing context) ids there are.
    (A page is its top frame: ``except UnknownFrame`` catches it too.)"""

    def __init__(self, message: str, *, page: str, existing: tuple[str, ...]) -> None:
        self.page = page
        self.existing = existing
        super().__init__(message)


class PageBlocked(CdpnbError):
    """The existing page ``target_id`` does not answer: its renderer is blocked, by a
    JavaScript dialog that opened before cdpnb attached (which a CDP session attached
    later can neither see nor answer) or by a script that never yields. cdpnb left the
    page as it was."""

    def __init__(self, message: str, *, target_id: str) -> None:
        self.target_id = target_id
        super().__init__(message)


class FrameNotRoutable(CdpnbError):
    """A frame that lives in its parent's process has no CDP session of its own."""


class DialogError(CdpnbError):
    """Base class for errors answering a dialog."""


class NoPendingDialog(DialogError):
    """``respond`` was called while no dialog is open."""


class SeveralPendingDialogs(DialogError):
    """Several dialogs are open and no ``dialog_id`` says which one to answer."""


class UnknownDialog(DialogError, LookupError):
    """``dialog_id`` names no pending dialog."""


class DialogResponseFailed(DialogError):
    """``Page.handleJavaScriptDialog`` failed, or the browser gave the answer to another
    dialog; the dialog named was not answered by us."""


class DialogNotAnswerable(DialogError):
    """The browser cannot answer this dialog (it holds the page's one dialog handle for
    another, or lost it); cdpnb never sends an answer that could reach another frame.
    ``answerable`` names the dialog the browser would answer instead, if any."""

    def __init__(self, message: str, *, dialog_id: str, reason: str,
                 answerable: str | None = None) -> None:
        self.dialog_id = dialog_id
        self.reason = reason
        self.answerable = answerable
        super().__init__(message)


class ProtocolMismatch(CdpnbError, TypeError):
    """A call the endpoint's protocol cannot carry: ``cdp()`` on a WebDriver BiDi
    endpoint, ``bidi()`` on a CDP one, or a CDP-only feature (the accessibility tree)
    over BiDi. The message says what to use instead."""


class CdpnbWarning(UserWarning):
    """Advice about the endpoint or the page (an auto-dismissing client, a page the
    browser would crash on, a page cdpnb replaced). Filter it with ``warnings``;
    ``Supervisor.hints`` keeps every one."""


#: How a command to a browser ends in the browser's ordinary life (an error reply, no
#: reply in time, the connection or the target gone): what clean-up and best-effort
#: work (closing a page, releasing a dialog) catches and logs, never more.
COMMAND_FAILURES = (CDPError, CommandTimeout, ConnectionLost, TargetGone)
