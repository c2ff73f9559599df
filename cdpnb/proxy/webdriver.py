"""The proxy in front of a WebDriver server (chromedriver, WebKitWebDriver): the HTTP
side forwarded and recorded, so a client that makes its session over HTTP (Selenium 4
with ``webSocketUrl: true``) gets a WebDriver BiDi socket that runs through the proxy,
and the whole session replays with no server.

A WebDriver server's BiDi socket is not found by discovery: ``POST /session`` answers
with ``capabilities.webSocketUrl`` (chromedriver 156: ``ws://127.0.0.1:PORT/session/ID``).
Every request is forwarded to the server as it came (method, path, body), and that one
URL in the answer is rewritten to the proxy's relay, which records the BiDi session as
any other. The HTTP exchanges are recorded beside it (``run.webdriver.jsonl`` for
``run.jsonl``) as a cdpnb trace of their own: each request a command ``http.<METHOD>``
with ``{"path", "body"}``, each answer its reply ``{"status", "body"}``, so a replay
answers them as the playback script answers any command. HTTP/1.1 is read with h11
(sans-I/O, as the rest), keep-alive kept; the relay's Host/Origin rules refuse a web page.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import h11
import httpx

from cdpnb.playback.divergence import Divergence
from cdpnb.playback.script import MatchMode, ReplayScript
from cdpnb.protocol import Command, ErrorReply, Message, Reply
from cdpnb.trace.recorder import Recorder

__all__ = ["Forwarder", "HTTPReplay", "WebDriverFront", "rewrite_websocket_urls",
           "webdriver_path"]

log = logging.getLogger("cdpnb.proxy")

#: The largest request body forwarded (a WebDriver command; a file upload is bigger).
MAX_BODY_BYTES = 64 * 1024 * 1024
#: How long the server may take for one command (a navigation, a new session).
FORWARD_TIMEOUT_S = 120.0

#: (status, content type, body) of one HTTP answer.
Answer = tuple[int, str, bytes]
Answerer = Callable[[str, str, bytes], Awaitable[Answer]]


def webdriver_path(record: Path) -> Path:
    """Where a recording's WebDriver HTTP exchanges are: ``run.webdriver.jsonl`` beside
    ``run.jsonl`` (``run.webdriver.jsonl.gz`` beside ``run.jsonl.gz``)."""
    stem, dot, suffixes = record.name.partition(".")
    return record.with_name(f"{stem}.webdriver{dot}{suffixes}" if dot else f"{stem}.webdriver")


def rewrite_websocket_urls(value: Any, rewrite: Callable[[str], str]) -> Any:
    """``value`` with every ``webSocketUrl`` string passed through ``rewrite``."""
    if isinstance(value, dict):
        return {k: rewrite(v) if k == "webSocketUrl" and isinstance(v, str)
                else rewrite_websocket_urls(v, rewrite) for k, v in value.items()}
    if isinstance(value, list):
        return [rewrite_websocket_urls(v, rewrite) for v in value]
    return value


def _rewritten(data: bytes, content_type: str, rewrite: Callable[[str], str]) -> bytes:
    if "json" in content_type and b"webSocketUrl" in data:
        with contextlib.suppress(ValueError):
            return json.dumps(rewrite_websocket_urls(json.loads(data), rewrite)).encode()
    return data


def _body_value(body: bytes) -> Any:
    """A request or answer body as the trace holds it: its JSON, else its text."""
    if not body:
        return None
    try:
        return json.loads(body)
    except ValueError:
        return body.decode("utf-8", "replace")


class Forwarder:
    """Answers by asking the WebDriver server, recording each exchange."""

    def __init__(self, upstream: str, rewrite: Callable[[str], str],
                 recorder: Recorder | None) -> None:
        self.client = httpx.AsyncClient(base_url=upstream.rstrip("/"),
                                         timeout=FORWARD_TIMEOUT_S, trust_env=False)
        self.rewrite = rewrite
        self.recorder = recorder
        self._next_id = 0

    async def __call__(self, method: str, target: str, body: bytes) -> Answer:
        self._next_id += 1
        command = Command(self._next_id, f"http.{method}",
                          {"path": target, "body": _body_value(body)}, None, time.time(),
                          time.monotonic())
        self._record(command)
        try:
            response = await self.client.request(
                method, target, content=body,
                headers={"Content-Type": "application/json; charset=utf-8"} if body else {})
        except httpx.HTTPError as exc:
            text = f"cdpnb proxy: the WebDriver server did not answer: {exc}"
            self._record(ErrorReply(command.id, command.method, 502, text, None, None,
                                    command.params, time.time(), time.monotonic()))
            return 502, "text/plain", text.encode()
        kind = response.headers.get("content-type", "application/json")
        self._record(Reply(command.id, command.method,
                           {"status": response.status_code, "type": kind,
                            "body": _body_value(response.content)},
                           None, command.params, time.time(), time.monotonic()))
        return response.status_code, kind, _rewritten(response.content, kind, self.rewrite)

    def _record(self, message: Message) -> None:
        if self.recorder is not None:
            self.recorder(message)

    async def close(self) -> None:
        await self.client.aclose()
        if self.recorder is not None:
            self.recorder.close()


class HTTPReplay:
    """Answers from a recording of the exchanges (``Forwarder``'s), matched as the
    playback script matches commands; the first request it has no answer for is its
    ``divergence`` (and gets a 500 naming it, in WebDriver's error shape)."""

    def __init__(self, messages: list[Message], rewrite: Callable[[str], str],
                 match: MatchMode = "strict", recorded_url: str | None = None) -> None:
        self.script = ReplayScript(messages)
        self.matcher = self.script.matcher(match)
        self.rewrite = rewrite
        self.divergence: Divergence | None = None
        #: The recording proxy's URL, and this replay's (set once it listens): a client
        #: that writes the URL it talks to into a request (Selenium's se:remoteUrl)
        #: asked the recorded one.
        self.recorded_url = recorded_url
        self.own_url: str | None = None

    async def __call__(self, method: str, target: str, body: bytes) -> Answer:
        if self.recorded_url and self.own_url:
            body = body.replace(self.own_url.encode(), self.recorded_url.encode())
        params = {"path": target, "body": _body_value(body)}
        number = self.matcher.match(f"http.{method}", None, params)
        if number is not None:
            reply = self.script.steps[self.script.reply_of[number]].reply \
                if number in self.script.reply_of else None
            if isinstance(reply, Reply):
                result = reply.result
                kind = str(result.get("type", "application/json"))
                value = result.get("body")
                data = (json.dumps(value).encode() if not isinstance(value, str)
                        else value.encode())
                return int(result.get("status", 200)), kind, _rewritten(data, kind,
                                                                       self.rewrite)
        if self.divergence is None:
            self.divergence = Divergence(f"http.{method}", None, params,
                                         self.script.expected(self.matcher.used, 0))
        text = f"cdpnb replay: {self.divergence}"
        error = {"value": {"error": "unknown error", "message": text, "stacktrace": ""}}
        return 500, "application/json", json.dumps(error).encode()

    async def close(self) -> None:
        return


class WebDriverFront:
    """Listens on 127.0.0.1 and answers WebDriver HTTP with ``answer`` (a
    ``Forwarder`` or an ``HTTPReplay``); ``refuse(host, origin)`` says why a request is
    refused (None: served)."""

    def __init__(self, answer: Forwarder | HTTPReplay,
                 refuse: Callable[[str, str | None], str | None]) -> None:
        self.answer = answer
        self.refuse = refuse
        self.port = 0
        self.requests = 0
        self._server: asyncio.Server | None = None
        self._handlers: set[asyncio.Task[None]] = set()

    async def start(self) -> WebDriverFront:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._handlers):
            task.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None
        await self.answer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        connection = h11.Connection(h11.SERVER, max_incomplete_event_size=64 * 1024)
        try:
            while True:
                request, body = await self._read_request(connection, reader)
                if request is None:
                    return
                status, kind, data = await self._respond(request, body)
                response = h11.Response(status_code=status, headers=[
                    ("Content-Type", kind), ("Content-Length", str(len(data)))])
                writer.write(connection.send(response) + connection.send(h11.Data(data=data))
                             + connection.send(h11.EndOfMessage()))
                await writer.drain()
                if connection.our_state is h11.MUST_CLOSE:
                    return
                connection.start_next_cycle()
        except (h11.RemoteProtocolError, h11.LocalProtocolError, ConnectionError) as exc:
            log.debug("cdpnb proxy: a WebDriver client's connection ended: %s", exc)
        finally:
            self._handlers.discard(task)
            with contextlib.suppress(Exception):
                writer.close()

    async def _read_request(self, connection: h11.Connection, reader: asyncio.StreamReader
                            ) -> tuple[h11.Request | None, bytes]:
        request: h11.Request | None = None
        body = bytearray()
        while True:
            event = connection.next_event()
            if event is h11.NEED_DATA:
                data = await reader.read(65536)
                connection.receive_data(data)
                if not data and request is None:
                    return None, b""
                continue
            if isinstance(event, h11.Request):
                request = event
            elif isinstance(event, h11.Data):
                body += event.data
                if len(body) > MAX_BODY_BYTES:
                    raise h11.RemoteProtocolError("request body too large")
            elif isinstance(event, h11.EndOfMessage):
                return request, bytes(body)
            elif isinstance(event, h11.ConnectionClosed) or event is h11.PAUSED:
                return None, b""

    async def _respond(self, request: h11.Request, body: bytes) -> Answer:
        headers = {name.decode().lower(): value.decode("latin-1")
                   for name, value in request.headers}
        refused = self.refuse(headers.get("host", ""), headers.get("origin"))
        if refused is not None:
            return 403, "text/plain", refused.encode()
        self.requests += 1
        return await self.answer(request.method.decode(), request.target.decode(), body)
