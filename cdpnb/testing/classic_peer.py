"""A scripted WebDriver classic server on loopback: a real HTTP peer whose windows'
dialogs the test sets and swaps at will, so the races a browser only produces by timing
(a dialog replaced between cdpnb's poll and its answer, a dialog closed by someone else,
a dialog that opens in a window while another is the current one, a script that
returns at the dialog it opened) are played exactly.

It plays the two servers' measured ways (``cdpnb.drivers.classic.driver``): windows
that share a renderer (``popup(shares_renderer=True)``) make every command in one of
them wait for the session's ``pageLoad`` timeout, then fail "timeout", while another
shows a dialog (chromedriver 156); with ``switch_hangs_on_dialog`` a switch to a window
that shows a dialog never answers (WebKitWebDriver 2.50)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from cdpnb.protocol.classic import (
    EVALUATE_SCRIPT,
    FRAME_TREE_SCRIPT,
    READ_BACK_SCRIPT,
    TIME_ORIGIN_SCRIPT,
)
from cdpnb.protocol.js_values import Undefined

__all__ = ["WINDOW", "ClassicPeer", "Opens", "remote"]

WINDOW = "window-1"


@dataclass(frozen=True)
class Opens:
    """What ``ClassicPeer.evaluate`` gives for an expression whose script opens a dialog:
    ``execute/sync`` answers null at once (as both servers do), and the script's value
    (what the dialog call returned) is kept for the read back once it is answered."""

    message: str
    kind: Literal["alert", "confirm", "prompt"] = "prompt"


@dataclass(frozen=True)
class _Wait:
    """An answer given only after ``seconds`` (None: never, until the peer stops)."""

    seconds: float | None
    status: int = 500
    value: Any = None


@dataclass
class _Request:
    """A request on its way through ``_STAGES``: its path loses the session's prefix
    once in the session, and ``window`` is the current window once one is needed."""

    method: str
    path: str
    body: dict[str, Any]
    window: str = ""


_NO_ALERT: tuple[int, Any] = (404, {"error": "no such alert", "message": ""})


def remote(value: Any) -> dict[str, Any]:
    """``value`` in WebDriver BiDi's RemoteValue shape, as ``EVALUATE_SCRIPT`` says data."""
    if value is Undefined:
        return {"type": "undefined"}
    if value is None:
        return {"type": "null"}
    if isinstance(value, bool):
        return {"type": "boolean", "value": value}
    if isinstance(value, int | float):
        return {"type": "number", "value": value}
    if isinstance(value, str):
        return {"type": "string", "value": value}
    if isinstance(value, list):
        return {"type": "array", "value": [remote(v) for v in value]}
    return {"type": "object", "value": [[str(k), remote(v)] for k, v in value.items()]}


class ClassicPeer:
    """One session, one window at ``http://fake.test/``; ``dialog`` is what its
    ``GET /alert/text`` shows (None: no dialog). Every request is kept in ``requests``,
    every answer in ``answers`` (``accept``/``dismiss``, the message, the text typed)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        #: Each window's open dialog (None: none); ``dialog`` is the first window's.
        self.dialogs: dict[str, str | None] = {WINDOW: None}
        self.windows: list[str] = [WINDOW]
        self.current: str | None = WINDOW
        #: Groups of windows that share a renderer (see the module's doc).
        self.renderers: list[set[str]] = []
        #: As WebKitWebDriver 2.50: a switch to a window showing a dialog never answers.
        self.switch_hangs_on_dialog = False
        self.browser_name = "scripted"
        #: The session's timeouts as last set (ms).
        self.timeouts: dict[str, int] = {"script": 30_000, "pageLoad": 300_000}
        #: The windows whose commands waited on a renderer another window's dialog paused.
        self.paused: list[str] = []
        #: What evaluate calls that returned at a dialog kept (by key; None: not ended),
        #: and the call each window's dialog holds (window → (key, the dialog's kind)).
        self.kept: dict[str, Any] = {}
        self.holding: dict[str, tuple[str, str]] = {}
        self._stopping = threading.Event()
        self.is_prompt = True
        self.typed: str | None = None
        self.answers: list[tuple[str, str, str | None]] = []
        self.requests: list[tuple[str, str]] = []
        #: ``execute/sync``'s value for an expression cdpnb evaluates (its first arg).
        self.evaluate: Callable[[Any], Any] = lambda expression: expression
        self.session_id = "session-1"
        #: The top document's address (``GET /url``) and when it began (its
        #: ``performance.timeOrigin``, ms since the epoch): ``navigate_over_dialogs``.
        self.address = "http://fake.test/"
        self.time_origin_ms = time.time() * 1000
        #: Answers given instead of the W3C ones: (HTTP method, path, the session's prefix
        #: left out) → (status, value), for a server that speaks in the wrong shapes.
        self.misspoken: dict[tuple[str, str], tuple[int, Any]] = {}
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def dialog(self) -> str | None:
        return self.dialogs.get(WINDOW)

    @dialog.setter
    def dialog(self, message: str | None) -> None:
        self.dialogs[WINDOW] = message

    def open(self, message: str, prompt: bool = True, window: str = WINDOW) -> None:
        with self.lock:
            self.dialogs[window], self.is_prompt, self.typed = message, prompt, None

    def close_by_someone_else(self, window: str = WINDOW) -> None:
        with self.lock:
            self.dialogs[window] = None

    def navigate_over_dialogs(self, address: str | None = None) -> None:
        """The page navigates itself (``address``) or reloads (None) while one of its
        frames shows a dialog, which the browser closes with the document it leaves
        (chromedriver 156, measured)."""
        with self.lock:
            self.dialogs[WINDOW] = None
            self.address = address or self.address
            self.time_origin_ms = time.time() * 1000

    def popup(self, handle: str, *, shares_renderer: bool = True) -> None:
        """A new window (opened by the first): sharing its renderer, as a
        ``window.open`` popup does on Chromium."""
        with self.lock:
            self.windows.append(handle)
            self.dialogs[handle] = None
            if shares_renderer:
                self.renderers.append({WINDOW, handle})

    def _paused(self, window: str) -> bool:
        """Whether ``window``'s renderer is paused by another window's dialog."""
        return self.dialogs.get(window) is None and any(
            window in group and any(self.dialogs.get(w) for w in group if w != window)
            for group in self.renderers)

    def _settle(self, window: str, verb: str) -> None:
        """An evaluate call that returned at ``window``'s dialog ends as the dialog's
        answer lets it (a prompt returns the text, a confirm whether it was accepted)."""
        held = self.holding.pop(window, None)
        if held is None:
            return
        key, kind = held
        accepted = verb == "accept"
        value: Any = Undefined if kind == "alert" else accepted if kind == "confirm" else (
            (self.typed or "") if accepted else None)
        self.kept[key] = {"v": remote(value)}

    def _reply(self, method: str, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        """Walk ``_STAGES``: each stage's routes, then its guard (which refuses, or
        lets the request on to the next stage)."""
        with self.lock:
            self.requests.append((method, path))
            own = path.removeprefix(f"/session/{self.session_id}") if path != "/session" \
                else path
            if (method, own) in self.misspoken:
                return self.misspoken[method, own]
            request = _Request(method, path, body)
            for routes, guard in _STAGES:
                handler = _route(routes, request)
                if handler is not None:
                    return handler(self, request)
                refused = guard(self, request) if guard is not None else None
                if refused is not None:
                    return refused
            return 404, {"error": "unknown command", "message": f"{method} {request.path}"}

    # Server commands (the whole path).

    def _status(self, request: _Request) -> tuple[int, Any]:
        return 200, {"ready": True, "message": "scripted"}

    def _new_session(self, request: _Request) -> tuple[int, Any]:
        return 200, {"sessionId": self.session_id, "capabilities": {
            "browserName": self.browser_name, "browserVersion": "1.0",
            "unhandledPromptBehavior": "ignore"}}

    def _enter_session(self, request: _Request) -> tuple[int, Any] | None:
        """The guard into the session: its prefix, left out of the path from here on."""
        prefix = f"/session/{self.session_id}"
        if not request.path.startswith(prefix):
            return 404, {"error": "invalid session id", "message": request.path}
        request.path = request.path[len(prefix):]
        return None

    # Session commands: no window, no wait.

    def _end_session(self, request: _Request) -> tuple[int, Any]:
        return 200, None

    def _set_timeouts(self, request: _Request) -> tuple[int, Any]:
        self.timeouts.update({k: v for k, v in request.body.items() if isinstance(v, int)})
        return 200, None

    def _window_handles(self, request: _Request) -> tuple[int, Any]:
        return 200, list(self.windows)

    def _current_window(self, request: _Request) -> tuple[int, Any]:
        return (200, self.current) if self.current else (
            404, {"error": "no such window", "message": ""})

    def _switch_window(self, request: _Request) -> tuple[int, Any]:
        handle = request.body.get("handle")
        if handle not in self.windows:
            return 404, {"error": "no such window", "message": str(handle)}
        if self.switch_hangs_on_dialog and self.dialogs.get(handle):
            return 200, _Wait(None)
        self.current = handle
        return 200, None

    def _enter_window(self, request: _Request) -> tuple[int, Any] | None:
        """The guard into the current window: there is one, and its renderer is not
        paused by another window's dialog."""
        window = self.current
        if window is None:
            return 404, {"error": "no such window", "message": "the window was closed"}
        if self._paused(window):
            self.paused.append(window)
            load = self.timeouts["pageLoad"] / 1000
            return 500, _Wait(load, 500, {
                "error": "timeout",
                "message": f"Timed out receiving message from renderer: {load:.3f}"})
        request.window = window
        return None

    # Dialog commands.

    def _alert_text(self, request: _Request) -> tuple[int, Any]:
        dialog = self.dialogs.get(request.window)
        return (200, dialog) if dialog is not None else _NO_ALERT

    def _send_alert_text(self, request: _Request) -> tuple[int, Any]:
        if self.dialogs.get(request.window) is None:
            return _NO_ALERT
        if not self.is_prompt:
            return 400, {"error": "element not interactable", "message": ""}
        self.typed = request.body.get("text")
        return 200, None

    def _answer_alert(self, request: _Request) -> tuple[int, Any]:
        """``/alert/accept``, ``/alert/dismiss`` (the path's last part is the answer)."""
        window = request.window
        dialog = self.dialogs.get(window)
        if dialog is None:
            return _NO_ALERT
        verb = request.path.rsplit("/", 1)[1]
        self.answers.append((verb, dialog, self.typed))
        self._settle(window, verb)
        self.dialogs[window] = self.typed = None
        return 200, None

    def _no_dialog(self, request: _Request) -> tuple[int, Any] | None:
        """The guard into the page: a dialog open refuses every other command."""
        dialog = self.dialogs.get(request.window)
        if dialog is not None:
            return 500, {"error": "unexpected alert open", "message": "",
                         "data": {"text": dialog}}
        return None

    # Page commands.

    def _close_window(self, request: _Request) -> tuple[int, Any]:
        self.windows.remove(request.window)
        self.dialogs.pop(request.window, None)
        self.current = None
        return 200, list(self.windows)

    def _url(self, request: _Request) -> tuple[int, Any]:
        return 200, self.address

    def _to_top_frame(self, request: _Request) -> tuple[int, Any]:
        """One window, no frames: only the top frame (``id`` null) can be switched to."""
        if request.body.get("id") is not None:
            return 404, {"error": "no such frame", "message": "the peer has no frames"}
        return 200, None

    def _execute(self, request: _Request) -> tuple[int, Any]:
        script = request.body.get("script")
        args = request.body.get("args") or [None]
        if script == FRAME_TREE_SCRIPT:
            return 200, [self.address, 0, ""]
        if script == TIME_ORIGIN_SCRIPT:
            return 200, self.time_origin_ms
        if script == READ_BACK_SCRIPT:
            if self.kept.get(args[0]) is None:
                return 200, {"missing": True}
            return 200, {"done": self.kept.pop(args[0])}
        value = self.evaluate(args[0])
        if script != EVALUATE_SCRIPT:
            return 200, value
        if isinstance(value, Opens):  # returns at the dialog, as both servers do
            window = request.window
            self.dialogs[window], self.typed = value.message, None
            self.is_prompt = value.kind == "prompt"
            self.holding[window] = (str(args[1]), value.kind)
            self.kept[str(args[1])] = None
            return 200, None
        return 200, {"v": remote(value)}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        peer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self) -> None:
                if peer.dead:  # as a killed server: the connection ends unanswered
                    self.close_connection = True
                    return
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else {}
                status, value = peer._reply(self.command, self.path,
                                            body if isinstance(body, dict) else {})
                if isinstance(value, _Wait):  # (the lock is not held meanwhile)
                    if peer._stopping.wait(value.seconds):
                        return
                    value = value.value
                data = json.dumps({"value": value}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_DELETE = _answer

            def log_message(self, format: str, *args: object) -> None:
                pass

        return Handler

    dead = False

    def die(self) -> None:
        """As a server killed: nothing listens any more, and a connection kept alive
        ends at its next request, unanswered."""
        self.dead = True
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()

    @contextmanager
    def serving(self) -> Iterator[ClassicPeer]:
        thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._stopping.set()  # (an answer held back ends unanswered)
            self._server.shutdown()
            self._server.server_close()
            thread.join(5)


_Handler = Callable[[ClassicPeer, _Request], tuple[int, Any]]
_Guard = Callable[[ClassicPeer, _Request], tuple[int, Any] | None]
#: (HTTP method, None: any; path, a trailing ``*``: any path it begins) → handler.
_Routes = dict[tuple[str | None, str], _Handler]

#: What ``ClassicPeer._reply`` walks, in order: a stage's routes, then its guard (None:
#: none; past the last stage a request is an unknown command).
_STAGES: tuple[tuple[_Routes, _Guard | None], ...] = (
    ({(None, "/status"): ClassicPeer._status,
      ("POST", "/session"): ClassicPeer._new_session},
     ClassicPeer._enter_session),
    ({("DELETE", ""): ClassicPeer._end_session,
      ("POST", "/timeouts"): ClassicPeer._set_timeouts,
      (None, "/window/handles"): ClassicPeer._window_handles,
      ("GET", "/window"): ClassicPeer._current_window,
      ("POST", "/window"): ClassicPeer._switch_window},
     ClassicPeer._enter_window),
    ({("GET", "/alert/text"): ClassicPeer._alert_text,
      (None, "/alert/text"): ClassicPeer._send_alert_text,
      (None, "/alert/*"): ClassicPeer._answer_alert},
     ClassicPeer._no_dialog),
    ({("DELETE", "/window"): ClassicPeer._close_window,
      (None, "/execute/sync"): ClassicPeer._execute,
      ("GET", "/url"): ClassicPeer._url,
      ("POST", "/frame"): ClassicPeer._to_top_frame},
     None),
)


def _route(routes: _Routes, request: _Request) -> _Handler | None:
    """The handler for ``request`` in ``routes``: its method's, else any method's, else
    the first path pattern it begins with."""
    method, path = request.method, request.path
    found = routes.get((method, path)) or routes.get((None, path))
    if found is not None:
        return found
    return next((handler for (verb, pattern), handler in routes.items()
                 if pattern.endswith("*") and path.startswith(pattern[:-1])
                 and verb in (None, method)), None)
