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
  ``<handle>/0/1`` below it; a path goes stale when frames before it come or go. A frame
  inside a shadow root is not in ``window.frames`` (it has no index): it is ``s<n>``,
  the n-th such frame of its document, entered by its element (``<handle>/s0/1``).
  A switch answered "timeout", or not answered, leaves the frame unknown (one answered
  with another error switched nothing), and the next command starts over from the top
  (``POST /frame`` null; ``POST /window`` to the current window when that times out
  too).
* **Budgets**: a command's ``timeout`` (seconds: its budget, routing like ``window``,
  left out of a replay's match as CDP's is) bounds it on both sides: the session's
  ``script`` and ``pageLoad`` timeouts are set to it first (when they differ: one cheap
  ``POST /timeouts``), and each of its requests gets it (plus ``ANSWER_SLACK_S``) as its
  I/O timeout (``Request.timeout``). A command without one runs under the timeouts the
  session was last given by its user (W3C's defaults: 30 s, 300 s).
* **Evaluate**: ``classic.evaluate`` (``expression``, ``awaitPromise``) runs
  ``EVALUATE_SCRIPT`` with a key of its own (its reply says it, ``key``), and
  ``classic.readBack`` (``key``) reads back the value a call that returned at a dialog
  kept (``READ_BACK_SCRIPT``); how values are said: ``cdpnb.drivers.classic.values``.
  The trace holds what was asked, not the script, so a recording replays whatever
  the script becomes.
* **Answers**: ``classic.answerAlert`` sends a prompt's text and accepts or dismisses,
  after checking that the open dialog still shows the message it is meant for
  (``expect``): classic answers whatever dialog is open in the window, so a dialog that
  replaced the one named is refused, never answered. Its reply says what the window
  shows right after (``after``: a message, or None), as a poll would.
* **Polls**: ``classic.getAlertText`` reads the window's dialog. One sent with ``shown``
  (the window was known to show one) that finds none open reads the window's top
  document too, ``url`` and ``time_origin_ms``, into the error's ``data``: a browser
  closes a dialog the page's own navigation leaves, and only that reading tells it from
  someone else's close.

Measured on WebKitWebDriver 2.50.6 (MiniBrowser) and chromedriver 156, sessions with
``unhandledPromptBehavior`` "ignore": ``GET /alert/text`` gives the message of the
window's open dialog (whichever frame opened it; no type, no frame, no default text) or
"no such alert"; every other command while it is open fails "unexpected alert open";
``POST /alert/text`` on an alert or a confirm fails "element not interactable", so a
dialog's type is only known to be a prompt once text was sent to it; a prompt accepted
without text returns its default; ``execute/sync`` of a script that opens a dialog
returns null at once (the script goes on once the dialog is answered).

Why budgets (measured, chromedriver 156): a server waits for a window's "pending
navigation" before nearly every command, the alert ones included, for up to the
session's ``pageLoad`` timeout (300 s by default), with one ``Runtime.evaluate`` in the
window's renderer; a renderer paused by a dialog of another window (a popup with its
opener: one renderer) never answers it, and the server takes commands one at a time, so
one poll of such a window held the whole session for 300 s. With ``pageLoad`` set to the
command's budget it fails "timeout" then, and the next command is served. When the wait
times out the server stops the window's load (``Page.stopLoading``: measured, a
navigation still under way was cancelled), so a budget is the longest load a command
lets a window take. WebKitWebDriver 2.50 also waits for a load (``GET /alert/text`` and
``execute/sync`` answer "timeout" after ``pageLoad``) but does not stop it, and takes
commands side by side (a request given up on holds nothing).

Measured, frames: chromedriver 156 stays stuck in a ``loading=lazy`` iframe that has not
loaded (its initial ``about:blank``) when it was entered before any script touched its
``contentDocument``: every command, ``POST /frame`` to the parent or the top included,
then fails "timeout" after ``pageLoad``; ``POST /window`` to the current window gets it
out (1 ms). WebKitWebDriver 2.50 waits in a frame whose document is still loading:
``execute/sync`` there answers only once it has loaded (the walk's 2 s budget ran out on
a frame whose response took 3 s), and when the page opens an alert meanwhile the server
wedges: that command answers "unexpected alert open" and every later one, ``GET
/alert/text`` included, never answers (measured: the alert was never seen and the
session was lost). So the walk reads each child's document from its parent first and
does not enter a frame that has not loaded — lazy, or with its first document under way
(the parent still sees its initial ``about:blank``): it is listed, at ``about:blank``,
as CDP lists it, and entered by a later walk. Both servers enter a frame in a shadow
root by its element reference.
"""

from __future__ import annotations

import math
import re
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from cdpnb.errors import PicklesWhole

__all__ = [
    "COMMANDS",
    "ELEMENT_KEY",
    "EVALUATE_SCRIPT",
    "FRAME_TREE_SCRIPT",
    "READ_BACK_SCRIPT",
    "SHADOW_FRAME_SCRIPT",
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
    "classic.elementSendKeys": ("POST", "/element/{elementId}/value"),
    "classic.elementClear": ("POST", "/element/{elementId}/clear"),
    "classic.performActions": ("POST", "/actions"),
    "classic.releaseActions": ("DELETE", "/actions"),
    "classic.getAllCookies": ("GET", "/cookie"),
    "classic.addCookie": ("POST", "/cookie"),
    "classic.deleteAllCookies": ("DELETE", "/cookie"),
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

#: cdpnb's routing keys in a command's params (never sent in a body). ``scriptTimeout``
#: (seconds) sets the session's ``script`` timeout alone for the command, its
#: ``pageLoad`` left as it is (see ``_within``).
ROUTING = frozenset({"window", "frame", "elementId", "timeout", "scriptTimeout"})
#: W3C's session timeouts (ms) a new session starts with: a command without a ``timeout``
#: runs under these, or under what the user last set (``classic.setTimeouts``).
DEFAULT_TIMEOUTS: Mapping[str, int] = {"script": 30_000, "pageLoad": 300_000}
#: How much longer than its budget the I/O side waits for a command's answer (the
#: server's own "timeout" answer, sent at the budget, comes first).
ANSWER_SLACK_S = 2.0
#: Commands that use no browsing context, or that concern the top-level one whatever the
#: current frame (so they switch nothing).
UNROUTED = frozenset({"classic.getAlertText", "classic.sendAlertText", "classic.acceptAlert",
                      "classic.dismissAlert", "classic.getWindowHandle",
                      "classic.getWindowHandles", "classic.switchToWindow",
                      "classic.newWindow", "classic.getTimeouts", "classic.setTimeouts",
                      "classic.deleteSession", "classic.switchToFrame",
                      "classic.switchToParentFrame"})

#: The frame elements of this document in shadow roots (open ones: a closed one is out
#: of a script's reach), in document order: not in ``window.frames``, so they have no
#: index (a path names the n-th as ``s<n>``).
_SHADOW_FRAMES = """(() => {
  const found = [];
  const visit = root => {
    for (const el of root.querySelectorAll("*")) {
      if (root !== document && (el.localName === "iframe" || el.localName === "frame")
          && el.contentWindow) found.push(el);
      if (el.shadowRoot) visit(el.shadowRoot);
    }
  };
  visit(document);
  return found;
})()"""
#: What a frame says of itself while the frame tree is walked: its URL, its name
#: (``window.name``) and its child frames, each ``[index or "s<n>", not loaded yet (still
#: at its initial about:blank with a document to load, lazy or under way: not entered),
#: its name when readable, its element (a reference, for a frame in a shadow root) or
#: null]``. Every child's ``contentDocument`` is read (see the module's doc: frames that
#: have not loaded).
FRAME_TREE_SCRIPT = f"""const shadow = {_SHADOW_FRAMES};
const owners = Array.from(document.querySelectorAll("iframe, frame"));
const said = (el, win, seg, ref) => {{
  let doc = null, name = null;
  try {{ doc = el ? el.contentDocument : null; }} catch (e) {{}}
  try {{ name = String(win.name); }} catch (e) {{}}
  const pending = !!doc && doc.URL === "about:blank"
    && (el.hasAttribute("srcdoc") || (!!el.getAttribute("src") && !el.src.startsWith("about:")));
  return [seg, pending, name, ref ? el : null];
}};
const kids = [];
for (let i = 0; i < window.frames.length; i++) {{
  const win = window.frames[i];
  kids.push(said(owners.find(el => el.contentWindow === win) || null, win, i, false));
}}
shadow.forEach((el, n) => kids.push(said(el, el.contentWindow, "s" + n, true)));
return [location.href, window.name, kids];"""
#: The n-th frame element in this document's shadow roots (``arguments[0]``), or null.
SHADOW_FRAME_SCRIPT = f"return {_SHADOW_FRAMES}[arguments[0]] || null;"
_SHADOW_SEGMENT = re.compile(r"s(0|[1-9][0-9]*)")

# The scripts of ``classic.evaluate`` and ``classic.readBack``: what they answer and why
# is ``cdpnb.drivers.classic.values``'s to say. The values of the calls are kept in a
# Map on the page's window under one registered symbol, the last KEPT finished ones
# (a call under way is kept until it ends: null).
KEPT = 16
_BOX = """const hold = Symbol.for("cdpnb:evaluate");
let box = null;
try {
  box = Object.prototype.hasOwnProperty.call(window, hold) ? window[hold] : null;
  if (!(box instanceof Map)) {
    box = new Map();
    Object.defineProperty(window, hold, {value: box, configurable: true});
  }
} catch (e) { box = new Map(); }"""

#: The evaluate call: ``arguments`` are the expression, the key of this call's value and
#: whether a promise is awaited. Its answer: ``{"v": <data, BiDi's shape>}``, ``{"r":
#: <CDP's description>, "e": <the element, or null>}``, or a throw.
EVALUATE_SCRIPT = _BOX + """
const [expression, key, awaitPromise] = arguments;
const keep = out => {
  box.delete(key);
  box.set(key, out);
  for (const [k, v] of box) {
    if (box.size <= KEPT) break;
    if (v !== null) box.delete(k);
  }
  return out;
};
keep(null);
const NOT_DATA = {};
const data = (v, up) => {
  switch (typeof v) {
    case "undefined": return {type: "undefined"};
    case "string": return {type: "string", value: v};
    case "boolean": return {type: "boolean", value: v};
    case "bigint": return {type: "bigint", value: v.toString()};
    case "number":
      if (Number.isNaN(v)) return {type: "number", value: "NaN"};
      if (v === Infinity) return {type: "number", value: "Infinity"};
      if (v === -Infinity) return {type: "number", value: "-Infinity"};
      if (Object.is(v, -0)) return {type: "number", value: "-0"};
      return {type: "number", value: v};
    case "object": {
      if (v === null) return {type: "null"};
      if (up.includes(v) || up.length > 200) throw NOT_DATA;
      const proto = Object.getPrototypeOf(v);
      const inner = [...up, v];
      if (Array.isArray(v) && proto === Array.prototype) {
        const items = [];
        for (let i = 0; i < v.length; i++) items.push(data(v[i], inner));
        return {type: "array", value: items};
      }
      if (proto === Object.prototype || proto === null)
        return {type: "object", value: Object.keys(v).map(k => [k, data(v[k], inner)])};
      throw NOT_DATA;
    }
    default: throw NOT_DATA;
  }
};
const text = (f, v) => { try { return String(f(v)).slice(0, 10000); } catch (e) { return ""; } };
const describe = v => {
  if (typeof v === "function")
    return {type: "function", className: "Function",
            description: text(f => Function.prototype.toString.call(f), v)};
  if (typeof v === "symbol") return {type: "symbol", description: text(String, v)};
  let className = "Object";
  try { const c = v.constructor; if (typeof c === "function" && c.name) className = c.name; }
  catch (e) {}
  let isWindow = false;
  try { isWindow = v.window === v; } catch (e) {}
  if (isWindow) return {type: "object", className: "Window", description: "Window"};
  const is = C => { try { return typeof C === "function" && v instanceof C; }
                    catch (e) { return false; } };
  const out = (subtype, description) => ({type: "object", subtype, className, description});
  let nodeType = null;
  try { nodeType = typeof v.nodeType === "number" && typeof v.nodeName === "string"
                   ? v.nodeType : null; } catch (e) {}
  if (nodeType === 1) {
    let d = String(v.localName || v.nodeName);
    if (v.id) d += "#" + v.id;
    if (typeof v.className === "string" && v.className.trim())
      d += "." + v.className.trim().split(/\\s+/).join(".");
    return out("node", d);
  }
  if (nodeType !== null) return out("node", String(v.nodeName));
  if (Array.isArray(v)) return out("array", `Array(${v.length})`);
  if (is(Map) || is(Set)) return out(is(Map) ? "map" : "set", `${className}(${v.size})`);
  if (is(WeakMap) || is(WeakSet)) return out(is(WeakMap) ? "weakmap" : "weakset", className);
  if (is(Date)) return out("date", text(String, v));
  if (is(RegExp)) return out("regexp", text(String, v));
  if (is(Error)) return out("error", text(e => {  // (JSC's stack lacks the message line)
    const head = String(e), stack = e.stack ? String(e.stack) : "";
    return !stack || stack.startsWith(head) ? stack || head : head + "\\n" + stack;
  }, v));
  if (is(Promise)) return out("promise", "Promise");
  if (ArrayBuffer.isView(v) && !is(DataView)) return out("typedarray", `${className}(${v.length})`);
  if (is(ArrayBuffer)) return out("arraybuffer", `ArrayBuffer(${v.byteLength})`);
  return {type: "object", className, description: className};
};
const answer = v => {
  try { return keep({v: data(v, [])}); }
  catch (e) { if (e !== NOT_DATA) throw e; }
  let element = null;
  try { if (v.nodeType === 1 && v.ownerDocument === document) element = v; } catch (e) {}
  return keep({r: describe(v), e: element});
};
const thrown = e => {
  const message = text(x => x && x.message !== undefined ? x.message : x, e);
  keep({thrown: [message, text(x => x && x.stack || x, e)]});
  throw e;
};
let value;
try { value = (0, eval)(expression); } catch (e) { thrown(e); }
let then = null;
try { then = awaitPromise && value !== null && (typeof value === "object"
  || typeof value === "function") ? value.then : null; } catch (e) {}
if (typeof then === "function") return Promise.resolve(value).then(answer, thrown);
return answer(value);""".replace("KEPT", str(KEPT))

#: When the current document began (ms since the epoch, the browser's clock).
TIME_ORIGIN_SCRIPT = "return performance.timeOrigin"
#: The value the call keyed ``arguments[0]`` kept, once its script has ended (waited
#: for while it runs): ``{"done": ...}``, or ``{"missing": true}`` when the document
#: holds no such call (it navigated away, or the value was read or dropped).
READ_BACK_SCRIPT = _BOX + """
const key = arguments[0];
return new Promise(resolve => {
  const look = () => {
    if (!box.has(key)) resolve({missing: true});
    else if (box.get(key) !== null) {
      const out = box.get(key);
      box.delete(key);
      resolve({done: out});
    } else setTimeout(look, 10);
  };
  look();
});"""

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
    """One HTTP request on the session: ``path`` is under ``/session/<id>``; ``timeout``
    how long to wait for its answer (seconds; None: the I/O side's own default)."""

    method: str
    path: str
    body: dict[str, Any] | None = None
    timeout: float | None = None


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
    """A command failed: the W3C error code, the server's message, the HTTP status, and
    what the plan read to explain it (``details``: it travels in the error reply's
    ``data``, so a fold of the recording decides as the live one did)."""

    def __init__(self, error: str, message: str = "", status: int = 500,
                 details: Mapping[str, Any] | None = None) -> None:
        super().__init__(f"{error}: {message}" if message else error)
        self.error = error
        self.message = message
        self.status = status
        self.details = dict(details or {})


Plan = Generator[Request, Response, dict[str, Any]]


#: One step of a frame path: an index in ``window.frames``, or ``"s<n>"``: the n-th frame
#: in the document's shadow roots.
Segment = int | str


def _segment(part: str) -> Segment:
    if _SHADOW_SEGMENT.fullmatch(part):
        return part
    index = int(part)  # (ValueError: no segment)
    if index < 0 or str(index) != part.lstrip("+"):
        raise ValueError(part)
    return index


def frame_path(frame_id: str) -> tuple[str, list[Segment]]:
    """``"<handle>/0/s1"`` → (``"<handle>"``, ``[0, "s1"]``); ValueError if it is none."""
    handle, *parts = frame_id.split("/")
    try:
        path = [_segment(p) for p in parts]
    except ValueError:
        raise ValueError(f"{frame_id!r} is no WebDriver classic frame id "
                         "(<window handle>/<index or s<n>>/...)") from None
    if not handle:
        raise ValueError(f"{frame_id!r} is no WebDriver classic frame id")
    return handle, path


def frame_id_of(handle: str, path: list[Segment]) -> str:
    return "/".join([handle, *map(str, path)])


def _is_segment(value: Any) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool) and value >= 0) or (
        isinstance(value, str) and _SHADOW_SEGMENT.fullmatch(value) is not None)


def _check(response: Response, details: Mapping[str, Any] | None = None) -> Any:
    error = response.error
    if error is not None:
        value = response.value
        message = value.get("message") if isinstance(value, dict) else ""
        raise ClassicFailure(error, message if isinstance(message, str) else "",
                             response.status, details)
    return response.value


def _switched(state: _Where, response: Response, before: list[Segment] | None,
              after: list[Segment]) -> None:
    """Where a frame switch left the session: ``after``; ``before`` when the server
    refused it (W3C: an error changes nothing); unknown when it answered "timeout"
    (chromedriver 156 then had switched: see the module's doc)."""
    if response.error is None:
        state.frame = after
    elif response.error != "timeout":
        state.frame = before
    else:
        state.frame = None
    _check(response)


def _into(window: str | None, frame: list[Segment], state: _Where
          ) -> Generator[Request, Response, None]:
    """Switch to ``window`` (when it is not the current one) and into ``frame``."""
    if window is not None and window != state.window:
        before = state.frame
        state.frame = None
        response = yield Request("POST", "/window", {"handle": window})
        if response.error is None:
            state.window = window
        _switched(state, response, before, [])
    if state.frame != frame:
        if state.frame is None or state.frame:
            yield from _to_top(state)
        for step in frame:
            yield from _enter(step, state)


def _to_top(state: _Where) -> Generator[Request, Response, None]:
    """To the top of the current window: ``POST /frame`` null, and ``POST /window`` to
    the window when that times out (a session stuck in a frame: see the module's doc;
    ``POST /window`` is not the first try: WebKitWebDriver 2.50 never answers it while
    the window shows a dialog)."""
    before = state.frame
    state.frame = None
    response = yield Request("POST", "/frame", {"id": None})
    if response.error == "timeout" and state.window is not None:
        response = yield Request("POST", "/window", {"handle": state.window})
    _switched(state, response, before, [])


def _enter(step: Segment, state: _Where) -> Generator[Request, Response, None]:
    """One step down from the current frame: by index, or a shadow root's frame by its
    element (looked up first). The frame is unknown until the switch is answered."""
    before = state.frame
    if isinstance(step, str):
        found = _check((yield Request("POST", "/execute/sync", {
            "script": SHADOW_FRAME_SCRIPT, "args": [int(step[1:])]})))
        if not isinstance(found, dict) or ELEMENT_KEY not in found:
            raise ClassicFailure("no such frame", f"no frame {step} in the shadow roots "
                                 "of this document", 404)
        target: Any = found
    else:
        target = step
    state.frame = None
    response = yield Request("POST", "/frame", {"id": target})
    _switched(state, response, before, [*(before or []), step])


@dataclass(slots=True)
class _Where:
    """The session's current window and frame, as far as this client moved them
    (``frame`` None: unknown, after a raw switch or one that failed), and the timeouts
    it was last given (``defaults``: what its user set, for commands without a budget)."""

    window: str | None = None
    frame: list[Segment] | None = field(default_factory=list)
    timeouts: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_TIMEOUTS))
    defaults: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_TIMEOUTS))
    #: How many ``classic.evaluate`` calls this session made (their keys).
    evaluations: int = 0


def _timeouts_for(budget: Any) -> dict[str, int]:
    """The session timeouts a command with ``budget`` seconds runs under: both set to it,
    rounded up to whole seconds (so that commands of about the same budget share them)."""
    if isinstance(budget, bool) or not isinstance(budget, int | float) or not (
            0 < budget < math.inf):
        raise ClassicFailure("invalid argument", f"params.timeout must be a positive number "
                             f"of seconds, got {budget!r}", 400)
    ms = math.ceil(budget) * 1000
    return {"script": ms, "pageLoad": ms}


def _script_ms(seconds: Any) -> int:
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not (
            0 < seconds < math.inf):
        raise ClassicFailure("invalid argument", f"params.scriptTimeout must be a positive "
                             f"number of seconds, got {seconds!r}", 400)
    return math.ceil(seconds * 1000)


def _within(params: Mapping[str, Any], where: _Where, steps: Plan) -> Plan:
    """Run ``steps`` under the command's budget (see the module's doc); a
    ``scriptTimeout`` bounds its scripts alone (a frame walk's: a script that waits
    behind a paused frame gives up, and a load goes on)."""
    budget = params.get("timeout")
    wanted = _timeouts_for(budget) if budget is not None else where.defaults
    script = params.get("scriptTimeout")
    if script is not None:
        wanted = {**wanted, "script": _script_ms(script)}
    limit = float(budget) + ANSWER_SLACK_S if budget is not None else None
    try:
        request = next(steps)  # (a command refused as it is asks the server nothing)
        if wanted != where.timeouts:
            _check((yield Request("POST", "/timeouts", dict(wanted), limit)))
            where.timeouts = dict(wanted)
        while True:
            if limit is not None and request.timeout is None:
                request = replace(request, timeout=limit)
            request = steps.send((yield request))
    except StopIteration as done:
        result: dict[str, Any] = done.value
        return result


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
    return (yield from _within(params, where, _plan(method, params, where)))


def _to_window(params: Mapping[str, Any], where: _Where) -> Generator[Request, Response,
                                                                      None]:
    """For the alert commands: to the window named, if it is not the current one (its
    frame does not matter: a dialog is the window's). Which window may be switched to
    while a dialog is open is the driver's to know (WebKitWebDriver 2.50 never answers
    a switch to a window that shows one, its own current one included)."""
    window = params.get("window")
    if window is None:
        return
    if not isinstance(window, str):
        raise ClassicFailure("invalid argument", "params.window must be a handle", 400)
    if window != where.window:
        where.frame = None
        _check((yield Request("POST", "/window", {"handle": window})))
        where.window, where.frame = window, []


def _plan(method: str, params: Mapping[str, Any], where: _Where) -> Plan:
    if method == "classic.answerAlert":
        return (yield from _answer_alert(params, where))
    if method == "classic.frameTree":
        return (yield from _frame_tree(params, where))
    if method == "classic.evaluate":
        return (yield from _evaluate(params, where))
    if method == "classic.readBack":
        key = params.get("key")
        if not isinstance(key, str):
            raise ClassicFailure("invalid argument", "classic.readBack needs params.key", 400)
        yield from _routed(params, where)
        return {"value": _check((yield Request("POST", "/execute/sync", {
            "script": READ_BACK_SCRIPT, "args": [key]})))}
    if method == "classic.getAlertText":
        # The poll reads its window's dialog (whichever of its frames opened it).
        yield from _to_window(params, where)
        response = yield Request("GET", "/alert/text")
        if response.error == "no such alert" and params.get("shown") is True:
            _check(response, (yield from _top_document(where)))
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
        yield from _routed(params, where)
    response = yield Request(verb, path, body if verb == "POST" else None)
    if method == "classic.switchToWindow" and response.error is None:
        where.window, where.frame = str(body.get("handle")), []
    elif method == "classic.closeWindow" and response.error is None:
        where.window, where.frame = None, None  # (the current window is no more)
    elif method in ("classic.switchToFrame", "classic.switchToParentFrame"):
        where.frame = None  # (a raw switch: where it went is the server's to know)
    elif method == "classic.setTimeouts" and response.error is None:
        # The user's own timeouts: what commands without a budget run under from now.
        given = {k: v for k, v in body.items() if k in ("script", "pageLoad")
                 and isinstance(v, int) and not isinstance(v, bool)}
        where.timeouts = {**where.timeouts, **given}
        where.defaults = {**where.defaults, **given}
    value = _check(response)
    if method == "classic.navigateTo" or method == "classic.refresh":
        where.frame = []  # a navigation of the top-level context resets the current frame
    return {"value": value}


def _top_document(where: _Where) -> Generator[Request, Response, dict[str, Any]]:
    """Where the window's top document is (``url``) and when it began (``time_origin_ms``,
    its ``performance.timeOrigin``): what a poll that finds the dialog it was shown gone
    reads (``params.shown``), so the fold can tell the browser's close of a dialog a
    navigation left from someone else's. Measured on chromedriver 156: a page that
    navigates or reloads itself while its cross-site iframe shows an alert has the
    browser close the alert, and the poll alone read that as ``remote``. What cannot be
    read is left out."""
    read: dict[str, Any] = {}
    url = yield Request("GET", "/url")
    if url.error is None and isinstance(url.value, str):
        read["url"] = url.value
    where.frame = None  # (unknown until the switch is answered)
    to_top = yield Request("POST", "/frame", {"id": None})
    if to_top.error is None:
        where.frame = []
        began = yield Request("POST", "/execute/sync", {"script": TIME_ORIGIN_SCRIPT,
                                                        "args": []})
        value = began.value
        if began.error is None and isinstance(value, int | float) \
                and not isinstance(value, bool):
            read["time_origin_ms"] = float(value)
    return read


def _routed(params: Mapping[str, Any], where: _Where) -> Generator[Request, Response, None]:
    """To the command's ``window`` and ``frame`` (checked)."""
    window = params.get("window")
    frame = params.get("frame") or []
    if window is not None and not isinstance(window, str):
        raise ClassicFailure("invalid argument", "params.window must be a handle", 400)
    if not isinstance(frame, list) or not all(_is_segment(i) for i in frame):
        raise ClassicFailure("invalid argument", "params.frame must be a list of frame "
                             "indexes (or \"s<n>\" for a frame in a shadow root)", 400)
    yield from _into(window, frame, where)


def _evaluate(params: Mapping[str, Any], where: _Where) -> Plan:
    expression = params.get("expression")
    await_promise = params.get("awaitPromise", True)
    if not isinstance(expression, str) or not isinstance(await_promise, bool):
        raise ClassicFailure("invalid argument", "classic.evaluate needs expression: str "
                             "(and awaitPromise: bool)", 400)
    yield from _routed(params, where)
    # (a key of the session's own count, not a random one: a replay asks for it again)
    where.evaluations += 1
    key = f"cdpnb-evaluate-{where.evaluations}"
    value = _check((yield Request("POST", "/execute/sync", {
        "script": EVALUATE_SCRIPT, "args": [expression, key, await_promise]})))
    return {"value": value, "key": key}


def _answer_alert(params: Mapping[str, Any], where: _Where) -> Plan:
    accept = params.get("accept")
    if not isinstance(accept, bool):
        raise ClassicFailure("invalid argument", "classic.answerAlert needs accept: bool", 400)
    text = params.get("text")
    expect = params.get("expect")
    # Classic answers the current window's dialog: the one named is in its window (WPT's
    # test_two_top_level_contexts: answered from another window, a popup's alert was
    # "no such alert" and taken for closed by someone else).
    yield from _to_window(params, where)
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

    def walk(path: list[Segment]) -> Generator[Request, Response, dict[str, Any] | None]:
        response = yield Request("POST", "/execute/sync", {"script": FRAME_TREE_SCRIPT,
                                                           "args": []})
        if response.error is not None:
            if not path or response.error not in FRAME_GONE:
                _check(response)  # the whole walk fails: the tree stays as last known
            return None
        if not isinstance(response.value, list):
            # Answered null: the script did not run to its end. Both servers answer
            # ``execute/sync`` null when a dialog opened meanwhile (module doc); read as
            # "no frames", it emptied the tree (chromedriver, then WebKit: a walk right
            # after a prompt in a nested frame was answered held the page alone, and a
            # command routed into a frame was refused UnknownFrame). Not a reading.
            if not path:
                raise ClassicFailure("unexpected alert open", "the frame tree script was "
                                     "answered null: a dialog opened while it ran")
            return None
        href, name, kids = _said(response.value)
        node: dict[str, Any] = {"context": frame_id_of(window, path), "url": href,
                                "name": name, "children": []}
        count[0] += 1
        if len(path) < MAX_FRAME_DEPTH:
            for step, pending, kid_name, element in kids:
                if count[0] >= MAX_FRAMES:
                    break
                if pending:  # (a frame not loaded yet: listed, not entered)
                    count[0] += 1
                    node["children"].append({"context": frame_id_of(window, [*path, step]),
                                             "url": "about:blank", "name": kid_name,
                                             "children": []})
                    continue
                where.frame = None
                entered = yield Request("POST", "/frame", {"id": element if isinstance(
                    step, str) else step})
                # A frame its parent listed that could not be entered or read: gone
                # meanwhile, or refused for a moment (the likely cause of a failure seen
                # once on WebKitWebDriver 2.50, in a full suite run: right after a prompt
                # in a nested frame was answered, the tree held the page alone and an
                # evaluate in that frame failed UnknownFrame). Said as not entered, so
                # the fold keeps what it knew of it until a walk's listing leaves it out.
                unseen = {"context": frame_id_of(window, [*path, step]), "url": "",
                          "name": kid_name, "children": [], "entered": False}
                if entered.error in FRAME_GONE:
                    where.frame = list(path)  # (no switch happened)
                    node["children"].append(unseen)
                    continue
                _switched(where, entered, list(path), [*path, step])
                child = yield from walk([*path, step])
                node["children"].append(child if child is not None else unseen)
                where.frame = None
                _switched(where, (yield Request("POST", "/frame/parent", {})),
                          [*path, step], list(path))
        return node

    top = yield from walk([])
    return {"contexts": [top] if top is not None else []}


def _said(value: Any) -> tuple[str, str, list[tuple[Segment, bool, str, Any]]]:
    """What ``FRAME_TREE_SCRIPT`` answered: (URL, name, children). A child in a shadow
    root without an element reference cannot be entered: it is left out. (The shape
    before names and shadow roots, ``[URL, count, name]``, is read too.)"""
    said = value if isinstance(value, list) else []
    href, second, third = [*said, "", 0, ""][:3]
    kids: list[tuple[Segment, bool, str, Any]] = []
    if isinstance(second, int) and not isinstance(second, bool):  # (the older shape)
        return str(href or ""), str(third or ""), [(i, False, "", None)
                                                   for i in range(max(0, second))]
    for kid in third if isinstance(third, list) else []:
        if not (isinstance(kid, list) and len(kid) == 4 and _is_segment(kid[0])):
            continue
        step, pending, name, element = kid
        if isinstance(step, str) and not (isinstance(element, dict) and ELEMENT_KEY in element):
            continue
        kids.append((step, pending is True, name if isinstance(name, str) else "", element))
    return str(href or ""), str(second or ""), kids


def reply_message(command_id: int, result: dict[str, Any]) -> dict[str, Any]:
    return {"id": command_id, "result": result}


def error_message(command_id: int, failure: ClassicFailure) -> dict[str, Any]:
    """The error reply: ``message`` starts with the W3C error code (what
    ``classic_error_name`` reads back), ``code`` is the HTTP status."""
    text = f"{failure.error}: {failure.message}" if failure.message else failure.error
    return {"id": command_id, "error": {"code": failure.status, "message": text,
                                        "data": {**failure.details, "error": failure.error}}}


def classic_error_name(message: str, data: Any) -> str:
    """The W3C error code of an error reply (``"no such alert"``)."""
    if isinstance(data, dict) and isinstance(data.get("error"), str):
        return str(data["error"])
    return message.split(":", 1)[0]
