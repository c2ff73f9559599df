"""A scripted WebDriver classic server on loopback: a real HTTP peer whose windows'
dialogs the test sets and swaps at will, so the races a browser only produces by timing
(a dialog replaced between cdpnb's poll and its answer, a dialog closed by someone else,
a dialog that opens in a window while another is the current one, a script that
returns at the dialog it opened) are played exactly.

It plays the two servers' measured ways (``cdpnb.supervisor.classic_driver``): windows
that share a renderer (``popup(shares_renderer=True)``) make every command in one of
them wait for the session's ``pageLoad`` timeout, then fail "timeout", while another
shows a dialog (chromedriver 156); with ``switch_hangs_on_dialog`` a switch to a window
that shows a dialog never answers (WebKitWebDriver 2.50)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from cdpnb.protocol.classic import EVALUATE_SCRIPT, FRAME_TREE_SCRIPT, READ_BACK_SCRIPT
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
        with self.lock:
            self.requests.append((method, path))
            own = path.removeprefix(f"/session/{self.session_id}") if path != "/session" \
                else path
            if (method, own) in self.misspoken:
                return self.misspoken[method, own]
            if path == "/status":
                return 200, {"ready": True, "message": "scripted"}
            if path == "/session" and method == "POST":
                return 200, {"sessionId": self.session_id, "capabilities": {
                    "browserName": self.browser_name, "browserVersion": "1.0",
                    "unhandledPromptBehavior": "ignore"}}
            prefix = f"/session/{self.session_id}"
            if not path.startswith(prefix):
                return 404, {"error": "invalid session id", "message": path}
            path = path[len(prefix):]
            if path == "" and method == "DELETE":
                return 200, None
            # Session commands: no window, no wait.
            if path == "/timeouts" and method == "POST":
                self.timeouts.update({k: v for k, v in body.items() if isinstance(v, int)})
                return 200, None
            if path == "/window/handles":
                return 200, list(self.windows)
            if path == "/window" and method == "GET":
                return (200, self.current) if self.current else (
                    404, {"error": "no such window", "message": ""})
            if path == "/window" and method == "POST":
                handle = body.get("handle")
                if handle not in self.windows:
                    return 404, {"error": "no such window", "message": str(handle)}
                if self.switch_hangs_on_dialog and self.dialogs.get(handle):
                    return 200, _Wait(None)
                self.current = handle
                return 200, None
            window = self.current
            if window is None:
                return 404, {"error": "no such window", "message": "the window was closed"}
            dialog = self.dialogs.get(window)
            if self._paused(window):
                self.paused.append(window)
                load = self.timeouts["pageLoad"] / 1000
                return 500, _Wait(load, 500, {
                    "error": "timeout",
                    "message": f"Timed out receiving message from renderer: {load:.3f}"})
            if path == "/alert/text" and method == "GET":
                return (200, dialog) if dialog is not None else (
                    404, {"error": "no such alert", "message": ""})
            if path.startswith("/alert/"):
                if dialog is None:
                    return 404, {"error": "no such alert", "message": ""}
                if path == "/alert/text":
                    if not self.is_prompt:
                        return 400, {"error": "element not interactable", "message": ""}
                    self.typed = body.get("text")
                    return 200, None
                verb = path.rsplit("/", 1)[1]
                self.answers.append((verb, dialog, self.typed))
                self._settle(window, verb)
                self.dialogs[window] = self.typed = None
                return 200, None
            if dialog is not None:
                return 500, {"error": "unexpected alert open", "message": "",
                             "data": {"text": dialog}}
            if path == "/window" and method == "DELETE":
                self.windows.remove(window)
                self.dialogs.pop(window, None)
                self.current = None
                return 200, list(self.windows)
            if path == "/execute/sync":
                script = body.get("script")
                args = body.get("args") or [None]
                if script == FRAME_TREE_SCRIPT:
                    return 200, ["http://fake.test/", 0, ""]
                if script == READ_BACK_SCRIPT:
                    if self.kept.get(args[0]) is None:
                        return 200, {"missing": True}
                    return 200, {"done": self.kept.pop(args[0])}
                value = self.evaluate(args[0])
                if script != EVALUATE_SCRIPT:
                    return 200, value
                if isinstance(value, Opens):  # returns at the dialog, as both servers do
                    self.dialogs[window], self.typed = value.message, None
                    self.is_prompt = value.kind == "prompt"
                    self.holding[window] = (str(args[1]), value.kind)
                    self.kept[str(args[1])] = None
                    return 200, None
                return 200, {"v": remote(value)}
            return 404, {"error": "unknown command", "message": f"{method} {path}"}

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
