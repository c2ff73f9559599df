"""``cdpnb.sync``: blocking calls from scripts, from inside a running loop (a notebook
cell), across loops, with nest_asyncio, and while the caller's thread is busy."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import page_targets, wait_target_closed

import cdpnb
import cdpnb.sync
from cdpnb.probes import ScenarioServer
from cdpnb.runtime.engine import engine

ROOT = Path(__file__).resolve().parent.parent

OPEN_PROMPT = "setTimeout(() => { window.r = prompt('q', 'd'); }, 0)"


def cdpnb_threads() -> list[threading.Thread]:
    """cdpnb's threads, leaving out the test's own scenario server (fixture ``site``)."""
    return [t for t in threading.enumerate()
            if t.name.startswith("cdpnb") and t.name != "cdpnb-scenarios"]


def exercise(s: cdpnb.sync.Supervisor, site: ScenarioServer) -> None:
    """navigate, evaluate, a prompt answered with text, a snapshot: all blocking."""
    result = s.navigate(site.url("/blank"))
    assert result["url"] == site.url("/blank")
    assert result["frame_id"] == s.page_target_id
    assert s.evaluate("1 + 1") == 2
    assert s.evaluate("location.href") == site.url("/blank")
    assert s.evaluate("Promise.resolve([1, 'two', null])") == [1, "two", None]

    s.evaluate(OPEN_PROMPT)
    dialog = s.wait_for_dialog(5)
    assert dialog.type == "prompt"
    assert dialog.message == "q"
    assert dialog.default_prompt == "d"
    assert s.snapshot().pending_dialogs[0].id == dialog.id
    record = s.respond("accept", prompt_text="x")
    assert record.id == dialog.id
    assert record.closed_by == "agent"
    assert record.accepted is True
    assert record.prompt_text == "x"
    assert s.evaluate("window.r") == "x"

    snap = s.snapshot()
    assert isinstance(snap, cdpnb.Snapshot)
    assert snap.pending_dialogs == ()
    assert snap.recent_dialogs[-1].id == dialog.id
    assert snap.frame_tree.top is not None
    assert snap.frame_tree.top.url == site.url("/blank")
    assert s.connected


def test_sync_supervisor_from_a_plain_test(chromium: cdpnb.Backend, site: ScenarioServer) -> None:
    s = cdpnb.sync.Supervisor.start(chromium.cdp_url, dialog_timeout_s=30)
    try:
        assert isinstance(s, cdpnb.sync.Supervisor)
        assert isinstance(s.aio, cdpnb.Supervisor)
        assert s.page_target_id in page_targets(chromium)
        exercise(s, site)
    finally:
        s.stop()
    assert not s.connected
    assert s.aio.stopped


def test_sync_supervisor_as_context_manager(chromium: cdpnb.Backend,
                                            site: ScenarioServer) -> None:
    with cdpnb.sync.Supervisor.start(chromium.cdp_url, dialog_timeout_s=30) as s:
        exercise(s, site)
        target = s.page_target_id
        assert target in page_targets(chromium)
    assert s.aio.stopped
    assert not s.connected
    # stop() closed the page target the supervisor had created
    assert wait_target_closed(chromium, target)
    with pytest.raises(cdpnb.SupervisorStopped):
        s.evaluate("1")


async def test_sync_api_inside_a_running_event_loop(chromium: cdpnb.Backend,
                                                    site: ScenarioServer) -> None:
    # like a Jupyter cell: a loop is running in this thread and we call blocking cdpnb.sync
    running = asyncio.get_running_loop()
    assert running.is_running()
    with cdpnb.sync.Supervisor.start(chromium.cdp_url, dialog_timeout_s=30) as s:
        exercise(s, site)
        assert s.cdp("Runtime.evaluate", {"expression": "6 * 7"})["result"]["value"] == 42
    # the caller's loop is untouched and still usable
    assert asyncio.get_running_loop() is running
    await asyncio.sleep(0)


@pytest.mark.browser
async def test_sync_launch_inside_a_running_event_loop(site: ScenarioServer) -> None:
    assert asyncio.get_running_loop().is_running()
    with cdpnb.sync.launch("headless-shell") as backend, \
            cdpnb.sync.Supervisor.start(backend.cdp_url) as s:
        s.navigate(site.url("/blank"))
        assert s.evaluate("navigator.userAgent").find("HeadlessChrome") >= 0


def test_engine_keeps_working_while_the_caller_sleeps(chromium: cdpnb.Backend,
                                                      site: ScenarioServer) -> None:
    with cdpnb.sync.Supervisor.start(chromium.cdp_url, dialog_timeout_s=0.5) as s:
        s.navigate(site.url("/blank"))
        s.evaluate(OPEN_PROMPT)
        before_sleep = time.time()
        time.sleep(1.2)  # the caller's thread is busy; the engine thread is not
        snap = s.snapshot()
        assert snap.pending_dialogs == ()
        assert len(snap.recent_dialogs) == 1
        record = snap.recent_dialogs[0]
        assert record.type == "prompt"
        assert record.closed_by == "watchdog"
        assert abs(record.opened_at - before_sleep) < 0.3
        assert 0.4 <= record.closed_at - record.opened_at <= 1.0
        assert record.closed_at < before_sleep + 1.2
        # the watchdog dismissed it: prompt() returned null in the page
        assert s.evaluate("window.r") is None


def test_async_api_from_two_loops_in_sequence(chromium: cdpnb.Backend,
                                              site: ScenarioServer) -> None:
    results: dict[str, Any] = {}
    errors: list[BaseException] = []

    async def first() -> cdpnb.Supervisor:
        sup = await cdpnb.Supervisor.start(chromium.cdp_url, dialog_timeout_s=30)
        await sup.navigate(site.url("/blank"))
        results["first"] = await sup.evaluate("1 + 1")
        results["loop1"] = asyncio.get_running_loop()
        return sup

    async def second(sup: cdpnb.Supervisor) -> None:
        results["loop2"] = asyncio.get_running_loop()
        results["second"] = await sup.evaluate("location.pathname")
        await sup.evaluate("setTimeout(() => { window.c = confirm('sure?'); }, 0)")
        dialog = await sup.wait_for_dialog(timeout=5)
        results["dialog"] = dialog.type
        await sup.respond("dismiss")
        results["c"] = await sup.evaluate("window.c")
        await sup.stop()

    def in_thread() -> None:
        try:
            sup = asyncio.run(first())
            asyncio.run(second(sup))
            results["stopped"] = sup.stopped
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=in_thread, name="two-loops")
    thread.start()
    thread.join(30)
    assert not thread.is_alive()
    assert errors == []
    assert results["loop1"] is not results["loop2"]
    assert results["first"] == 2
    assert results["second"] == "/blank"
    assert results["dialog"] == "confirm"
    assert results["c"] is False
    assert results["stopped"] is True


NEST_ASYNCIO_SCRIPT = """
import asyncio

import nest_asyncio

nest_asyncio.apply()

import cdpnb
import cdpnb.sync

PAGE = "data:text/html,<title>nested</title><p>hi</p>"


async def with_async_api(url):
    sup = await cdpnb.Supervisor.start(url, dialog_timeout_s=30)
    await sup.navigate(PAGE)
    assert await sup.evaluate("1+1") == 2
    assert await sup.evaluate("document.title") == "nested"
    await sup.evaluate("setTimeout(() => { window.c = confirm('ok?'); }, 0)")
    dialog = await sup.wait_for_dialog(timeout=5)
    assert dialog.type == "confirm", dialog
    await sup.respond("accept")
    assert await sup.evaluate("window.c") is True
    # the blocking API from inside the (nest_asyncio-patched) running loop
    s = cdpnb.sync.Supervisor.start(url, dialog_timeout_s=30)
    s.navigate("about:blank")
    assert s.evaluate("1+1") == 2
    s.stop()
    await sup.stop()
    return "async-ok"


with cdpnb.sync.launch("headless-shell") as backend:
    assert asyncio.run(with_async_api(backend.cdp_url)) == "async-ok"
    assert asyncio.run(with_async_api(backend.cdp_url)) == "async-ok"
    with cdpnb.sync.Supervisor.start(backend.cdp_url, dialog_timeout_s=30) as s:
        s.navigate(PAGE)
        assert s.evaluate("1+1") == 2
        s.evaluate("setTimeout(() => { window.c = confirm('really?'); }, 0)")
        d = s.wait_for_dialog(5)
        assert d.type == "confirm" and d.message == "really?", d
        rec = s.respond("dismiss")
        assert rec.closed_by == "agent" and rec.accepted is False, rec
        assert s.evaluate("window.c") is False
    try:
        s.evaluate("1")
    except cdpnb.SupervisorStopped:
        pass
    else:
        raise AssertionError("a stopped supervisor answered")
print("OK")
"""


@pytest.mark.browser
def test_works_after_nest_asyncio_apply(tmp_path: Path) -> None:
    import nest_asyncio  # noqa: F401 - the dev extra must provide it

    script = tmp_path / "nested.py"
    script.write_text(textwrap.dedent(NEST_ASYNCIO_SCRIPT))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    assert done.stdout.strip().splitlines()[-1] == "OK"


def test_sync_from_the_engine_thread_is_a_clear_error(chromium: cdpnb.Backend) -> None:
    with cdpnb.sync.Supervisor.start(chromium.cdp_url, dialog_timeout_s=30) as s:
        async def call_sync_evaluate() -> Any:
            return s.evaluate("1")

        async def call_sync_start() -> Any:
            return cdpnb.sync.Supervisor.start(chromium.cdp_url)

        async def call_sync_registry() -> Any:
            return cdpnb.sync.registry.stop("nobody")

        for make in (call_sync_evaluate, call_sync_start, call_sync_registry):
            future = engine.submit(make())
            with pytest.raises(RuntimeError, match="engine thread") as info:
                future.result(10)
            assert "async" in str(info.value)  # it says what to use instead
        # the engine survived and still serves blocking callers
        assert s.evaluate("1 + 1") == 2
    assert s.aio.stopped


def test_calls_after_stop_raise_supervisor_stopped(chromium: cdpnb.Backend,
                                                   site: ScenarioServer) -> None:
    s = cdpnb.sync.Supervisor.start(chromium.cdp_url, dialog_timeout_s=30)
    s.navigate(site.url("/blank"))
    s.stop()
    s.stop()  # twice is fine
    assert s.aio.stopped
    calls = [
        lambda: s.evaluate("1"),
        lambda: s.navigate(site.url("/blank")),
        lambda: s.wait_for_dialog(0.1),
        lambda: s.respond("accept"),
        lambda: s.cdp("Runtime.evaluate", {"expression": "1"}),
    ]
    for call in calls:
        with pytest.raises(cdpnb.SupervisorStopped):
            call()
    # state stays readable after stop
    assert s.snapshot().frame_tree.top is not None
    s.stop()


def test_no_leaked_threads(chromium: cdpnb.Backend) -> None:
    # data: pages, so the scenario server's request threads stay out of the count
    before = set(threading.enumerate())
    for _ in range(3):
        s = cdpnb.sync.Supervisor.start(chromium.cdp_url, dialog_timeout_s=30)
        s.navigate("data:text/html,<p>threads</p>")
        assert s.evaluate("1") == 1
        s.stop()
    deadline = time.monotonic() + 2
    while len(cdpnb_threads()) > 1 and time.monotonic() < deadline:
        time.sleep(0.02)
    threads = cdpnb_threads()
    assert [t.name for t in threads] == ["cdpnb-engine"]
    assert threads[0].daemon
    assert engine.thread_alive()
    new = set(threading.enumerate()) - before - set(threads)
    assert new == set(), [t.name for t in new]


def test_a_calls_own_timeout_error_comes_through_unchanged(chromium: cdpnb.Backend) -> None:
    # CommandTimeout and WaitTimeout are TimeoutErrors; the sync face must not mistake
    # them for its own wait running out.
    with (cdpnb.sync.Supervisor.start(chromium.cdp_url) as sup,
          pytest.raises(cdpnb.WaitTimeout, match="dialog")):
        sup.wait_for_dialog(timeout=0.2)


def test_a_script_waits_for_its_reply_blocked_with_the_same_outcomes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """From a thread with no loop running, a command waits for its reply by blocking
    the thread (no loop wake-up): the reply, the command's own timeout, a reply that
    comes too late, and a lost connection end it as they end an async call."""
    from cdpnb.testing import HOLD, ScriptedBrowser, ScriptedCommand

    b = ScriptedBrowser(has_browser_handler=True)
    held: list[ScriptedCommand] = []

    @b.on("Page.slow")
    def slow(command: ScriptedCommand) -> Any:
        held.append(command)
        return HOLD

    @b.on("Page.quick")
    def quick(command: ScriptedCommand) -> dict[str, Any]:
        return {"quick": True}

    sup = cdpnb.sync.Supervisor.start(b)
    blocked: list[bool] = []
    blocks_here = engine.blocks_here
    monkeypatch.setattr(engine, "blocks_here", lambda: blocked.append(blocks_here()) or
                        blocked[-1])
    try:
        seen: dict[str, Any] = {}

        def script() -> None:  # no loop running in this thread: the blocked path
            assert not engine.blocks_here()
            seen["quick"] = sup.cdp("Page.quick")
            began = time.monotonic()
            with pytest.raises(cdpnb.CommandTimeout,
                               match=r"Page.slow on session \S+ got no reply within 0.2 s"):
                sup.cdp("Page.slow", timeout=0.2)
            seen["waited"] = time.monotonic() - began
            seen["after"] = sup.cdp("Page.quick")

        worker = threading.Thread(target=script)
        worker.start()
        worker.join(10)
        assert not worker.is_alive()
        assert blocked.count(True) == 3  # the script's commands (the rest: the engine's)
        assert seen["quick"] == seen["after"] == {"quick": True}
        assert 0.2 <= seen["waited"] < 1.0
        assert sup.stats()["command-timeouts"] == 1
        # The late reply is nobody's: dropped, counted, never an error.
        engine.run_sync(b.reply(held[0], {"late": True}))
        assert sup.cdp("Page.quick") == {"quick": True}

        lost: list[BaseException] = []

        def waits_then_loses() -> None:
            try:
                sup.cdp("Page.slow", timeout=30)
            except BaseException as exc:  # the test inspects it
                lost.append(exc)

        worker = threading.Thread(target=waits_then_loses)
        worker.start()
        deadline = time.monotonic() + 5
        while len(held) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        began = time.monotonic()
        engine.run_sync(b.drop())
        worker.join(5)
        assert [type(e) for e in lost] == [cdpnb.ConnectionLost]
        assert time.monotonic() - began < 1.0
    finally:
        sup.stop()


def test_blocking_face_records_a_trace_forces_the_bridge_and_reads_state(
        chromium: cdpnb.Backend, site: ScenarioServer, tmp_path: Path) -> None:
    trace = tmp_path / "run.jsonl.gz"
    with cdpnb.sync.Supervisor.start(chromium, bridge=True, bypass_csp=True, record=trace,
                                     redact=["prompt_text"], record_meta={"who": "test"},
                                     dialog_timeout_s=30) as s:
        s.navigate(site.url("/two-site"))
        state = s.wait_for(lambda st: any(f.is_oopif for f in st.frames.values()), timeout=10)
        assert state is s.state or len(state.frames) <= len(s.state.frames)
        assert s.bridge_enabled and s.alive and not s.stopped
        assert s.policy == "must_respond" and s.hints == [] and s.unsupported == {}
        assert s.page_session_id == s.aio.page_session_id is not None
        s.annotate("experiment.phase", {"name": "prompt"})
        s.evaluate(OPEN_PROMPT)
        dialog = s.wait_for_dialog(5)
        assert dialog.via == "bridge"
        assert s.respond("accept", prompt_text="secret").closed_by == "agent"
        assert s.evaluate("window.r") == "secret"
        assert s.endpoint == chromium.cdp_url and s.reconnects == 0
    loaded = cdpnb.Trace.load(trace)
    assert loaded.complete and loaded.header["meta"] == {"who": "test"}
    assert any(getattr(r, "method", "") == "experiment.phase" for r in loaded.records)
    assert "secret" not in str([getattr(r, "params", "") for r in loaded.records])


@pytest.mark.browser
def test_blocking_registry_launch_replay_and_probe(site: ScenarioServer) -> None:
    backend = cdpnb.sync.launch("headless-shell")  # no `with`: kept until close()
    try:
        assert backend.running
        s = cdpnb.sync.registry.get_or_start("task-1", backend.cdp_url)
        assert cdpnb.sync.registry.get("task-1") is s
        assert cdpnb.sync.registry.get("nobody") is None
        assert cdpnb.sync.registry.task_ids() == ["task-1"] and "task-1" in cdpnb.sync.registry
        assert len(cdpnb.sync.registry) == 1
        assert cdpnb.sync.registry.get_or_start("task-1", backend.cdp_url) is s
        assert s.evaluate("1 + 2") == 3
        assert cdpnb.sync.registry.stop_all() == 1 and s.stopped
    finally:
        backend.close()
    assert not backend.running
    recorded = ROOT / "datasets" / "probes" / "chromium.native.jsonl.gz"
    with cdpnb.sync.replay(recorded) as replayed:
        assert replayed.cdp_url.startswith("ws://127.0.0.1:")
    result = cdpnb.sync.probe([f"replay:{recorded}"], progress=False)
    assert isinstance(result, cdpnb.ProbeResult) and result.surprises().empty


@pytest.mark.browser
async def test_launch_without_a_with_block_in_async_code(site: ScenarioServer) -> None:
    backend = await cdpnb.launch("headless-shell")
    try:
        sup = await cdpnb.Supervisor.start(backend)
        await sup.navigate(site.url("/blank"))
        assert await sup.evaluate("document.title") == "blank"
        await sup.stop()
    finally:
        await backend.aclose()
    assert not backend.running
    replayed = await cdpnb.replay(ROOT / "datasets" / "probes" / "node.native.jsonl.gz")
    assert replayed.cdp_url.startswith("ws://127.0.0.1:")
    await replayed.aclose()
