"""Large script replies read without a dict per value: deep-serialised data as typed nodes.

A ``Runtime.evaluate`` reply with ``serializationOptions: {"serialization": "deep"}``
spells every element of an array as an object of its own (``{"type": "number",
"value": 1}``); read as JSON, that is one dict per element. Measured (CPython 3.11, a
1M-element array of numbers, 28 MB of JSON): parsing it as dicts and making the list
peaks at +300 B an element, with ``json.loads`` or msgspec alike (cdpnb's reading of it
+307 B); the same reply read into the typed nodes below peaks at +79 B an element.
Live, an ``evaluate`` of such an array (the frame's own bytes and the list included):
324 → 104 B an element on Deno 2.9, headless-shell 156 and Firefox 153 (BiDi). So a
reply to cdpnb's own evaluate that is large (:data:`TYPED_REPLY_MIN_BYTES`) is read by
:func:`read_script_reply` into these nodes, and ``cdpnb.protocol.js_values`` makes the
value from them as it does from dicts; a WebDriver BiDi script result likewise
(:func:`read_bidi_script_reply`).

The nodes stand for *data* only (what ``js_values`` turns into Python values:
undefined, null, strings, booleans, numbers, bigints, arrays and plain objects), and
each knows every field it may carry: any other type (a node, a Map, a function) or
field, a reply that is an error or holds an exception, does not fit, and the frame is
read as JSON as any other (``None`` from the reader). A node that fits is the whole of
what the wire said (:func:`as_json` gives back the JSON value), so a trace line
encoded from it (with ``redact=``: the others are the wire's bytes) holds the same JSON
as the browser sent, its keys perhaps in another order; while such a line is encoded,
the value is dicts again.
"""

from __future__ import annotations

from typing import Any, Literal, Union

import msgspec
from msgspec import UNSET, Struct, UnsetType

__all__ = ["TYPED_REPLY_MIN_BYTES", "DeepArray", "DeepBigInt", "DeepBoolean", "DeepData",
           "DeepNode", "DeepNull", "DeepNumber", "DeepObject", "DeepString", "DeepUndefined",
           "as_json", "read_bidi_script_reply", "read_script_reply", "reply_id"]

#: Frames from this size on that answer a command asking for it are read typed; below
#: it the dicts cost little, and one reading for every frame keeps the common path one.
TYPED_REPLY_MIN_BYTES = 64 * 1024


class DeepNode(Struct, tag_field="type", forbid_unknown_fields=True, gc=False):
    """One deep-serialised value (no reference cycles: a cycle is a back reference
    without ``value``, which does not fit; ``gc=False`` saves each node 16 bytes)."""


class DeepUndefined(DeepNode, tag="undefined"):
    pass


class DeepNull(DeepNode, tag="null"):
    pass


class DeepString(DeepNode, tag="string"):
    value: Any = UNSET


class DeepBoolean(DeepNode, tag="boolean"):
    value: Any = UNSET


class DeepNumber(DeepNode, tag="number"):
    #: A number, or ``"NaN"``, ``"-0"``, ``"Infinity"``, ``"-Infinity"``.
    value: Any = UNSET


class DeepBigInt(DeepNode, tag="bigint"):
    value: Any = UNSET


class DeepArray(DeepNode, tag="array"):
    value: list[DeepData]


class DeepObject(DeepNode, tag="object"):
    value: list[tuple[str, DeepData]]


DeepData = Union[DeepUndefined, DeepNull, DeepString, DeepBoolean, DeepNumber,  # noqa: UP007
                 DeepBigInt, DeepArray, DeepObject]


class _RemoteObject(Struct, forbid_unknown_fields=True, gc=False):
    """``Runtime.RemoteObject`` with a data deep value (every field it then has)."""

    type: str
    deepSerializedValue: DeepData
    subtype: str | UnsetType = UNSET
    className: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    objectId: str | UnsetType = UNSET
    value: Any = UNSET
    unserializableValue: str | UnsetType = UNSET


class _ScriptResult(Struct, forbid_unknown_fields=True, gc=False):
    result: _RemoteObject  # (an exceptionDetails does not fit: read as JSON)


class _ScriptReply(Struct, forbid_unknown_fields=True, gc=False):
    id: int
    result: _ScriptResult
    sessionId: str | UnsetType = UNSET


class _BiDiScriptResult(Struct, forbid_unknown_fields=True, gc=False):
    type: Literal["success"]  # (an "exception" does not fit: read as JSON)
    result: DeepData
    realm: str | UnsetType = UNSET


class _BiDiScriptReply(Struct, forbid_unknown_fields=True, gc=False):
    type: Literal["success"]
    id: int
    result: _BiDiScriptResult


class _Id(Struct):
    id: Any = None


_READ_ID = msgspec.json.Decoder(_Id).decode
_READ_REPLY = msgspec.json.Decoder(_ScriptReply).decode
_READ_BIDI_REPLY = msgspec.json.Decoder(_BiDiScriptReply).decode


def reply_id(frame: str | bytes | bytearray | memoryview) -> int | None:
    """The ``id`` of a frame that is a JSON object with an integer id, else None (the
    rest of the frame is skipped over, not built)."""
    try:
        found = _READ_ID(frame).id
    except ValueError:  # (msgspec's errors; a str with a lone surrogate, UnicodeEncodeError)
        return None
    return found if isinstance(found, int) and not isinstance(found, bool) else None


def read_script_reply(frame: str | bytes | bytearray | memoryview) -> dict[str, Any] | None:
    """A CDP reply to ``Runtime.evaluate``/``Runtime.callFunctionOn`` whose result is
    data, as the JSON object it is with its ``deepSerializedValue`` a typed node; None
    when it does not fit (read it as JSON)."""
    try:
        reply = _READ_REPLY(frame)
    except ValueError:
        return None
    remote = reply.result.result
    fields = {name: getattr(remote, name) for name in remote.__struct_fields__}
    message: dict[str, Any] = {
        "id": reply.id,
        "result": {"result": {k: v for k, v in fields.items() if v is not UNSET}}}
    if reply.sessionId is not UNSET:
        message["sessionId"] = reply.sessionId
    return message


def read_bidi_script_reply(frame: str | bytes | bytearray | memoryview
                           ) -> dict[str, Any] | None:
    """A WebDriver BiDi ``script.evaluate``/``script.callFunction`` success whose
    ``RemoteValue`` is data (the same nodes: BiDi's remote values are the shape of
    Chromium's deep serialisation), as its JSON object with that value a typed node;
    None when it does not fit (read it as JSON)."""
    try:
        reply = _READ_BIDI_REPLY(frame)
    except ValueError:
        return None
    result: dict[str, Any] = {"type": "success", "result": reply.result.result}
    if reply.result.realm is not UNSET:
        result["realm"] = reply.result.realm
    return {"type": "success", "id": reply.id, "result": result}


def as_json(value: Any) -> Any:
    """A JSON encoder's ``default``: a typed node as the JSON value it was read from
    (lists and dicts); anything else JSON has no spelling for as its repr."""
    if isinstance(value, Struct):
        return msgspec.to_builtins(value)
    return repr(value)
