"""Turn a ``Runtime.RemoteObject`` into a Python value."""

from __future__ import annotations

import math
from typing import Any

from cdpnb.errors import EvaluateError

__all__ = ["raise_for_exception", "value_of"]

_UNSERIALIZABLE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf, "-0": -0.0}


def value_of(remote: dict[str, Any]) -> Any:
    if "unserializableValue" in remote:
        raw = str(remote["unserializableValue"])
        if raw in _UNSERIALIZABLE:
            return _UNSERIALIZABLE[raw]
        if raw.endswith("n"):
            return int(raw[:-1])
        return raw
    if "value" in remote:
        return remote["value"]
    if remote.get("type") == "undefined":
        return None
    # Not serialisable by value (a DOM node, a function): describe it.
    return {k: remote[k] for k in ("type", "subtype", "className", "description", "objectId")
            if k in remote}


def raise_for_exception(reply: dict[str, Any]) -> None:
    details = reply.get("exceptionDetails")
    if not details:
        return
    exc = details.get("exception") or {}
    message = str(exc.get("description") or details.get("text") or "JavaScript exception")
    frames = (details.get("stackTrace") or {}).get("callFrames") or []
    stack = "\n".join(
        f"    at {f.get('functionName') or '<anonymous>'} ({f.get('url', '')}:"
        f"{f.get('lineNumber', 0) + 1}:{f.get('columnNumber', 0) + 1})"
        for f in frames
    )
    first_line = message.splitlines()[0] if message else message
    raise EvaluateError(first_line, stack or message)
