"""The one codec: wire text both ways, the surrogate rule, the connection-epoch rule."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdpnb.playback.script import Step
from cdpnb.protocol import (
    CDPConnection,
    CommandFrame,
    Event,
    InvalidCommand,
    Note,
    opens_connection,
    parse_command,
    wire_text,
)


def test_wire_text_is_compact_utf8_when_it_can_be() -> None:
    assert wire_text({"id": 1, "params": {"text": "é ü"}}) == '{"id":1,"params":{"text":"é ü"}}'


def test_a_lone_surrogate_goes_out_escaped_and_reads_back_the_same() -> None:
    message = {"id": 1, "method": "Page.handleJavaScriptDialog",
               "params": {"promptText": "a\udfffb é"}}
    text = wire_text(message)
    assert text.isascii()
    text.encode("utf-8")  # what the socket does with it: no UnicodeEncodeError
    assert json.loads(text) == message


def test_the_live_sender_and_the_replay_sender_write_the_same_text() -> None:
    # Both ends of cdpnb go through wire_text: one rule for lone surrogates.
    params = {"expression": "'x\udfff'"}
    _, live = CDPConnection().command("Runtime.evaluate", params)
    assert live == wire_text({"id": 1, "method": "Runtime.evaluate", "params": params})
    event = Event("Runtime.consoleAPICalled", {"args": [{"value": "a\ud800"}]}, "S")
    replayed = Step(0.0, event=event).frame()
    assert replayed == wire_text({"method": event.method, "params": event.params,
                                  "sessionId": "S"})
    replayed.encode("utf-8")


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(),
                    lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=5), inner, max_size=4),
                    max_leaves=20))
@settings(max_examples=150, deadline=None)
def test_any_json_value_survives_the_wire(value: Any) -> None:
    # st.text() draws lone surrogates too.
    text = wire_text({"id": 1, "params": {"v": value}})
    text.encode("utf-8")
    assert json.loads(text) == {"id": 1, "params": {"v": value}}


@pytest.mark.parametrize(("frame", "code", "cid"), [
    ("nope", -32700, None),
    (b"\xff\xfe{", -32700, None),
    ("[1, 2]", -32600, None),
    ('{"method": "A.b"}', -32600, None),
    ('{"id": "3", "method": "A.b"}', -32600, None),
    ('{"id": true, "method": "A.b"}', -32600, None),
    ('{"id": 5.5, "method": "A.b"}', -32600, None),
    ('{"id": 4}', -32600, 4),
    ('{"id": 6, "method": 7}', -32600, 6),
    ('{"id": 2, "method": "A.b", "sessionId": ["x"]}', -32600, 2),
    ('{"id": 2, "method": "A.b", "sessionId": null}', -32600, 2),
    ('{"id": 1, "method": "A.b", "params": [1]}', -32602, 1),
    ('{"id": 1, "method": "A.b", "params": "x"}', -32602, 1),
    ("[" * 100_000 + "]" * 100_000, -32700, None),
])
def test_a_frame_that_is_no_command_gets_the_error_a_browser_sends(
        frame: str | bytes, code: int, cid: int | None) -> None:
    parsed = parse_command(frame)
    assert isinstance(parsed, InvalidCommand), parsed
    assert (parsed.code, parsed.id) == (code, cid)
    reply = parsed.reply()
    assert reply["error"]["code"] == code
    assert reply.get("id") == cid
    wire_text(reply).encode("utf-8")


def test_a_command_is_read_with_its_params_and_session() -> None:
    assert parse_command('{"id": 7, "method": "A.b", "params": null}') == \
        CommandFrame(7, "A.b", {}, None)
    assert parse_command(b'{"id": -1, "method": "A.b", "params": {"x": 1}, "sessionId": "S"}') \
        == CommandFrame(-1, "A.b", {"x": 1}, "S")


def test_only_a_connected_note_opens_a_connection() -> None:
    assert opens_connection(Note("cdpnb.connected", {}))
    assert not opens_connection(Note("cdpnb.disconnected", {}))
    assert not opens_connection(Event("cdpnb.connected", {}))
