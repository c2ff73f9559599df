"""cdpnb inside a real ipykernel (executed with nbclient): the loop integration docs/architecture.md
promises — top-level await, blocking calls in a plain cell, a cell that blocks while a
dialog opens, nest_asyncio applied first, and restarts that leave nothing behind."""

from __future__ import annotations

import json
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

pytestmark = pytest.mark.browser

PRELUDES = {"plain": None, "nest_asyncio": "import nest_asyncio\nnest_asyncio.apply()"}

CELLS = [
    # 1. the async API with top-level await, in the kernel's own running loop
    '''
import asyncio, json, threading, time
import psutil
import cdpnb
from cdpnb.probes import ScenarioServer

site = ScenarioServer().start()
launcher = cdpnb.launch("chromium")
backend = await launcher.__aenter__()
sup = await cdpnb.Supervisor.start(backend, dialog_timeout_s=1.0)
await sup.navigate(site.url("/two-site"))
state = await sup.wait_for(lambda s: any(f.is_oopif for f in s.frames.values()), timeout=10)
print(json.dumps({"cell": "await", "loop_running": asyncio.get_running_loop().is_running(),
                  "sum": await sup.evaluate("20 + 22"),
                  "oopifs": sum(f.is_oopif for f in state.frames.values())}))
''',
    # 2. the blocking API in a plain cell, while the kernel's loop is running
    '''
blocking = cdpnb.sync.Supervisor.start(backend.cdp_url, dialog_timeout_s=5.0)
blocking.navigate(site.url("/blank"))
blocking.evaluate("setTimeout(() => { window.ok = confirm('sure?') }, 0)")
d = blocking.wait_for_dialog(timeout=5)
record = blocking.respond("accept", dialog_id=d.id)
print(json.dumps({"cell": "sync", "ok": blocking.evaluate("window.ok"),
                  "closed_by": record.closed_by,
                  "running_loop": asyncio.get_running_loop().is_running()}))
blocking.stop()
''',
    # 3. a cell that blocks the kernel's thread while a dialog opens
    '''
await sup.navigate(site.url("/blank"))
await sup.evaluate("setTimeout(() => { window.r = confirm('while you sleep') }, 500)")
sleep_began = time.time()
time.sleep(3.0)  # blocks the kernel's thread; cdpnb's engine thread carries on
last = sup.snapshot().recent_dialogs[-1]
print(json.dumps({"cell": "sleep", "opened_after_s": last.opened_at - sleep_began,
                  "open_s": last.closed_at - last.opened_at, "closed_by": last.closed_by,
                  "page_saw": await sup.evaluate("window.r")}))
''',
    # 4. stop and restart supervisors and a browser: nothing may stay behind
    '''
def chromium_children():
    return [p.pid for p in psutil.Process().children(recursive=True)
            if "chrom" in p.name().lower()]

await sup.stop()
await launcher.__aexit__(None, None, None)
await asyncio.sleep(0.3)  # the closing thread hands back its result, then ends
threads_before = sorted(t.name for t in threading.enumerate())
for _ in range(3):
    async with cdpnb.launch("chromium") as b:
        s = await cdpnb.Supervisor.start(b)
        await s.navigate(site.url("/two-site"))
        await s.stop()
        with cdpnb.sync.Supervisor.start(b.cdp_url) as s2:
            s2.evaluate("1")
await asyncio.sleep(0.3)
site.close()
print(json.dumps({"cell": "restart", "threads_before": threads_before,
                  "threads_after": sorted(t.name for t in threading.enumerate()),
                  "chromium_left": chromium_children(),
                  "registry": len(cdpnb.registry)}))
''',
]


def _run(prelude: str | None) -> dict[str, Any]:
    cells = ([prelude] if prelude else []) + CELLS
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    out: dict[str, Any] = {}
    for cell in nb.cells:
        for o in cell.outputs:
            assert o["output_type"] != "error", o
            if o["output_type"] == "stream" and o["name"] == "stdout":
                for line in o["text"].splitlines():
                    if line.startswith("{"):
                        data = json.loads(line)
                        out[data.pop("cell")] = data
    return out


@pytest.fixture(scope="module", params=list(PRELUDES))
def kernel_run(request: pytest.FixtureRequest) -> dict[str, Any]:
    return _run(PRELUDES[request.param])


def test_top_level_await_in_the_kernels_loop(kernel_run: dict[str, Any]) -> None:
    assert kernel_run["await"] == {"loop_running": True, "sum": 42, "oopifs": 1}


def test_blocking_api_in_a_plain_cell(kernel_run: dict[str, Any]) -> None:
    assert kernel_run["sync"] == {"ok": True, "closed_by": "agent", "running_loop": True}


def test_a_blocked_cell_does_not_delay_the_dialog_or_the_watchdog(
        kernel_run: dict[str, Any]) -> None:
    sleep = kernel_run["sleep"]
    # Opened 0.5 s into the 3 s sleep, stamped when it really opened, not when the cell ended.
    assert 0.35 < sleep["opened_after_s"] < 1.2, sleep
    # dialog_timeout_s=1.0: the watchdog fired on time though the kernel's thread slept.
    assert sleep["closed_by"] == "watchdog"
    assert 0.9 < sleep["open_s"] < 1.6, sleep
    assert sleep["page_saw"] is False


def test_restarts_leave_no_threads_or_browsers(kernel_run: dict[str, Any]) -> None:
    restart = kernel_run["restart"]
    assert restart["chromium_left"] == []
    # The site's server threads end with it; cdpnb keeps only its one engine thread.
    assert set(restart["threads_after"]) <= set(restart["threads_before"])
    assert [t for t in restart["threads_after"] if t.startswith("cdpnb")] == ["cdpnb-engine"]
    assert len(restart["threads_after"]) == len(restart["threads_before"]) - sum(
        t.startswith("cdpnb-scenarios") for t in restart["threads_before"])
    assert restart["registry"] == 0
