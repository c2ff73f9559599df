"""An auto policy answers a native dialog as it is folded, on the receiving thread.

The answer must not wait for cdpnb's engine loop to wake (a wake-up is what a busy
machine makes slow), and the trace must still read in order: the dialog opened, cdpnb
said it answers it, then the answer. Played against a scripted browser with the engine
loop held busy, so "without waiting for the engine" is exact, not a timing.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import cdpnb
from cdpnb.errors import ConnectionLost
from cdpnb.runtime.engine import engine
from cdpnb.testing import HOLD, ScriptedBrowser, ScriptedCommand
from cdpnb.trace import Trace


def chromium_like() -> ScriptedBrowser:
    b = ScriptedBrowser(has_browser_handler=True)

    @b.on("Page.handleJavaScriptDialog")
    def answer(command: ScriptedCommand) -> dict[str, Any]:
        b.push("Page.javascriptDialogClosed", {
            "frameId": b.page_frame_id, "result": command.params["accept"],
            "userInput": command.params.get("promptText", "")}, command.session_id)
        return {}

    return b


@contextlib.asynccontextmanager
async def engine_held() -> AsyncIterator[threading.Event]:
    """cdpnb's engine loop kept busy until the block ends (the event it waits on)."""
    engine_free = threading.Event()
    engine_busy = threading.Event()

    def hold_the_engine() -> None:
        engine_busy.set()
        engine_free.wait(30)

    try:
        engine.loop.call_soon_threadsafe(hold_the_engine)
        assert await asyncio.to_thread(engine_busy.wait, 10)
        yield engine_free
    finally:
        engine_free.set()


@pytest.mark.parametrize(("policy", "kind", "expected"), [
    ("auto_accept", "alert", {"accept": True}),
    ("auto_accept", "prompt", {"accept": True, "promptText": "the default"}),
    ("auto_dismiss", "confirm", {"accept": False}),
])
async def test_an_auto_policy_answers_while_the_engine_is_busy(
        tmp_path: Path, policy: str, kind: str, expected: dict[str, Any]) -> None:
    b = chromium_like()
    trace = tmp_path / "t.jsonl"
    sup = await cdpnb.Supervisor.start(b, policy=policy, record=trace)
    async with engine_held() as engine_free:
        await b.open_dialog(kind, "hello", default_prompt="the default")
        # The engine loop is still held: the answer went out from the receiving thread.
        answers = b.commands("Page.handleJavaScriptDialog")
        assert [a.params for a in answers] == [expected]
        assert not engine_free.is_set()
    await sup.wait_for(lambda s: not s.pending_dialogs and len(s.recent_dialogs) == 1,
                       timeout=10)
    record = sup.state.recent_dialogs[0]
    assert (record.type, record.closed_by, record.accepted) == (kind, "auto_policy",
                                                                expected["accept"])
    await sup.stop()
    methods = [(type(m).__name__, m.method) for m in Trace.load(trace).messages
               if m.method in ("Page.javascriptDialogOpening", "cdpnb.dialogAnswering",
                               "Page.handleJavaScriptDialog", "Page.javascriptDialogClosed",
                               "cdpnb.dialogAnswered")]
    assert methods == [("Event", "Page.javascriptDialogOpening"),
                       ("Note", "cdpnb.dialogAnswering"),
                       ("Command", "Page.handleJavaScriptDialog"),
                       ("Event", "Page.javascriptDialogClosed"),
                       ("Reply", "Page.handleJavaScriptDialog"),
                       ("Note", "cdpnb.dialogAnswered")]


async def test_a_handlers_answer_goes_out_while_the_engine_is_busy() -> None:
    """``sup.on("dialog")``'s ``ev.accept()`` writes the answer from the handler's own
    thread (``DialogControl.reply_now``), as Puppeteer's handler does: through the
    engine loop it cost a handler's alert 1.48× the bare client's against the agent's
    1.32× (after an idle moment, measured)."""
    b = chromium_like()
    sup = await cdpnb.Supervisor.start(b, policy="must_respond")
    answers: list[Any] = []
    sup.on("dialog", lambda event: answers.append(event.accept()))
    async with engine_held() as engine_free:
        await b.open_dialog("confirm", "hello")
        for _ in range(500):  # the handler runs on this loop: let it turn
            if b.commands("Page.handleJavaScriptDialog"):
                break
            await asyncio.sleep(0.01)
        assert [a.params for a in b.commands("Page.handleJavaScriptDialog")] == [
            {"accept": True}]
        assert not engine_free.is_set()
    [pending] = answers
    record = await pending
    assert (record.id, record.closed_by, record.accepted) == ("d-1", "agent", True)
    # A second answer to the same dialog is refused, in the future, not raised.
    with pytest.raises(cdpnb.UnknownDialog, match="no longer open"):
        sup._dialogs.reply_now(True, None, "d-1").result(5)
    await sup.stop()


@pytest.mark.parametrize("policy", ["auto_accept", "must_respond"])
async def test_an_answer_is_written_before_its_note_is_folded(tmp_path: Path,
                                                              policy: str) -> None:
    """The answer leaves first, and cdpnb's account of it follows (its note's fold
    cost ≈40 µs on the answer's path, cold after an idle moment); the trace, the state
    and every listener still read the note, then the command, then the closing."""
    b = chromium_like()
    trace = tmp_path / "t.jsonl"
    sup = await cdpnb.Supervisor.start(b, policy=policy, record=trace)
    core = sup._core
    transport = core._transport
    assert transport is not None
    write = transport.send
    folded_at_the_write: list[list[Any]] = []

    def watching(data: bytes) -> None:
        if b"Page.handleJavaScriptDialog" in data:
            folded_at_the_write.append([d.answering for d in core._state.pending_dialogs])
        write(data)

    transport.send = watching  # type: ignore[method-assign]
    await b.open_dialog("confirm", "hello")
    if policy == "must_respond":
        dialog = await sup.wait_for_dialog(timeout=10)
        record = await sup.respond("accept", dialog_id=dialog.id)
        assert (record.closed_by, record.accepted) == ("agent", True)
    await sup.wait_for(lambda s: not s.pending_dialogs and len(s.recent_dialogs) == 1,
                       timeout=10)
    assert folded_at_the_write == [[None]]  # open, its answer not yet noted
    expected = "agent" if policy == "must_respond" else "auto_policy"
    assert sup.state.recent_dialogs[0].closed_by == expected
    await sup.stop()
    methods = [m.method for m in Trace.load(trace).messages
               if m.method in ("cdpnb.dialogAnswering", "Page.handleJavaScriptDialog",
                               "Page.javascriptDialogClosed", "cdpnb.dialogAnswered")]
    assert methods == ["cdpnb.dialogAnswering", "Page.handleJavaScriptDialog",
                       "Page.javascriptDialogClosed", "Page.handleJavaScriptDialog",
                       "cdpnb.dialogAnswered"]


async def test_an_answer_that_cannot_be_written_is_said_not_lost(tmp_path: Path) -> None:
    b = chromium_like()
    trace = tmp_path / "t.jsonl"
    sup = await cdpnb.Supervisor.start(b, policy="auto_accept", record=trace)
    transport = sup._core._transport
    assert transport is not None
    write = transport.send

    def refusing(data: bytes) -> None:
        if b"Page.handleJavaScriptDialog" in data:
            raise ConnectionLost("the write failed")
        write(data)

    transport.send = refusing  # type: ignore[method-assign]
    await b.open_dialog("alert", "hello")
    # Being answered as it was folded; then the engine ends the answer, and says how.
    await sup.wait_for(lambda s: len(s.pending_dialogs) == 1
                       and s.pending_dialogs[0].answering is None, timeout=10)
    await sup.stop()
    said = [(m.method, m.params) for m in Trace.load(trace).messages
            if m.method in ("cdpnb.dialogAnswering", "cdpnb.dialogAnswered",
                            "Page.handleJavaScriptDialog", "cdpnb.taskFailed")]
    # The command is recorded as it is written (as every command is, a failed write
    # abandons it), and the answer's end says it failed and why.
    assert [method for method, _ in said] == [
        "cdpnb.dialogAnswering", "Page.handleJavaScriptDialog", "cdpnb.dialogAnswered"]
    assert said[2][1] == {"dialog_id": "d-1", "ok": False,
                          "error": "ConnectionLost('the write failed')"}


async def test_an_answer_the_browser_never_replies_to_times_out_and_says_so(
        tmp_path: Path) -> None:
    b = ScriptedBrowser(has_browser_handler=True)
    b.on("Page.handleJavaScriptDialog", lambda command: HOLD)  # no reply, ever
    trace = tmp_path / "t.jsonl"
    sup = await cdpnb.Supervisor.start(b, policy="auto_accept", record=trace,
                                       command_timeout_s=0.5)
    await b.open_dialog("alert", "hello")
    # Answered as it was folded; the engine's timer ends the answer that got no reply.
    await sup.wait_for(lambda s: len(s.pending_dialogs) == 1
                       and s.pending_dialogs[0].answering is None, timeout=10)
    await sup.stop()
    said = [(m.method, m.params) for m in Trace.load(trace).messages
            if m.method in ("cdpnb.commandTimedOut", "cdpnb.dialogAnswered")]
    assert [method for method, _ in said] == ["cdpnb.commandTimedOut",
                                              "cdpnb.dialogAnswered"]
    assert said[1][1]["ok"] is False and "CommandTimeout" in said[1][1]["error"]
