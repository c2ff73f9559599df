"""The WebKit Inspector Protocol made CDP's for the evaluation path (``cdpnb.protocol.wip``,
sans-I/O), on the replies Bun 1.4.5 gave; how an endpoint is found to speak it; and when
cdpnb's WebSocket acknowledges at once (TCP_QUICKACK)."""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest
from websockets.client import ClientProtocol
from websockets.server import ServerProtocol
from websockets.uri import parse_uri

from cdpnb.errors import EvaluateError
from cdpnb.protocol import CDPConnection, Reply
from cdpnb.protocol.js_values import NeedsValue, Undefined, decode, raise_for_exception
from cdpnb.protocol.wip import (
    as_cdp_reply,
    await_params,
    is_wip_error,
    promise_to_await,
    script_params,
)
from cdpnb.transport.discovery import protocol_of_reply
from cdpnb.transport.wire import WireSocket

#: Replies Bun 1.4.5 sent (its own bytes), by what was evaluated.
BUN = {
    "1+1": {"result": {"type": "number", "value": 2, "description": "2"}, "wasThrown": False},
    "Promise.resolve(2)": {"result": {"type": "object",
                                      "objectId": '{"injectedScriptId":1,"id":1}',
                                      "className": "Promise", "description": "Promise"},
                           "wasThrown": False},
    "throw new Error('boom')": {"result": {"type": "object",
                                           "objectId": '{"injectedScriptId":1,"id":2}',
                                           "subtype": "error", "className": "Error",
                                           "description": "Error: boom"},
                                "wasThrown": True},
    "throw 'str'": {"result": {"type": "string", "value": "str", "description": "str"},
                    "wasThrown": True},
    "NaN": {"result": {"type": "number", "value": None, "description": "NaN"},
            "wasThrown": False},
    "-Infinity": {"result": {"type": "number", "value": None, "description": "-Infinity"},
                  "wasThrown": False},
    "10n": {"result": {"type": "bigint", "description": "10n"}, "wasThrown": False},
    "undefined": {"result": {"type": "undefined"}, "wasThrown": False},
    "null": {"result": {"type": "object", "value": None, "subtype": "null"},
             "wasThrown": False},
    "({a: 1})": {"result": {"type": "object", "objectId": '{"injectedScriptId":1,"id":5}',
                            "className": "Object", "description": "Object"},
                 "wasThrown": False},
}
#: What node 20 / Deno 2.9.8 and Bun 1.4.5 answered to cdpnb's sniff (session.status).
V8_SNIFF = b'{"id":0,"error":{"code":-32601,"message":"\'session.status\' wasn\'t found"}}'
WEBKIT_SNIFF = (b'{"error":{"code":-32601,"message":"\'session\' domain was not found",'
                b'"data":[{"code":-32601,"message":"\'session\' domain was not found"}]},"id":0}')


def value_of(expression: str) -> Any:
    reply = as_cdp_reply(BUN[expression])
    raise_for_exception(reply)
    return decode(reply["result"], None)


def test_values_read_as_over_cdp() -> None:
    assert value_of("1+1") == 2
    nan = value_of("NaN")
    assert nan != nan
    assert value_of("-Infinity") == float("-inf")
    assert value_of("10n") == 10
    assert value_of("undefined") is Undefined
    assert value_of("null") is None
    # a plain object comes by handle: fetched by value, as on node
    assert value_of("({a: 1})") == NeedsValue('{"injectedScriptId":1,"id":5}')


def test_a_thrown_value_becomes_exception_details() -> None:
    for expression, message in (("throw new Error('boom')", "Error: boom"),
                                ("throw 'str'", "Uncaught str")):
        reply = as_cdp_reply(BUN[expression])
        assert "result" not in reply and "wasThrown" not in reply
        thrown = {k: v for k, v in BUN[expression]["result"].items()
                  if not (k == "description" and v == "str")}  # (a string has none in CDP)
        assert reply["exceptionDetails"]["exception"] == thrown
        with pytest.raises(EvaluateError, match=message):
            raise_for_exception(reply)


def test_a_cdp_reply_and_the_wip_one_are_left_as_they_are() -> None:
    cdp = {"result": {"type": "number", "value": 2, "description": "2"}}
    assert as_cdp_reply(cdp) is cdp
    before = json.dumps(BUN)
    for reply in BUN.values():
        as_cdp_reply(reply)
        promise_to_await(reply)
    assert json.dumps(BUN) == before  # the recorded reply is never changed in place


def test_a_promise_is_awaited_by_its_own_command() -> None:
    assert promise_to_await(BUN["Promise.resolve(2)"]) == '{"injectedScriptId":1,"id":1}'
    for expression in ("1+1", "throw new Error('boom')", "({a: 1})", "null"):
        assert promise_to_await(BUN[expression]) is None
    # V8's way to say it (a Promise from a CDP endpoint) counts too
    assert promise_to_await({"result": {"type": "object", "subtype": "promise",
                                        "objectId": "1.2.3"}}) == "1.2.3"
    assert await_params("x") == {"promiseObjectId": "x", "returnByValue": False}
    # a rejection comes back thrown, as from evaluate
    rejected = as_cdp_reply({"result": {"type": "object", "subtype": "error",
                                        "description": "Error: no"}, "wasThrown": True})
    with pytest.raises(EvaluateError, match="Error: no"):
        raise_for_exception(rejected)


def test_commands_are_sent_in_wips_words() -> None:
    params = {"expression": "1", "awaitPromise": True, "objectGroup": "cdpnb",
              "userGesture": True, "serializationOptions": {"serialization": "deep"},
              "timeout": 1000, "contextId": 3}
    assert script_params("Runtime.evaluate", params) == {
        "expression": "1", "objectGroup": "cdpnb", "contextId": 3, "emulateUserGesture": True}
    call = {"functionDeclaration": "f", "objectId": "o", "awaitPromise": True,
            "userGesture": False}
    assert script_params("Runtime.callFunctionOn", call) == {
        "functionDeclaration": "f", "objectId": "o", "awaitPromise": True,
        "emulateUserGesture": False}


def test_an_endpoint_is_told_to_speak_wip_by_webkits_words() -> None:
    assert protocol_of_reply(WEBKIT_SNIFF) == "wip"
    assert protocol_of_reply(V8_SNIFF) == "cdp"
    assert is_wip_error(json.loads(WEBKIT_SNIFF))
    assert not is_wip_error(json.loads(V8_SNIFF))
    assert not is_wip_error({"error": {"message": "'Page' domain was not found, sorry"}})
    assert not is_wip_error(["not", "a", "reply"])


def test_wip_is_framed_as_cdp() -> None:
    connection = CDPConnection()
    command, _ = connection.command("Runtime.evaluate", {"expression": "1+1"})
    received = connection.receive(json.dumps({"result": BUN["1+1"], "id": command.id}),
                                  wall=0.0, mono=0.0)
    assert isinstance(received, Reply) and received.result == BUN["1+1"]


class _Socket:
    """Stands for the socket: keeps what is set on it."""

    def __init__(self) -> None:
        self.options: list[tuple[int, int, int]] = []

    def setsockopt(self, level: int, option: int, value: int) -> None:
        self.options.append((level, option, value))


def _opened() -> ClientProtocol:
    client = ClientProtocol(parse_uri("ws://127.0.0.1/x"))
    client.send_request(client.connect())
    server = ServerProtocol()
    server.receive_data(b"".join(client.data_to_send()))
    server.send_response(server.accept(server.events_received()[0]))  # type: ignore[arg-type]
    client.receive_data(b"".join(server.data_to_send()))
    client.events_received()
    return client


def test_a_read_is_acknowledged_at_once_only_while_a_reply_is_awaited() -> None:
    fake = _Socket()
    wire = WireSocket(fake, _opened(), "ws://127.0.0.1/x")  # type: ignore[arg-type]
    wire._acknowledge()  # nobody said what is awaited: as before
    waiting = [False]
    wire.tell_awaiting(lambda: waiting[0])
    wire._acknowledge()  # the read brought the reply: the ACK rides on the next command
    assert fake.options == []
    waiting[0] = True  # an event came before the reply (node with the Debugger on)
    wire._acknowledge()
    # (where the kernel has no TCP_QUICKACK, nothing is ever set)
    quickack = getattr(socket, "TCP_QUICKACK", None)
    assert fake.options == ([] if quickack is None else [(socket.IPPROTO_TCP, quickack, 1)])
    WireSocket.quickack = False  # the switch a benchmark measures both ways with
    try:
        wire._acknowledge()
    finally:
        WireSocket.quickack = quickack is not None
    assert len(fake.options) == (0 if quickack is None else 1)
