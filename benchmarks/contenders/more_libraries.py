"""The contenders of bench_contenders.py's WebDriver BiDi and event-ingest measures,
each with its library's own client (see contender.py for the contract).

- ``bidi`` (``contender.py LIBRARY BIDI_WS_URL``): the contender opens a BiDi session of
  its own on the Firefox at BIDI_WS_URL (Firefox takes one session at a time, so each
  contender is given a Firefox of its own), a tab of its own, and each operation is a
  ``script.evaluate`` of ``1`` there (``awaitPromise`` false), the reply awaited.
- ``ingest`` (``contender.py LIBRARY STREAM_WS_URL COUNT``): each operation connects to
  bench_cdp.py's stream server (a plain WebSocket that sends COUNT CDP-shaped events,
  ``Runtime.consoleAPICalled`` and ``Network.requestWillBeSent``, as fast as the socket
  takes them), takes them in with the library's own event handling until COUNT have
  reached the handler, and closes.
- ``burst`` (``contender.py bare-burst BROWSER_WS_URL TARGET_ID PAGE_URL COUNT``,
  bench_proxy.py): a bare client on the page's socket, ``Runtime.enable`` on; each
  operation evaluates a loop of COUNT ``console.log`` calls and ends when COUNT
  ``Runtime.consoleAPICalled`` events and the reply are in hand, each frame parsed.

Imports are made in each maker: the cdpnb venv has cdpnb, websockets and bench_cdp.py's
imports; the peers' venv (``benchmarks/peers.sh``) cdp-use, pydoll and Selenium.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from libraries import AsyncContender, BareClient, SyncContender, page_socket

__all__ = ["more_async", "more_sync"]

BENCHMARKS = Path(__file__).resolve().parent.parent


def evaluate_one(context: str | None) -> dict[str, Any]:
    """The BiDi round trip's command, identical for every contender."""
    if context is None:
        raise RuntimeError("no browsing context to evaluate in")
    return {"expression": "1", "target": {"context": context}, "awaitPromise": False}


#: What ``sup.evaluate("1")`` sends over BiDi (``cdpnb/drivers/bidi/session.py``, read off
#: its trace): a promise awaited, no result ownership, no user activation, deep
#: serialisation without DOM nodes. A bare client sending these is the reference that
#: leaves only cdpnb's own share of ``sup.evaluate`` on BiDi.
def evaluate_as_cdpnb_does(context: str | None) -> dict[str, Any]:
    return {**evaluate_one(context), "awaitPromise": True, "resultOwnership": "none",
            "userActivation": False,
            "serializationOptions": {"maxObjectDepth": 100, "maxDomDepth": 0}}


async def nothing() -> None:
    return None


# -- WebDriver BiDi ----------------------------------------------------------------------


async def bare_bidi(url: str) -> AsyncContender:
    """The reference: a bare ``websockets`` client, json in and out, a reader task."""
    return await _bare_bidi(url, evaluate_one)


async def bare_bidi_evaluate(url: str) -> AsyncContender:
    """A bare client sending what ``sup.evaluate("1")`` sends: ``cdpnb-bidi-evaluate``
    ÷ this is cdpnb's own share, the browser's work alike."""
    return await _bare_bidi(url, evaluate_as_cdpnb_does)


async def _bare_bidi(url: str, params_of: Callable[[str | None], dict[str, Any]]
                     ) -> AsyncContender:
    client = await BareClient.open(url)
    await client.send("session.new", {"capabilities": {}})
    context = (await client.send("browsingContext.create", {"type": "tab"}))["result"]
    params = params_of(context["context"])

    async def close() -> None:
        await client.send("session.end")
        await client.close()

    return AsyncContender(ops={"bidi": lambda: client.send("script.evaluate", params)},
                          close=close)


async def cdpnb_bidi_evaluate(url: str) -> AsyncContender:
    """What users call: ``sup.evaluate("1")`` on its own page, the value decoded."""
    import cdpnb

    sup = await cdpnb.Supervisor.start(url, bridge=False)

    async def evaluate() -> object:
        value = await sup.evaluate("1")
        if value != 1:
            raise RuntimeError(f"sup.evaluate('1') gave {value!r}")
        return value

    return AsyncContender(ops={"bidi": evaluate}, close=sup.stop)


async def cdpnb_bidi(url: str) -> AsyncContender:
    """cdpnb's async face: ``sup.bidi``, README's raw BiDi command, on its own page."""
    import cdpnb

    sup = await cdpnb.Supervisor.start(url, bridge=False)
    params = evaluate_one(sup.page_target_id)
    return AsyncContender(ops={"bidi": lambda: sup.bidi("script.evaluate", params)},
                          close=sup.stop)


def cdpnb_sync_bidi(url: str) -> SyncContender:
    """cdpnb's blocking face from the process's main thread (no loop running)."""
    import cdpnb.sync

    sup = cdpnb.sync.Supervisor.start(url, bridge=False)
    params = evaluate_one(sup.page_target_id)
    return SyncContender(ops={"bidi": lambda: sup.bidi("script.evaluate", params)},
                         close=sup.stop)


def selenium_bidi(url: str) -> SyncContender:
    """Selenium's own BiDi client (4.52: ``WebSocketConnection``, a websocket-client
    reader thread, and the generated ``Session`` / ``BrowsingContext`` / ``Script``
    modules ``driver.script`` uses) on a Firefox it did not start: its connection takes
    any BiDi WebSocket URL, and the session is opened over BiDi (``session.new``), as
    Firefox's own endpoint wants, where a driver would have asked geckodriver."""
    from selenium.webdriver.common.bidi.browsing_context import (  # type: ignore[import-not-found]  # peers' env
        BrowsingContext,
    )
    from selenium.webdriver.common.bidi.script import (  # type: ignore[import-not-found]
        Script,
    )
    from selenium.webdriver.common.bidi.session import (  # type: ignore[import-not-found]
        Session,
    )
    from selenium.webdriver.remote.websocket_connection import (  # type: ignore[import-not-found]
        WebSocketConnection,
    )

    connection = WebSocketConnection(url, 30)
    session = Session(connection)
    session.new(capabilities={})
    target = {"context": BrowsingContext(connection).create(type="tab")}
    script = Script(connection)

    def close() -> None:
        session.end()
        connection.close()

    return SyncContender(ops={"bidi": lambda: script.evaluate("1", target, False)},
                         close=close)


# -- event ingest ------------------------------------------------------------------------


def bench_cdp_module() -> Any:
    """bench_cdp.py, whose bare loop and cdpnb ingest are the ones measured there."""
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    import bench_cdp

    return bench_cdp


async def bare_ingest(url: str, count: str) -> AsyncContender:
    """bench_cdp.py's reference: ``async for`` over a ``websockets`` client, ``json.loads``."""
    ingest_bare: Callable[[str, int], Awaitable[float]] = bench_cdp_module().ingest_bare
    return AsyncContender(ops={"ingest": lambda: ingest_bare(url, int(count))}, close=nothing)


async def cdpnb_ingest(url: str, count: str) -> AsyncContender:
    """cdpnb's connection core as bench_cdp.py runs it, not recording (none of the
    peers records): parsed on its reader thread, folded into state, counted there."""
    ingest_cdpnb: Callable[[str, int, None], Awaitable[float]] = \
        bench_cdp_module().ingest_cdpnb
    return AsyncContender(ops={"ingest": lambda: ingest_cdpnb(url, int(count), None)},
                          close=nothing)


def counter(count: int) -> tuple[asyncio.Future[None], Callable[[], None]]:
    """A future done at the ``count``-th call of the returned function."""
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    seen = [0]

    def one() -> None:
        seen[0] += 1
        if seen[0] == count and not done.done():
            done.set_result(None)

    return done, one


async def cdp_use_ingest(url: str, count: str) -> AsyncContender:
    """cdp-use's ``CDPClient`` with a handler registered for both events (its typed
    registration library); its reader calls the handler for each."""
    from cdp_use.client import CDPClient  # type: ignore[import-not-found]  # peers' env

    async def take_in() -> None:
        done, one = counter(int(count))
        client = CDPClient(url)

        def handler(event: object, session_id: str | None) -> None:
            one()

        client.register.Runtime.consoleAPICalled(handler)
        client.register.Network.requestWillBeSent(handler)
        await client.start()
        await done
        await client.stop()

    return AsyncContender(ops={"ingest": take_in}, close=nothing)


async def pydoll_ingest(url: str, count: str) -> AsyncContender:
    """pydoll's ``ConnectionHandler`` with a callback registered for both events; it
    connects at its first command (``Runtime.enable``, sent without waiting: the stream
    server answers nothing), and its events manager calls the callbacks."""
    from pydoll.connection.connection_handler import (  # type: ignore[import-not-found]
        ConnectionHandler,
    )

    async def take_in() -> None:
        done, one = counter(int(count))
        handler = ConnectionHandler(ws_address=url)

        async def callback(event: dict[str, Any]) -> None:
            one()

        await handler.register_callback("Runtime.consoleAPICalled", callback)
        await handler.register_callback("Network.requestWillBeSent", callback)
        await handler.execute_command_nowait({"method": "Runtime.enable"})
        await done
        await handler.close()

    return AsyncContender(ops={"ingest": take_in}, close=nothing)


#: How long one burst may take before the contender says how many events it got.
BURST_TIMEOUT_S = 60.0


async def bare_burst(browser_url: str, target: str, page_url: str,
                     count: str) -> AsyncContender:
    """A burst of COUNT console messages, taken in as ``bench_cdp.py``'s bare loop takes
    events: one coroutine reading the socket, ``json.loads`` on every frame."""
    from websockets.asyncio.client import connect

    ws = await connect(page_socket(browser_url, target), max_size=None, compression=None,
                       ping_interval=None)
    events = int(count)
    sent = [0]

    async def call(method: str, params: dict[str, Any], wanted: int = 0) -> None:
        sent[0] += 1
        ident = sent[0]
        await ws.send(json.dumps({"id": ident, "method": method, "params": params}))
        seen, replied = 0, False
        try:
            async with asyncio.timeout(BURST_TIMEOUT_S):
                while not replied or seen < wanted:
                    message = json.loads(await ws.recv())
                    if message.get("id") == ident:
                        if "error" in message:
                            raise RuntimeError(f"{method}: {message['error']}")
                        replied = True
                    elif message.get("method") == "Runtime.consoleAPICalled":
                        seen += 1
        except TimeoutError:
            raise RuntimeError(f"{method}: {seen} of {wanted} console events and "
                               f"{'a' if replied else 'no'} reply in "
                               f"{BURST_TIMEOUT_S:.0f} s") from None

    await call("Runtime.enable", {})
    loop = {"expression": f"for (let i = 0; i < {events}; i++) console.log('burst', i); 1"}
    return AsyncContender(ops={"burst": lambda: call("Runtime.evaluate", loop, events)},
                          close=ws.close)


more_async: dict[str, Callable[..., Awaitable[AsyncContender]]] = {
    "bare-bidi": bare_bidi, "bare-bidi-control": bare_bidi, "cdpnb-bidi": cdpnb_bidi,
    "bare-bidi-evaluate": bare_bidi_evaluate, "cdpnb-bidi-evaluate": cdpnb_bidi_evaluate,
    "bare-ingest": bare_ingest, "cdpnb-ingest": cdpnb_ingest, "cdp-use-ingest": cdp_use_ingest,
    "pydoll-ingest": pydoll_ingest, "bare-burst": bare_burst,
}
more_sync: dict[str, Callable[..., SyncContender]] = {
    "cdpnb-sync-bidi": cdpnb_sync_bidi, "selenium-bidi": selenium_bidi,
}
