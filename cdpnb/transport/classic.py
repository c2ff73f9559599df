"""A WebDriver classic session as a Transport: commands in, replies out, over HTTP.

The core writes ``{"id", "method": "classic.*", "params"}`` as it would to a WebSocket;
this transport runs the command's plan (``cdpnb.protocol.classic``: one or several HTTP
requests) on a worker thread and hands the reply back as a frame, so the core, the
recorder and replay treat classic like the other two protocols. Classic has no events:
nothing arrives that was not asked for.

Commands run one at a time, in the order sent, on one kept-alive connection: every
classic command acts on the session's one current window and frame, and servers take
them one at a time anyway (measured: WebKitWebDriver 2.50 answers a ``GET /alert/text``
sent during a navigation only once the load is done; and a poll that went in just
before a ``POST /url`` made that navigation's reply never come). Every request has a
timeout: measured on WebKitWebDriver 2.50, a prompt open in a window that is not the
current one wedges the session (every command hangs).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from cdpnb.errors import ConnectionLost, EndpointError
from cdpnb.protocol.classic import (
    ClassicFailure,
    Response,
    Session,
    error_message,
    reply_message,
)
from cdpnb.protocol.credentials import redact_url
from cdpnb.transport.webdriver_http import NewSession, WebDriverServer

__all__ = ["PROMPTS_IGNORED_CLASSIC", "ClassicTransport", "classic_capabilities"]

#: How long one HTTP request may take before the command fails (a navigation waits for
#: its load; a wedged session never answers).
REQUEST_TIMEOUT_S = 60.0

#: unhandledPromptBehavior as a string: WebKitWebDriver 2.50 refuses the map form
#: ("Invalid alwaysMatch capabilities"), chromedriver takes both.
PROMPTS_IGNORED_CLASSIC = "ignore"


def classic_capabilities(extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """What cdpnb's classic session asks for: every dialog left open for cdpnb."""
    return {"unhandledPromptBehavior": PROMPTS_IGNORED_CLASSIC, **(extra or {})}


class ClassicTransport:
    """One WebDriver classic session on ``server``, spoken to as a Transport."""

    protocol = "classic"

    def __init__(self, server: WebDriverServer, session: NewSession, *,
                 window: str | None = None) -> None:
        self.server = server
        self.session = session
        self.url = server.base_url
        self._prefix = f"/session/{session.session_id}"
        self._where = Session(window)
        self._deliver = threading.Lock()
        self._state = threading.Lock()
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="cdpnb-classic")
        self._on_frames: Callable[[Sequence[str | bytes]], None] | None = None
        self._on_closed: Callable[[str], None] | None = None
        self._early: list[str] = []
        self._closed = False
        self._told = False
        self._reason = "open"

    def __repr__(self) -> str:
        return (f"ClassicTransport({redact_url(self.url)!r}, "
                f"session={self.session.session_id!r})")

    # -- the seam ---------------------------------------------------------------------------

    def start(self, on_frames: Callable[[Sequence[str | bytes]], None],
              on_closed: Callable[[str], None]) -> None:
        with self._deliver:
            self._on_frames, self._on_closed = on_frames, on_closed
            early, self._early = self._early, []
            if early:
                on_frames(early)
        if self._closed:
            self._tell()

    def send(self, data: bytes) -> None:
        if self._closed:
            raise ConnectionLost(f"the WebDriver classic session at {redact_url(self.url)} "
                                 f"is closed ({self._reason})")
        command = json.loads(data)
        try:
            self._pool.submit(self._run, command)
        except RuntimeError:  # shut down meanwhile
            raise ConnectionLost(f"the WebDriver classic session at {redact_url(self.url)} "
                                 f"is closed ({self._reason})") from None

    def fail(self, code: int, reason: str) -> None:
        self._end(f"closed by cdpnb: {reason} (code {code})")

    def close(self) -> None:
        self._end("closed by cdpnb")
        self._pool.shutdown(wait=False, cancel_futures=True)
        self.server.close()

    @property
    def close_reason(self) -> str:
        return self._reason

    # -- the work ---------------------------------------------------------------------------

    def _run(self, command: dict[str, Any]) -> None:
        command_id = command.get("id")
        method = str(command.get("method", ""))
        params = command.get("params") or {}
        if not isinstance(command_id, int):
            return  # (the core numbers every command)
        try:
            result = self._drive(method, params)
            message = reply_message(command_id, result)
        except ClassicFailure as failure:
            message = error_message(command_id, failure)
        except EndpointError as exc:
            if self._closed:
                return
            # The server is gone, or did not answer in time (a wedged session): this
            # command fails; the connection lives on as long as the server answers.
            message = error_message(command_id, ClassicFailure(
                "timeout" if "no answer" in str(exc) else "unknown error", str(exc), 504))
        self._hand(json.dumps(message))

    def _drive(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        steps = self._where.plan(method, params)
        try:
            request = next(steps)
            while True:
                status, body = self.server.exchange(
                    request.method, self._prefix + request.path, request.body,
                    REQUEST_TIMEOUT_S)
                request = steps.send(Response(status, body))
        except StopIteration as done:
            result: dict[str, Any] = done.value
            return result

    def _hand(self, frame: str) -> None:
        with self._deliver:
            if self._closed:
                return
            if self._on_frames is None:
                self._early.append(frame)
                return
            self._on_frames([frame])

    def _end(self, reason: str) -> None:
        with self._state:
            if self._closed:
                return
            self._closed, self._reason = True, reason
        self._tell()

    def _tell(self) -> None:
        with self._state:
            if self._told or self._on_closed is None:
                return
            self._told = True
            on_closed = self._on_closed
        # After the last delivery: take the delivery lock once (never from inside it:
        # on_frames may call fail, which comes here on the same thread).
        if not self._deliver.acquire(blocking=False):
            threading.Thread(target=self._tell_later, args=(on_closed,), daemon=True).start()
            return
        self._deliver.release()
        on_closed(self._reason)

    def _tell_later(self, on_closed: Callable[[str], None]) -> None:
        with self._deliver:
            pass
        on_closed(self._reason)


async def connect_classic(url: str, timeout: float,
                          capabilities: dict[str, Any] | None = None) -> ClassicTransport:
    """A new classic session on the WebDriver server at ``url`` (EndpointError if it is
    none, or refuses the session)."""
    from cdpnb.runtime.threads import in_own_thread
    from cdpnb.transport.webdriver_http import WebDriverError

    server = WebDriverServer(url)

    def open_session() -> ClassicTransport:
        server.status(timeout)
        try:
            made = server.new_session(classic_capabilities(capabilities), max(timeout, 30.0))
        except WebDriverError as exc:
            raise EndpointError(f"{redact_url(url)} refused a WebDriver session: "
                                f"{exc}") from None
        window = server.request("GET", f"/session/{made.session_id}/window", None, timeout)
        return ClassicTransport(server, made, window=str(window))

    try:
        return await in_own_thread(open_session)
    except BaseException:
        server.close()
        raise
