"""Fault rules: the races that break clients, written as short strings (no I/O).

The same strings on the CLI (``--fault RULE``) and in Python (``faults=[...]``)::

    dismiss-dialogs=10ms        every dialog dismissed by the proxy 10 ms after it opens,
                                as a remote browser or an auto-dismissing client does
    delay:METHOD=200ms          the event METHOD (or the reply to command METHOD) held
    drop:METHOD                 ... never delivered to the client
    duplicate:METHOD            ... delivered twice
    reorder:METHOD_A,METHOD_B   an A held until the next B has been delivered
    detach:METHOD               the target the message METHOD came on detached by the
                                proxy when it comes (CDP: ``Target.detachFromTarget``)
    close-after=N               both sockets closed after N messages were relayed

``delay``, ``drop`` and ``duplicate`` take ``@P%`` (``drop:Page.frameNavigated@50%``): the
rule acts on each matching message with probability P, drawn from the proxy's seeded
random generator, so a run is repeated exactly with the same ``seed``. A rule acts on
what the browser sends the client (events and replies, where the races are); the
client's commands always reach the browser. A bad rule raises ``FaultRuleError``
naming the rule and what was wrong.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "CloseAfter",
    "Delay",
    "Detach",
    "DismissDialogs",
    "Drop",
    "Duplicate",
    "FaultRule",
    "FaultRuleError",
    "Reorder",
    "parse_fault",
    "parse_faults",
]

#: The rule names, for help texts and errors.
RULE_SHAPES = ("dismiss-dialogs=10ms", "delay:METHOD=200ms", "drop:METHOD",
               "duplicate:METHOD", "reorder:METHOD_A,METHOD_B", "detach:METHOD",
               "close-after=N")

#: A reorder holds its first message at most this long for the second (then lets it
#: go, noted): a B that never comes must not swallow the A.
REORDER_HOLD_S = 2.0

#: The longest delay a rule may ask for: longer is a typo (``=200`` taken for seconds).
MAX_DELAY_S = 60.0


class FaultRuleError(ValueError):
    """A fault rule that cannot be read; the message names the rule."""


@dataclass(frozen=True, slots=True)
class DismissDialogs:
    """Every dialog dismissed by the proxy ``after_s`` after it opens."""

    after_s: float

    def __str__(self) -> str:
        return f"dismiss-dialogs={_ms(self.after_s)}"


@dataclass(frozen=True, slots=True)
class Delay:
    method: str
    seconds: float
    chance: float = 1.0

    def __str__(self) -> str:
        return f"delay:{self.method}={_ms(self.seconds)}{_chance(self.chance)}"


@dataclass(frozen=True, slots=True)
class Drop:
    method: str
    chance: float = 1.0

    def __str__(self) -> str:
        return f"drop:{self.method}{_chance(self.chance)}"


@dataclass(frozen=True, slots=True)
class Duplicate:
    method: str
    chance: float = 1.0

    def __str__(self) -> str:
        return f"duplicate:{self.method}{_chance(self.chance)}"


@dataclass(frozen=True, slots=True)
class Reorder:
    """An ``first`` message held until the next ``second`` one has gone to the client."""

    first: str
    second: str

    def __str__(self) -> str:
        return f"reorder:{self.first},{self.second}"


@dataclass(frozen=True, slots=True)
class Detach:
    method: str

    def __str__(self) -> str:
        return f"detach:{self.method}"


@dataclass(frozen=True, slots=True)
class CloseAfter:
    messages: int

    def __str__(self) -> str:
        return f"close-after={self.messages}"


FaultRule = DismissDialogs | Delay | Drop | Duplicate | Reorder | Detach | CloseAfter

_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s)$")
_CHANCE = re.compile(r"^(.*)@(\d+(?:\.\d+)?)%$")
# A protocol method: CDP's Domain.name, BiDi's module.name (letters, digits, _ and .).
_METHOD = re.compile(r"^[A-Za-z][A-Za-z0-9_]*\.[A-Za-z][A-Za-z0-9_.]*$")


def _ms(seconds: float) -> str:
    ms = seconds * 1000
    return f"{ms:g}ms"


def _chance(chance: float) -> str:
    return "" if chance == 1.0 else f"@{chance * 100:g}%"


def _fail(rule: str, why: str) -> FaultRuleError:
    return FaultRuleError(f"fault rule {rule!r}: {why} (rules: {', '.join(RULE_SHAPES)})")


def _duration(rule: str, text: str) -> float:
    match = _DURATION.match(text)
    if match is None:
        raise _fail(rule, f"{text!r} is not a duration; write it with its unit, as 10ms or 0.5s")
    value = float(match.group(1)) / (1000 if match.group(2) == "ms" else 1)
    if value > MAX_DELAY_S:
        raise _fail(rule, f"{text} is longer than {MAX_DELAY_S:g} s")
    return value


def _method(rule: str, text: str) -> str:
    if not _METHOD.match(text):
        raise _fail(rule, f"{text!r} is not a method name such as Page.javascriptDialogOpening")
    return text


def parse_fault(rule: str | FaultRule) -> FaultRule:
    """One rule from its string (a rule object is returned as it is)."""
    if not isinstance(rule, str):
        if isinstance(rule, DismissDialogs | Delay | Drop | Duplicate | Reorder | Detach
                      | CloseAfter):
            return rule
        raise FaultRuleError(f"a fault rule is a string such as 'drop:Page.frameNavigated', "
                             f"got {type(rule).__name__}")
    text = rule.strip()
    chance = 1.0
    body = text
    found = _CHANCE.match(text)
    if found is not None:
        body, chance = found.group(1), float(found.group(2)) / 100
        if not 0 < chance <= 1:
            raise _fail(rule, "a chance is more than 0% and at most 100%")
    name, sep, rest = body.partition(":")
    if not sep:
        name, sep, rest = body.partition("=")
        if name == "dismiss-dialogs" and sep:
            _no_chance(rule, chance)
            return DismissDialogs(_duration(rule, rest))
        if name == "close-after" and sep:
            _no_chance(rule, chance)
            if not rest.isdigit() or int(rest) < 1:
                raise _fail(rule, f"close-after takes a whole number of messages >= 1, "
                                  f"got {rest!r}")
            return CloseAfter(int(rest))
        raise _fail(rule, "unknown rule")
    if name == "delay":
        method, eq, duration = rest.partition("=")
        if not eq:
            raise _fail(rule, "delay needs a duration: delay:METHOD=200ms")
        return Delay(_method(rule, method), _duration(rule, duration), chance)
    if name == "drop":
        return Drop(_method(rule, rest), chance)
    if name == "duplicate":
        return Duplicate(_method(rule, rest), chance)
    if name == "reorder":
        _no_chance(rule, chance)
        first, comma, second = rest.partition(",")
        if not comma:
            raise _fail(rule, "reorder names two methods: reorder:METHOD_A,METHOD_B")
        return Reorder(_method(rule, first), _method(rule, second))
    if name == "detach":
        _no_chance(rule, chance)
        return Detach(_method(rule, rest))
    raise _fail(rule, f"unknown rule {name!r}")


def _no_chance(rule: str, chance: float) -> None:
    if chance != 1.0:
        raise _fail(rule, "only delay, drop and duplicate take a chance (@P%)")


def parse_faults(rules: Iterable[str | FaultRule] | str | None) -> tuple[FaultRule, ...]:
    """Every rule read (a single string is one rule); the first bad one raises."""
    if rules is None:
        return ()
    if isinstance(rules, str):
        rules = [rules]
    parsed = tuple(parse_fault(rule) for rule in rules)
    if sum(isinstance(r, DismissDialogs) for r in parsed) > 1:
        raise FaultRuleError("fault rules: dismiss-dialogs given more than once")
    if sum(isinstance(r, CloseAfter) for r in parsed) > 1:
        raise FaultRuleError("fault rules: close-after given more than once")
    return parsed
