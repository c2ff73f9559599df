"""The WebKit Inspector Protocol (WIP) in CDP's terms, for the evaluation path: sans-I/O.

WIP is what Bun's inspector speaks (and WebKit's, whence CDP came). Its framing is
CDP's (``{"id", "method", "params"}`` → ``{"id", "result" | "error"}``, events
``{"method", "params"}``, no ``sessionId``), so :class:`~cdpnb.protocol.CDPConnection`
parses it and a trace records it as it came. What differs for a client of ``Runtime``
(measured on Bun 1.4.5) is put right here, and only here, in both directions:

- a reply to ``Runtime.evaluate``, ``callFunctionOn`` or ``awaitPromise`` is ``{"result":
  <RemoteObject>, "wasThrown": bool}``: a thrown value is the ``result`` itself, and
  there is no ``exceptionDetails`` (:func:`as_cdp_reply` makes CDP's);
- ``Runtime.evaluate`` ignores ``awaitPromise`` and replies with the Promise;
  ``Runtime.awaitPromise {promiseObjectId}`` awaits it (a rejection: ``wasThrown``), as
  :func:`promise_to_await` and :func:`await_params` say; ``Runtime.callFunctionOn``
  honours ``awaitPromise``;
- ``NaN``, ``±Infinity`` and ``-0`` come as ``"value": null`` with the number in
  ``description``, a bigint with no value (``"description": "10n"``): CDP's
  ``unserializableValue`` is made from the description; a string repeats its value in
  ``description``, which CDP never gives (dropped);
- ``userGesture`` is WIP's ``emulateUserGesture``; CDP's ``awaitPromise`` (on evaluate),
  ``serializationOptions``, ``timeout`` and ``uniqueContextId`` do not exist and are not
  sent (:func:`script_params`), so the trace does not show a promise it ignored;
- object ids are JSON text (``'{"injectedScriptId":1,"id":2}'``): strings, handed back
  exactly as they came, never parsed;
- ``contextId`` is refused ("not supported for JSContexts as there is only one
  execution context"), no ``executionContextCreated`` comes, and
  ``Runtime.terminateExecution`` does not exist (-32601);
- an unknown domain's error says so in WebKit's words (:data:`DOMAIN_NOT_FOUND`:
  ``"'session' domain was not found"``, where V8's inspector says ``"'session.status'
  wasn't found"``), which is how an endpoint is told to speak WIP
  (:func:`is_wip_error`); its HTTP side has ``/json/version`` and no ``/json/list``.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["DOMAIN_NOT_FOUND", "as_cdp_reply", "await_params", "is_wip_error",
           "promise_to_await", "script_params"]

#: WebKit's backend dispatcher's error for a domain it does not have.
DOMAIN_NOT_FOUND = re.compile(r"^'[^']*' domain was not found$")
#: CDP's script params WIP has no word for (``userGesture`` is renamed).
_NOT_IN_WIP = frozenset({"serializationOptions", "timeout", "uniqueContextId", "userGesture"})
#: A number WIP gives as ``value: null`` and says in its ``description``.
_UNSERIALIZABLE = {"NaN", "Infinity", "-Infinity", "-0"}


def is_wip_error(reply: Any) -> bool:
    """Whether ``reply`` (a parsed message) is WebKit's "domain was not found" error."""
    if not isinstance(reply, dict):
        return False
    error = reply.get("error")
    message = error.get("message") if isinstance(error, dict) else None
    return isinstance(message, str) and DOMAIN_NOT_FOUND.match(message) is not None


def script_params(method: str, params: dict[str, Any]) -> dict[str, Any]:
    """CDP ``Runtime.evaluate`` / ``Runtime.callFunctionOn`` params in WIP's words:
    ``userGesture`` is ``emulateUserGesture``, and what WIP does not have is left out
    (``awaitPromise`` too on evaluate, which ignores it).

    >>> script_params("Runtime.evaluate", {"expression": "1", "awaitPromise": True,
    ...               "userGesture": False, "objectGroup": "g", "timeout": 5})
    {'expression': '1', 'objectGroup': 'g', 'emulateUserGesture': False}
    """
    absent = _NOT_IN_WIP | ({"awaitPromise"} if method == "Runtime.evaluate" else set())
    sent = {key: value for key, value in params.items() if key not in absent}
    if "userGesture" in params:
        sent["emulateUserGesture"] = bool(params["userGesture"])
    return sent


def promise_to_await(reply: dict[str, Any]) -> str | None:
    """The object id of the Promise a WIP ``Runtime.evaluate`` replied with (it never
    awaits one), or None when the reply is no Promise (a value, a thrown error).

    >>> promise_to_await({"result": {"type": "object", "className": "Promise",
    ...                              "objectId": '{"id":1}'}, "wasThrown": False})
    '{"id":1}'
    >>> promise_to_await({"result": {"type": "number", "value": 2}, "wasThrown": False})
    """
    if reply.get("wasThrown") or reply.get("exceptionDetails"):
        return None
    remote = reply.get("result")
    if not isinstance(remote, dict) or remote.get("type") != "object":
        return None
    if remote.get("className") != "Promise" and remote.get("subtype") != "promise":
        return None
    object_id = remote.get("objectId")
    return object_id if isinstance(object_id, str) else None


def await_params(object_id: str, *, return_by_value: bool = False) -> dict[str, Any]:
    """``Runtime.awaitPromise``'s params for the Promise ``object_id``."""
    return {"promiseObjectId": object_id, "returnByValue": return_by_value}


def as_cdp_reply(reply: dict[str, Any]) -> dict[str, Any]:
    """A WIP reply to a script-running ``Runtime`` command as CDP's: a thrown value
    (``wasThrown``) becomes ``exceptionDetails`` with it as ``exception`` (and no
    ``result``, as a CDP client would find), the numbers JSON cannot carry become
    ``unserializableValue``. A reply that is CDP's already is returned as it is.

    >>> as_cdp_reply({"result": {"type": "number", "value": None, "description": "NaN"},
    ...               "wasThrown": False})
    {'result': {'type': 'number', 'description': 'NaN', 'unserializableValue': 'NaN'}}
    >>> as_cdp_reply({"result": {"type": "string", "value": "no"}, "wasThrown": True})
    {'exceptionDetails': {'text': 'Uncaught', 'exception': {'type': 'string', 'value': 'no'}}}
    """
    if "wasThrown" not in reply:
        return reply
    remote = reply.get("result")
    remote = _remote(remote) if isinstance(remote, dict) else {"type": "undefined"}
    if not reply["wasThrown"]:
        return {key: (remote if key == "result" else value) for key, value in reply.items()
                if key != "wasThrown"}
    details: dict[str, Any] = {"text": "Uncaught", "exception": remote}
    return {"exceptionDetails": details}


def _remote(remote: dict[str, Any]) -> dict[str, Any]:
    """A RemoteObject with CDP's ``unserializableValue`` where WIP gives only words, and
    a string without the ``description`` CDP never gives one (WIP repeats the value
    there: a thrown string then reads "Uncaught text" as from node)."""
    kind, described = remote.get("type"), remote.get("description")
    if kind == "string" and "description" in remote:
        return {key: value for key, value in remote.items() if key != "description"}
    if kind == "number" and remote.get("value") is None and described in _UNSERIALIZABLE:
        fixed = {key: value for key, value in remote.items() if key != "value"}
        return {**fixed, "unserializableValue": described}
    if kind == "bigint" and "value" not in remote and isinstance(described, str) \
            and "unserializableValue" not in remote:
        return {**remote, "unserializableValue": described}
    return remote
