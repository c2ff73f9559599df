"""What each Python contender does, with its library's own client (see contender.py).

A maker connects to the page it is given and returns the contender's operations:

- ``rtt``: ``Runtime.evaluate {"expression": "1"}`` on the page, the reply awaited;
- ``dialog``: the page runs ``alert("x"); 1`` (an evaluate of it), the library sees the
  dialog and accepts it, and the operation ends when the evaluate's reply is in hand
  (seen → answered → the page's JS continued).

Each library's imports are made in its maker: the cdpnb venv has cdpnb, websockets and
Playwright, the peers venv (``benchmarks/peers.sh``) cdp-use, pydoll and zendriver.
"""

from __future__ import annotations

import asyncio
import json
import queue
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:  # cdpnb's venv only; the peers' venv runs no cdpnb contender
    from cdpnb import Supervisor

__all__ = ["ALERT", "EVALUATE_AS_CDPNB_DOES", "EVALUATE_ONE", "AsyncContender",
           "SyncContender", "make_async", "make_sync", "page_socket"]

#: The round trip's command, identical for every contender.
EVALUATE_ONE = {"expression": "1"}
#: The dialog operation's page script: blocks in alert() until answered, then returns 1.
ALERT = 'alert("x"); 1'
#: What ``sup.evaluate("1")`` sends (read off its trace, cdpnb's default 30 s budget): the
#: same expression with the work it asks of the browser (deep serialisation, a promise
#: awaited, an object group, the in-page timeout). A bare client sending these is the
#: reference that leaves only cdpnb's own share of ``sup.evaluate``.
EVALUATE_AS_CDPNB_DOES = {"expression": "1", "awaitPromise": True, "objectGroup": "cdpnb",
                          "userGesture": False,
                          "serializationOptions": {"serialization": "deep", "maxDepth": 100},
                          "timeout": 29500}

AsyncOp = Callable[[], Awaitable[object]]


def nothing_to_check(op: str, count: int) -> None:
    return None


@dataclass
class AsyncContender:
    ops: dict[str, AsyncOp]
    close: Callable[[], Awaitable[object]]
    #: Called after each batch, outside the timing: raises if the batch did not do
    #: what it is said to (a dialog answered by someone else, say).
    verify: Callable[[str, int], None] = nothing_to_check


@dataclass
class SyncContender:
    ops: dict[str, Callable[[], object]]
    close: Callable[[], object] = field(default=lambda: None)


def page_socket(browser_url: str, target: str) -> str:
    """The page's own DevTools WebSocket beside the browser's."""
    return browser_url.split("/devtools/")[0] + f"/devtools/page/{target}"


class BareClient:
    """The reference: one ``websockets`` connection, json in and out, a reader task;
    a dialog event is answered from the reader at once (its reply is not waited for)."""

    def __init__(self, ws: Any, session: str | None = None) -> None:
        self.ws = ws
        self.session = session
        self.next_id = 0
        self.waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.answers: set[int] = set()  # ids of the dialog answers sent
        self.refused: list[str] = []  # what the browser said to an answer it refused
        self.reader = asyncio.ensure_future(self._read())

    @classmethod
    async def open(cls, url: str) -> BareClient:
        from websockets.asyncio.client import connect

        return cls(await connect(url, max_size=None, compression=None, ping_interval=None))

    async def _read(self) -> None:
        async for frame in self.ws:
            message = json.loads(frame)
            if "id" in message:
                future = self.waiting.pop(message["id"], None)
                if future is not None:
                    future.set_result(message)
                elif message["id"] in self.answers:
                    self.answers.discard(message["id"])
                    if "error" in message:
                        self.refused.append(str(message["error"]))
            elif message.get("method") == "Page.javascriptDialogOpening":
                self.next_id += 1
                self.answers.add(self.next_id)
                await self.ws.send(json.dumps({"id": self.next_id,
                                               "method": "Page.handleJavaScriptDialog",
                                               "params": {"accept": True}}))

    async def send(self, method: str, params: dict[str, Any] | None = None,
                   session: str | None = None) -> dict[str, Any]:
        self.next_id += 1
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.waiting[self.next_id] = future
        message: dict[str, Any] = {"id": self.next_id, "method": method,
                                   "params": params or {}}
        if session or self.session:
            message["sessionId"] = session or self.session
        await self.ws.send(json.dumps(message))
        reply = await future
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply

    def verify(self, op: str, count: int) -> None:
        if self.refused:
            raise RuntimeError(f"a dialog answer was refused: {self.refused[0]}")

    async def close(self) -> None:
        await self.ws.close()
        self.reader.cancel()


async def bare(browser_url: str, target: str, page_url: str) -> AsyncContender:
    client = await BareClient.open(page_socket(browser_url, target))
    await client.send("Page.enable")
    return AsyncContender(
        ops={"rtt": lambda: client.send("Runtime.evaluate", EVALUATE_ONE),
             "dialog": lambda: client.send("Runtime.evaluate", {"expression": ALERT})},
        close=client.close, verify=client.verify)


async def bare_session(browser_url: str, target: str, page_url: str,
                       params: dict[str, Any] = EVALUATE_ONE) -> AsyncContender:
    client = await BareClient.open(browser_url)
    attached = await client.send("Target.attachToTarget", {"targetId": target,
                                                           "flatten": True})
    client.session = attached["result"]["sessionId"]
    return AsyncContender(ops={"rtt": lambda: client.send("Runtime.evaluate", params)},
                          close=client.close)


async def bare_evaluate(browser_url: str, target: str, page_url: str) -> AsyncContender:
    """A bare client on a flat session (as cdpnb's) sending what ``sup.evaluate("1")``
    sends: ``cdpnb-evaluate`` ÷ this is cdpnb's own share, the browser's work alike."""
    return await bare_session(browser_url, target, page_url, EVALUATE_AS_CDPNB_DOES)


def closed_by(sup: Supervisor, expected: str, via: str) -> Callable[[str, int], None]:
    """A check that the batch's dialogs were closed by ``expected``, ``via`` as said."""

    def verify(op: str, count: int) -> None:
        if op != "dialog":
            return
        for record in sup.state.recent_dialogs[-count:]:
            if (record.closed_by, record.via) != (expected, via):
                raise RuntimeError(f"a dialog was closed by {record.closed_by!r} via "
                                   f"{record.via!r}, not by {expected!r} via {via!r}")

    return verify


async def cdpnb_agent(browser_url: str, target: str, page_url: str) -> AsyncContender:
    """cdpnb's async face; its dialogs left to the caller (``must_respond``), who waits
    for each and answers it by its id, as an agent does."""
    import cdpnb

    sup = await cdpnb.Supervisor.start(browser_url, page=target, policy="must_respond",
                                       bridge=False)

    async def answered_alert() -> object:
        evaluating = asyncio.ensure_future(sup.evaluate(ALERT, timeout=30))
        dialog = await sup.wait_for_dialog(timeout=30)
        await sup.respond("accept", dialog_id=dialog.id)
        return await evaluating

    return AsyncContender(ops={"rtt": lambda: sup.cdp("Runtime.evaluate", EVALUATE_ONE),
                               "dialog": answered_alert},
                          close=sup.stop, verify=closed_by(sup, "agent", "native"))


async def cdpnb_handler(browser_url: str, target: str, page_url: str) -> AsyncContender:
    """cdpnb's dialog handler, as Puppeteer's ``page.on('dialog')``: ``sup.on("dialog",
    ...)`` accepting each as it comes (``must_respond``: nothing else answers)."""
    import cdpnb

    sup = await cdpnb.Supervisor.start(browser_url, page=target, policy="must_respond",
                                       bridge=False)
    sup.on("dialog", lambda event: event.accept())
    return AsyncContender(ops={"dialog": lambda: sup.evaluate(ALERT, timeout=30)},
                          close=sup.stop, verify=closed_by(sup, "agent", "native"))


async def cdpnb_policy(browser_url: str, target: str, page_url: str,
                       bridge: bool = False) -> AsyncContender:
    """cdpnb answering every dialog itself (``auto_accept``), natively or by the bridge."""
    import cdpnb

    sup = await cdpnb.Supervisor.start(browser_url, page=target, policy="auto_accept",
                                       bridge=bridge)
    return AsyncContender(ops={"dialog": lambda: sup.evaluate(ALERT, timeout=30)},
                          close=sup.stop, verify=closed_by(sup, "auto_policy",
                                                           "bridge" if bridge else "native"))


async def cdpnb_evaluate(browser_url: str, target: str, page_url: str) -> AsyncContender:
    """What users call: ``sup.evaluate("1")`` (its context lookup, in-page timeout, deep
    serialisation, its ``cdpnb.evaluated`` note and the value decoded), beside
    ``sup.cdp`` of the same expression."""
    import cdpnb

    sup = await cdpnb.Supervisor.start(browser_url, page=target, bridge=False)
    return AsyncContender(ops={"rtt": lambda: sup.evaluate("1")}, close=sup.stop)


async def cdpnb_bridge(browser_url: str, target: str, page_url: str) -> AsyncContender:
    return await cdpnb_policy(browser_url, target, page_url, bridge=True)


async def playwright(browser_url: str, target: str, page_url: str) -> AsyncContender:
    from playwright.async_api import Dialog, async_playwright

    driver = await async_playwright().start()
    browser = await driver.chromium.connect_over_cdp(browser_url)
    page = next(p for c in browser.contexts for p in c.pages if p.url == page_url)
    context = page.context
    session = await context.new_cdp_session(page)

    async def accept(dialog: Dialog) -> None:
        await dialog.accept()

    # Playwright attaches to every page of the browser and dismisses a dialog on any
    # page nobody listens on: a listener on the context that leaves the other
    # contenders' dialogs alone keeps it out of their way.
    context.on("dialog", lambda dialog: None)
    page.on("dialog", accept)

    async def close() -> None:
        await session.detach()
        await browser.close()  # a browser connected over CDP: disconnects only
        await driver.stop()

    return AsyncContender(
        ops={"rtt": lambda: session.send("Runtime.evaluate", EVALUATE_ONE),
             "dialog": lambda: page.evaluate(ALERT)},
        close=close)


async def cdp_use(browser_url: str, target: str, page_url: str) -> AsyncContender:
    from cdp_use.client import CDPClient  # type: ignore[import-not-found]  # peers' env

    client = CDPClient(browser_url)
    await client.start()
    attached = await client.send_raw("Target.attachToTarget",
                                     {"targetId": target, "flatten": True})
    session = attached["sessionId"]
    return AsyncContender(
        ops={"rtt": lambda: client.send_raw("Runtime.evaluate", EVALUATE_ONE,
                                            session_id=session)},
        close=client.stop)


async def pydoll(browser_url: str, target: str, page_url: str) -> AsyncContender:
    from pydoll.connection.connection_handler import (  # type: ignore[import-not-found]
        ConnectionHandler,
    )

    handler = ConnectionHandler(ws_address=page_socket(browser_url, target))

    def rtt() -> Awaitable[object]:
        return handler.execute_command(  # type: ignore[no-any-return]
            {"method": "Runtime.evaluate", "params": EVALUATE_ONE})

    await rtt()  # connects
    return AsyncContender(ops={"rtt": rtt}, close=handler.close)


async def zendriver(browser_url: str, target: str, page_url: str) -> AsyncContender:
    import asyncio_atexit  # type: ignore[import-not-found]  # peers' env
    import zendriver  # type: ignore[import-not-found]
    from zendriver import cdp

    address = urlsplit(browser_url)
    browser = await zendriver.Browser.create(host=address.hostname, port=address.port)
    # zendriver closes the browser (Browser.close) when the loop closes; this browser is
    # the harness's, shared with the other contenders.
    asyncio_atexit.unregister(browser._atexit_cleanup)
    tab = next(t for t in browser.tabs if t.target_id == target)

    async def close() -> None:
        await tab.aclose()
        await browser.connection.aclose()

    return AsyncContender(
        ops={"rtt": lambda: tab.send(cdp.runtime.evaluate(expression="1"))}, close=close)


def cdpnb_sync(browser_url: str, target: str, page_url: str) -> SyncContender:
    """cdpnb's blocking face, called from the process's main thread (no loop running)."""
    import cdpnb.sync

    sup = cdpnb.sync.Supervisor.start(browser_url, page=target, bridge=False)
    return SyncContender(ops={"rtt": lambda: sup.cdp("Runtime.evaluate", EVALUATE_ONE)},
                         close=sup.stop)


def cdpnb_sync_agent(browser_url: str, target: str, page_url: str) -> SyncContender:
    """cdpnb's blocking face as an agent: the page's call blocks a worker thread (as a
    click that opens an alert blocks its caller), and the script's main thread waits
    for the dialog and answers it by its id."""
    import cdpnb.sync

    sup = cdpnb.sync.Supervisor.start(browser_url, page=target, policy="must_respond",
                                      bridge=False)
    jobs: queue.SimpleQueue[bool] = queue.SimpleQueue()
    results: queue.SimpleQueue[object] = queue.SimpleQueue()

    def evaluating() -> None:
        while jobs.get():
            try:
                results.put(sup.evaluate(ALERT, timeout=30))
            except BaseException as exc:  # handed to the main thread, raised there
                results.put(exc)

    worker = threading.Thread(target=evaluating, name="page-call", daemon=True)
    worker.start()

    def answered_alert() -> object:
        jobs.put(True)
        dialog = sup.wait_for_dialog(timeout=30)
        sup.respond("accept", dialog_id=dialog.id)
        value = results.get(timeout=30)
        if isinstance(value, BaseException):
            raise value
        return value

    def close() -> None:
        jobs.put(False)
        worker.join(5)
        sup.stop()

    return SyncContender(ops={"dialog": answered_alert}, close=close)


AsyncMaker = Callable[[str, str, str], Awaitable[AsyncContender]]

make_async: dict[str, AsyncMaker] = {
    "bare": bare, "bare-session": bare_session, "bare-evaluate": bare_evaluate,
    "cdpnb": cdpnb_agent,
    "cdpnb-evaluate": cdpnb_evaluate, "cdpnb-policy": cdpnb_policy,
    "cdpnb-handler": cdpnb_handler,
    "cdpnb-bridge": cdpnb_bridge, "playwright": playwright,
    "cdp-use": cdp_use, "pydoll": pydoll, "zendriver": zendriver,
}
make_sync: dict[str, Callable[[str, str, str], SyncContender]] = {
    "cdpnb-sync": cdpnb_sync, "cdpnb-sync-agent": cdpnb_sync_agent}
