"""A small MCP stdio client for chrome-devtools-mcp (npm, bundled in node_modules).

MCP over stdio is newline-delimited JSON-RPC 2.0: ``initialize`` (protocol version
``2025-06-18``), the ``notifications/initialized`` notification, then ``tools/list`` and
``tools/call {name, arguments}``. One reader task matches each reply to its request by
id; every wait is bounded; the server (one ``node`` process) is ended by its own pid.

The server is started so that it never reaches the network: usage statistics, update
checks, config discovery and the CrUX lookups are all off (``CI=1`` too).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SERVER = ROOT / "node_modules" / "chrome-devtools-mcp" / "build" / "src" / "bin" / \
    "chrome-devtools-mcp.js"
PROTOCOL_VERSION = "2025-06-18"
#: Environment that keeps the server off the network and away from the user's config.
QUIET_ENV = {"CHROME_DEVTOOLS_MCP_NO_USAGE_STATISTICS": "1",
             "CHROME_DEVTOOLS_MCP_NO_UPDATE_CHECKS": "1",
             "CHROME_DEVTOOLS_MCP_NO_CONFIG_DISCOVERY": "1", "CI": "1"}


class McpError(Exception):
    """A JSON-RPC error reply, or the server gone before it answered."""


@dataclass(frozen=True)
class ToolResult:
    """What a ``tools/call`` gave back: its text blocks joined, and whether the tool said
    it failed (``isError``: the call itself succeeded at the JSON-RPC level)."""

    text: str
    is_error: bool
    raw: dict[str, Any] = field(repr=False)

    def section(self, heading: str) -> str | None:
        """The lines under the markdown heading ``heading`` (any level: the server
        writes ``## Pages`` and ``# Open dialog``), up to the next heading; None if the
        text has no such heading."""
        lines = self.text.splitlines()
        starts = [i for i, line in enumerate(lines)
                  if line.startswith("#") and line.lstrip("#").strip() == heading]
        if not starts:
            return None
        start = starts[0] + 1
        end = next((i for i in range(start, len(lines)) if lines[i].startswith("#")),
                   len(lines))
        return "\n".join(lines[start:end]).strip()

    def pages(self) -> dict[int, str]:
        """The ``## Pages`` list, by page id: each line as the server wrote it after
        ``N:`` (``title (url) [selected]``)."""
        listed = self.section("Pages") or ""
        found: dict[int, str] = {}
        for line in listed.splitlines():
            number, sep, rest = line.partition(": ")
            if sep and number.isdigit():
                found[int(number)] = rest
        return found


class McpClient:
    """One chrome-devtools-mcp server over stdio. ``async with McpClient.start(url)``."""

    def __init__(self, process: asyncio.subprocess.Process, timeout: float) -> None:
        self.process = process
        self.timeout = timeout
        self._next_id = 0
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.notifications: list[dict[str, Any]] = []
        self._stderr = bytearray()
        self._reader = asyncio.create_task(self._read_stdout())
        self._drain = asyncio.create_task(self._read_stderr())
        self.server_info: dict[str, Any] = {}
        self.tools: list[dict[str, Any]] = []

    @classmethod
    async def start(cls, browser_url: str, *, node: str = "node", timeout: float = 60.0,
                    extra_args: tuple[str, ...] = ()) -> McpClient:
        """Start the server against ``browser_url`` (an ``http://`` discovery endpoint),
        initialize the MCP session and list the tools. The server connects to the browser
        lazily, at the first tool that needs it."""
        if not SERVER.is_file():
            raise FileNotFoundError(f"chrome-devtools-mcp is not installed at {SERVER} "
                                    "(run npm ci)")
        env = {k: v for k, v in os.environ.items() if k != "NODE_OPTIONS"}
        env.update(QUIET_ENV)
        process = await asyncio.create_subprocess_exec(
            node, str(SERVER), "--browserUrl", browser_url, "--no-usage-statistics",
            "--no-performance-crux", *extra_args, cwd=ROOT, env=env,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, limit=16 * 1024 * 1024)
        client = cls(process, timeout)
        try:
            client.server_info = await client.request("initialize", {
                "protocolVersion": PROTOCOL_VERSION, "capabilities": {},
                "clientInfo": {"name": "cdpnb-tests", "version": "1"}})
            await client.notify("notifications/initialized")
            client.tools = list((await client.request("tools/list"))["tools"])
        except BaseException:
            await client.close()
            raise
        return client

    @property
    def stderr(self) -> str:
        return self._stderr.decode(errors="replace")

    async def _read_stdout(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        try:
            while line := await stream.readline():
                try:
                    message = json.loads(line)
                except ValueError:
                    continue  # not ours to read (the server logs to stderr)
                if not isinstance(message, dict):
                    continue
                waiter = self._waiting.pop(message.get("id", -1), None) \
                    if "method" not in message else None
                if waiter is not None and not waiter.done():
                    waiter.set_result(message)
                elif "method" in message:
                    self.notifications.append(message)
        finally:
            gone = McpError(f"the MCP server ended (exit {self.process.returncode}); "
                            f"stderr: {self.stderr[-2000:]}")
            for waiter in self._waiting.values():
                if not waiter.done():
                    waiter.set_exception(gone)
            self._waiting.clear()

    async def _read_stderr(self) -> None:
        stream = self.process.stderr
        assert stream is not None
        while chunk := await stream.read(65536):
            self._stderr += chunk
            del self._stderr[:-200_000]  # the tail is what explains a failure

    async def _write(self, message: dict[str, Any]) -> None:
        stdin = self.process.stdin
        if stdin is None or stdin.is_closing():
            raise McpError("the MCP server's stdin is closed")
        stdin.write(json.dumps(message).encode() + b"\n")
        await stdin.drain()

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        await self._write({"jsonrpc": "2.0", "method": method, "params": params or {}})

    async def request(self, method: str, params: dict[str, Any] | None = None, *,
                      timeout: float | None = None) -> dict[str, Any]:
        """Send one request and wait (at most ``timeout``, else the client's) for its
        reply's ``result``; a JSON-RPC error raises McpError, a wait too long
        TimeoutError naming the method."""
        self._next_id += 1
        ident = self._next_id
        waiter: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[ident] = waiter
        await self._write({"jsonrpc": "2.0", "id": ident, "method": method,
                           "params": params or {}})
        limit = self.timeout if timeout is None else timeout
        try:
            reply = await asyncio.wait_for(waiter, limit)
        except TimeoutError:
            self._waiting.pop(ident, None)
            raise TimeoutError(f"MCP {method} {json.dumps(params)[:200]} had no reply in "
                               f"{limit} s") from None
        if "error" in reply:
            raise McpError(f"MCP {method} failed: {reply['error']}")
        result: dict[str, Any] = reply.get("result", {})
        return result

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None, *,
                        timeout: float | None = None) -> ToolResult:
        """``tools/call``: the tool's text and whether it reported an error."""
        result = await self.request("tools/call", {"name": name, "arguments": arguments or {}},
                                    timeout=timeout)
        text = "\n".join(str(block.get("text", "")) for block in result.get("content", [])
                         if isinstance(block, dict) and block.get("type") == "text")
        return ToolResult(text, bool(result.get("isError", False)), result)

    async def close(self, timeout: float = 10.0) -> int | None:
        """End the session: stdin closed (the server exits on EOF), then, if it has not
        within ``timeout``, the server ended by its pid. Returns its exit status."""
        stdin = self.process.stdin
        if stdin is not None and not stdin.is_closing():
            stdin.close()
        try:
            await asyncio.wait_for(self.process.wait(), timeout)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()  # this server only: SIGKILL to its own pid
            await asyncio.wait_for(self.process.wait(), timeout)
        for task in (self._reader, self._drain):
            try:
                await asyncio.wait_for(task, timeout)
            except TimeoutError:
                task.cancel()
        return self.process.returncode

    async def __aenter__(self) -> McpClient:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.close()
