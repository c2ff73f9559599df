"""JavaScript values to Python and back (pure), and the same values from Node, whose
inspector has no deep serialisation (objects are then fetched by value)."""

from __future__ import annotations

import copy
import math
import pickle

import pytest

import cdpnb
from cdpnb import RemoteObject, Undefined
from cdpnb.protocol.js_values import NeedsValue, call_argument, decode


def test_undefined_is_one_falsy_singleton_that_survives_copies() -> None:
    assert not Undefined and repr(Undefined) == "Undefined"
    assert copy.deepcopy([Undefined])[0] is Undefined
    assert pickle.loads(pickle.dumps(Undefined)) is Undefined
    assert Undefined is not None


def test_primitives_and_unserialisable_numbers() -> None:
    assert decode({"type": "undefined"}, None) is Undefined
    assert decode({"type": "object", "subtype": "null", "value": None}, None) is None
    assert decode({"type": "bigint", "unserializableValue": "-12n"}, None) == -12
    assert math.copysign(1, decode({"type": "number", "unserializableValue": "-0"}, None)) < 0
    assert decode({"type": "number", "unserializableValue": "Infinity"}, None) == math.inf


def test_deep_values_and_what_is_not_data() -> None:
    deep = {"type": "object", "value": [["a", {"type": "array", "value": [
        {"type": "number", "value": "NaN"}, {"type": "bigint", "value": "7"},
        {"type": "undefined"}]}]]}
    got = decode({"type": "object", "className": "Object", "objectId": "1",
                  "deepSerializedValue": deep}, "S")
    assert math.isnan(got["a"][0]) and got["a"][1:] == [7, Undefined]
    node = decode({"type": "object", "subtype": "node", "className": "HTMLDivElement",
                   "description": "div", "objectId": "9",
                   "deepSerializedValue": {"type": "node", "value": {"backendNodeId": 4}}}, "S")
    assert node == RemoteObject("object", "node", "HTMLDivElement", "div", "9", "S", 4)
    # A plain object without deep serialisation is fetched by value from its handle.
    assert decode({"type": "object", "className": "Object", "objectId": "5"}, None) == \
        NeedsValue("5")
    cut = {"type": "object", "className": "Object", "objectId": "6",
           "deepSerializedValue": {"type": "object"}}  # cut at maxDepth or a cycle
    assert isinstance(decode(cut, None), RemoteObject)


def test_call_arguments_keep_what_json_loses_and_name_what_they_cannot() -> None:
    assert call_argument(Undefined, "a") == {}
    assert call_argument(-0.0, "a") == {"unserializableValue": "-0"}
    assert call_argument(math.nan, "a") == {"unserializableValue": "NaN"}
    assert call_argument(2**60, "a") == {"unserializableValue": f"{2**60}n"}
    assert call_argument({"k": [1, "x"]}, "a") == {"value": {"k": [1, "x"]}}
    assert call_argument(RemoteObject("object", object_id="7"), "a") == {"objectId": "7"}
    with pytest.raises(TypeError, match=r"args\[2\]\['k'\]\[0\] is nan"):
        call_argument({"k": [math.nan]}, "args[2]")
    with pytest.raises(TypeError, match="args\\[0\\] is a set"):
        call_argument({1, 2}, "args[0]")
    with pytest.raises(TypeError, match="without an object_id"):
        call_argument(RemoteObject("object"), "args[0]")


@pytest.mark.browser
async def test_node_values_without_deep_serialisation() -> None:
    async with cdpnb.launch("node") as backend:
        sup = await cdpnb.Supervisor.start(backend)
        try:
            got = await sup.evaluate("({a: [1, 'x', null], b: {c: true}})")
            assert got == {"a": [1, "x", None], "b": {"c": True}}
            assert await sup.evaluate("undefined") is Undefined
            assert await sup.evaluate("2n ** 65n") == 2**65
            assert math.isnan(await sup.evaluate("NaN"))
            described = await sup.evaluate("new Map([[1, 2]])")
            assert isinstance(described, RemoteObject) and described.subtype == "map"
            cyclic = await sup.evaluate("(() => { const o = {}; o.o = o; return o })()")
            assert isinstance(cyclic, RemoteObject)
            with pytest.raises(cdpnb.EvaluateTimeout) as caught:
                await sup.evaluate("while (true) {}", timeout=0.8)
            assert caught.value.ended_by in ("in-page timeout", "terminateExecution")
            assert await sup.evaluate("1 + 1") == 2
            assert sup.stats().get("evaluate-by-value-fallbacks", 0) == 1
        finally:
            await sup.stop()
