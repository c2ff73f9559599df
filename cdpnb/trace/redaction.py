"""What ``redact=`` hides in a recording, and where: one table. Pure functions, no I/O.

Each kind of private text travels in a few known places: cdpnb sends it, the browser
echoes it back. :data:`SECRETS` lists every one of them as (kind, method, path, part);
the recorder replaces the value at each path (of a command's, event's or note's
``params``, or a reply's ``result``) with ``"<redacted>"`` before the line is written.
``url_credentials`` also hides the credentials of every URL anywhere in a line (params,
results, errors, notes, faults, the header): that part has no table.

The kinds (``REDACTIONS``), per protocol. Measured places are checked on a real
browser by tests/test_redaction.py; the others are where the protocol's own definition
puts the same value (a command a user may send raw, an event cdpnb does not enable).

- ``prompt_text``, a prompt's answer. CDP (Chromium 156): sent in
  ``Page.handleJavaScriptDialog.promptText``, echoed in
  ``Page.javascriptDialogClosed.userInput``; the dialog bridge sends it inside the
  base64 JSON body of ``Fetch.fulfillRequest``. BiDi (Firefox ESR 153, chromium-bidi
  17): sent in ``browsingContext.handleUserPrompt.userText``, echoed in
  ``browsingContext.userPromptClosed.userText``; the bridge's in the JSON text of
  ``network.provideResponse``'s ``body.value``. Classic (WebKitWebDriver 2.50,
  chromedriver 156): cdpnb's ``classic.answerAlert.text`` or a raw
  ``classic.sendAlertText.text``; no reply echoes it. cdpnb's own notes carry it as
  ``prompt_text``.
- ``typed_text``. CDP: ``Input.insertText``, ``Input.imeSetComposition`` and each key
  of ``Input.dispatchKeyEvent`` (its text, key name, code, virtual key codes). BiDi:
  the ``value`` of every key action of ``input.performActions`` (one character each:
  the typed word is never one string on the wire, each key is hidden). Classic:
  ``classic.elementSendKeys.text`` and the key actions of ``classic.performActions``.
- ``url_credentials``: ``user:password@`` in every URL, and the header a browser makes
  of them: every ``Authorization`` / ``Proxy-Authorization`` value of the ``Basic``
  scheme wherever headers are recorded (its scheme word stays). Measured: Chromium 156
  (directly, behind chromium-bidi 17 and behind chromedriver), Firefox 153 and
  WebKitGTK 2.50 all answer a 401 with ``Basic base64(user:password)`` from the URL;
  Chromium shows it in ``Network.requestWillBeSentExtraInfo.headers``, Firefox in the
  request headers of ``network.beforeRequestSent`` / ``responseStarted`` /
  ``responseCompleted`` (chromium-bidi 17 reports no such request). Classic records
  no headers.
- ``cookies``: ``Cookie`` and ``Set-Cookie`` header values wherever headers are
  recorded, and every cookie's value: CDP's cookie lists (``associatedCookies``,
  ``blockedCookies``, ``exemptedCookies`` and their ``cookieLine``;
  ``Network.getCookies`` / ``getAllCookies`` / ``Storage.getCookies`` replies;
  ``Network.setCookie(s)``, ``Storage.setCookies``), BiDi's (``request.cookies`` of
  network events, ``storage.getCookies``'s reply, ``storage.setCookie``, the cookies
  of ``network.continueRequest`` / ``continueResponse`` / ``provideResponse``),
  classic's (``classic.addCookie``, ``classic.getAllCookies``'s reply).
- ``authorization``: every ``Authorization`` / ``Proxy-Authorization`` value (bearer
  tokens; the scheme word stays) wherever headers are recorded, and the credentials
  given to an auth challenge (CDP ``Fetch.continueWithAuth``, BiDi
  ``network.continueWithAuth`` / ``continueResponse``).

Where headers are recorded: CDP's ``{name: value}`` maps (``Network.*`` requests,
responses, redirects, WebSocket handshakes, ``Network.setExtraHTTPHeaders``,
``Fetch.requestPaused`` / ``authRequired``'s request), its raw ``headersText`` /
``requestHeadersText`` (the matching lines), its ``[{name, value}]`` lists
(``Fetch.requestPaused.responseHeaders``, ``Fetch.continueRequest.headers``,
``continueResponse`` / ``fulfillRequest``'s ``responseHeaders``); BiDi's
``[{name, value: {type, value}}]`` lists (the request and response of every
``network.*`` event, and the headers of ``network.continueRequest`` /
``continueResponse`` / ``provideResponse`` / ``setExtraHeaders``). A header name
matches whatever its case.

Never hidden: what a script is given or returns (``Runtime.evaluate``'s expression
and result, ``Runtime.callFunctionOn``'s arguments, ``script.evaluate``'s and
``script.callFunction``'s, ``classic.executeScript``'s), request and response bodies,
page contents, and the dialog bridge's own header (the call it carries).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, replace
from typing import Any, Literal

from cdpnb.protocol import Command, Event, Fault, Message, Note, Reply
from cdpnb.protocol.credentials import hide_credentials

__all__ = [
    "AUTH_HEADERS",
    "BASE64_JSON",
    "BYTES",
    "COOKIE_HEADERS",
    "EACH",
    "JSON_TEXT",
    "REDACTED",
    "REDACTIONS",
    "SECRETS",
    "Headers",
    "Secret",
    "redact_line",
    "redact_message",
]

#: The kinds ``redact=`` accepts (``True`` means all of them).
REDACTIONS = ("prompt_text", "typed_text", "url_credentials", "cookies", "authorization")
#: What a hidden value reads in the trace.
REDACTED = "<redacted>"
#: A path step: the value so far is base64 of a JSON document; the path goes on inside it.
BASE64_JSON = "<base64 json>"
#: A path step: the value so far is the text of a JSON document; the path goes on inside.
JSON_TEXT = "<json>"
#: A path step: the value so far is a list; the path goes on in each of its items.
EACH = "<each>"
#: A path step: the value so far is a WebDriver BiDi ``network.BytesValue``
#: (``{"type": "string" | "base64", "value"}``); the path goes on in its text.
BYTES = "<bytes>"

#: The header names each kind hides (lower case; a header matches whatever its case).
COOKIE_HEADERS = frozenset({"cookie", "set-cookie"})
AUTH_HEADERS = frozenset({"authorization", "proxy-authorization"})


@dataclass(frozen=True, slots=True)
class Headers:
    """A path step: the value so far is a set of HTTP headers; the path goes on into
    the value of each header ``names`` names. ``shape``: CDP's ``{name: value}``
    (``"map"``), a ``[{name, value}]`` list (``"list"``: CDP's Fetch, BiDi), raw
    header text, one ``Name: value`` a line (``"text"``: CDP's ``headersText``; the
    path ends there). ``scheme``: only values of that auth scheme (``"basic"``)."""

    names: frozenset[str]
    shape: Literal["map", "list", "text"]
    scheme: str | None = None

    def __repr__(self) -> str:  # (test ids and error messages: short)
        only = f" {self.scheme}" if self.scheme else ""
        return f"<{self.shape} {'/'.join(sorted(self.names))}{only}>"


Step = str | Headers


@dataclass(frozen=True, slots=True)
class Secret:
    """One place a kind of private text travels: ``part`` (a command's, event's or
    note's ``params``, or a reply's ``result``) of ``method``, at ``path``."""

    kind: str
    method: str
    path: tuple[Step, ...]
    part: Literal["params", "result"] = "params"


_KEY_FIELDS = ("text", "unmodifiedText", "key", "code", "keyIdentifier",
               "windowsVirtualKeyCode", "nativeVirtualKeyCode")
#: The key actions of a WebDriver ``performActions`` (BiDi and classic alike): each
#: input source's actions; a key action's ``value`` is the key (pointer and wheel
#: actions have none).
_KEY_ACTIONS = ("actions", EACH, "actions", EACH, "value")

#: How a place holds headers: a Headers shape, or ``"bytes"``: a list of
#: ``{name, value: BytesValue}`` (WebDriver BiDi's).
_Shape = Literal["map", "list", "text", "bytes"]
#: The header fields of CDP's Network.Request (and WebSocketRequest) and of its
#: Network.Response (and WebSocketResponse): what a response says it was asked with too.
_CDP_REQUEST: tuple[tuple[str, _Shape], ...] = (("headers", "map"),)
_CDP_RESPONSE: tuple[tuple[str, _Shape], ...] = (
    ("headers", "map"), ("headersText", "text"),
    ("requestHeaders", "map"), ("requestHeadersText", "text"))

#: Where each protocol records HTTP headers (in a message's params): (method, path to
#: the headers, shape). Each place hides cookies, authorization and the Basic
#: credentials a URL's userinfo becomes.
_HEADER_PLACES: tuple[tuple[str, tuple[str, ...], _Shape], ...] = (
    # CDP, {name: value} maps and raw header text. Chromium 156 (measured): a page's
    # Authorization in requestWillBeSent's request; the URL's Basic header, Cookie and
    # the associated cookies in requestWillBeSentExtraInfo; Set-Cookie in
    # responseReceivedExtraInfo's headers and headersText.
    *((method, (*base, field), shape)
      for method, base, fields in (
          ("Network.requestWillBeSent", ("request",), _CDP_REQUEST),
          ("Network.requestWillBeSent", ("redirectResponse",), _CDP_RESPONSE),
          ("Network.requestWillBeSentExtraInfo", (), _CDP_REQUEST),
          ("Network.responseReceived", ("response",), _CDP_RESPONSE),
          ("Network.responseReceivedExtraInfo", (), (("headers", "map"),
                                                     ("headersText", "text"))),
          ("Network.responseReceivedEarlyHints", (), _CDP_REQUEST),
          ("Network.webSocketWillSendHandshakeRequest", ("request",), _CDP_REQUEST),
          ("Network.webSocketHandshakeResponseReceived", ("response",), _CDP_RESPONSE),
          ("Network.requestIntercepted", ("request",), _CDP_REQUEST),
          ("Network.requestIntercepted", (), (("responseHeaders", "map"),)),
          ("Network.setExtraHTTPHeaders", (), _CDP_REQUEST),
          ("Network.continueInterceptedRequest", (), _CDP_REQUEST),
          ("Fetch.requestPaused", ("request",), _CDP_REQUEST),
          ("Fetch.authRequired", ("request",), _CDP_REQUEST))
      for field, shape in fields),
    # CDP Fetch, [{name, value}] lists. (Chromium 156, measured: a request paused at
    # the response stage shows its request's Authorization and Cookie again, in the map
    # above, and leaves Set-Cookie out of these response headers.)
    ("Fetch.requestPaused", ("responseHeaders",), "list"),
    ("Fetch.continueRequest", ("headers",), "list"),
    ("Fetch.continueResponse", ("responseHeaders",), "list"),
    ("Fetch.fulfillRequest", ("responseHeaders",), "list"),
    # BiDi, [{name, value: BytesValue}] lists. Firefox 153 (measured): the request's
    # Cookie, Authorization and the URL's Basic header, the response's Set-Cookie, in
    # beforeRequestSent / responseStarted / responseCompleted; chromium-bidi 17 alike,
    # but it reports no request carrying the Basic header.
    *((method, (part, "headers"), "bytes")
      for method, parts in (
          ("network.beforeRequestSent", ("request",)),
          ("network.fetchError", ("request",)),
          ("network.responseStarted", ("request", "response")),
          ("network.responseCompleted", ("request", "response")),
          ("network.authRequired", ("request", "response")))
      for part in parts),
    *((method, ("headers",), "bytes")
      for method in ("network.continueRequest", "network.continueResponse",
                     "network.provideResponse", "network.setExtraHeaders")),
)


def _header_secrets(method: str, path: tuple[str, ...], shape: _Shape) -> tuple[Secret, ...]:
    inner: tuple[Step, ...] = (BYTES,) if shape == "bytes" else ()
    form: Literal["map", "list", "text"] = "list" if shape == "bytes" else shape
    return (Secret("cookies", method, (*path, Headers(COOKIE_HEADERS, form), *inner)),
            Secret("authorization", method, (*path, Headers(AUTH_HEADERS, form), *inner)),
            Secret("url_credentials", method,
                   (*path, Headers(AUTH_HEADERS, form, "basic"), *inner)))


SECRETS: tuple[Secret, ...] = (
    # -- prompt_text --
    Secret("prompt_text", "Page.handleJavaScriptDialog", ("promptText",)),
    Secret("prompt_text", "Page.javascriptDialogClosed", ("userInput",)),
    Secret("prompt_text", "cdpnb.dialogAnswering", ("prompt_text",)),
    Secret("prompt_text", "cdpnb.dialogAnswered", ("prompt_text",)),
    Secret("prompt_text", "Fetch.fulfillRequest", ("body", BASE64_JSON, "promptText")),
    Secret("prompt_text", "browsingContext.handleUserPrompt", ("userText",)),
    Secret("prompt_text", "browsingContext.userPromptClosed", ("userText",)),
    Secret("prompt_text", "network.provideResponse",
           ("body", "value", JSON_TEXT, "promptText")),
    Secret("prompt_text", "classic.answerAlert", ("text",)),
    Secret("prompt_text", "classic.sendAlertText", ("text",)),
    # -- typed_text --
    Secret("typed_text", "Input.insertText", ("text",)),
    Secret("typed_text", "Input.imeSetComposition", ("text",)),
    *(Secret("typed_text", "Input.dispatchKeyEvent", (name,)) for name in _KEY_FIELDS),
    Secret("typed_text", "input.performActions", _KEY_ACTIONS),
    Secret("typed_text", "classic.performActions", _KEY_ACTIONS),
    Secret("typed_text", "classic.elementSendKeys", ("text",)),
    # -- cookies, authorization, url_credentials: in HTTP headers --
    *(secret for place in _HEADER_PLACES for secret in _header_secrets(*place)),
    # -- cookies: cookie objects and lines --
    Secret("cookies", "Network.requestWillBeSentExtraInfo",
           ("associatedCookies", EACH, "cookie", "value")),
    *(Secret("cookies", "Network.responseReceivedExtraInfo", (field, EACH, *rest))
      for field in ("blockedCookies", "exemptedCookies")
      for rest in (("cookie", "value"), ("cookieLine",))),
    *(Secret("cookies", method, ("cookies", EACH, "value"), "result")
      for method in ("Network.getCookies", "Network.getAllCookies", "Storage.getCookies")),
    Secret("cookies", "Network.setCookie", ("value",)),
    Secret("cookies", "Network.setCookies", ("cookies", EACH, "value")),
    Secret("cookies", "Storage.setCookies", ("cookies", EACH, "value")),
    Secret("cookies", "Audits.issueAdded",
           ("issue", "details", "cookieIssueDetails", "rawCookieLine")),
    *(Secret("cookies", method, ("request", "cookies", EACH, "value", BYTES))
      for method in ("network.beforeRequestSent", "network.responseStarted",
                     "network.responseCompleted", "network.fetchError",
                     "network.authRequired")),
    *(Secret("cookies", method, ("cookies", EACH, "value", BYTES))
      for method in ("network.continueRequest", "network.continueResponse",
                     "network.provideResponse")),
    Secret("cookies", "storage.getCookies", ("cookies", EACH, "value", BYTES), "result"),
    Secret("cookies", "storage.getCookies", ("filter", "value", BYTES)),
    Secret("cookies", "storage.setCookie", ("cookie", "value", BYTES)),
    Secret("cookies", "storage.deleteCookies", ("filter", "value", BYTES)),
    Secret("cookies", "classic.addCookie", ("cookie", "value")),
    Secret("cookies", "classic.getAllCookies", ("value", EACH, "value"), "result"),
    # -- authorization: credentials answered to an auth challenge --
    *(Secret("authorization", method, ("authChallengeResponse", field))
      for method in ("Fetch.continueWithAuth", "Network.continueInterceptedRequest")
      for field in ("username", "password")),
    *(Secret("authorization", method, ("credentials", field))
      for method in ("network.continueWithAuth", "network.continueResponse")
      for field in ("username", "password")),
)

_BY_METHOD: dict[tuple[str, str], tuple[Secret, ...]] = {}
for _secret in SECRETS:
    _key = (_secret.part, _secret.method)
    _BY_METHOD[_key] = (*_BY_METHOD.get(_key, ()), _secret)

Leaf = Callable[[Any], Any]


def _plain_leaf(value: Any) -> Any:
    """An absent or empty value tells nothing: kept; anything else hidden."""
    return value if value is None or value == "" else REDACTED


def _header_leaf(name: str, scheme: str | None) -> Leaf:
    """How a header's value is hidden: an auth header keeps its scheme word
    (``Bearer <redacted>``), and with ``scheme`` only values of that scheme are
    hidden; a cookie header is hidden whole."""
    auth = name.lower() in AUTH_HEADERS

    def leaf(value: Any) -> Any:
        if not isinstance(value, str) or value == "":
            return value
        if not auth:
            return REDACTED
        word, _, rest = value.strip().partition(" ")
        if scheme is not None and word.lower() != scheme:
            return value
        return f"{word} {REDACTED}" if rest else REDACTED

    return leaf


_HEADER_LINE = re.compile(r"^([!#$%&'*+.^_`|~0-9A-Za-z-]+)([ \t]*:[ \t]*)(.*?)([\r]?)$")


def _hidden_headers(value: Any, step: Headers, rest: tuple[Step, ...]) -> Any:
    if step.shape == "map":
        if not isinstance(value, dict):
            return value
        out = {name: (_hidden(item, rest, _header_leaf(name, step.scheme))
                      if isinstance(name, str) and name.lower() in step.names else item)
               for name, item in value.items()}
        return value if all(out[k] is value[k] for k in value) else out
    if step.shape == "list":
        if not isinstance(value, list):
            return value
        items = []
        for entry in value:
            name = entry.get("name") if isinstance(entry, dict) else None
            if isinstance(name, str) and name.lower() in step.names and "value" in entry:
                hidden = _hidden(entry["value"], rest, _header_leaf(name, step.scheme))
                if hidden is not entry["value"]:
                    entry = {**entry, "value": hidden}
            items.append(entry)
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if not isinstance(value, str):  # "text": one header a line
        return value
    lines = value.split("\n")
    changed = False
    for index, line in enumerate(lines):
        match = _HEADER_LINE.match(line)
        if match is None or match[1].lower() not in step.names:
            continue
        hidden = _header_leaf(match[1], step.scheme)(match[3])
        if hidden != match[3]:
            lines[index] = f"{match[1]}{match[2]}{hidden}{match[4]}"
            changed = True
    return "\n".join(lines) if changed else value


def _hidden(value: Any, path: tuple[Step, ...], leaf: Leaf = _plain_leaf) -> Any:
    """``value`` with what ``path`` names hidden by ``leaf`` (``value`` itself when the
    path leads nowhere, or ``leaf`` keeps it)."""
    if not path:
        return leaf(value)
    step, rest = path[0], path[1:]
    if isinstance(step, Headers):
        return _hidden_headers(value, step, rest)
    if step == EACH:
        if not isinstance(value, list):
            return value
        items = [_hidden(item, rest, leaf) for item in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if step == BYTES:
        if not isinstance(value, dict) or not isinstance(value.get("value"), str):
            return value
        text = value["value"]
        if value.get("type") != "base64":
            inner = _hidden(text, rest, leaf)
            return value if inner is text else {**value, "value": inner}
        try:
            decoded = base64.b64decode(text, validate=True).decode("latin-1")
        except binascii.Error:
            return {**value, "value": REDACTED}  # (bytes we cannot read: hidden whole)
        inner = _hidden(decoded, rest, leaf)
        if inner is decoded or inner == decoded:
            return value
        return {**value, "value": base64.b64encode(str(inner).encode("latin-1", "replace"))
                .decode("ascii")}
    if step in (BASE64_JSON, JSON_TEXT):
        if not isinstance(value, str):
            return value
        try:
            document = json.loads(base64.b64decode(value, validate=True)
                                  if step == BASE64_JSON else value)
        except (binascii.Error, ValueError):
            return value  # not a bridge answer: nothing of ours in it
        hidden = _hidden(document, rest, leaf)
        if hidden is document:
            return value
        text = json.dumps(hidden)
        return (base64.b64encode(text.encode()).decode("ascii") if step == BASE64_JSON
                else text)
    if not isinstance(value, dict) or step not in value:
        return value
    inner = _hidden(value[step], rest, leaf)
    return value if inner is value[step] else {**value, step: inner}


def redact_message(record: Message | Fault, kinds: Collection[str]) -> Message | Fault:
    """``record`` with the table's values of the chosen kinds hidden (URL credentials
    in URLs are hidden later, in the encoded line: :func:`redact_line`)."""
    if isinstance(record, Reply):
        result = record.result
        for secret in _BY_METHOD.get(("result", record.method), ()):
            if secret.kind in kinds:
                result = _hidden(result, secret.path)
        return record if result is record.result else replace(record, result=result)
    if not isinstance(record, Command | Event | Note):
        return record
    params = record.params
    for secret in _BY_METHOD.get(("params", record.method), ()):
        if secret.kind in kinds:
            params = _hidden(params, secret.path)
    return record if params is record.params else replace(record, params=params)


def redact_line(line: str, kinds: Collection[str]) -> str:
    """One encoded trace line with URL credentials hidden, if that kind is chosen."""
    return hide_credentials(line) if "url_credentials" in kinds else line
