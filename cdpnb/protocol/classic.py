"""Sans-I/O WebDriver classic: cdpnb's commands as HTTP requests, their answers as replies.

WebDriver classic is HTTP: one request per command, on a session's current window and
frame, no events. cdpnb speaks it under the same message shapes as CDP, so the core,
the recorder and replay need nothing new: a command is ``{"id", "method", "params"}``
with a ``classic.*`` method, and its reply ``{"id", "result"}`` or ``{"id", "error":
{"code": <HTTP status>, "message": "<W3C error>: <text>", "data": {"error": ...}}}``.
``plan(method, params)`` is a generator that yields each HTTP ``Request`` a command
takes, is sent each ``Response``, and returns the command's result (or raises
``ClassicFailure``); whoever does the I/O (``cdpnb.transport.classic``, or a test's
scripted server) drives it. Nothing here opens a socket or reads a clock.

Two things classic cannot do in one request, done here in several and recorded as one
command (the trace has the command and its outcome, not each request):

* **Routing**: a command's ``window`` (a window handle) and ``frame`` (frame indexes
  from the top, ``[0, 1]``: the second frame of the first frame) are switched to first,
  and a command into a frame switches back to the top afterwards. Classic names frames
  by index only, so cdpnb's frame ids are paths: ``<handle>`` for the top, and
  ``<handle>/0/1`` below it; a path goes stale when frames before it come or go.
* **Answers**: ``classic.answerAlert`` sends a prompt's text and accepts or dismisses,
  after checking that the open dialog still shows the message it is meant for
  (``expect``): classic answers whatever dialog is open in the window, so a dialog that
  replaced the one named is refused, never answered. Its reply says what the window
  shows right after (``after``: a message, or None), as a poll would.

Measured on WebKitWebDriver 2.50.6 (MiniBrowser) and chromedriver 156, sessions with
``unhandledPromptBehavior`` "ignore": ``GET /alert/text`` gives the message of the
window's open dialog (whichever frame opened it; no type, no frame, no default text) or
"no such alert"; every other command while it is open fails "unexpected alert open";
``POST /alert/text`` on an alert or a confirm fails "element not interactable", so a
dialog's type is only known to be a prompt once text was sent to it; a prompt accepted
without text returns its default; ``execute/sync`` of a script that opens a dialog
returns null at once.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from typing import Any

from cdpnb.errors import PicklesWhole

__all__ = [
    "COMMANDS",
    "ELEMENT_KEY",
    "FRAME_TREE_SCRIPT",
    "ClassicFailure",
    "Request",
    "Response",
    "Session",
    "classic_error_name",
    "error_message",
    "frame_id_of",
    "frame_path",
    "plan",
    "reply_message",
]

#: W3C's key of an element reference in JSON.
ELEMENT_KEY = "element-6066-11e4-a52e-4f735466cecf"

#: cdpnb's name of each single-request command → (HTTP method, path under the session;
#: ``{elementId}`` is taken from the params). The body is the params without cdpnb's
#: routing keys.
COMMANDS: Mapping[str, tuple[str, str]] = {
    "classic.navigateTo": ("POST", "/url"),
    "classic.getCurrentUrl": ("GET", "/url"),
    "classic.getTitle": ("GET", "/title"),
    "classic.back": ("POST", "/back"),
    "classic.forward": ("POST", "/forward"),
    "classic.refresh": ("POST", "/refresh"),
    "classic.getWindowHandle": ("GET", "/window"),
    "classic.getWindowHandles": ("GET", "/window/handles"),
    "classic.switchToWindow": ("POST", "/window"),
    "classic.closeWindow": ("DELETE", "/window"),
    "classic.newWindow": ("POST", "/window/new"),
    "classic.switchToFrame": ("POST", "/frame"),
    "classic.switchToParentFrame": ("POST", "/frame/parent"),
    "classic.findElement": ("POST", "/element"),
    "classic.findElements": ("POST", "/elements"),
    "classic.elementClick": ("POST", "/element/{elementId}/click"),
    "classic.executeScript": ("POST", "/execute/sync"),
    "classic.executeAsyncScript": ("POST", "/execute/async"),
    "classic.getAlertText": ("GET", "/alert/text"),
    "classic.sendAlertText": ("POST", "/alert/text"),
    "classic.acceptAlert": ("POST", "/alert/accept"),
    "classic.dismissAlert": ("POST", "/alert/dismiss"),
    "classic.getTimeouts": ("GET", "/timeouts"),
    "classic.setTimeouts": ("POST", "/timeouts"),
    "classic.getPageSource": ("GET", "/source"),
    "classic.takeScreenshot": ("GET", "/screenshot"),
    "classic.deleteSession": ("DELETE", ""),
}

#: cdpnb's routing keys in a command's params (never sent in a body).
ROUTING = frozenset({"window", "frame", "elementId"})
#: Commands that use no browsing context, or that concern the top-level one whatever the
#: current frame (so they switch nothing).
UNROUTED = frozenset({"classic.getAlertText", "classic.sendAlertText", "classic.acceptAlert",
                      "classic.dismissAlert", "classic.getWindowHandle",
                      "classic.getWindowHandles", "classic.switchToWindow",
                      "classic.newWindow", "classic.getTimeouts", "classic.setTimeouts",
                      "classic.deleteSession", "classic.switchToFrame",
                      "classic.switchToParentFrame"})

#: What a frame says of itself while the frame tree is walked: its URL, how many child
#: frames it has, its name.
FRAME_TREE_SCRIPT = "return [location.href, window.frames.length, window.name];"
#: The walk stops this deep and after this many frames (a page cannot make it run on).
MAX_FRAME_DEPTH = 8
MAX_FRAMES = 64
#: The errors that say a frame left while the walk went through it: it is left out of
#: the tree. Any other error fails the whole walk, so that the frame tree stays as it was
#: last known. Seen on chromedriver 156 under load: a prompt that opened in a frame after
#: the walk ran the top's script failed entering the frames with "unexpected alert open";
#: left out, they left the tree and a command routed into one was refused -- a frame
#: whose page shows a dialog is not a frame gone.
FRAME_GONE = frozenset({"no such frame", "no such window", "no such element",
                        "stale element reference", "javascript error"})


@dataclass(frozen=True, slots=True)
class Request:
    """One HTTP request on the session: ``path`` is under ``/session/<id>``."""

    method: str
    path: str
    body: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Response:
    """One HTTP answer: its status and its JSON body (None when it had none)."""

    status: int
    body: Any

    @property
    def value(self) -> Any:
        return self.body.get("value") if isinstance(self.body, dict) else None

    @property
    def error(self) -> str | None:
        """The W3C error code (``"no such alert"``), or None for a success."""
        value = self.value
        if isinstance(value, dict) and isinstance(value.get("error"), str):
            return str(value["error"])
        return f"HTTP {self.status}" if self.status >= 400 else None


class ClassicFailure(PicklesWhole):
    """A command failed: the W3C error code, the server's message, the HTTP status."""

    def __init__(self, error: str, message: str = "", status: int = 500) -> None:
        super().__init__(f"{error}: {message}" if message else error)
        self.error = error
        self.message = message
        self.status = status


Plan = Generator[Request, Response, dict[str, Any]]


def frame_path(frame_id: str) -> tuple[str, list[int]]:
    """``"<handle>/0/1"`` → (``"<handle>"``, ``[0, 1]``); ValueError if it is none."""
    handle, *indexes = frame_id.split("/")
    try:
        path = [int(i) for i in indexes]
    except ValueError:
        raise ValueError(f"{frame_id!r} is no WebDriver classic frame id "
                         "(<window handle>/<index>/...)") from None
    if not handle or any(i < 0 for i in path):
        raise ValueError(f"{frame_id!r} is no WebDriver classic frame id")
    return handle, path


def frame_id_of(handle: str, path: list[int]) -> str:
    return "/".join([handle, *map(str, path)])


def _check(response: Response) -> Any:
    error = response.error
    if error is not None:
        value = response.value
        message = value.get("message") if isinstance(value, dict) else ""
        raise ClassicFailure(error, message if isinstance(message, str) else "",
                             response.status)
    return response.value


def _into(window: str | None, frame: list[int], state: _Where) -> Generator[Request, Response,
                                                                            None]:
    """Switch to ``window`` (when it is not the current one) and into ``frame``."""
    if window is not None and window != state.window:
        _check((yield Request("POST", "/window", {"handle": window})))
        state.window = window
        state.frame = []
    if state.frame != frame:
        if state.frame is None or state.frame:
            _check((yield Request("POST", "/frame", {"id": None})))
            state.frame = []
        for index in frame:
            _check((yield Request("POST", "/frame", {"id": index})))
            state.frame = [*state.frame, index]


@dataclass(slots=True)
class _Where:
    """The session's current window and frame, as far as this client moved them
    (``frame`` None: unknown, after a raw switch)."""

    window: str | None = None
    frame: list[int] | None = field(default_factory=list)


class Session:
    """One classic session's current window and frame: what routing switches from.

    Only plans move it; the I/O side runs one routed plan at a time (``plan`` with
    this session), since every command acts on the one current frame."""

    def __init__(self, window: str | None = None) -> None:
        self.where = _Where(window)

    @property
    def window(self) -> str | None:
        return self.where.window

    def plan(self, method: str, params: Mapping[str, Any]) -> Plan:
        return plan(method, params, self.where)


def plan(method: str, params: Mapping[str, Any], where: _Where | None = None) -> Plan:
    """The requests ``method`` takes (see the module's doc) and its result."""
    if not isinstance(params, Mapping):
        raise ClassicFailure("invalid argument", f"params must be an object, got {params!r}",
                             400)
    where = where if where is not None else _Where()
    if method == "classic.answerAlert":
        return (yield from _answer_alert(params))
    if method == "classic.frameTree":
        return (yield from _frame_tree(params, where))
    if method == "classic.getAlertText":
        # The poll reads the current window's dialog: a poll that names another window
        # is refused, never answered for the wrong one.
        named = params.get("window")
        if named is not None and where.window is not None and named != where.window:
            raise ClassicFailure("no such window", f"{named} is not the current window "
                                 f"({where.window}): not polled", 400)
        response = yield Request("GET", "/alert/text")
        return {"value": _check(response), "window": where.window}
    if method not in COMMANDS:
        raise ClassicFailure("unknown command", f"cdpnb has no WebDriver classic command "
                             f"{method!r} (known: classic.answerAlert, classic.frameTree, "
                             f"{', '.join(sorted(COMMANDS))})", 404)
    verb, path = COMMANDS[method]
    if "{elementId}" in path:
        element = params.get("elementId")
        if not isinstance(element, str) or not element:
            raise ClassicFailure("invalid argument", f"{method} needs params.elementId", 400)
        path = path.replace("{elementId}", element)
    body = {k: v for k, v in params.items() if k not in ROUTING}
    if method not in UNROUTED:
        window = params.get("window")
        frame = params.get("frame") or []
        if window is not None and not isinstance(window, str):
            raise ClassicFailure("invalid argument", "params.window must be a handle", 400)
        if not isinstance(frame, list) or not all(isinstance(i, int) for i in frame):
            raise ClassicFailure("invalid argument", "params.frame must be a list of "
                                 "frame indexes", 400)
        yield from _into(window, frame, where)
    response = yield Request(verb, path, body if verb == "POST" else None)
    if method == "classic.switchToWindow" and response.error is None:
        where.window, where.frame = str(body.get("handle")), []
    elif method == "classic.closeWindow" and response.error is None:
        where.window, where.frame = None, None  # (the current window is no more)
    elif method == "classic.switchToFrame" and response.error is None:
        where.frame = None  # (a raw switch: where it went is the server's to know)
    value = _check(response)
    if method == "classic.navigateTo" or method == "classic.refresh":
        where.frame = []  # a navigation of the top-level context resets the current frame
    return {"value": value}


def _answer_alert(params: Mapping[str, Any]) -> Plan:
    accept = params.get("accept")
    if not isinstance(accept, bool):
        raise ClassicFailure("invalid argument", "classic.answerAlert needs accept: bool", 400)
    text = params.get("text")
    expect = params.get("expect")
    shown = _check((yield Request("GET", "/alert/text")))
    if isinstance(expect, str) and shown != expect:
        raise ClassicFailure("no such alert", "the open dialog is not the one named (it "
                             "shows another message): not answered", 404)
    prompt: bool | None = None
    if accept and isinstance(text, str):
        sent = yield Request("POST", "/alert/text", {"text": text})
        if sent.error in ("element not interactable", "unsupported operation"):
            prompt = False  # an alert or a confirm: accepted without the text
        else:
            _check(sent)
            prompt = True
    _check((yield Request("POST", "/alert/accept" if accept else "/alert/dismiss", {})))
    # What the window shows now, in the same command: the next dialog, if one opened at
    # once (None: none). A poll sent after the answer would say the same, but a replay's
    # client polls on its own clock: this is the state the recording holds for it.
    after = yield Request("GET", "/alert/text")
    return {"value": None, "message": shown, "prompt": prompt,
            "after": after.value if after.error is None else None}


def _frame_tree(params: Mapping[str, Any], where: _Where) -> Plan:
    """Walk the window's frames by switching into each: BiDi's ``browsingContext.Info``
    shape (``context``, ``url``, ``children``), so the frame tree folds the same way."""
    window = params.get("window")
    if not isinstance(window, str):
        raise ClassicFailure("invalid argument", "classic.frameTree needs params.window", 400)
    yield from _into(window, [], where)
    count = [0]

    def walk(path: list[int]) -> Generator[Request, Response, dict[str, Any] | None]:
        response = yield Request("POST", "/execute/sync", {"script": FRAME_TREE_SCRIPT,
                                                           "args": []})
        if response.error is not None:
            if not path or response.error not in FRAME_GONE:
                _check(response)  # the whole walk fails: the tree stays as last known
            return None
        said = response.value if isinstance(response.value, list) else []
        href, children, name = [*said, "", 0, ""][:3]
        node: dict[str, Any] = {"context": frame_id_of(window, path), "url": str(href or ""),
                                "name": str(name or ""), "children": []}
        count[0] += 1
        if len(path) < MAX_FRAME_DEPTH:
            for index in range(int(children) if isinstance(children, int) else 0):
                if count[0] >= MAX_FRAMES:
                    break
                entered = yield Request("POST", "/frame", {"id": index})
                if entered.error in FRAME_GONE:
                    continue  # (gone meanwhile)
                _check(entered)
                where.frame = [*path, index]
                child = yield from walk([*path, index])
                if child is not None:
                    node["children"].append(child)
                _check((yield Request("POST", "/frame/parent", {})))
                where.frame = list(path)
        return node

    top = yield from walk([])
    return {"contexts": [top] if top is not None else []}


def reply_message(command_id: int, result: dict[str, Any]) -> dict[str, Any]:
    return {"id": command_id, "result": result}


def error_message(command_id: int, failure: ClassicFailure) -> dict[str, Any]:
    """The error reply: ``message`` starts with the W3C error code (what
    ``classic_error_name`` reads back), ``code`` is the HTTP status."""
    text = f"{failure.error}: {failure.message}" if failure.message else failure.error
    return {"id": command_id, "error": {"code": failure.status, "message": text,
                                        "data": {"error": failure.error}}}


def classic_error_name(message: str, data: Any) -> str:
    """The W3C error code of an error reply (``"no such alert"``)."""
    if isinstance(data, dict) and isinstance(data.get("error"), str):
        return str(data["error"])
    return message.split(":", 1)[0]
