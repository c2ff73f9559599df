"""``evaluate(expression, arg)`` as Playwright's: a string that is a function is called.

Which strings are functions is decided here, from their text, before anything is sent:
one that starts as a function expression (``function (a) {…}``, ``async function …``)
or an arrow function (``x => …``, ``(a, b) => …``, ``async () => …``, parameters with
defaults and nested brackets included). Such a string is called with its argument by
one expression, ``(<the function>)(<the argument as a JavaScript literal>)``, sent as
any other evaluate is: the same command on every protocol (CDP's and WIP's
``Runtime.evaluate``, BiDi's ``script.evaluate``, classic's ``execute/sync``), so the
same call gives the same value, the same errors and the same budget everywhere (CDP's
in-page timeout included, which ``Runtime.callFunctionOn`` lacks), and no ``eval`` or
``new Function`` in the page (a page's CSP may forbid them).

The argument is written as a literal, not sent as JSON, so every value ``evaluate``
returns by value goes back in: ``None`` (null), ``cdpnb.Undefined``, ``NaN``, ``-0.0``,
``±inf``, ints past 2**53 (bigint), at any depth.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from cdpnb.protocol.js_values import RemoteObject, Undefined

__all__ = ["MAX_ARG_DEPTH", "call_expression", "is_function_source", "js_literal"]

#: How deep an argument may nest (a cycle in a Python value would never end).
MAX_ARG_DEPTH = 100

_FUNCTION = re.compile(r"(?:async\s+)?function\b\s*\*?\s*[\w$]*\s*")
_REST = re.compile(r"(?:\s|;|//[^\n]*|/\*.*?\*/)*", re.S)
_ASYNC = re.compile(r"async(?=\s*[(\w$])\s*")
_IDENT_ARROW = re.compile(r"[A-Za-z_$][\w$]*\s*=>")
_ARROW = re.compile(r"\s*=>")
_CLOSING = {"(": ")", "[": "]", "{": "}"}


def _skip_string(text: str, i: int) -> int:
    """The index after the string literal (or template) that starts at ``i``."""
    quote, i = text[i], i + 1
    while i < len(text):
        char = text[i]
        if char == "\\":
            i += 2
            continue
        if char == quote:
            return i + 1
        i += 1
    return i


def _after_brackets(text: str, i: int) -> int | None:
    """The index after the bracket that closes the one at ``i`` (strings, templates and
    comments skipped); None when it never closes or a bracket does not match."""
    expected = [_CLOSING[text[i]]]
    i += 1
    while i < len(text) and expected:
        char = text[i]
        if char in "'\"`":
            i = _skip_string(text, i)
            continue
        if text.startswith("//", i):
            end = text.find("\n", i)
            i = len(text) if end < 0 else end
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = len(text) if end < 0 else end + 2
            continue
        if char in _CLOSING:
            expected.append(_CLOSING[char])
        elif char in ")]}" and char != expected.pop():
            return None
        i += 1
    return i if not expected else None


def _past_blank(text: str, i: int) -> int:
    """The index after the blanks, ``;`` and comments at ``i``."""
    blank = _REST.match(text, i)
    return blank.end() if blank is not None else i


def is_function_source(expression: str) -> bool:
    """Whether ``expression`` is a function: it starts as a function expression or an
    arrow function, as Playwright's ``page.evaluate`` tells a string it calls.

    >>> [is_function_source(s) for s in ("() => document.title", "(x) => x * 2",
    ...     "function (a) { return a }", "async () => 1", "x => x", "async x => x",
    ...     "(a = f(1), {b} = {}) => a")]
    [True, True, True, True, True, True, True]
    >>> [is_function_source(s) for s in ("document.title", "(() => 1)()", "(1, 2)",
    ...     "async(1)", "functionName()", "window.f = x => x", "x",
    ...     "function f() { return 1 }\\nf()", "() => { go() }\\ngo()")]
    [False, False, False, False, False, False, False, False, False]
    """
    text = expression.strip()
    head = _FUNCTION.match(text)
    if head is not None:
        # The whole text, not a declaration that statements follow ("function f() {…}
        # f()" is a script, whose value is f()'s).
        params = head.end()
        if not text.startswith("(", params):
            return False
        body = _after_brackets(text, params)
        if body is None or not text.startswith("{", _past_blank(text, body)):
            return False
        end = _after_brackets(text, _past_blank(text, body))
        return end is not None and _past_blank(text, end) == len(text)
    start = _ASYNC.match(text)
    rest = text[start.end():] if start else text
    arrow = _IDENT_ARROW.match(rest)
    if arrow is not None:
        return _arrow_body_ends(rest, arrow.end())
    if not rest.startswith("("):
        return False
    after = _after_brackets(rest, 0)
    arrow = _ARROW.match(rest, after) if after is not None else None
    return arrow is not None and _arrow_body_ends(rest, arrow.end())


def _arrow_body_ends(text: str, i: int) -> bool:
    """An arrow's body from ``i``: a block must end the text (``() => {…}\\nf()`` is
    a script); an expression body is taken to (JavaScript's grammar would be needed)."""
    body = _past_blank(text, i)
    if not text.startswith("{", body):
        return True
    end = _after_brackets(text, body)
    return end is not None and _past_blank(text, end) == len(text)


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0.0 and math.copysign(1.0, value) < 0:
        return "-0"
    return repr(value)


def js_literal(value: Any, name: str = "arg", depth: int = 0) -> str:
    """``value`` as JavaScript source: JSON's values, and the ones JSON loses (Undefined,
    NaN, -0.0, ±inf, ints past 2**53 as bigint); a TypeError naming where (``name``)
    for anything else.

    >>> js_literal({"a": [1, None, float("nan"), -0.0, 2**70, "é\\u2028"]})
    '{"a": [1, null, NaN, -0, 1180591620717411303424n, "\\\\u00e9\\\\u2028"]}'
    """
    if depth > MAX_ARG_DEPTH:
        raise TypeError(f"{name} nests deeper than {MAX_ARG_DEPTH} levels (a cycle?)")
    if value is None:
        return "null"
    if value is Undefined:
        return "undefined"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value}n" if abs(value) > 2**53 else str(value)
    if isinstance(value, float):
        return _number(value)
    if isinstance(value, str):
        return json.dumps(value)  # (ASCII only: U+2028 and lone surrogates escaped)
    if isinstance(value, list | tuple):
        items = (js_literal(v, f"{name}[{i}]", depth + 1) for i, v in enumerate(value))
        return f"[{', '.join(items)}]"
    if isinstance(value, dict):
        pairs = []
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"{name} has a non-str key {key!r}: a JavaScript object's "
                                "keys are strings")
            pairs.append(f"{json.dumps(key)}: {js_literal(item, f'{name}[{key!r}]', depth + 1)}")
        return f"{{{', '.join(pairs)}}}"
    if isinstance(value, RemoteObject):
        raise TypeError(f"{name} is a RemoteObject, which evaluate() cannot pass: call a "
                        "function with it as its first argument with "
                        "evaluate_on(obj, function)")
    raise TypeError(f"{name} is a {type(value).__name__}, which cannot be passed to "
                    "JavaScript (JSON's values, Undefined, NaN, ±inf, -0.0 and big ints can)")


def call_expression(expression: str, arg: Any) -> str:
    """What ``evaluate(expression, arg)`` runs: ``expression`` itself, or, when it is a
    function, the call of it with ``arg`` (no argument when ``arg`` is None). An
    ``arg`` given with an expression that is no function is a TypeError."""
    if not is_function_source(expression):
        if arg is not None:
            raise TypeError(f"evaluate() got arg={_shown(arg)}, but {_shown(expression)} is "
                            "not a function to call with it: pass one such as '(x) => x * 2' "
                            "(frame_id= and timeout= are keywords)")
        return expression
    # The newlines end a `//` comment at either end; a trailing `;` would end the call.
    function = expression.strip().rstrip(";").rstrip()
    argument = "" if arg is None else js_literal(arg)
    return f"(\n{function}\n)({argument})"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"
