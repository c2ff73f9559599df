"""Sans-I/O tests of cdpnb.protocol.CDPConnection: no sockets, no event loop."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdpnb.errors import CDPError, CdpnbError
from cdpnb.protocol import (
    CDPConnection,
    Command,
    ErrorReply,
    Event,
    Fault,
    Reply,
    TransportFault,
    error_of,
)


def wire(obj: Any) -> str:
    return json.dumps(obj)


def reply_to(cmd: Command, result: dict[str, Any] | None = None, **extra: Any) -> str:
    return wire({"id": cmd.id, "result": result if result is not None else {}, **extra})


def event(method: str, params: Any = None, session_id: str | None = None) -> str:
    msg: dict[str, Any] = {"method": method, "params": params if params is not None else {}}
    if session_id is not None:
        msg["sessionId"] = session_id
    return wire(msg)


def attached(child: str, target_id: str = "T", kind: str = "iframe") -> dict[str, Any]:
    return {
        "sessionId": child,
        "targetInfo": {"targetId": target_id, "type": kind, "url": ""},
        "waitingForDebugger": True,
    }


# -- ids ---------------------------------------------------------------------------------


def test_ids_start_at_one_and_increase_by_one() -> None:
    conn = CDPConnection()
    ids = [conn.command("Runtime.evaluate", {"expression": str(i)})[0].id for i in range(50)]
    assert ids == list(range(1, 51))
    assert conn.pending == 50


def test_ids_stay_unique_across_replies_abandon_and_fail_all() -> None:
    conn = CDPConnection()
    seen: list[int] = []
    for round_ in range(5):
        a, _ = conn.command("A.a")
        b, _ = conn.command("B.b", session_id="S")
        c, _ = conn.command("C.c")
        seen += [a.id, b.id, c.id]
        conn.receive(reply_to(a))
        conn.abandon(b.id)
        if round_ % 2:
            conn.fail_all()
    assert len(seen) == len(set(seen))
    assert seen == sorted(seen)


def test_each_connection_has_its_own_id_counter() -> None:
    one, two = CDPConnection(), CDPConnection()
    one.command("A.a")
    one.command("A.a")
    assert two.command("A.a")[0].id == 1


def test_command_records_what_was_sent() -> None:
    conn = CDPConnection()
    cmd, _ = conn.command("Page.navigate", {"url": "http://x/"}, "S1", wall=12.5, mono=3.25)
    assert cmd == Command(1, "Page.navigate", {"url": "http://x/"}, "S1", 12.5, 3.25)


# -- wire JSON ---------------------------------------------------------------------------


def test_wire_json_without_session_has_no_session_key() -> None:
    conn = CDPConnection()
    _, text = conn.command("Runtime.evaluate", {"expression": "1 + 1"})
    assert json.loads(text) == {
        "id": 1,
        "method": "Runtime.evaluate",
        "params": {"expression": "1 + 1"},
    }
    assert "sessionId" not in text


def test_wire_json_with_session_carries_it() -> None:
    conn = CDPConnection()
    _, text = conn.command("Page.enable", session_id="SID")
    assert json.loads(text) == {"id": 1, "method": "Page.enable", "params": {}, "sessionId": "SID"}


def test_wire_json_is_compact() -> None:
    conn = CDPConnection()
    _, text = conn.command("Target.setAutoAttach",
                           {"autoAttach": True, "flatten": True, "filter": [{"type": "iframe"}]},
                           "S")
    assert text == (
        '{"id":1,"method":"Target.setAutoAttach",'
        '"params":{"autoAttach":true,"flatten":true,"filter":[{"type":"iframe"}]},'
        '"sessionId":"S"}'
    )


def test_wire_json_keeps_non_ascii_text() -> None:
    conn = CDPConnection()
    _, text = conn.command("Runtime.evaluate", {"expression": "'héllo ✓'"})
    assert "héllo ✓" in text
    assert json.loads(text)["params"]["expression"] == "'héllo ✓'"


def test_params_none_is_sent_as_empty_object() -> None:
    conn = CDPConnection()
    cmd, text = conn.command("Page.enable", None)
    assert cmd.params == {}
    assert json.loads(text)["params"] == {}


# -- bad arguments to command() ----------------------------------------------------------


@pytest.mark.parametrize("method", ["", "evaluate", None, 5, b"Runtime.evaluate"])
def test_command_rejects_bad_method(method: Any) -> None:
    conn = CDPConnection()
    with pytest.raises(ValueError, match=r"Domain\.command") as info:
        conn.command(method)
    assert repr(method) in str(info.value)
    assert conn.pending == 0
    assert conn.command("Page.enable")[0].id == 1  # the refused command took no id


@pytest.mark.parametrize("params", [[1, 2], "x=1", 7, ("a", 1)])
def test_command_rejects_non_dict_params(params: Any) -> None:
    conn = CDPConnection()
    with pytest.raises(TypeError) as info:
        conn.command("Runtime.evaluate", params)
    text = str(info.value)
    assert "Runtime.evaluate" in text
    assert "dict" in text
    assert type(params).__name__ in text
    assert conn.pending == 0
    assert conn.command("Page.enable")[0].id == 1  # the refused command took no id


def test_command_with_unserialisable_params_raises_and_leaves_nothing_pending() -> None:
    conn = CDPConnection()
    with pytest.raises(TypeError, match="object"):
        conn.command("Runtime.evaluate", {"expression": object()})
    assert conn.pending == 0
    # the connection stays usable and ids stay unique
    cmd, _ = conn.command("Runtime.evaluate", {"expression": "1"})
    conn.receive(reply_to(cmd))
    assert conn.pending == 0


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"a": value}
    return value


def _holds_itself() -> dict[str, Any]:
    value: dict[str, Any] = {"list": []}
    value["list"].append(value)
    return value


# (2000 levels, the case, fail to encode on CPython 3.11 and 3.12 but encode on
# 3.13, measured; 100,000 fail on every one, and a value that holds itself can never)
@pytest.mark.parametrize("make", [lambda: _nested(100_000), _holds_itself],
                         ids=["100000", "itself"])
@pytest.mark.parametrize("protocol", ["cdp", "bidi"])
def test_params_nested_too_deep_are_a_value_error_naming_the_method(
        make: Any, protocol: str) -> None:
    # (sup.cdp on node, deno and bun raised the encoder's bare RecursionError)
    from cdpnb.protocol.bidi import BiDiConnection

    conn = CDPConnection() if protocol == "cdp" else BiDiConnection()
    with pytest.raises(ValueError, match=r"params for Runtime\.evaluate are nested too "
                                         r"deep to send as JSON") as raised:
        conn.command("Runtime.evaluate", {"expression": "1", "deep": make()})
    assert not isinstance(raised.value, RecursionError)
    assert raised.value.__context__ is None or raised.value.__suppress_context__
    assert conn.pending == 0
    cmd, _ = conn.command("Runtime.evaluate", _nested(50))  # what fits still goes
    assert cmd.id == 1


@pytest.mark.parametrize("session_id", [5, b"S", ["S"]])
def test_command_rejects_non_string_session_id(session_id: Any) -> None:
    conn = CDPConnection()
    with pytest.raises(TypeError, match="session"):
        conn.command("Runtime.evaluate", {}, session_id)
    assert conn.pending == 0


# -- reply matching ----------------------------------------------------------------------


def test_reply_carries_method_session_and_params_of_its_command() -> None:
    conn = CDPConnection()
    params = {"expression": "document.title", "returnByValue": True}
    cmd, _ = conn.command("Runtime.evaluate", params, "CS")
    got = conn.receive(
        reply_to(cmd, {"result": {"type": "string", "value": "t"}}, sessionId="CS"),
        wall=100.0, mono=7.0,
    )
    assert got == Reply(cmd.id, "Runtime.evaluate", {"result": {"type": "string", "value": "t"}},
                        "CS", params, 100.0, 7.0)
    assert conn.pending == 0


def test_replies_out_of_order_each_match_their_own_command() -> None:
    conn = CDPConnection()
    a, _ = conn.command("Page.navigate", {"url": "a"})
    b, _ = conn.command("Runtime.evaluate", {"expression": "b"}, "S")
    c, _ = conn.command("DOM.getDocument")
    rc = conn.receive(reply_to(c, {"root": {}}))
    ra = conn.receive(reply_to(a, {"frameId": "F"}))
    rb = conn.receive(reply_to(b, {"result": {}}))
    assert isinstance(ra, Reply) and isinstance(rb, Reply) and isinstance(rc, Reply)
    assert (ra.method, ra.params, ra.session_id, ra.result) == (
        "Page.navigate", {"url": "a"}, None, {"frameId": "F"})
    assert (rb.method, rb.params, rb.session_id) == ("Runtime.evaluate", {"expression": "b"}, "S")
    assert (rc.method, rc.result) == ("DOM.getDocument", {"root": {}})
    assert conn.pending == 0


def test_reply_without_result_is_an_empty_result() -> None:
    conn = CDPConnection()
    cmd, _ = conn.command("Page.enable")
    got = conn.receive(wire({"id": cmd.id}))
    assert isinstance(got, Reply)
    assert got.result == {}


def test_a_second_reply_to_the_same_id_is_an_unknown_id_fault() -> None:
    conn = CDPConnection()
    cmd, _ = conn.command("Page.enable")
    assert isinstance(conn.receive(reply_to(cmd)), Reply)
    second = conn.receive(reply_to(cmd))
    assert isinstance(second, Fault)
    assert second.kind == "unknown-id"


def test_every_frame_received_gives_one_message_or_fault() -> None:
    conn = CDPConnection()
    cmd, _ = conn.command("Page.enable")
    got = [conn.receive(reply_to(cmd)), conn.receive("not json"), conn.receive(b"\x00"),
           conn.receive(event("Page.loadEventFired", {"timestamp": 1.0}))]
    assert [type(m).__name__ for m in got] == ["Reply", "Fault", "Fault", "Event"]


# -- error replies -----------------------------------------------------------------------


def test_error_reply_becomes_error_reply_and_cdp_error() -> None:
    conn = CDPConnection()
    cmd, _ = conn.command("Page.handleJavaScriptDialog", {"accept": True}, "PS")
    got = conn.receive(wire({
        "id": cmd.id,
        "error": {"code": -32602, "message": "No dialog is showing", "data": "extra"},
        "sessionId": "PS",
    }), wall=5.0)
    assert got == ErrorReply(cmd.id, "Page.handleJavaScriptDialog", -32602, "No dialog is showing",
                             "extra", "PS", {"accept": True}, 5.0, 0.0)
    err = error_of(got)
    assert isinstance(err, CDPError)
    assert isinstance(err, CdpnbError)
    assert err.code == -32602
    assert err.message == "No dialog is showing"
    assert err.method == "Page.handleJavaScriptDialog"
    assert err.session_id == "PS"
    assert err.data == "extra"
    text = str(err)
    assert "Page.handleJavaScriptDialog" in text
    assert "-32602" in text
    assert "No dialog is showing" in text
    assert conn.pending == 0


def test_error_reply_without_data() -> None:
    conn = CDPConnection()
    cmd, _ = conn.command("Runtime.evaluate")
    got = conn.receive(wire({"id": cmd.id, "error": {"code": -32000, "message": "boom"}}))
    assert isinstance(got, ErrorReply)
    assert got.data is None
    err = error_of(got)
    assert (err.code, err.message, err.method, err.session_id) == (
        -32000, "boom", "Runtime.evaluate", None)


@pytest.mark.parametrize(
    "error",
    ["just a string", 42, None, ["a"], {"message": "no code"}, {"code": "x", "message": 3}],
)
def test_odd_error_shapes_still_give_an_error_reply(error: Any) -> None:
    conn = CDPConnection()
    cmd, _ = conn.command("Page.reload")
    got = conn.receive(wire({"id": cmd.id, "error": error}))
    assert isinstance(got, ErrorReply)
    assert got.method == "Page.reload"
    assert isinstance(got.code, int)
    assert isinstance(got.message, str)
    assert isinstance(error_of(got), CDPError)
    assert conn.pending == 0


# -- abandon / late replies --------------------------------------------------------------


def test_abandoned_command_late_reply_is_matched_and_counted() -> None:
    conn = CDPConnection()
    cmd, _ = conn.command("Runtime.evaluate", {"expression": "while(1);"}, "S")
    conn.abandon(cmd.id)
    assert conn.pending == 0
    got = conn.receive(reply_to(cmd, {"result": {"type": "number", "value": 1}}))
    assert isinstance(got, Reply)
    assert got.method == "Runtime.evaluate"
    assert got.session_id == "S"
    assert got.params == {"expression": "while(1);"}
    # matched once only
    again = conn.receive(reply_to(cmd))
    assert isinstance(again, Fault) and again.kind == "unknown-id"


def test_abandoned_command_late_error_reply_is_matched_and_counted() -> None:
    conn = CDPConnection()
    cmd, _ = conn.command("Page.navigate", {"url": "x"})
    conn.abandon(cmd.id)
    got = conn.receive(wire({"id": cmd.id, "error": {"code": -1, "message": "late"}}))
    assert isinstance(got, ErrorReply)
    assert got.method == "Page.navigate"


def test_abandon_of_unknown_or_answered_id_is_harmless() -> None:
    conn = CDPConnection()
    cmd, _ = conn.command("Page.enable")
    conn.receive(reply_to(cmd))
    conn.abandon(cmd.id)
    conn.abandon(999)
    got = conn.receive(reply_to(cmd))
    assert isinstance(got, Fault) and got.kind == "unknown-id"


# -- faults: never an exception -----------------------------------------------------------


def test_reply_to_unknown_id_is_a_fault() -> None:
    conn = CDPConnection()
    got = conn.receive(wire({"id": 77, "result": {}}), wall=3.0, mono=1.5)
    assert isinstance(got, Fault)
    assert got.kind == "unknown-id"
    assert "77" in got.detail
    assert (got.wall, got.mono) == (3.0, 1.5)


@pytest.mark.parametrize("text", ["", "{", "not json at all", '{"id": 1,}', "[1, 2", "\x00"])
def test_malformed_json_is_a_fault(text: str) -> None:
    conn = CDPConnection()
    got = conn.receive(text)
    assert isinstance(got, Fault)
    assert got.kind == "malformed-json"


def test_fault_raw_excerpt_is_bounded() -> None:
    conn = CDPConnection()
    text = "x" * 10_000
    got = conn.receive(text)
    assert isinstance(got, Fault)
    assert got.raw == text[: len(got.raw)]
    assert 0 < len(got.raw) <= 200


@pytest.mark.parametrize("text", ["[]", "[1, 2]", "1", '"a string"', "null", "true", "3.5"])
def test_non_object_is_a_fault(text: str) -> None:
    conn = CDPConnection()
    got = conn.receive(text)
    assert isinstance(got, Fault)
    assert got.kind == "not-an-object"


@pytest.mark.parametrize("data", [b"", b'{"id": 1, "result": {}}', b"abc"])
def test_binary_frame_is_a_fault(data: bytes) -> None:
    conn = CDPConnection()
    conn.command("Page.enable")
    # The transport hands a binary frame over as a fault, in order with the others.
    got = conn.receive(TransportFault("binary-frame", f"{len(data)} bytes", data))
    assert isinstance(got, Fault)
    assert got.kind == "binary-frame"
    # a binary frame never answers a command
    assert conn.pending == 1


TEXT = b'{"id": 1, "result": {}}'


@pytest.mark.parametrize("data", [TEXT, bytearray(TEXT), memoryview(TEXT)])
def test_a_text_frame_as_bytes_is_parsed(data: Any) -> None:
    conn = CDPConnection()
    conn.command("Page.enable")
    got = conn.receive(data)
    assert isinstance(got, Reply) and got.method == "Page.enable"


def test_a_text_frame_that_is_not_utf8_is_a_fault_naming_where() -> None:
    conn = CDPConnection()
    got = conn.receive(b'{"method": "x\xff"}')
    assert isinstance(got, Fault) and got.kind == "invalid-utf8"
    assert "byte 13" in got.detail


@pytest.mark.parametrize("bad_id", ["1", 1.0, 1.5, None, True, False, [1], {"n": 1}])
def test_bad_id_types_are_faults(bad_id: Any) -> None:
    conn = CDPConnection()
    conn.command("Page.enable")  # id 1 is pending; "1", 1.0 and True must not match it
    got = conn.receive(wire({"id": bad_id, "result": {}}))
    assert isinstance(got, Fault)
    assert got.kind == "bad-id"
    assert conn.pending == 1


@pytest.mark.parametrize("session_id", [5, True, ["S"], {"s": 1}])
def test_non_string_session_id_is_a_fault(session_id: Any) -> None:
    conn = CDPConnection()
    got = conn.receive(wire({"method": "Page.loadEventFired", "params": {},
                             "sessionId": session_id}))
    assert isinstance(got, Fault)
    assert got.kind == "bad-session-id"


@pytest.mark.parametrize("params", [[1], "x", 3, None, True])
def test_event_with_non_dict_params_is_a_fault(params: Any) -> None:
    conn = CDPConnection()
    got = conn.receive(wire({"method": "Page.frameNavigated", "params": params}))
    assert isinstance(got, Fault)
    assert got.kind == "bad-params"
    assert "Page.frameNavigated" in got.detail


def test_event_without_params_has_empty_params() -> None:
    conn = CDPConnection()
    got = conn.receive(wire({"method": "Page.loadEventFired"}))
    assert got == Event("Page.loadEventFired", {}, None)


@pytest.mark.parametrize("msg", [{}, {"method": 5}, {"params": {}}, {"method": None}])
def test_message_with_neither_id_nor_method_is_a_fault(msg: dict[str, Any]) -> None:
    conn = CDPConnection()
    got = conn.receive(wire(msg))
    assert isinstance(got, Fault)
    assert got.kind == "no-method"


def test_reply_with_non_object_result_is_a_fault() -> None:
    conn = CDPConnection()
    cmd, _ = conn.command("Runtime.evaluate")
    got = conn.receive(wire({"id": cmd.id, "result": [1, 2]}))
    assert isinstance(got, Fault)
    assert got.kind == "bad-result"
    assert "Runtime.evaluate" in got.detail


def test_event_on_unknown_session_is_a_fault() -> None:
    conn = CDPConnection()
    got = conn.receive(event("Page.frameNavigated", {"frame": {"id": "F"}}, "GHOST"))
    assert isinstance(got, Fault)
    assert got.kind == "unknown-session"
    assert "GHOST" in got.detail
    assert "Page.frameNavigated" in got.detail


def test_each_bad_frame_is_a_fault_of_its_kind() -> None:
    conn = CDPConnection()
    got = [conn.receive(text) for text in ["{", "{", "[]", wire({"id": 9}), wire({"id": "x"})]]
    got.append(conn.receive(TransportFault("binary-frame", "3 bytes", b"bin")))
    assert all(isinstance(g, Fault) for g in got)
    assert Counter(g.kind for g in got if isinstance(g, Fault)) == {
        "malformed-json": 2,
        "not-an-object": 1,
        "unknown-id": 1,
        "bad-id": 1,
        "binary-frame": 1,
    }


def test_deeply_nested_json_is_a_fault_not_a_crash() -> None:
    conn = CDPConnection()
    got = conn.receive("[" * 100_000 + "]" * 100_000)
    assert isinstance(got, Fault)


# -- sessions ----------------------------------------------------------------------------


def test_root_events_are_always_accepted() -> None:
    conn = CDPConnection()
    assert conn.knows_session(None)
    got = conn.receive(event("Target.targetCreated", {"targetInfo": {"targetId": "T"}}))
    assert isinstance(got, Event)
    assert got.session_id is None


def test_attached_to_target_adds_session_with_parent() -> None:
    conn = CDPConnection()
    got = conn.receive(event("Target.attachedToTarget", attached("PS", "P", "page")))
    assert isinstance(got, Event)
    assert conn.sessions == {"PS": None}
    got = conn.receive(event("Target.attachedToTarget", attached("CS", "OOP"), "PS"))
    assert isinstance(got, Event)
    assert got.session_id == "PS"
    assert conn.sessions == {"PS": None, "CS": "PS"}
    assert conn.knows_session("CS")
    # events on the new session are now accepted
    ev = conn.receive(event("Page.frameNavigated", {"frame": {"id": "OOP"}}, "CS"))
    assert isinstance(ev, Event)
    assert ev.session_id == "CS"


def test_detached_from_target_drops_session_and_nested_children() -> None:
    conn = CDPConnection()
    conn.receive(event("Target.attachedToTarget", attached("PS", "P", "page")))
    conn.receive(event("Target.attachedToTarget", attached("C1", "F1"), "PS"))
    conn.receive(event("Target.attachedToTarget", attached("C2", "F2"), "C1"))
    conn.receive(event("Target.attachedToTarget", attached("C3", "F3"), "C2"))
    conn.receive(event("Target.attachedToTarget", attached("SIB", "F4"), "PS"))
    assert conn.sessions == {"PS": None, "C1": "PS", "C2": "C1", "C3": "C2", "SIB": "PS"}
    got = conn.receive(event("Target.detachedFromTarget", {"sessionId": "C1"}, "PS"))
    assert isinstance(got, Event)
    assert conn.sessions == {"PS": None, "SIB": "PS"}
    for gone in ("C1", "C2", "C3"):
        late = conn.receive(event("Runtime.consoleAPICalled", {"type": "log"}, gone))
        assert isinstance(late, Fault)
        assert late.kind == "unknown-session"


def test_detaching_an_unknown_session_is_harmless() -> None:
    conn = CDPConnection()
    conn.receive(event("Target.attachedToTarget", attached("PS", "P", "page")))
    got = conn.receive(event("Target.detachedFromTarget", {"sessionId": "NOPE"}))
    assert isinstance(got, Event)
    assert conn.sessions == {"PS": None}


def test_attached_to_target_without_string_session_id_adds_nothing() -> None:
    conn = CDPConnection()
    for bad in ({}, {"sessionId": 5}, {"sessionId": None}):
        got = conn.receive(event("Target.attachedToTarget", bad))
        assert isinstance(got, Event)
    assert conn.sessions == {}


def test_detaching_a_deep_session_chain_does_not_raise() -> None:
    # A browser (or a proxy) can nest sessions arbitrarily; receive() never raises.
    conn = CDPConnection()
    parent: str | None = None
    for i in range(3000):
        conn.receive(event("Target.attachedToTarget", attached(f"S{i}", f"T{i}"), parent))
        parent = f"S{i}"
    assert len(conn.sessions) == 3000
    got = conn.receive(event("Target.detachedFromTarget", {"sessionId": "S0"}))
    assert isinstance(got, Event | Fault)
    assert conn.sessions == {}


def test_attach_to_target_reply_adds_session() -> None:
    conn = CDPConnection()
    cmd, _ = conn.command("Target.attachToTarget", {"targetId": "P", "flatten": True})
    got = conn.receive(reply_to(cmd, {"sessionId": "PS"}))
    assert isinstance(got, Reply)
    assert got.result == {"sessionId": "PS"}
    assert conn.sessions == {"PS": None}
    # a nested attach sent on PS makes a child of PS
    cmd2, _ = conn.command("Target.attachToTarget", {"targetId": "W", "flatten": True}, "PS")
    conn.receive(reply_to(cmd2, {"sessionId": "WS"}))
    assert conn.sessions == {"PS": None, "WS": "PS"}
    assert isinstance(conn.receive(event("Runtime.enable", {}, "WS")), Event)


def test_attach_to_target_error_or_odd_reply_adds_no_session() -> None:
    conn = CDPConnection()
    cmd, _ = conn.command("Target.attachToTarget", {"targetId": "P"})
    conn.receive(wire({"id": cmd.id, "error": {"code": -32602, "message": "No target"}}))
    cmd2, _ = conn.command("Target.attachToTarget", {"targetId": "P"})
    conn.receive(reply_to(cmd2, {"sessionId": 12}))
    cmd3, _ = conn.command("Target.getTargets")
    conn.receive(reply_to(cmd3, {"sessionId": "NOT-AN-ATTACH"}))
    assert conn.sessions == {}


def test_add_session_by_hand() -> None:
    conn = CDPConnection()
    conn.add_session("S", None)
    assert conn.knows_session("S")
    assert not conn.knows_session("T")
    snapshot = conn.sessions
    snapshot["T"] = None  # a copy: mutating it does not change the connection
    assert not conn.knows_session("T")


# -- fail_all ----------------------------------------------------------------------------


def test_fail_all_returns_pending_commands_and_forgets_them() -> None:
    conn = CDPConnection()
    a, _ = conn.command("A.a")
    b, _ = conn.command("B.b", {"x": 1}, "S")
    c, _ = conn.command("C.c")
    conn.receive(reply_to(b))
    d, _ = conn.command("D.d")
    conn.abandon(d.id)
    failed = conn.fail_all()
    assert failed == [a, c]
    assert conn.pending == 0
    assert conn.fail_all() == []
    # replies after fail_all match nothing, abandoned ones included
    for cmd in (a, c, d):
        got = conn.receive(reply_to(cmd))
        assert isinstance(got, Fault)
        assert got.kind == "unknown-id"
    # new commands keep counting up
    assert conn.command("E.e")[0].id == d.id + 1


# -- property tests ----------------------------------------------------------------------

JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20)
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=4),
    max_leaves=20,
)
KEYS = st.sampled_from(
    ["id", "method", "params", "result", "error", "sessionId", "code", "message", "data",
     "targetInfo", "targetId", "type"]
)
METHODS = st.sampled_from(
    ["Target.attachedToTarget", "Target.detachedFromTarget", "Page.frameNavigated",
     "Runtime.consoleAPICalled", "Target.attachToTarget", "X.y"]
)
SESSIONS = st.sampled_from(["S1", "S2", "S3", "", "GHOST"])
ID_VALUES = st.integers(min_value=-2, max_value=12) | JSON_SCALARS
MESSAGE_DICTS = st.fixed_dictionaries(
    {},
    optional={
        "id": ID_VALUES,
        "method": METHODS | JSON_SCALARS,
        "sessionId": SESSIONS | JSON_SCALARS,
        "params": st.fixed_dictionaries(
            {}, optional={"sessionId": SESSIONS | JSON_SCALARS, "targetInfo": JSON_VALUES}
        ) | JSON_VALUES,
        "result": st.fixed_dictionaries({}, optional={"sessionId": SESSIONS}) | JSON_VALUES,
        "error": st.fixed_dictionaries(
            {}, optional={"code": JSON_SCALARS, "message": JSON_VALUES, "data": JSON_VALUES}
        ) | JSON_VALUES,
    },
) | st.dictionaries(KEYS | st.text(max_size=8), JSON_VALUES, max_size=6)


def _fresh_connection() -> CDPConnection:
    conn = CDPConnection()
    conn.add_session("S1", None)
    for method in ("Target.attachToTarget", "Runtime.evaluate", "Page.enable"):
        conn.command(method, {}, "S1")
    conn.command("Target.attachToTarget")
    conn.abandon(2)
    return conn


def _check(conn: CDPConnection, got: Any) -> None:
    assert isinstance(got, Reply | ErrorReply | Event | Fault)
    if isinstance(got, Fault):
        assert isinstance(got.kind, str) and got.kind
    if isinstance(got, ErrorReply):
        assert isinstance(error_of(got), CDPError)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.text() | st.binary(), max_size=10))
def test_arbitrary_text_and_bytes_never_raise(frames: list[str | bytes]) -> None:
    conn = _fresh_connection()
    for frame in frames:
        _check(conn, conn.receive(frame))


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(MESSAGE_DICTS, max_size=12))
def test_arbitrary_json_dicts_never_raise(messages: list[dict[str, Any]]) -> None:
    conn = _fresh_connection()
    for msg in messages:
        _check(conn, conn.receive(json.dumps(msg)))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=8), max_size=20))
def test_ids_unique_whatever_gets_answered(answers: list[int]) -> None:
    conn = CDPConnection()
    ids = set()
    for n in answers:
        cmd, text = conn.command("Runtime.evaluate", {"n": n})
        assert cmd.id not in ids
        assert json.loads(text)["id"] == cmd.id
        ids.add(cmd.id)
        conn.receive(wire({"id": n, "result": {}}))


def test_commands_on_a_session_that_ends_are_orphaned_once() -> None:
    conn = CDPConnection()
    conn.add_session("P", None)
    conn.receive(json.dumps({"method": "Target.attachedToTarget", "sessionId": "P",
                             "params": {"sessionId": "C", "targetInfo": {}}}))
    conn.receive(json.dumps({"method": "Target.attachedToTarget", "sessionId": "C",
                             "params": {"sessionId": "G", "targetInfo": {}}}))
    on_child, _ = conn.command("Runtime.evaluate", {}, "C")
    on_grandchild, _ = conn.command("Runtime.evaluate", {}, "G")
    on_page, _ = conn.command("Runtime.evaluate", {}, "P")
    conn.receive(json.dumps({"method": "Target.detachedFromTarget", "sessionId": "P",
                             "params": {"sessionId": "C"}}))
    orphans = conn.take_orphans()
    assert sorted(c.id for c, _ in orphans) == [on_child.id, on_grandchild.id]
    assert all("detached" in why for _, why in orphans)
    assert conn.take_orphans() == [] and conn.pending == 1
    # A reply that comes anyway is an abandoned command's, not a fault.
    late = conn.receive(json.dumps({"id": on_child.id, "result": {}}))
    assert isinstance(late, Reply)
    conn.receive(json.dumps({"method": "Inspector.targetCrashed", "sessionId": "P",
                             "params": {}}))
    assert [(c.id, why) for c, why in conn.take_orphans()] == [
        (on_page.id, "its renderer crashed")]
