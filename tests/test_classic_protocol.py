"""WebDriver classic without a browser: the sans-I/O plans against a scripted server, and
the reducers over exact message sequences (what the polls say, what the answers say)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from cdpnb.protocol import ErrorReply, Note, Reply
from cdpnb.protocol.classic import (
    FRAME_TREE_SCRIPT,
    MAX_FRAMES,
    ClassicFailure,
    Request,
    Response,
    Session,
    frame_id_of,
    frame_path,
    plan,
)
from cdpnb.state import BrowserState, fold_all
from cdpnb.state.changes import DialogClosed, DialogOpened, PageClosed, PageOpened
from cdpnb.state.reducer import fold

Serve = Callable[[Request], Response]


def run(method: str, params: dict[str, Any], serve: Serve,
        session: Session | None = None) -> tuple[dict[str, Any], list[Request]]:
    """Drive a plan against ``serve``: its result and the requests it made."""
    steps = (session or Session()).plan(method, params) if session else plan(method, params)
    sent: list[Request] = []
    try:
        request = next(steps)
        while True:
            sent.append(request)
            request = steps.send(serve(request))
    except StopIteration as done:
        return done.value, sent


def ok(value: Any = None) -> Response:
    return Response(200, {"value": value})


def error(name: str, message: str = "", status: int = 404) -> Response:
    return Response(status, {"value": {"error": name, "message": message, "stacktrace": ""}})


class Dialogs:
    """A scripted window's dialog: what ``GET /alert/text`` shows, what was sent."""

    def __init__(self, shown: str | None, prompt: bool = True) -> None:
        self.shown = shown
        self.prompt = prompt
        self.typed: str | None = None
        self.closed: list[tuple[str, str | None]] = []

    def __call__(self, request: Request) -> Response:
        if self.shown is None:
            return error("no such alert")
        if request.path == "/alert/text" and request.method == "GET":
            return ok(self.shown)
        if request.path == "/alert/text":
            if not self.prompt:
                return error("element not interactable", status=400)
            self.typed = (request.body or {}).get("text")
            return ok()
        if request.path in ("/alert/accept", "/alert/dismiss"):
            self.closed.append((request.path.rsplit("/", 1)[1], self.typed))
            self.shown = None
            return ok()
        return error("unexpected alert open", status=500)


def test_an_answer_with_text_types_it_then_accepts() -> None:
    dialog = Dialogs("name?")
    result, sent = run("classic.answerAlert", {"accept": True, "text": "ada",
                                               "expect": "name?"}, dialog)
    assert dialog.closed == [("accept", "ada")]
    # (and what the window shows right after: nothing)
    assert result == {"value": None, "message": "name?", "prompt": True, "after": None}
    assert [(r.method, r.path) for r in sent] == [
        ("GET", "/alert/text"), ("POST", "/alert/text"), ("POST", "/alert/accept"),
        ("GET", "/alert/text")]


def test_an_alert_refuses_the_text_and_is_accepted_without_it() -> None:
    dialog = Dialogs("hi", prompt=False)
    result, _ = run("classic.answerAlert", {"accept": True, "text": "ada"}, dialog)
    assert dialog.closed == [("accept", None)] and result["prompt"] is False


def test_a_dialog_that_replaced_the_one_named_is_never_answered() -> None:
    """Classic answers whatever is open: a page that swapped its dialog between the poll
    and the answer (the agent's text was meant for "name?") gets nothing."""
    dialog = Dialogs("your password?")
    with pytest.raises(ClassicFailure) as refused:
        run("classic.answerAlert", {"accept": True, "text": "ada", "expect": "name?"}, dialog)
    assert refused.value.error == "no such alert"
    assert dialog.closed == [] and dialog.typed is None


def test_a_dismissal_sends_no_text() -> None:
    dialog = Dialogs("sure?")
    run("classic.answerAlert", {"accept": False, "text": "ignored"}, dialog)
    assert dialog.closed == [("dismiss", None)]


class Frames:
    """A scripted window with nested frames: ``tree`` maps a frame path to its URL and
    how many child frames it has."""

    def __init__(self, tree: dict[tuple[int, ...], str]) -> None:
        self.tree = tree
        self.at: tuple[int, ...] = ()
        self.window = "W1"
        self.log: list[str] = []
        #: frames whose commands fail with this error (a dialog open in them, gone)
        self.failing: dict[tuple[int, ...], str] = {}
        self.entering_fails: dict[tuple[int, ...], str] = {}

    def children(self, path: tuple[int, ...]) -> int:
        return sum(1 for p in self.tree if len(p) == len(path) + 1 and p[:-1] == path)

    def __call__(self, request: Request) -> Response:
        body = request.body or {}
        if request.path == "/window":
            self.window = body["handle"]
            self.at = ()
            self.log.append(f"window {self.window}")
            return ok()
        if request.path == "/frame":
            if body["id"] is None:
                self.at = ()
            elif (*self.at, body["id"]) in self.entering_fails:
                return error(self.entering_fails[(*self.at, body["id"])])
            elif (*self.at, body["id"]) in self.tree:
                self.at = (*self.at, body["id"])
            else:
                return error("no such frame")
            self.log.append(f"frame {body['id']}")
            return ok()
        if request.path == "/frame/parent":
            self.at = self.at[:-1]
            self.log.append("parent")
            return ok()
        if request.path == "/execute/sync":
            if self.at in self.failing:
                return error(self.failing[self.at])
            if body["script"] == FRAME_TREE_SCRIPT:
                return ok([self.tree[self.at], self.children(self.at), ""])
            return ok({"at": list(self.at), "window": self.window})
        return error("unknown command")


def test_a_command_into_a_frame_switches_there_then_is_sent() -> None:
    server = Frames({(): "a", (0,): "b", (1,): "c", (1, 0): "d"})
    session = Session("W1")
    result, _ = run("classic.executeScript", {"script": "return 1", "args": [],
                                              "window": "W1", "frame": [1, 0]}, server, session)
    assert result == {"value": {"at": [1, 0], "window": "W1"}}
    # the next command into the top switches back first; one to another window switches
    result, _ = run("classic.executeScript", {"script": "", "args": [], "window": "W1"},
                    server, session)
    assert result["value"]["at"] == []
    result, _ = run("classic.executeScript", {"script": "", "args": [], "window": "W2",
                                              "frame": [0]}, server, session)
    assert result["value"] == {"at": [0], "window": "W2"}
    assert server.log == ["frame 1", "frame 0", "frame None", "window W2", "frame 0"]


def test_the_frame_tree_is_walked_by_switching_and_said_in_bidi_shape() -> None:
    server = Frames({(): "http://a/", (0,): "about:srcdoc", (1,): "http://b/",
                     (1, 0): "http://a/nested"})
    result, _ = run("classic.frameTree", {"window": "W1"}, server, Session("W1"))
    top = result["contexts"][0]
    assert (top["context"], top["url"]) == ("W1", "http://a/")
    assert [(c["context"], c["url"]) for c in top["children"]] == [
        ("W1/0", "about:srcdoc"), ("W1/1", "http://b/")]
    assert top["children"][1]["children"][0]["context"] == "W1/1/0"
    assert server.at == ()  # back at the top


def test_a_frame_gone_during_the_walk_is_left_out_but_one_with_a_dialog_fails_the_walk(
        ) -> None:
    # Seen on chromedriver 156 (CI, under load): a prompt that opened in a frame while
    # the walk was between the top's script and entering its frames failed the entering
    # with "unexpected alert open"; the walk left those frames out, the tree lost them,
    # and a command routed into one failed "not in the frame tree".
    server = Frames({(): "http://a/", (0,): "about:srcdoc", (1,): "http://b/",
                     (1, 0): "http://a/nested"})
    server.failing[(1,)] = "no such frame"
    result, _ = run("classic.frameTree", {"window": "W1"}, server, Session("W1"))
    assert [c["context"] for c in result["contexts"][0]["children"]] == ["W1/0"]
    server.failing[(1,)] = "unexpected alert open"
    session = Session("W1")
    with pytest.raises(ClassicFailure) as failed:
        run("classic.frameTree", {"window": "W1"}, server, session)
    assert failed.value.error == "unexpected alert open"
    del server.failing[(1,)]
    server.entering_fails[(0,)] = "unexpected alert open"
    with pytest.raises(ClassicFailure) as failed:
        run("classic.frameTree", {"window": "W1"}, server, session)
    assert failed.value.error == "unexpected alert open"
    # the session still knows where it is: the next command switches back to the top
    result, _ = run("classic.executeScript", {"script": "", "args": [], "window": "W1"},
                    server, session)
    assert result["value"]["at"] == []


def test_a_page_with_endless_frames_cannot_make_the_walk_run_on() -> None:
    server = Frames({(): "a", **{(i,): f"f{i}" for i in range(500)}})
    result, sent = run("classic.frameTree", {"window": "W1"}, server, Session("W1"))
    assert len(result["contexts"][0]["children"]) == MAX_FRAMES - 1
    assert len(sent) < 4 * MAX_FRAMES


def test_a_poll_of_a_window_that_is_not_current_is_refused() -> None:
    with pytest.raises(ClassicFailure) as refused:
        run("classic.getAlertText", {"window": "W2"}, Dialogs("x"), Session("W1"))
    assert refused.value.error == "no such window"
    result, _ = run("classic.getAlertText", {"window": "W1"}, Dialogs("x"), Session("W1"))
    assert result == {"value": "x", "window": "W1"}


@pytest.mark.parametrize(("method", "params", "word"), [
    ("classic.nonsense", {}, "unknown command"),
    ("classic.elementClick", {}, "invalid argument"),
    ("classic.executeScript", {"script": "", "frame": "0"}, "invalid argument"),
    ("classic.answerAlert", {"accept": "yes"}, "invalid argument"),
    ("classic.frameTree", {}, "invalid argument"),
])
def test_bad_commands_fail_with_a_w3c_error_that_names_what_was_wrong(
        method: str, params: dict[str, Any], word: str) -> None:
    with pytest.raises(ClassicFailure) as failed:
        run(method, params, lambda r: ok())
    assert failed.value.error == word


def test_frame_ids_are_window_handles_with_paths() -> None:
    assert frame_path("page-1/0/2") == ("page-1", [0, 2])
    assert frame_id_of("page-1", [0, 2]) == "page-1/0/2"
    assert frame_path("page-1") == ("page-1", [])
    for bad in ("page-1/x", "/0", "page-1/-1"):
        with pytest.raises(ValueError, match="no WebDriver classic frame id"):
            frame_path(bad)


# -- the reducers ----------------------------------------------------------------------

W = "page-W1"


def supervised(popups: bool = True) -> BrowserState:
    return fold_all([
        Note("cdpnb.connected", {"url": "http://x", "protocol": "classic", "generation": 1},
             None, 1.0),
        Note("cdpnb.classicSession", {"session_id": "s", "browser": "MiniBrowser/2.50.6",
                                      "popups": popups}, None, 1.0),
        Note("cdpnb.pageTarget", {"target_id": W, "session_id": W}, None, 1.0),
        Reply(1, "classic.frameTree", {"contexts": [{"context": W, "url": "http://a/",
                                                     "children": []}]}, None, {"window": W},
              1.0),
    ])


def poll(text: str | None, at: float, window: str = W) -> Reply | ErrorReply:
    if text is None:
        return ErrorReply(9, "classic.getAlertText", 404, "no such alert",
                          {"error": "no such alert"}, None, {"window": window}, at)
    return Reply(9, "classic.getAlertText", {"value": text, "window": window}, None,
                 {"window": window}, at)


def test_a_polled_dialog_is_of_unknown_type_in_an_unknown_frame() -> None:
    state = supervised()
    assert state.protocol == "classic" and state.engine == "MiniBrowser/2.50.6"
    folded = fold(state, poll("hi", 2.0))
    (dialog,) = folded.state.pending_dialogs
    assert (dialog.type, dialog.frame_id, dialog.message, dialog.page_session_id) == (
        "unknown", None, "hi", W)
    assert [type(c) for c in folded.changes] == [DialogOpened]
    # the same message again is the same dialog, still open
    assert fold(folded.state, poll("hi", 2.1)).changes == ()


def test_our_answer_closes_it_as_ours_and_learns_it_was_a_prompt() -> None:
    state = fold(supervised(), poll("name?", 2.0)).state
    dialog = state.pending_dialogs[0]
    state = fold(state, Note("cdpnb.dialogAnswering", {
        "dialog_id": dialog.id, "accept": True, "prompt_text": "ada",
        "closed_by": "agent"}, None, 2.1)).state
    folded = fold(state, Reply(10, "classic.answerAlert", {
        "value": None, "message": "name?", "prompt": True}, None,
        {"window": W, "accept": True, "text": "ada", "expect": "name?"}, 2.2))
    (closed,) = [c for c in folded.changes if isinstance(c, DialogClosed)]
    assert (closed.record.closed_by, closed.record.accepted, closed.record.type,
            closed.record.prompt_text) == ("agent", True, "prompt", "ada")
    assert folded.state.pending_dialogs == ()
    # the poll after it sees nothing open: no second close
    assert fold(folded.state, poll(None, 2.3)).changes == ()


def test_a_dialog_gone_without_our_answer_is_someone_elses_close() -> None:
    state = fold(supervised(), poll("hi", 2.0)).state
    folded = fold(state, poll(None, 3.0))
    (closed,) = [c for c in folded.changes if isinstance(c, DialogClosed)]
    assert closed.record.closed_by == "remote"


def test_a_new_message_while_one_is_open_is_a_new_dialog() -> None:
    state = fold(supervised(), poll("first", 2.0)).state
    folded = fold(state, poll("second", 2.5))
    kinds = [type(c) for c in folded.changes]
    assert DialogClosed in kinds and DialogOpened in kinds
    assert [d.message for d in folded.state.pending_dialogs] == ["second"]


def test_a_window_that_joins_is_a_popup_and_one_that_leaves_is_closed() -> None:
    state = supervised()
    folded = fold(state, Note("cdpnb.classicWindowOpened", {"handle": "page-P",
                                                            "opener": W}, None, 2.0))
    (opened,) = [c for c in folded.changes if isinstance(c, PageOpened)]
    assert opened.page.opener_target_id == W and "page-P" in folded.state.frames
    state = fold(folded.state, poll("in popup", 2.1, "page-P")).state
    gone = fold(state, Reply(11, "classic.getWindowHandles", {"value": [W]}, None, {}, 3.0))
    assert any(isinstance(c, PageClosed) for c in gone.changes)
    assert gone.state.pending_dialogs == () and "page-P" not in gone.state.pages
    # without popups followed, a new window is not supervised
    assert fold(supervised(popups=False), Note("cdpnb.classicWindowOpened", {
        "handle": "page-P", "opener": W}, None, 2.0)).changes == ()


def test_frames_that_leave_the_window_leave_the_tree() -> None:
    state = fold(supervised(), Reply(2, "classic.frameTree", {"contexts": [{
        "context": W, "url": "http://a/", "children": [
            {"context": f"{W}/0", "url": "http://b/", "children": []}]}]}, None,
        {"window": W}, 2.0)).state
    assert f"{W}/0" in state.frames
    state = fold(state, Reply(3, "classic.frameTree", {"contexts": [{
        "context": W, "url": "http://a/next", "children": []}]}, None, {"window": W},
        3.0)).state
    assert f"{W}/0" not in state.frames and state.frames[W].url == "http://a/next"
    assert state.pages[W].url == "http://a/next"


def test_a_dialog_shown_again_right_after_the_answer_is_a_new_one() -> None:
    state = fold(supervised(), poll("first", 2.0)).state
    dialog = state.pending_dialogs[0]
    state = fold(state, Note("cdpnb.dialogAnswering", {
        "dialog_id": dialog.id, "accept": True, "closed_by": "agent"}, None, 2.1)).state
    folded = fold(state, Reply(10, "classic.answerAlert", {
        "value": None, "message": "first", "prompt": None, "after": "second"}, None,
        {"window": W, "accept": True, "expect": "first"}, 2.2))
    assert [type(c) for c in folded.changes if isinstance(c, DialogClosed | DialogOpened)
            ] == [DialogClosed, DialogOpened]
    assert [d.message for d in folded.state.pending_dialogs] == ["second"]


def test_a_replay_answers_a_poll_with_the_state_where_it_is() -> None:
    """A replay's client polls on its own clock: a poll is answered with the latest one
    recorded by the point the replay has reached, and an answer's reply (which says
    what the window showed right after) counts as such a poll."""
    from cdpnb.playback.script import ReplayScript
    from cdpnb.protocol import Command

    def p(i: int, at: float) -> Command:
        return Command(i, "classic.getAlertText", {"window": W}, None, at, at)

    messages = [
        p(1, 1.0), poll(None, 1.1),
        Command(2, "classic.executeScript", {"script": "x", "window": W}, None, 2.0, 2.0),
        Reply(2, "classic.executeScript", {"value": None}, None, {}, 2.1, 2.1),
        p(3, 2.5), poll("hi", 2.6),
        Command(4, "classic.answerAlert", {"window": W, "accept": True, "expect": "hi"},
                None, 3.0, 3.0),
        Reply(4, "classic.answerAlert", {"value": None, "message": "hi", "prompt": None,
                                         "after": None}, None,
              {"window": W, "accept": True, "expect": "hi"}, 3.1, 3.1),
    ]
    for n, message in enumerate(messages):
        if isinstance(message, Reply | ErrorReply) and message.method == "classic.getAlertText":
            messages[n] = type(message)(**{**{f: getattr(message, f) for f in
                                              message.__dataclass_fields__},
                                           "id": messages[n - 1].id})
    script = ReplayScript(messages)
    gates = [i for i, step in enumerate(script.steps) if step.gate]
    assert len(gates) == 2  # the polls are no gates
    at = script.read_answer("classic.getAlertText", None, {"window": W}, gates[0])
    assert isinstance(at, ErrorReply)  # before the script ran: no dialog
    at = script.read_answer("classic.getAlertText", None, {"window": W}, gates[1])
    assert isinstance(at, Reply) and at.result["value"] == "hi"
    at = script.read_answer("classic.getAlertText", None, {"window": W}, len(script.steps))
    assert isinstance(at, ErrorReply) and at.message == "no such alert"


def test_the_matrix_says_seen_frame_unknown_in_words_everywhere_it_is_shown() -> None:
    """Neither ✓ (seen with its frame) nor ✗ (not seen): the shipped probe's classic
    cells say it in the text matrix, the CLI's marks and the HTML grid."""
    from pathlib import Path

    from cdpnb.probes.display import cell_kind, cell_symbol
    from cdpnb.probes.run import ProbeResult

    root = Path(__file__).resolve().parent.parent
    result = ProbeResult.from_json((root / "datasets/probes/probe.json").read_text())
    for backend in ("webkit", "chromium+chromedriver"):
        cell = str(result.matrix_text().loc[backend, "dialogs cross-site"])
        assert cell.startswith("seen, frame unknown: dialog.") and "names no frame" in cell
        assert result.matrix_text(reasons=False).loc[backend, "dialogs cross-site"] == \
            "seen, frame unknown"
        assert (cell_symbol(cell), cell_kind(cell)) == ("frame?", "info")
        assert result.matrix().loc[backend, "dialogs cross-site"] == "partial"
    assert str(result.matrix_text().loc["firefox", "dialogs cross-site"]) == "✓"
