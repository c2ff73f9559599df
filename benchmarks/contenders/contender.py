"""One contender of bench_contenders.py: a CDP client in a process of its own.

    <python> benchmarks/contenders/contender.py LIBRARY BROWSER_WS_URL TARGET_ID PAGE_URL
    <python> benchmarks/contenders/contender.py LIBRARY-bidi BIDI_WS_URL
    <python> benchmarks/contenders/contender.py LIBRARY-ingest STREAM_WS_URL COUNT
    <python> benchmarks/contenders/contender.py bare-burst BROWSER_WS_URL TARGET_ID PAGE_URL COUNT

Connects with LIBRARY's own client (libraries.py) to the page TARGET_ID (at PAGE_URL)
of the browser at BROWSER_WS_URL and prints ``ready``. Then, for each line ``OP K`` on
stdin (``rtt`` or ``dialog``; ``bidi``, ``ingest`` and ``burst`` are more_libraries.py's),
does K operations back to back, timing each with its own monotonic clock, checks (outside the
timing) that the batch did what it says, and prints one JSON line: the K durations in
seconds (or ``{"error": ...}``). Ends at ``quit`` or at the end of stdin (so it also ends
when the harness is gone). Every contender is woken the same way, by a line on a pipe;
how it waits for that line is its library's way: the async ones on their event loop
(stdin read by the loop), ``cdpnb-sync`` blocked in ``readline`` on the main thread, with
no loop running, as a script calls ``cdpnb.sync``.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Awaitable, Callable

from libraries import AsyncContender, SyncContender, make_async, make_sync
from more_libraries import more_async, more_sync

#: Every maker by library name; each takes the command line's arguments as strings.
ASYNC_MAKERS: dict[str, Callable[..., Awaitable[AsyncContender]]] = {**make_async,
                                                                      **more_async}
SYNC_MAKERS: dict[str, Callable[..., SyncContender]] = {**make_sync, **more_sync}


def parse(line: str) -> tuple[str, int] | None:
    words = line.split()
    if len(words) != 2 or words[0] == "quit":
        return None
    return words[0], int(words[1])


def error_line(error: BaseException) -> str:
    return json.dumps({"error": f"{type(error).__name__}: {error}"[:500]})


def answer(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def run_sync(library: str, args: list[str]) -> None:
    contender = SYNC_MAKERS[library](*args)
    answer("ready")
    try:
        while (asked := parse(sys.stdin.readline())) is not None:
            op, count = asked
            durations: list[float] = []
            try:
                call = contender.ops[op]
                for _ in range(count):
                    started = time.perf_counter()
                    call()
                    durations.append(time.perf_counter() - started)
            except Exception as error:  # told to the harness, which drops this contender
                answer(error_line(error))
                continue
            answer(json.dumps(durations))
    finally:
        contender.close()


async def run_async(library: str, args: list[str]) -> None:
    contender: AsyncContender = await ASYNC_MAKERS[library](*args)
    loop = asyncio.get_running_loop()
    stdin = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdin), sys.stdin)
    answer("ready")
    try:
        while (asked := parse((await stdin.readline()).decode())) is not None:
            op, count = asked
            durations: list[float] = []
            try:
                call = contender.ops[op]
                for _ in range(count):
                    started = time.perf_counter()
                    await call()
                    durations.append(time.perf_counter() - started)
                contender.verify(op, count)
            except Exception as error:  # told to the harness, which drops this contender
                answer(error_line(error))
                continue
            answer(json.dumps(durations))
    finally:
        await contender.close()


def main() -> None:
    library, *args = sys.argv[1:]
    if library not in {*ASYNC_MAKERS, *SYNC_MAKERS}:
        sys.exit(f"usage: contender.py {{{','.join([*ASYNC_MAKERS, *SYNC_MAKERS])}}} "
                 "BROWSER_WS_URL TARGET_ID PAGE_URL (more_libraries.py: BIDI_WS_URL, "
                 "or STREAM_WS_URL COUNT)")
    if library in SYNC_MAKERS:
        run_sync(library, args)
    else:
        asyncio.run(run_async(library, args))


if __name__ == "__main__":
    main()
