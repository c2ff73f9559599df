"""Events: ``sup.on(name, handler)``, ``once``, ``off`` and ``sup.events(...)``.

The scripted browser makes the order and the threads exact; the real browsers (every
path) prove that a handler answers a dialog while ``evaluate`` waits on it, in both
faces, and that frames and pages fire what Playwright's and Puppeteer's users expect.
Events come from the fold's changes, so a replay of the trace fires the same ones.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import threading
from pathlib import Path

import pytest

import cdpnb
import cdpnb.sync
from cdpnb.probes import ScenarioServer
from cdpnb.state import changes as ch
from cdpnb.state.events import EVENT_OF, event_name
from cdpnb.testing import ScriptedBrowser
from tests.test_dialog_races import browser as race_browser

CHILD = "CHILD-FRAME"


def scripted() -> ScriptedBrowser:
    """A scripted Chromium whose dialog answers close the page's dialog."""
    return race_browser(handler=True)


def test_every_change_that_fires_an_event_is_named_once() -> None:
    """The table is the one place names come from; each change type that fires an
    event is a real change, and every name is fired by some change."""
    assert set(EVENT_OF.values()) == set(cdpnb.EVENT_NAMES)
    assert len(cdpnb.EVENT_NAMES) == len(set(cdpnb.EVENT_NAMES))
    for kind in EVENT_OF:
        assert kind.__module__ == ch.__name__
    assert event_name(ch.SessionDetached(session=None)) is None  # type: ignore[arg-type]


async def test_events_come_in_fold_order_to_handlers_and_streams() -> None:
    b = scripted()
    async with await cdpnb.Supervisor.start(b) as sup:
        seen: list[tuple[str, str | None]] = []
        where: set[int] = set()

        def note(ev: cdpnb.SupervisorEvent) -> None:
            where.add(threading.get_ident())
            frame = ev.frame
            seen.append((ev.name, frame.frame_id if frame else None))

        for name in ("frameattached", "framenavigated", "framedetached"):
            assert sup.on(name, note) is note
        async with sup.events("frameattached", "framedetached", timeout=5) as stream:
            await b.emit("Page.frameAttached", {"frameId": CHILD,
                                                "parentFrameId": b.page_frame_id},
                         b.page_session_id)
            await b.emit("Page.frameNavigated", {"frame": {
                "id": CHILD, "parentId": b.page_frame_id, "url": "http://127.0.0.1:9/kid",
                "securityOrigin": "http://127.0.0.1:9", "mimeType": "text/html",
                "loaderId": "L2", "name": "kid"}}, b.page_session_id)
            await b.emit("Page.frameDetached", {"frameId": CHILD, "reason": "remove"},
                         b.page_session_id)
            first, second = await anext(stream), await anext(stream)
            assert (first.name, second.name) == ("frameattached", "framedetached")
            assert second.reason == "remove" and second.frame is not None
            assert second.frame.url == "http://127.0.0.1:9/kid"
            assert first.at <= second.at
            # A loop stops once nothing came within the timeout (the stream stays open);
            # next_event raises WaitTimeout instead.
            stream.timeout = 0.1
            assert [ev async for ev in stream] == []
            with pytest.raises(cdpnb.WaitTimeout, match="no event .* within 0.1 s"):
                await stream.next_event()
            assert not stream.closed
        await asyncio.sleep(0.05)  # the handlers run on this loop, once it is free
        assert seen == [("frameattached", CHILD), ("framenavigated", CHILD),
                        ("framedetached", CHILD)]
        assert where == {threading.get_ident()}  # on() from a running loop: that loop
        assert sup.off("frameattached", note) == 1
        assert sup.off("frameattached", note) == 0
        assert sup.off("framenavigated") == 1


async def test_a_dialog_handler_answers_while_the_caller_waits() -> None:
    """Playwright's ``page.on("dialog", d => d.accept("x"))``: the handler answers; its
    answer goes to exactly the dialog of the event."""
    b = scripted()
    async with await cdpnb.Supervisor.start(b) as sup:
        answers: list[cdpnb.DialogRecord] = []

        async def answer(ev: cdpnb.SupervisorEvent) -> None:
            assert ev.dialog is not None and ev.dialog.message == "name?"
            answers.append(await ev.accept("Ada"))

        sup.once("dialog", answer)
        closed = sup.events("dialogclosed", timeout=5)
        await b.open_dialog("prompt", "name?", default_prompt="x")
        ev = await anext(closed)
        assert ev.record is not None and ev.record.prompt_text == "Ada"
        assert ev.record.closed_by == "agent"
        for _ in range(100):  # (the handler's await ends on this loop, a moment later)
            if answers:
                break
            await asyncio.sleep(0.01)
        assert [r.id for r in answers] == [ev.record.id]
        sent = b.commands("Page.handleJavaScriptDialog")
        assert [c.params for c in sent] == [{"accept": True, "promptText": "Ada"}]
        # once: the next dialog is nobody's handler's; it stays open for the caller.
        await b.open_dialog("confirm", "sure?")
        dialog = await sup.wait_for_dialog(timeout=1)
        assert dialog.type == "confirm" and len(b.commands("Page.handleJavaScriptDialog")) == 1
        await sup.respond("dismiss")
        closed.close()  # what it holds is still read out, then it ends
        assert [e.record.id for e in [e async for e in closed] if e.record] == [dialog.id]


def test_the_blocking_face_runs_handlers_on_the_event_thread() -> None:
    """Through cdpnb.sync a call blocks the caller's thread, so a handler runs on the
    supervisor's event thread and may itself make blocking calls."""
    b = scripted()
    with cdpnb.sync.Supervisor.start(b) as sup:
        threads: list[str] = []

        def answer(ev: cdpnb.SupervisorEvent) -> None:
            threads.append(threading.current_thread().name)
            assert sup.evaluate is not None
            ev.accept("from a thread").result(5)

        sup.on("dialog", answer)
        stream = sup.events("dialogclosed", timeout=5)
        cdpnb.sync.Supervisor.of(sup.aio)  # (the same face)
        asyncio.run(b.open_dialog("prompt", "q"))
        closed = next(stream)
        assert closed.record is not None and closed.record.prompt_text == "from a thread"
        assert threads == ["cdpnb-events"]
        assert threading.main_thread().name not in threads
    with pytest.raises(StopIteration):
        next(stream)  # the supervisor stopped: the stream ended


async def test_bad_names_and_handlers_are_clear_errors() -> None:
    b = scripted()
    async with await cdpnb.Supervisor.start(b) as sup:
        with pytest.raises(ValueError, match="event must be one of dialog, dialogclosed.*"
                                             "got 'Dialog'"):
            sup.on("Dialog", print)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="handler must be callable"):
            sup.on("dialog", "answer")  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="got 'popup'"):
            sup.events("dialog", "popup")  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="timeout must be a positive number"):
            sup.events(timeout=0)
        with pytest.raises(ValueError, match="buffer must be a positive int"):
            sup.events(buffer=0)
        stream = sup.events("framedetached", buffer=1)
        for frame in ("A", "B"):
            await b.emit("Page.frameAttached", {"frameId": frame,
                                                "parentFrameId": b.page_frame_id},
                         b.page_session_id)
            await b.emit("Page.frameDetached", {"frameId": frame, "reason": "remove"},
                         b.page_session_id)
        assert stream.dropped == 1  # the oldest went; the newest is held
        last = await anext(stream)
        assert last.frame is not None and last.frame.frame_id == "B"
        with pytest.raises(cdpnb.DialogError, match="a 'framedetached' event has no dialog"):
            last.accept()


@pytest.mark.logs_warnings
async def test_a_failing_handler_is_logged_and_the_supervisor_carries_on(
        caplog: pytest.LogCaptureFixture) -> None:
    b = scripted()
    async with await cdpnb.Supervisor.start(b) as sup:
        def broken(ev: cdpnb.SupervisorEvent) -> None:
            raise RuntimeError("handler bug")

        sup.on("dialog", broken)
        late = sup.events("dialogclosed", timeout=5)
        with caplog.at_level(logging.ERROR, "cdpnb"):
            await b.open_dialog("alert", "hi")
            await asyncio.sleep(0.05)
        assert "the 'dialog' handler" in caplog.text and "handler bug" in caplog.text
        assert sup.stats()["handler-errors"] == 1
        await sup.respond("accept")
        assert (await anext(late)).name == "dialogclosed"


async def test_an_answer_nobody_awaited_that_failed_is_a_warning() -> None:
    b = scripted()
    async with await cdpnb.Supervisor.start(b) as sup:
        stream = sup.events("dialog", timeout=5)
        await b.open_dialog("alert", "one")
        ev = await anext(stream)
        await sup.respond("accept")
        looked_at = ev.accept()  # too late: awaited, so its failure is the caller's
        with pytest.raises(cdpnb.UnknownDialog):
            await looked_at
        sup.snapshot()  # (no warning: filterwarnings makes one an error)
        dropped = ev.accept()  # too late, and dropped unlooked-at
        future = dropped._future
        del dropped
        gc.collect()
        with contextlib.suppress(cdpnb.UnknownDialog):
            await asyncio.wrap_future(future)
        with pytest.warns(cdpnb.CdpnbWarning, match="a dialog handler's answer failed"):
            sup.snapshot()


# -- real browsers: every path ------------------------------------------------------------


#: A page whose prompt is called by the page's own script when asked (a click-less
#: stand-in: evaluate waits on the call until it returns).
PROMPT = "prompt('your name?', 'nobody')"


async def test_a_handler_answers_the_prompt_evaluate_waits_on(
        every_path: cdpnb.Backend, site: ScenarioServer) -> None:
    """Playwright page-dialog ``should allow accepting prompts`` with the handler doing
    it: ``evaluate`` blocks until the handler has answered; a handler that accepts
    without text gives the default, as pressing OK does."""
    async with await cdpnb.Supervisor.start(every_path, dialog_timeout_s=60) as sup:
        await sup.navigate(site.url("/blank"))
        texts = iter(["Ada", None])

        async def answer(ev: cdpnb.SupervisorEvent) -> None:
            await ev.accept(next(texts))

        sup.on("dialog", answer)
        assert await sup.evaluate(PROMPT, timeout=20) == "Ada"
        assert await sup.evaluate(PROMPT, timeout=20) == "nobody"
        sup.off("dialog")
        records = [r for r in sup.state.recent_dialogs if r.type == "prompt"]
        assert [r.prompt_text for r in records] == ["Ada", "nobody"]


def test_a_blocking_handler_answers_while_the_blocking_evaluate_waits(
        every_path: cdpnb.Backend, site: ScenarioServer) -> None:
    with cdpnb.sync.Supervisor.start(every_path, dialog_timeout_s=60) as sup:
        sup.navigate(site.url("/blank"))
        sup.on("dialog", lambda ev: ev.accept("blocking") if ev.dialog and
               ev.dialog.type == "prompt" else ev.dismiss())
        assert sup.evaluate(PROMPT, timeout=20) == "blocking"
        assert sup.evaluate("confirm('sure?')", timeout=20) is False


async def test_respond_gives_what_a_person_would(
        every_path: cdpnb.Backend, site: ScenarioServer) -> None:
    """``respond("accept")`` on a prompt gives its default (pressing OK does; CDP's and
    BiDi's own default is ""); ``prompt_text`` is ignored when dismissing or on an
    alert or confirm, as WebDriver BiDi's handleUserPrompt and Playwright ignore it."""
    async with await cdpnb.Supervisor.start(every_path, dialog_timeout_s=60) as sup:
        await sup.navigate(site.url("/blank"))
        got = {}
        for case, call, action, text in [
                ("accept, no text", PROMPT, "accept", None),
                ("dismiss with text", PROMPT, "dismiss", "ignored"),
                ("confirm with text", "confirm('ok?')", "accept", "ignored")]:
            stream = sup.events("dialog", timeout=20)
            running = asyncio.ensure_future(sup.evaluate(call, timeout=30))
            ev = await anext(stream)
            stream.close()
            assert ev.dialog is not None
            record = await sup.respond(action, prompt_text=text, dialog_id=ev.dialog.id)
            got[case] = (await running, record.prompt_text)
        assert got == {"accept, no text": ("nobody", "nobody"),
                       "dismiss with text": (None, None),
                       "confirm with text": (True, None)}


async def test_frames_and_pages_fire_what_playwright_users_expect(
        every_path: cdpnb.Backend, site: ScenarioServer, tmp_path: Path) -> None:
    """Playwright frame-hierarchy ``should report frame.name()``-style flows as events:
    a child frame attaches and navigates; a popup is a ``page`` event and its close a
    ``pageclosed``; a top-level navigation detaches the old document's child frames; a
    console error is a
    ``console`` event. A replay of the recorded trace folds to the same events."""
    trace_path = tmp_path / "events.jsonl"
    names: list[tuple[str, str | None]] = []
    async with await cdpnb.Supervisor.start(every_path, dialog_timeout_s=60,
                                            record=trace_path) as sup:
        await sup.navigate(site.url("/blank"))
        for name in cdpnb.EVENT_NAMES:
            sup.on(name, lambda ev: names.append((ev.name, ev.reason)))
        async with sup.events("frameattached", "framenavigated", "page", "pageclosed",
                              "framedetached", "console", timeout=20) as stream:
            await sup.evaluate("const f = document.createElement('iframe'); f.name = 'kid'; "
                               f"f.src = {json.dumps(site.url('/blank'))}; "
                               "document.body.appendChild(f); 0")
            attached = await anext(stream)
            assert attached.name == "frameattached" and attached.frame is not None
            kid = attached.frame.frame_id
            navigated = await anext(stream)
            while navigated.frame is None or navigated.frame.frame_id != kid:
                navigated = await anext(stream)
            assert navigated.name == "framenavigated"
            assert navigated.frame.url == site.url("/blank")
            await sup.evaluate("window.__popup = window.open('about:blank'); 0",
                               user_gesture=True)  # (no popup without a user's gesture)
            opened = await _next_named(stream, "page")
            assert opened.page is not None and opened.page.opener_target_id is not None
            await sup.evaluate("window.__popup.close(); 0")
            closed = await _next_named(stream, "pageclosed")
            assert closed.page is not None
            assert closed.page.target_id == opened.page.target_id
            await sup.evaluate("console.error('told you'); 0")
            told = await _next_named(stream, "console")
            assert told.entry is not None and "told you" in told.entry.text
            await sup.navigate(site.url("/blank", "b"))
            gone = await _next_named(stream, "framedetached")
            assert gone.frame is not None and gone.frame.frame_id == kid
            # (Chromium 156 reports the old document's frames removed ("remove") when a
            # cross-site navigation swaps the page's process; else the fold prunes them
            # as "navigated", as CDP then sends no frameDetached.)
            assert gone.reason in ("navigated", "remove")
        await asyncio.sleep(0.2)  # handlers on this loop catch up
    live = [n for n, _ in names]
    assert {"frameattached", "framenavigated", "page", "pageclosed", "console",
            "framedetached"} <= set(live)
    # The trace folds to the same events (the fold is the one code path).
    replayed = [(event_name(c), getattr(c, "reason", None))
                for _, _, changes in cdpnb.Trace.load(trace_path).replay_changes()
                for c in changes if event_name(c) is not None]
    start = next(i for i in range(len(replayed)) if replayed[i:i + len(names)] == names)
    assert replayed[start:start + len(names)] == names


async def _next_named(stream: cdpnb.EventStream, name: str) -> cdpnb.SupervisorEvent:
    async for ev in stream:
        if ev.name == name:
            return ev
    raise AssertionError(f"the stream ended before a {name!r} event")


#: Sets the iframe's address and resolves once its new document has loaded, as the
#: parent sees it (the element's load event).
LOAD_IFRAME = """(src) => new Promise(loaded => {
    const f = document.querySelector('iframe') || document.body.appendChild(
        document.createElement('iframe'));
    f.onload = () => loaded(0);
    f.src = src;
})"""


async def test_a_frame_that_changes_process_is_a_swap(
        chromium: cdpnb.Backend, site: ScenarioServer) -> None:
    """Puppeteer's frameswapped: an in-process frame navigated cross-site becomes an
    OOPIF (its own session), and comes back in-process when navigated back; it stays
    the same frame all along (no detach). Measured on Chromium 156.

    Each step waits for the frame's new document to load before the next navigation.
    The swap to an OOPIF fires when the browser attaches the new session, which comes
    before that navigation commits. Measured on Chrome 156.0.8078.108 under load (3 of
    140 runs beside 3 busy processes on 2 cores): an ``iframe.src`` set in that window
    got its ``Page.frameRequestedNavigation``, then the parent's ``frameDetached``
    (reason "swap") for the commit under way, and then nothing more. Chromium dropped
    that navigation: seconds later its iframe target was still at the old address, so
    no swap back could come."""
    async with await cdpnb.Supervisor.start(chromium) as sup:
        await sup.navigate(site.url("/blank"))
        async with sup.events("frameattached", "frameswapped", "framedetached",
                              timeout=20) as stream:

            async def load(there: str) -> None:
                await sup.evaluate(f"({LOAD_IFRAME})({json.dumps(there)})", timeout=20)

            await load(site.url("/blank"))
            attached = await anext(stream)
            assert attached.frame is not None
            for there, oopif in ((site.url("/blank", "b"), True), (site.url("/blank"), False)):
                await load(there)
                swapped = await anext(stream)
                assert swapped.name == "frameswapped" and swapped.frame is not None
                assert (swapped.frame.frame_id, swapped.frame.is_oopif) == (
                    attached.frame.frame_id, oopif)
            # Out of process again, then removed: its session ends before its parent
            # detaches it, which is no swap (the frame left the tree).
            await load(site.url("/blank", "b"))
            assert (await anext(stream)).name == "frameswapped"
            await sup.wait_for(lambda s: any(f.is_oopif and f.url.startswith("http")
                                             for f in s.frames.values()), timeout=20)
            await sup.evaluate("document.querySelector('iframe').remove(); 0")
            gone = await anext(stream)
            assert (gone.name, gone.reason) == ("framedetached", "remove")


async def test_a_replayed_trace_fires_the_events_the_live_run_fired(
        chromium: cdpnb.Backend, site: ScenarioServer, tmp_path: Path) -> None:
    """A supervisor on ``cdpnb.replay(trace)`` folds the recorded messages, so when it
    makes the live run's calls (the replay holds what followed each recorded command
    until it is sent again) its handlers see the live run's events, in order."""
    path = tmp_path / "live.jsonl"

    async def run(sup: cdpnb.Supervisor) -> list[tuple[str, str | None]]:
        seen: list[tuple[str, str | None]] = []
        for name in cdpnb.EVENT_NAMES:
            sup.on(name, lambda ev: seen.append((ev.name, ev.reason)))
        sup.on("dialog", lambda ev: ev.accept("x"))
        await sup.navigate(site.url("/two-site"))
        await sup.wait_for(lambda s: any(f.is_oopif for f in s.frames.values()), timeout=20)
        assert await sup.evaluate("prompt('a')", timeout=20) == "x"
        await sup.stop()
        await asyncio.sleep(0.2)  # (the handlers run on this loop)
        return seen

    live = await run(await cdpnb.Supervisor.start(chromium, record=path))
    assert {"dialog", "dialogclosed", "frameattached", "frameswapped"} <= {n for n, _ in live}
    async with cdpnb.replay(cdpnb.Trace.load(path)) as backend:
        replayed = await run(await cdpnb.Supervisor.start(backend))
    assert replayed == live
