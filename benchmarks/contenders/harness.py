"""The harness's side of the contenders (bench_contenders.py): who they are, how each
is started, woken and ended, and the pages they are given.

Each contender is a process of its own (contender.py or contender.mjs here), in its
own session and process group: one line in (``rtt K`` / ``dialog K``), one JSON line
out; ended at the end of its stdin, then by its group's id (its pid) if it lingers.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from websockets.asyncio.client import ClientConnection

__all__ = ["BIDI_CONTENDERS", "BIDI_REFERENCE", "CONTENDERS", "INGEST_CONTENDERS",
           "INGEST_REFERENCE", "MEMORY_CONTENDERS", "OPS", "OP_TITLES", "PEERS_PYTHON",
           "PUPPETEER", "REFERENCE", "STARTED", "Contender", "ContenderFailed", "Running",
           "Setup", "command_of", "end_group"]

HERE = Path(__file__).resolve().parent
BENCHMARKS = HERE.parent
CONTENDER_PY = HERE / "contender.py"
CONTENDER_MJS = HERE / "contender.mjs"
#: cdpnb's own venv: the one running this harness.
CDPNB_PYTHON = Path(sys.executable)
#: The peers' venv (``bash benchmarks/peers.sh``): cdp-use, pydoll, zendriver.
PEERS_PYTHON = Path(os.environ.get("CDPNB_PEERS_PYTHON",
                                   BENCHMARKS / ".peers" / "bin" / "python"))
PUPPETEER = BENCHMARKS.parent / "node_modules" / "puppeteer-core"
OPS = ("rtt", "dialog")
OP_TITLES = {"rtt": 'Runtime.evaluate {"expression": "1"} round trip',
             "dialog": 'alert("x"); 1 → seen, accepted, evaluate answered'}
START_TIMEOUT_S = 90.0
REPLY_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class Contender:
    name: str
    runtime: Literal["cdpnb", "peers", "node"]
    labels: dict[str, str]  # what it does for each operation it takes part in
    #: It attaches to every page of the browser, so it runs in a pass of its own
    #: beside a bare client of its own (see ``passes``).
    apart: bool = False


CONTENDERS = (
    Contender("bare", "cdpnb", {"rtt": "bare websockets (page socket)",
                                "dialog": "bare websockets"}),
    Contender("bare-session", "cdpnb", {"rtt": "bare websockets, flat session"}),
    Contender("bare-evaluate", "cdpnb", {"rtt": "bare, sup.evaluate's params"}),
    Contender("cdpnb", "cdpnb", {"rtt": "cdpnb async sup.cdp",
                                 "dialog": "cdpnb agent: wait_for_dialog+respond"}),
    Contender("cdpnb-sync", "cdpnb", {"rtt": "cdpnb.sync sup.cdp, main thread"}),
    Contender("cdpnb-evaluate", "cdpnb", {"rtt": "cdpnb async sup.evaluate('1')"}),
    Contender("cdpnb-policy", "cdpnb", {"dialog": "cdpnb policy auto_accept"}),
    Contender("cdpnb-handler", "cdpnb", {"dialog": "cdpnb sup.on('dialog') handler"}),
    Contender("cdpnb-sync-agent", "cdpnb", {"dialog": "cdpnb.sync agent, main thread"}),
    Contender("cdpnb-bridge", "cdpnb", {"dialog": "cdpnb bridge, auto_accept"}),
    Contender("puppeteer", "node", {"rtt": "Puppeteer CDPSession.send",
                                    "dialog": "Puppeteer page.on('dialog')"}),
    Contender("puppeteer-evaluate", "node", {"rtt": "Puppeteer page.evaluate('1')"}),
    Contender("playwright", "cdpnb", {"rtt": "Playwright CDPSession.send",
                                      "dialog": "Playwright page.on('dialog')"}, apart=True),
    Contender("cdp-use", "peers", {"rtt": "cdp-use send_raw"}),
    Contender("pydoll", "peers", {"rtt": "pydoll execute_command"}),
    Contender("zendriver", "peers", {"rtt": "zendriver tab.send"}),
)
REFERENCE = "bare"

#: ``--memory``: RSS of each one's process tree, idle and after N dialogs (headless-shell).
MEMORY_CONTENDERS = ("bare", "cdpnb-policy", "cdpnb", "puppeteer", "playwright")

#: ``--bidi``: ``script.evaluate`` of 1 on Firefox, each in a Firefox of its own
#: (more_libraries.py), every one beside a bare client of its own.
BIDI_CONTENDERS = (
    Contender("bare-bidi", "cdpnb", {"bidi": "bare websockets"}),
    Contender("cdpnb-bidi", "cdpnb", {"bidi": "cdpnb async sup.bidi"}),
    Contender("cdpnb-sync-bidi", "cdpnb", {"bidi": "cdpnb.sync sup.bidi, main thread"}),
    Contender("selenium-bidi", "peers", {"bidi": "Selenium Script.evaluate (its conn.)"}),
    Contender("cdpnb-bidi-evaluate", "cdpnb", {"bidi": "cdpnb async sup.evaluate('1')"}),
    Contender("bare-bidi-evaluate", "cdpnb", {"bidi": "bare, sup.evaluate's request"}),
    #: The control: a second bare client, so the table shows how far two Firefoxes
    #: alone set a pair apart.
    Contender("bare-bidi-control", "cdpnb", {"bidi": "bare websockets again (control)"}),
)
BIDI_REFERENCE = "bare-bidi"

#: ``--ingest``: events taken in from bench_cdp.py's stream server (more_libraries.py).
INGEST_CONTENDERS = (
    Contender("bare-ingest", "cdpnb", {"ingest": "bare websockets + json.loads"}),
    Contender("cdpnb-ingest", "cdpnb", {"ingest": "cdpnb core (not recording)"}),
    Contender("cdp-use-ingest", "peers", {"ingest": "cdp-use register.* handlers"}),
    Contender("pydoll-ingest", "peers", {"ingest": "pydoll register_callback"}),
)
INGEST_REFERENCE = "bare-ingest"


def command_of(contender: Contender, args: list[str]) -> list[str] | str:
    """The contender's command line, or why it cannot start here."""
    if contender.runtime == "node":
        node = shutil.which("node")
        if node is None:
            return "no node on PATH"
        if not PUPPETEER.is_dir():
            return f"no {PUPPETEER} (scripts/setup.sh runs npm ci)"
        return [node, str(CONTENDER_MJS), *args, contender.name]
    python = PEERS_PYTHON if contender.runtime == "peers" else CDPNB_PYTHON
    if not python.exists():
        return f"no peers environment at {python}: run bash benchmarks/peers.sh"
    return [str(python), str(CONTENDER_PY), contender.name, *args]


class ContenderFailed(Exception):
    pass


#: Process groups started and not yet ended (each contender leads its own): ended in
#: main()'s finally too, whatever stopped the run.
STARTED: set[int] = set()


def end_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


@dataclass
class Running:
    """A started contender: one line in, one JSON line out."""

    contender: Contender
    process: asyncio.subprocess.Process
    stderr: Path

    @classmethod
    async def start(cls, contender: Contender, args: list[str], logs: Path) -> Running | str:
        command = command_of(contender, args)
        if isinstance(command, str):
            return command
        stderr = logs / f"{contender.name}.stderr"
        with stderr.open("wb") as err:
            # Its own session and group: Playwright's driver and any child go with it,
            # and a Ctrl-C at the terminal reaches the harness only, which ends them.
            process = await asyncio.create_subprocess_exec(
                *command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=err, start_new_session=True, cwd=BENCHMARKS.parent)
        STARTED.add(process.pid)
        running = cls(contender, process, stderr)
        try:
            await running.read_line(lambda line: line == "ready", START_TIMEOUT_S)
        except ContenderFailed as failed:
            await running.end()
            return f"did not start: {failed}"
        return running

    def stderr_tail(self) -> str:
        lines = self.stderr.read_text(errors="replace").strip().splitlines()
        return " | ".join(lines[-3:])[-400:]

    async def read_line(self, wanted: Callable[[str], bool], timeout: float) -> str:
        """The next stdout line ``wanted`` accepts; lines a library prints are skipped."""
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout
        while True:
            try:
                raw = await asyncio.wait_for(self.process.stdout.readline(),
                                             max(0.0, deadline - time.monotonic()))
            except TimeoutError:
                raise ContenderFailed(f"no answer in {timeout:.0f} s") from None
            if not raw:
                raise ContenderFailed(f"exited ({self.stderr_tail() or 'no stderr'})")
            line = raw.decode(errors="replace").strip()
            if wanted(line):
                return line

    async def ask(self, op: str, count: int) -> list[float]:
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(f"{op} {count}\n".encode())
            await self.process.stdin.drain()
        except ConnectionError as gone:
            raise ContenderFailed(f"its stdin is closed ({gone})") from None
        line = await self.read_line(lambda text: text.startswith(("[", "{")),
                                    REPLY_TIMEOUT_S)
        try:
            answer = json.loads(line)
        except ValueError:
            raise ContenderFailed(f"not an answer: {line[:200]}") from None
        if isinstance(answer, dict):
            raise ContenderFailed(answer.get("error", line))
        if len(answer) != count:
            raise ContenderFailed(f"{len(answer)} durations for {count} operations")
        return [float(d) for d in answer]

    async def end(self) -> None:
        """End of stdin first (it closes its client), then its group by pid."""
        pid = self.process.pid
        if self.process.stdin is not None and not self.process.stdin.is_closing():
            self.process.stdin.close()
        for sig, grace in ((None, 10.0), (signal.SIGTERM, 3.0), (signal.SIGKILL, 3.0)):
            if sig is not None:
                end_group(pid, sig)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.process.wait(), grace)
                break
        end_group(pid, signal.SIGKILL)  # anything it started and left behind
        STARTED.discard(pid)


class Setup:
    """The harness's own connection to the browser, for opening and closing the
    contenders' pages before and after measuring (never while)."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    async def call(self, method: str, params: dict[str, Any] | None = None,
                   session: str | None = None) -> dict[str, Any]:
        self.next_id += 1
        message: dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        await self.ws.send(json.dumps(message))
        while True:
            reply = json.loads(await asyncio.wait_for(self.ws.recv(), 30))
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return dict(reply["result"])
            self.events.append(reply)

    async def open_page(self, url: str) -> str:
        """A new target at ``url``, loaded, the one tab of a window of its own; its id.

        Every page in the same state: on full chromium a dialog costs more in a tab that
        is shown than in one behind it (the bare client's ``dialog``: 7.2 ms in a window
        of its own, 3.4 ms in a background tab; 2026-11-26), and by default the target
        created last is the tab shown, every other one behind it."""
        target = (await self.call("Target.createTarget",
                                  {"url": "about:blank", "newWindow": True}))["targetId"]
        session = (await self.call("Target.attachToTarget",
                                   {"targetId": target, "flatten": True}))["sessionId"]
        await self.call("Page.enable", session=session)
        self.events.clear()
        await self.call("Page.navigate", {"url": url}, session=session)
        while not any(e.get("method") == "Page.loadEventFired"
                      and e.get("sessionId") == session for e in self.events):
            self.events.append(json.loads(await asyncio.wait_for(self.ws.recv(), 30)))
        await self.call("Target.detachFromTarget", {"sessionId": session})
        return str(target)


