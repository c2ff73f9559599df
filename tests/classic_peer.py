"""A scripted WebDriver classic server on loopback: a real HTTP peer whose one window's
dialog the test sets and swaps at will, so the races a browser only produces by timing
(a dialog replaced between cdpnb's poll and its answer, a dialog closed by someone else)
are played exactly."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from cdpnb.protocol.classic import FRAME_TREE_SCRIPT

WINDOW = "window-1"


class ClassicPeer:
    """One session, one window at ``http://fake.test/``; ``dialog`` is what its
    ``GET /alert/text`` shows (None: no dialog). Every request is kept in ``requests``,
    every answer in ``answers`` (``accept``/``dismiss``, the message, the text typed)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.dialog: str | None = None
        self.is_prompt = True
        self.typed: str | None = None
        self.answers: list[tuple[str, str, str | None]] = []
        self.requests: list[tuple[str, str]] = []
        #: ``execute/sync``'s value for an expression cdpnb evaluates (its first arg).
        self.evaluate: Callable[[Any], Any] = lambda expression: expression
        self.session_id = "session-1"
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def open(self, message: str, prompt: bool = True) -> None:
        with self.lock:
            self.dialog, self.is_prompt, self.typed = message, prompt, None

    def close_by_someone_else(self) -> None:
        with self.lock:
            self.dialog = None

    def _reply(self, method: str, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        with self.lock:
            self.requests.append((method, path))
            if path == "/status":
                return 200, {"ready": True, "message": "scripted"}
            if path == "/session" and method == "POST":
                return 200, {"sessionId": self.session_id, "capabilities": {
                    "browserName": "scripted", "browserVersion": "1.0",
                    "unhandledPromptBehavior": "ignore"}}
            prefix = f"/session/{self.session_id}"
            if not path.startswith(prefix):
                return 404, {"error": "invalid session id", "message": path}
            path = path[len(prefix):]
            if path == "" and method == "DELETE":
                return 200, None
            if path == "/alert/text" and method == "GET":
                return (200, self.dialog) if self.dialog is not None else (
                    404, {"error": "no such alert", "message": ""})
            if path.startswith("/alert/"):
                if self.dialog is None:
                    return 404, {"error": "no such alert", "message": ""}
                if path == "/alert/text":
                    if not self.is_prompt:
                        return 400, {"error": "element not interactable", "message": ""}
                    self.typed = body.get("text")
                    return 200, None
                self.answers.append((path.rsplit("/", 1)[1], self.dialog, self.typed))
                self.dialog = self.typed = None
                return 200, None
            if self.dialog is not None:
                return 500, {"error": "unexpected alert open", "message": "",
                             "data": {"text": self.dialog}}
            if path == "/window":
                return 200, WINDOW
            if path == "/window/handles":
                return 200, [WINDOW]
            if path == "/execute/sync":
                if body.get("script") == FRAME_TREE_SCRIPT:
                    return 200, ["http://fake.test/", 0, ""]
                args = body.get("args") or [None]
                return 200, self.evaluate(args[0])
            return 404, {"error": "unknown command", "message": f"{method} {path}"}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        peer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else {}
                status, value = peer._reply(self.command, self.path,
                                            body if isinstance(body, dict) else {})
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

    @contextmanager
    def serving(self) -> Iterator[ClassicPeer]:
        thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._server.shutdown()
            self._server.server_close()
            thread.join(5)
