"""What ``redact=`` hides in a recording, and where: one table. Pure functions, no I/O.

Each kind of private text travels in a few known places: cdpnb sends it, and Chromium
echoes it back. :data:`SECRETS` lists every one of them as (kind, method, path); the
recorder replaces the value at each path with ``"<redacted>"`` before the line is
written. ``url_credentials`` has no table: credentials are hidden in every URL
anywhere in a line (params, results, errors, notes, faults, the header).

Where Chromium 156 echoes a value (measured; tests/test_redaction.py checks each on a
real browser):

- a prompt's answer: sent in ``Page.handleJavaScriptDialog.promptText``, echoed in
  ``Page.javascriptDialogClosed.userInput``; cdpnb's own notes carry it as
  ``prompt_text``; the dialog bridge sends it inside the base64 JSON body of
  ``Fetch.fulfillRequest``;
- typed text: ``Input.insertText``, ``Input.imeSetComposition`` and each key of
  ``Input.dispatchKeyEvent`` (its text, key name, code and virtual key codes).

Over WebDriver BiDi (Firefox ESR 153, chromium-bidi 17; tests/test_redaction.py checks
each on both): a prompt's answer is sent in ``browsingContext.handleUserPrompt.userText``
and echoed in ``browsingContext.userPromptClosed.userText``; the dialog bridge sends it
in the JSON text of ``network.provideResponse``'s ``body.value``.

Over WebDriver classic (WebKitWebDriver 2.50, chromedriver 156): a prompt's answer is
sent in cdpnb's ``classic.answerAlert.text`` (or a raw ``classic.sendAlertText.text``);
no reply echoes it.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Collection
from dataclasses import dataclass, replace
from typing import Any

from cdpnb.protocol import Command, Event, Fault, Message, Note
from cdpnb.protocol.credentials import hide_credentials

__all__ = [
    "BASE64_JSON",
    "JSON_TEXT",
    "REDACTED",
    "REDACTIONS",
    "SECRETS",
    "Secret",
    "redact_line",
    "redact_message",
]

#: The kinds ``redact=`` accepts (``True`` means all of them).
REDACTIONS = ("prompt_text", "typed_text", "url_credentials")
#: What a hidden value reads in the trace.
REDACTED = "<redacted>"
#: A path step: the value so far is base64 of a JSON document; the path goes on inside it.
BASE64_JSON = "<base64 json>"
#: A path step: the value so far is the text of a JSON document; the path goes on inside.
JSON_TEXT = "<json>"


@dataclass(frozen=True, slots=True)
class Secret:
    """One place a kind of private text travels: ``params`` of ``method``, at ``path``."""

    kind: str
    method: str
    path: tuple[str, ...]


_KEY_FIELDS = ("text", "unmodifiedText", "key", "code", "keyIdentifier",
               "windowsVirtualKeyCode", "nativeVirtualKeyCode")

SECRETS: tuple[Secret, ...] = (
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
    Secret("typed_text", "Input.insertText", ("text",)),
    Secret("typed_text", "Input.imeSetComposition", ("text",)),
    *(Secret("typed_text", "Input.dispatchKeyEvent", (name,)) for name in _KEY_FIELDS),
)

_BY_METHOD: dict[str, tuple[Secret, ...]] = {}
for _secret in SECRETS:
    _BY_METHOD[_secret.method] = (*_BY_METHOD.get(_secret.method, ()), _secret)


def _hidden(value: Any, path: tuple[str, ...]) -> Any:
    """``value`` with what ``path`` names replaced by REDACTED (``value`` itself when the
    path leads nowhere, or to null or '': an absent or empty answer tells nothing)."""
    if not path:
        return value if value is None or value == "" else REDACTED
    step, rest = path[0], path[1:]
    if step in (BASE64_JSON, JSON_TEXT):
        if not isinstance(value, str):
            return value
        try:
            inner = json.loads(base64.b64decode(value, validate=True)
                               if step == BASE64_JSON else value)
        except (binascii.Error, ValueError):
            return value  # not a bridge answer: nothing of ours in it
        hidden = _hidden(inner, rest)
        if hidden is inner:
            return value
        text = json.dumps(hidden)
        return (base64.b64encode(text.encode()).decode("ascii") if step == BASE64_JSON
                else text)
    if not isinstance(value, dict) or step not in value:
        return value
    inner = _hidden(value[step], rest)
    return value if inner is value[step] else {**value, step: inner}


def redact_message(record: Message | Fault, kinds: Collection[str]) -> Message | Fault:
    """``record`` with the table's values of the chosen kinds hidden (URL credentials
    are hidden later, in the encoded line: :func:`redact_line`)."""
    if not isinstance(record, Command | Event | Note):
        return record
    params = record.params
    for secret in _BY_METHOD.get(record.method, ()):
        if secret.kind in kinds:
            params = _hidden(params, secret.path)
    return record if params is record.params else replace(record, params=params)


def redact_line(line: str, kinds: Collection[str]) -> str:
    """One encoded trace line with URL credentials hidden, if that kind is chosen."""
    return hide_credentials(line) if "url_credentials" in kinds else line

