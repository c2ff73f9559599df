"""The dialog model of the reducers, rule by rule, and its invariants under random
interleavings. Each sequence is modelled on what Chromium 156 and headless-shell 156
were measured to send (see cdpnb/state/dialogs.py)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdpnb.protocol import ErrorReply, Event, Message, Note
from cdpnb.state import BrowserState, Change, fold, snapshot_of
from cdpnb.state.changes import (
    BridgeRequestRefused,
    CapabilityMissing,
    ConsoleError,
    Counted,
    DialogClosed,
    DialogOpened,
    DialogUnanswerable,
    FrameRemoved,
    Malformed,
    PageClosed,
    PageHazard,
    PageOpened,
)
from cdpnb.state.dialogs import answerable_dialog
from cdpnb.state.reducer import CONSOLE_ONLY, COUNTS_ONLY
from tests.test_state import (
    CS,
    MAIN,
    OOP,
    PS,
    T0,
    answered,
    answering,
    dialog_closed,
    dialog_opening,
    ev,
    frame,
    note,
    oopif_state,
)

POPUP_T = "POPUP"
POP = "POP-S"


def run(state: BrowserState, *msgs: Message) -> tuple[BrowserState, list[Change]]:
    changes: list[Change] = []
    for msg in msgs:
        state, made = fold(state, msg)
        changes.extend(made)
    return state, changes


def kinds(changes: list[Change]) -> list[str]:
    return [type(c).__name__ for c in changes]


def pending(state: BrowserState) -> dict[str, str | None]:
    return {d.id: d.unanswerable for d in state.pending_dialogs}


# -- overlap --------------------------------------------------------------------------------


def test_chromium_overlap_closes_the_old_one_and_orphans_the_new_one() -> None:
    state, changes = run(oopif_state(),
                         dialog_opening("prompt", "one", frame_id=OOP, wall=T0 + 5),
                         dialog_opening("prompt", "two", frame_id=MAIN, wall=T0 + 6))
    assert pending(state) == {"d-1": "superseded", "d-2": "orphaned"}
    assert answerable_dialog(state, PS) is None  # Chromium lost the handle of both
    assert kinds(changes) == ["DialogOpened", "DialogOpened", "DialogUnanswerable",
                              "DialogUnanswerable", "Counted"]  # (dialog-overlaps)
    # Chromium then closes the older one itself, 0-3 ms later.
    state, changes = run(state, dialog_closed(False, frame_id=OOP, wall=T0 + 6.002))
    [record] = state.recent_dialogs
    assert (record.id, record.closed_by, record.reason, record.accepted) == (
        "d-1", "browser", "superseded", False)
    assert state.counters.get("fast-remote-dismissals") is None  # not an auto-dismisser
    assert pending(state) == {"d-2": "orphaned"}


def test_headless_shell_overlap_makes_the_newest_the_answerable_one_for_good() -> None:
    state, _ = run(oopif_state(),
                   dialog_opening("prompt", "one", frame_id=OOP, has_browser_handler=False),
                   dialog_opening("prompt", "two", frame_id=MAIN, has_browser_handler=False))
    assert pending(state) == {"d-1": "handle_taken", "d-2": None}
    assert answerable_dialog(state, PS).id == "d-2"  # type: ignore[union-attr]
    state, _ = run(state, answering("d-2", True, "x"), dialog_closed(True, "x", frame_id=MAIN),
                   answered("d-2", True))
    assert state.recent_dialogs[-1].closed_by == "agent"
    # The older one never becomes answerable again (measured: "No dialog is showing").
    assert pending(state) == {"d-1": "handle_taken"}
    assert answerable_dialog(state, PS) is None


def test_an_answer_the_browser_gives_to_a_newer_dialog_is_recorded_as_misdelivered() -> None:
    state, _ = run(oopif_state(),
                   dialog_opening("prompt", "mine", frame_id=OOP, has_browser_handler=False),
                   answering("d-1", True, "secret for d-1"),
                   # a newer dialog opens while our answer is on its way ...
                   dialog_opening("prompt", "theirs", frame_id=MAIN, has_browser_handler=False),
                   # ... and headless-shell answers the newest one with it
                   dialog_closed(True, "secret for d-1", frame_id=MAIN))
    closed = state.recent_dialogs[-1]
    assert (closed.id, closed.closed_by, closed.reason, closed.answer_for) == (
        "d-2", "agent", "misdelivered", "d-1")
    [mine] = state.pending_dialogs
    assert mine.answering is not None and mine.answering.delivered_to == "d-2"
    state, _ = run(state, answered("d-1", True))
    [mine] = state.pending_dialogs  # still open: the success was not for it
    assert (mine.id, mine.answering, mine.unanswerable) == ("d-1", None, "handle_taken")
    assert state.counters["answers-misdelivered"] == 1


def test_an_answer_failing_with_no_dialog_showing_marks_the_handle_lost() -> None:
    state, changes = run(oopif_state(), dialog_opening("alert"), answering("d-1", True),
                         answered("d-1", False))
    assert pending(state) == {"d-1": "handle_lost"}
    assert kinds(changes)[-1] == "DialogUnanswerable"


def test_a_release_by_cdpnb_is_recorded_as_such() -> None:
    state, _ = run(oopif_state(),
                   dialog_opening("prompt", "one", frame_id=OOP),
                   dialog_opening("prompt", "two", frame_id=MAIN),
                   dialog_closed(False, frame_id=OOP),
                   note("cdpnb.dialogAnswering", {"dialog_id": "d-2", "accept": False,
                                                  "closed_by": "cdpnb", "reason": "released"}),
                   dialog_closed(False, frame_id=MAIN, wall=T0 + 7))
    assert [(r.id, r.closed_by, r.reason) for r in state.recent_dialogs] == [
        ("d-1", "browser", "superseded"), ("d-2", "cdpnb", "released")]


# -- frames and pages taking their dialogs along -------------------------------------------


def test_a_frame_removed_with_its_dialog_open_closes_it_and_marks_chromium_pages() -> None:
    for handler, hazard in ((True, True), (False, False)):
        state, changes = run(oopif_state(),
                             dialog_opening("prompt", frame_id=OOP, has_browser_handler=handler),
                             ev("Page.frameDetached", {"frameId": OOP, "reason": "remove"}, PS,
                                T0 + 7))
        assert state.pending_dialogs == ()
        record = state.recent_dialogs[-1]
        assert (record.closed_by, record.reason) == ("browser", "frame_removed")
        assert any(isinstance(c, FrameRemoved) and c.frame.frame_id == OOP for c in changes)
        assert (state.pages[PS].hazard is not None) is hazard
        assert any(isinstance(c, PageHazard) for c in changes) is hazard


def test_an_oopif_whose_session_ends_but_whose_iframe_stays_keeps_its_dialog() -> None:
    # Measured: an OOPIF navigated to another site loses its session, its dialog stays
    # answerable and the navigation completes after the answer.
    state, _ = run(oopif_state(), dialog_opening("alert", frame_id=OOP),
                   ev("Target.detachedFromTarget", {"sessionId": CS}, PS, T0 + 7))
    assert OOP in state.frames
    assert pending(state) == {"d-1": None}


def test_a_top_frame_navigation_prunes_child_frames_and_their_dialogs() -> None:
    state, _ = run(oopif_state(), dialog_opening("alert", frame_id=OOP),
                   ev("Page.frameNavigated", {"frame": frame(MAIN, "http://x/", "http://x")},
                      PS, T0 + 7))
    assert state.pending_dialogs == ()
    assert (state.recent_dialogs[-1].closed_by, state.recent_dialogs[-1].reason) == (
        "browser", "frame_navigated")


def test_a_navigation_start_makes_open_dialogs_unanswerable_by_build() -> None:
    start = ev("Page.frameStartedNavigating", {"frameId": MAIN, "url": "http://x/",
                                                "navigationType": "differentDocument"}, PS)
    chromium, changes = run(oopif_state(), dialog_opening("alert"), start)
    assert pending(chromium) == {"d-1": "navigation"}
    assert isinstance(changes[-1], DialogUnanswerable)
    chromium, _ = run(chromium, dialog_closed(False))
    assert (chromium.recent_dialogs[-1].closed_by, chromium.recent_dialogs[-1].reason) == (
        "browser", "navigation")
    shell, _ = run(oopif_state(), dialog_opening("alert", has_browser_handler=False), start)
    assert pending(shell) == {"d-1": "wedged"}
    # beforeunload is what the navigation waits for: exempt; same-document: no effect
    unload, _ = run(oopif_state(), dialog_opening("beforeunload"), start)
    assert pending(unload) == {"d-1": None}
    same = ev("Page.frameStartedNavigating", {"frameId": MAIN, "url": "http://x/#a",
                                              "navigationType": "sameDocument"}, PS)
    fragment, _ = run(oopif_state(), dialog_opening("alert"), same)
    assert pending(fragment) == {"d-1": None}


# -- popups ---------------------------------------------------------------------------------


def popup_attached(opener: str | None = MAIN, session: str = POP,
                   target: str = POPUP_T) -> Event:
    info: dict[str, Any] = {"targetId": target, "type": "page", "url": "", "attached": True}
    if opener is not None:
        info["openerId"] = opener
        info["openerFrameId"] = opener
    return ev("Target.attachedToTarget", {"sessionId": session, "targetInfo": info,
                                          "waitingForDebugger": True}, None)


def test_a_page_opened_by_the_supervised_page_is_supervised_with_its_opener() -> None:
    state, changes = run(oopif_state(), popup_attached())
    [opened] = [c for c in changes if isinstance(c, PageOpened)]
    assert (opened.page.target_id, opened.page.opener_target_id, opened.page.main) == (
        POPUP_T, MAIN, False)
    # its own dialogs arrive on its own session and are answerable beside the page's
    state, _ = run(state,
                   ev("Page.frameNavigated", {"frame": frame(POPUP_T, "http://p/", "http://p")},
                      POP, T0 + 2),
                   dialog_opening("prompt", frame_id=MAIN),
                   dialog_opening("prompt", frame_id=POPUP_T, sid=POP))
    assert pending(state) == {"d-1": None, "d-2": None}
    assert answerable_dialog(state, POP).id == "d-2"  # type: ignore[union-attr]
    snap = snapshot_of(state)
    assert [(p.target_id, p.main, p.opener_target_id, p.pending_dialogs) for p in snap.pages] == [
        (MAIN, True, None, 1), (POPUP_T, False, MAIN, 1)]
    # a popup of the popup is ours too
    state, changes = run(state, popup_attached(opener=POPUP_T, session="POP2", target="P2"))
    assert any(isinstance(c, PageOpened) for c in changes)
    # the popup closes: its dialog ends with it
    state, changes = run(state, ev("Target.detachedFromTarget", {"sessionId": POP}, None,
                                   T0 + 9))
    assert (state.recent_dialogs[-1].id, state.recent_dialogs[-1].reason) == ("d-2",
                                                                              "page_closed")
    assert any(isinstance(c, PageClosed) and c.reason == "closed" for c in changes)
    assert pending(state) == {"d-1": None}


def test_pages_nobody_supervised_opened_are_not_adopted() -> None:
    for event in (popup_attached(opener=None), popup_attached(opener="SOMEONE-ELSE"),
                  popup_attached(opener=None, session="DUP", target=MAIN)):
        state, changes = run(oopif_state(), event)
        assert not any(isinstance(c, PageOpened) for c in changes)
        assert set(state.pages) == {PS}


def test_the_supervised_page_closed_by_someone_else_is_gone_replaced_is_not() -> None:
    closed, changes = run(oopif_state(), dialog_opening("alert"),
                          ev("Target.detachedFromTarget", {"sessionId": PS}, None, T0 + 8))
    assert closed.page_gone is not None and closed.page_session_id is None
    assert (closed.recent_dialogs[-1].closed_by, closed.recent_dialogs[-1].reason) == (
        "browser", "page_closed")
    replaced, changes = run(oopif_state(), dialog_opening("alert"),
                            note("cdpnb.pageReplacing", {"session_id": PS}),
                            ev("Target.detachedFromTarget", {"sessionId": PS}, None, T0 + 8))
    assert replaced.page_gone is None
    assert (replaced.recent_dialogs[-1].closed_by, replaced.recent_dialogs[-1].reason) == (
        "cdpnb", "page_replaced")
    assert any(isinstance(c, PageClosed) and c.reason == "replaced" for c in changes)


# -- the bridge, capabilities ---------------------------------------------------------------


def bridge_call(request: str, frame_id: str = MAIN) -> Note:
    return Note("cdpnb.bridgeDialogOpening", {"type": "prompt", "message": "m",
                                              "defaultPrompt": "", "frameId": frame_id,
                                              "requestId": request}, PS, T0 + 3)


def test_a_second_bridged_call_from_a_frame_with_one_open_is_refused() -> None:
    state, changes = run(oopif_state(), bridge_call("R1"), bridge_call("R2"),
                         bridge_call("R3", frame_id=OOP))
    assert [(d.id, d.request_id, d.frame_id) for d in state.pending_dialogs] == [
        ("d-1", "R1", MAIN), ("d-2", "R3", OOP)]
    [refused] = [c for c in changes if isinstance(c, BridgeRequestRefused)]
    assert (refused.request_id, refused.frame_id) == ("R2", MAIN)
    assert state.counters["bridge-refused"] == 1


def test_many_open_dialogs_show_the_oldest_twenty_and_say_how_many() -> None:
    # A hostile page can open one bridged dialog per frame, in as many frames as it
    # makes: the state keeps them all (each may be answered), a snapshot shows 20.
    state, changes = run(oopif_state(),
                         *(bridge_call(f"R{i}", frame_id=f"F{i}") for i in range(25)))
    assert len(state.pending_dialogs) == 25 and kinds(changes).count("DialogOpened") == 25
    snap = snapshot_of(state)
    assert [d.id for d in snap.pending_dialogs] == [f"d-{i}" for i in range(1, 21)]
    assert snap.pending_truncated and snap.pending_total == 25
    assert "pending_dialogs=20+" in repr(snap)
    assert len(snap.to_dict()["pending_dialogs"]) == 20


def test_method_not_found_replies_mark_a_missing_capability_once() -> None:
    missing = ErrorReply(3, "Page.enable", -32601, "'Page.enable' wasn't found", None, None)
    state, changes = run(BrowserState(), missing, missing)
    assert state.unsupported == {"Page.enable": "-32601 'Page.enable' wasn't found"}
    assert [type(c) for c in changes] == [CapabilityMissing]
    other, changes = run(BrowserState(), ErrorReply(4, "Page.navigate", -32000, "x", None, None))
    assert other.unsupported == {} and changes == []


def test_every_dialog_fold_reports_its_change() -> None:
    _, changes = run(oopif_state(), dialog_opening("alert"), dialog_closed(True))
    assert [type(c) for c in changes] == [DialogOpened, DialogClosed]


# -- invariants under random interleavings ------------------------------------------------

FRAMES = [MAIN, OOP, "F3"]
SESSIONS = [PS, CS, POP]


@st.composite
def dialog_life(draw: st.DrawFn) -> Message:
    """Dialog, frame, navigation, page and answer messages in any order."""
    fid = draw(st.sampled_from(FRAMES))
    sid = draw(st.sampled_from(SESSIONS))
    handler = draw(st.sampled_from([True, False, None]))
    wall = T0 + draw(st.floats(0, 100, allow_nan=False))
    dialog_id = f"d-{draw(st.integers(1, 6))}"
    kind = draw(st.sampled_from([
        "open", "open", "open", "close", "close", "detach", "navigate", "start", "attach",
        "session_gone", "popup", "popup_gone", "answering", "answered", "answer_failed",
        "bridge"]))
    if kind == "open":
        params: dict[str, Any] = {"type": draw(st.sampled_from(["alert", "prompt",
                                                                 "beforeunload"])),
                                  "message": "m", "frameId": fid}
        if handler is not None:
            params["hasBrowserHandler"] = handler
        return Event("Page.javascriptDialogOpening", params, sid, wall)
    if kind == "close":
        return Event("Page.javascriptDialogClosed", {"frameId": fid,
                                                     "result": draw(st.booleans())}, sid, wall)
    if kind == "detach":
        return Event("Page.frameDetached", {"frameId": fid, "reason": draw(
            st.sampled_from(["remove", "swap"]))}, sid, wall)
    if kind == "navigate":
        return Event("Page.frameNavigated", {"frame": frame(fid, "http://n/", "http://n",
                                                            MAIN if fid != MAIN else None)},
                     sid, wall)
    if kind == "start":
        return Event("Page.frameStartedNavigating", {"frameId": fid, "url": "http://n/",
                                                     "navigationType": "differentDocument"},
                     sid, wall)
    if kind == "attach":
        return Event("Page.frameAttached", {"frameId": fid, "parentFrameId": MAIN}, sid, wall)
    if kind == "session_gone":
        return Event("Target.detachedFromTarget", {"sessionId": sid}, None, wall)
    if kind == "popup":
        return popup_attached()
    if kind == "popup_gone":
        return Event("Target.detachedFromTarget", {"sessionId": POP}, None, wall)
    if kind == "answering":
        return answering(dialog_id, draw(st.booleans()))
    if kind == "answered":
        return answered(dialog_id, True)
    if kind == "answer_failed":
        return answered(dialog_id, False)
    return Note("cdpnb.bridgeDialogOpening", {"type": "alert", "message": "b", "frameId": fid,
                                              "requestId": f"R{draw(st.integers(0, 3))}"},
                sid, wall)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(dialog_life(), max_size=30))
def test_random_interleavings_keep_the_dialog_model_sound(msgs: list[Message]) -> None:
    state, _ = run(oopif_state())
    for msg in msgs:
        state, changes = fold(state, msg)
        removed = {c.frame.frame_id for c in changes if isinstance(c, FrameRemoved)}
        # No open dialog outlives its frame: the browser never closes those.
        assert not [d for d in state.pending_dialogs if d.frame_id in removed], msg
        gone_pages = {c.page.session_id for c in changes if isinstance(c, PageClosed)}
        assert not [d for d in state.pending_dialogs if d.page_session_id in gone_pages]
        # At most one native dialog per page is the one the browser would answer.
        for page in {d.page_session_id for d in state.pending_dialogs}:
            answerable = [d for d in state.pending_dialogs if d.via == "native"
                          and d.page_session_id == page and d.answerable]
            assert len(answerable) <= 1, (page, state.pending_dialogs)
        # A bridged call per frame at a time.
        bridged = [d.frame_id for d in state.pending_dialogs if d.via == "bridge"]
        assert len(bridged) == len(set(bridged))
        # Every dialog that opened or closed said so.
        opened = {c.dialog.id for c in changes if isinstance(c, DialogOpened)}
        closed = {c.record.id for c in changes if isinstance(c, DialogClosed)}
        assert opened <= {d.id for d in state.pending_dialogs} | closed
        assert not closed & {d.id for d in state.pending_dialogs}


def test_a_close_right_after_a_frame_commits_is_the_browsers() -> None:
    # Measured on chromium: a popup's prompt opened while its OOPIF still loaded was
    # closed (result false) 0.9 ms after that OOPIF's frameNavigated.
    commit = ev("Page.frameNavigated",
                {"frame": frame(OOP, "http://localhost:1/child", "http://localhost:1", MAIN)},
                CS, T0 + 7)
    state, _ = run(oopif_state(), dialog_opening("prompt", frame_id=MAIN), commit)
    close = Event("Page.javascriptDialogClosed", {"frameId": MAIN, "result": False}, PS,
                  T0 + 7.001)
    state, _ = run(state, close)
    assert (state.recent_dialogs[-1].closed_by, state.recent_dialogs[-1].reason) == (
        "browser", "navigation")
    # long after a commit, the same close is someone else's
    state, _ = run(oopif_state(), dialog_opening("prompt", frame_id=MAIN), commit)
    late = Event("Page.javascriptDialogClosed", {"frameId": MAIN, "result": False}, PS,
                 T0 + 9)
    state, _ = run(state, late)
    assert state.recent_dialogs[-1].closed_by == "remote"
    # a commit from before the dialog opened explains nothing (an auto-dismisser's close)
    state, _ = run(oopif_state(), commit, dialog_opening("prompt", frame_id=MAIN, wall=T0 + 7.001))
    soon = Event("Page.javascriptDialogClosed", {"frameId": MAIN, "result": False}, PS,
                 T0 + 7.004)
    state, _ = run(state, soon)
    assert state.recent_dialogs[-1].closed_by == "remote"


def console_message() -> st.SearchStrategy[Message]:
    """Console messages of every shape the CONSOLE_ONLY rules meet: error and other
    levels, malformed ones, BiDi log entries with and without a known context."""
    values = st.one_of(st.none(), st.integers(), st.text(max_size=5),
                       st.lists(st.fixed_dictionaries({"type": st.just("string"),
                                                       "value": st.text(max_size=5)}),
                                max_size=2))
    cdp_console = st.builds(
        lambda level, args, sid: Event("Runtime.consoleAPICalled",
                                       {"type": level, "args": args}, sid, T0),
        st.one_of(st.sampled_from(["log", "error", "assert"]), st.integers()), values,
        st.sampled_from([PS, CS, None]))
    cdp_exception = st.builds(
        lambda details, sid: Event("Runtime.exceptionThrown", details, sid, T0),
        st.one_of(st.just({"exceptionDetails": {"text": "Uncaught", "url": "http://a/"}}),
                  st.just({}), st.just({"exceptionDetails": None})),
        st.sampled_from([PS, CS]))
    bidi_log = st.builds(
        lambda level, context, kind: Event("log.entryAdded", {
            "level": level, "type": kind, "text": "x",
            "source": {"realm": "r", "context": context}}, None, T0),
        st.sampled_from(["error", "info"]), st.sampled_from([MAIN, OOP, PS, "elsewhere"]),
        st.sampled_from(["console", "javascript"]))
    cdp_log = st.builds(
        lambda entry, sid: Event("Log.entryAdded", entry, sid, T0),
        st.one_of(st.builds(lambda level, source: {"entry": {
            "source": source, "level": level, "text": "x", "url": "http://a/"}},
            st.sampled_from(["error", "warning"]), st.sampled_from(["network", "security"])),
            st.just({}), st.just({"entry": "malformed"})),
        st.sampled_from([PS, CS]))
    return st.one_of(cdp_console, cdp_exception, cdp_log, bidi_log)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(dialog_life(), max_size=12), console_message())
def test_console_only_rules_change_nothing_but_the_console(msgs: list[Message],
                                                            console: Message) -> None:
    """``Trace.dialogs`` folds without the CONSOLE_ONLY events: it may because their
    rules write the console buffer and its counters only, and report nothing else."""
    assert isinstance(console, Event) and console.method in CONSOLE_ONLY
    assert {"Runtime.consoleAPICalled", "Runtime.exceptionThrown", "Log.entryAdded",
            "log.entryAdded"} == CONSOLE_ONLY
    before, _ = run(oopif_state(), *msgs)
    after, changes = fold(before, console)
    assert {type(c) for c in changes} <= {ConsoleError, Malformed}
    mine = {"console_errors", "console_errors_total", "counters"}
    assert after.model_dump(exclude=mine) == before.model_dump(exclude=mine)
    assert {k: v for k, v in after.counters.items() if before.counters.get(k) != v} \
        .keys() <= {f"malformed:{console.method}"}


def counting_note() -> st.SearchStrategy[Message]:
    """Notes of every shape the COUNTS_ONLY rules meet: each such note with its usual
    params, with odd ones (a duration that is no whole number, ids that are no list),
    over BiDi's evaluate note without a duration."""
    odd = st.one_of(st.none(), st.booleans(), st.integers(-3, 20_000), st.text(max_size=3),
                    st.lists(st.integers(), max_size=3))
    params = st.one_of(st.just({}), st.fixed_dictionaries({"ms": odd}),
                       st.fixed_dictionaries({"ids": odd, "why": st.text(max_size=3)}),
                       st.fixed_dictionaries({"method": st.text(max_size=5)}))
    return st.builds(lambda method, p: Note(method, p, None, T0),
                     st.sampled_from(sorted(COUNTS_ONLY)), params)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(dialog_life(), max_size=12), counting_note())
def test_counts_only_rules_change_nothing_but_the_counters(msgs: list[Message],
                                                           note: Message) -> None:
    """``Trace.dialogs`` and ``Trace.frames`` fold without the COUNTS_ONLY notes: they
    may because those rules move counters only, and report nothing but Counted and
    Malformed."""
    assert isinstance(note, Note) and note.method in COUNTS_ONLY
    assert {"cdpnb.evaluated", "cdpnb.commandsOrphaned"} < COUNTS_ONLY
    before, _ = run(oopif_state(), *msgs)
    after, changes = fold(before, note)
    assert {type(c) for c in changes} <= {Counted, Malformed}
    assert after.model_dump(exclude={"counters"}) == before.model_dump(exclude={"counters"})
