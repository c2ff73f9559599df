"""A peer library's CDP round trip, timed in its own environment (run by bench_cdp.py).

    <peers python> benchmarks/peer_client.py cdp-use|pydoll <browser ws url> <target id>

Reads ``call`` lines on stdin; for each, sends ``Runtime.evaluate('1')`` to the page
with the library's own client, and writes the seconds it took (one line). Lives apart
from cdpnb's environment (its own websockets, aiohttp, ...), so its imports are its own.
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any


async def cdp_use_client(browser_url: str, target: str) -> Any:
    from cdp_use.client import CDPClient  # type: ignore[import-not-found]  # peers' env

    client = CDPClient(browser_url)
    await client.start()
    attached = await client.send_raw("Target.attachToTarget",
                                     {"targetId": target, "flatten": True})
    session = attached["sessionId"]

    async def call() -> None:
        await client.send_raw("Runtime.evaluate", {"expression": "1"}, session_id=session)

    return call


async def pydoll_client(browser_url: str, target: str) -> Any:
    from pydoll.connection.connection_handler import (  # type: ignore[import-not-found]
        ConnectionHandler,
    )

    page_url = browser_url.split("/devtools/")[0] + f"/devtools/page/{target}"
    handler = ConnectionHandler(ws_address=page_url)

    async def call() -> None:
        await handler.execute_command({"method": "Runtime.evaluate",
                                       "params": {"expression": "1"}})

    await call()  # connects
    return call


async def main() -> None:
    library, browser_url, target = sys.argv[1:4]
    make = {"cdp-use": cdp_use_client, "pydoll": pydoll_client}[library]
    call = await make(browser_url, target)
    loop = asyncio.get_running_loop()
    print("ready", flush=True)
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line or line.strip() != "call":
            break
        started = time.perf_counter()
        await call()
        print(time.perf_counter() - started, flush=True)


if __name__ == "__main__":
    asyncio.run(main())
