"""JavaScript values to Python and back.

The rule: *data* comes back by value, faithfully. Data is what JSON holds plus
the values JSON loses: ``undefined`` (:data:`Undefined`, not ``None``, which is
``null``), ``NaN``, ``-0`` (``-0.0``), ``±Infinity`` and bigint (``int``), at any
depth. Anything else (a DOM node, a function, a Map, a Date, ``window``, a cycle)
comes back as a :class:`RemoteObject` that describes it and keeps a handle.

Chromium's deep serialisation gives both in one reply. Backends without it (Node
20 ignores ``serializationOptions``) get the plain RemoteObject, and a plain
object or array is then fetched by value from its handle, falling back to the
described object when it cannot be returned by value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

import msgspec
from msgspec import UNSET

from cdpnb.errors import EvaluateError
from cdpnb.protocol.deep_values import (
    DeepArray,
    DeepBoolean,
    DeepNode,
    DeepNull,
    DeepNumber,
    DeepObject,
    DeepString,
    DeepUndefined,
)
from cdpnb.terminal_text import inert

__all__ = [
    "MAX_DEPTH",
    "RemoteObject",
    "Undefined",
    "UndefinedType",
    "call_argument",
    "decode",
    "from_remote_value",
    "raise_for_exception",
]

#: Deeper data comes back as a RemoteObject: without a cap Chromium 156 fails the whole
#: command past ~150 levels ("CBOR: stack limit exceeded"), after the script has run.
MAX_DEPTH = 100



class UndefinedType:
    """The type of :data:`Undefined`; there is only ever one instance."""

    _instance: UndefinedType | None = None

    def __new__(cls) -> UndefinedType:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "Undefined"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        # Pickles as the module global, so unpickling keeps it a singleton.
        return "Undefined"

    def __copy__(self) -> UndefinedType:
        return self

    def __deepcopy__(self, memo: object) -> UndefinedType:
        return self


#: JavaScript's ``undefined``. ``None`` is ``null``; test with ``value is Undefined``.
Undefined: Final = UndefinedType()


@dataclass(frozen=True)
class RemoteObject:
    """A JavaScript value that is not data: what CDP says about it, and its handle.

    ``object_id`` lives in ``session_id`` until the document goes away or
    ``Supervisor.release_objects`` releases it; pass the object itself back as an
    ``evaluate_on`` argument, or its ``object_id`` to raw ``Runtime.*`` commands.
    """

    type: str
    subtype: str | None = None
    class_name: str | None = None
    description: str | None = None
    object_id: str | None = None
    session_id: str | None = None
    #: For a DOM node: its ``backendNodeId`` (deep serialisation only).
    backend_node_id: int | None = None

    def __repr__(self) -> str:
        kind = self.subtype or self.type
        # A page can name a constructor anything (Object.defineProperty(C, "name", …)).
        name = f" {inert(self.class_name)}" if self.class_name else ""
        text = self.description or ""
        if len(text) > 60:
            text = text[:59] + "…"
        return f"<RemoteObject {kind}{name} {text!r}>"


class NeedsValue(NamedTuple):
    """A plain object or array on a backend without deep serialisation: fetch it by
    value from ``object_id``."""

    object_id: str


_NUMBERS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf, "-0": -0.0}
_PRIMITIVES = ("undefined", "string", "number", "boolean", "bigint")
#: Subtypes whose deep serialisation can be data. Another subtype (node, map, date,
#: ...) is never data, whatever its deep value says: Lightpanda 1.0.2 deep-serialises a
#: DOM node (subtype "node", className HTMLBodyElement) as ``{"type": "object",
#: "value": []}``, which would read as ``{}``; Chromium's deep value for those is typed
#: (``node``, ``map``, ``date``) and is no data either.
_DATA_SUBTYPES = (None, "array")


class _NotData(Exception):
    pass


def _number(raw: Any) -> Any:
    if isinstance(raw, str):
        if raw in _NUMBERS:
            return _NUMBERS[raw]
        raise _NotData(raw)
    return raw


def _unserializable(raw: str) -> Any:
    if raw in _NUMBERS:
        return _NUMBERS[raw]
    if raw.endswith("n"):
        return int(raw[:-1])
    return raw


def _from_deep(node: Any) -> Any:
    if not isinstance(node, dict):
        if isinstance(node, DeepNode):
            return _from_typed(node)
        raise _NotData(node)
    kind = node.get("type")
    if kind == "undefined":
        return Undefined
    if kind == "null":
        return None
    if kind in ("string", "boolean"):
        return node.get("value")
    if kind == "number":
        return _number(node.get("value"))
    if kind == "bigint":
        return int(str(node.get("value")))
    # A container without "value" was cut at maxDepth or is a back reference (a cycle).
    if kind == "array" and isinstance(node.get("value"), list):
        return [_from_deep(item) for item in node["value"]]
    if kind == "object" and isinstance(node.get("value"), list):
        out: dict[str, Any] = {}
        for pair in node["value"]:
            if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)):
                raise _NotData(pair)
            out[pair[0]] = _from_deep(pair[1])
        return out
    raise _NotData(kind)


def _from_typed(node: Any) -> Any:
    """``_from_deep`` of a typed node (``cdpnb.protocol.deep_values``): the same value
    as from the dicts the same JSON would be (a property test holds them equal)."""
    kind = type(node)
    if kind is DeepNumber:
        value = node.value
        return _number(value) if isinstance(value, str) else (
            None if value is UNSET else value)
    if kind is DeepArray:
        return [_from_typed(item) for item in node.value]
    if kind is DeepObject:
        return {key: _from_typed(item) for key, item in node.value}
    if kind is DeepString or kind is DeepBoolean:
        return None if node.value is UNSET else node.value
    if kind is DeepUndefined:
        return Undefined
    if kind is DeepNull:
        return None
    return int(str(None if node.value is UNSET else node.value))  # DeepBigInt


def from_remote_value(value: dict[str, Any], context: str | None) -> Any:
    """A WebDriver BiDi ``script.RemoteValue`` as a Python value, or a RemoteObject.

    BiDi's remote values are the shape of Chromium's deep serialisation, so data comes
    back by the same rule; anything else (a node, a function, a Map, a window) is
    described, with its ``sharedId`` (nodes) or ``handle`` as ``object_id``."""
    try:
        return _from_deep(value)
    except _NotData:
        pass
    if isinstance(value, DeepNode):  # (a typed node that is no data after all: "x" as
        value = msgspec.to_builtins(value)  # a number; described from its JSON)
    kind = str(value.get("type", "object"))
    inner = value.get("value")
    description = None
    class_name = None
    if kind == "node" and isinstance(inner, dict):
        class_name = inner.get("localName") or inner.get("nodeName")
        attrs = inner.get("attributes") or {}
        ident = f"#{attrs['id']}" if isinstance(attrs, dict) and attrs.get("id") else ""
        description = f"{class_name or 'node'}{ident}"
    elif kind in ("date", "regexp") or (kind == "string" and isinstance(inner, str)):
        description = str(inner if not isinstance(inner, dict) else
                          f"/{inner.get('pattern', '')}/{inner.get('flags', '')}")
    handle = value.get("sharedId") or value.get("handle")
    return RemoteObject(type="object" if kind not in ("function", "symbol") else kind,
                        subtype=kind if kind not in ("object", "function", "symbol") else None,
                        class_name=class_name, description=description or kind,
                        object_id=str(handle) if isinstance(handle, str) else None,
                        session_id=context if isinstance(handle, str) else None)


def describe(remote: dict[str, Any], session_id: str | None) -> RemoteObject:
    deep = remote.get("deepSerializedValue")
    node_id = None
    if isinstance(deep, dict) and deep.get("type") == "node":
        raw = (deep.get("value") or {}).get("backendNodeId")
        node_id = raw if isinstance(raw, int) and not isinstance(raw, bool) else None
    return RemoteObject(
        type=str(remote.get("type", "object")),
        subtype=remote.get("subtype"),
        class_name=remote.get("className"),
        description=remote.get("description"),
        object_id=remote.get("objectId"),
        session_id=session_id if remote.get("objectId") else None,
        backend_node_id=node_id,
    )


def decode(remote: dict[str, Any], session_id: str | None) -> Any:
    """A ``Runtime.RemoteObject`` as a Python value, a :class:`RemoteObject`, or a
    :class:`NeedsValue` telling the caller to fetch a plain object by value."""
    kind = remote.get("type")
    if kind in _PRIMITIVES or remote.get("subtype") == "null":
        if kind == "undefined":
            return Undefined
        if "unserializableValue" in remote:
            return _unserializable(str(remote["unserializableValue"]))
        return remote.get("value")
    if "value" in remote and "objectId" not in remote:
        return remote["value"]  # a reply made with returnByValue
    if "deepSerializedValue" in remote and remote.get("subtype") in _DATA_SUBTYPES:
        try:
            return _from_deep(remote["deepSerializedValue"])
        except _NotData:
            return describe(remote, session_id)
    object_id = remote.get("objectId")
    plain = kind == "object" and (
        (remote.get("subtype") is None and remote.get("className") == "Object")
        or (remote.get("subtype") == "array" and remote.get("className") == "Array"))
    if plain and isinstance(object_id, str):
        return NeedsValue(object_id)
    return describe(remote, session_id)


def _json_check(value: Any, path: str) -> None:
    if value is None or isinstance(value, str | bool | int):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise TypeError(f"{path} is {value!r}, which JSON cannot carry inside a container; "
                            "pass it as an argument of its own")
        return
    if isinstance(value, list | tuple):
        for i, item in enumerate(value):
            _json_check(item, f"{path}[{i}]")
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"{path} has a non-str key {key!r}")
            _json_check(item, f"{path}[{key!r}]")
        return
    raise TypeError(f"{path} is a {type(value).__name__}, which cannot be passed to JavaScript "
                    "inside a container")


def call_argument(value: Any, name: str) -> dict[str, Any]:
    """A ``Runtime.CallArgument`` for ``value``; a TypeError names ``name`` if it has none.

    Ints beyond 2**53 become bigint (a JS number would lose digits)."""
    if value is Undefined:
        return {}
    if isinstance(value, RemoteObject):
        if not value.object_id:
            raise TypeError(f"{name} is a RemoteObject without an object_id")
        return {"objectId": value.object_id}
    if isinstance(value, float) and (not math.isfinite(value) or
                                     (value == 0.0 and math.copysign(1.0, value) < 0)):
        raw = "NaN" if math.isnan(value) else ("-0" if value == 0.0 else
                                               ("Infinity" if value > 0 else "-Infinity"))
        return {"unserializableValue": raw}
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 2**53:
        return {"unserializableValue": f"{value}n"}
    _json_check(value, name)
    return {"value": value}


def raise_for_exception(reply: dict[str, Any]) -> None:
    """Raise EvaluateError (JS message and stack) if ``reply`` reports a thrown value."""
    details = reply.get("exceptionDetails")
    if not details:
        return
    exc = details.get("exception") or {}
    if exc.get("description"):
        message = str(exc["description"])
    elif "value" in exc or "unserializableValue" in exc:
        # `throw "text"` or `throw 42`: no Error object, so no description.
        thrown = exc.get("value", exc.get("unserializableValue"))
        message = f"Uncaught {thrown!r}" if not isinstance(thrown, str) else f"Uncaught {thrown}"
    else:
        message = str(details.get("text") or "JavaScript exception")
    frames = (details.get("stackTrace") or {}).get("callFrames") or []
    stack = "\n".join(
        f"    at {f.get('functionName') or '<anonymous>'} ({f.get('url', '')}:"
        f"{f.get('lineNumber', 0) + 1}:{f.get('columnNumber', 0) + 1})"
        for f in frames
    )
    first_line = message.splitlines()[0] if message else message
    raise EvaluateError(first_line, stack or message)
