"""What a replay endpoint says, and when: a recorded run as a script (no I/O).

The browser's side of a recording is a sequence of events and replies. A client
replaying it sends commands; each is matched to the earliest unused recorded
command with the same method, session and params, and its recorded reply goes
back under the client's own id. A command's budget (``timeout``, a classic walk's
``scriptTimeout``) is left out of the match: it is what was left of the caller's time
budget when it was sent, which differs from run to run, not part of what was asked.
Events go out in recorded order, and a reply is never sent before the events that
preceded it in the recording (what the client saw before that reply, it sees again).

WebDriver classic has no events: a client learns the browser's state by asking again
and again (``STATE_READS``: cdpnb polls for a dialog every 25 ms), and a replay's
client asks as often as its own clock says, not as the recording did. So a state read
is no gate and uses no recorded command up: it is answered with what the latest
recorded read answered by the point the replay has reached (the first one's answer
before any), as the browser would have answered it then.
"""

from __future__ import annotations

import json
import re
from collections import deque
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

from cdpnb.protocol import (
    Command,
    ErrorReply,
    Event,
    Message,
    ProtocolSpec,
    Reply,
    bidi_wire,
    opens_connection,
    protocol_spec,
    wire_text,
)
from cdpnb.protocol.specs import BIDI, CDP, PROTOCOL_SPECS, WIP
from cdpnb.trace.replies import ReplyMatcher

__all__ = ["BIDI_REPLAY_PATH", "REPLAY_PATH", "STATE_READS", "WIP_REPLAY_PATH", "Matcher",
           "ReplayScript", "Step", "command_key", "is_replay_url"]

#: Commands that read the browser's state and are sent on a timer (WebDriver classic's
#: polls of a window's dialog, of the session's windows, and its walks of a window's
#: frames, also sent after each navigation): see the module's doc.
STATE_READS = frozenset({"classic.getAlertText", "classic.getWindowHandles",
                         "classic.frameTree"})
#: A command whose reply also says what a state read would say right after it: the
#: answer to a classic dialog says what the window shows then (``after``), so a replay
#: answers the next poll with it, not with a poll recorded before the answer.
READ_AFTER = {"classic.answerAlert": "classic.getAlertText"}

#: The WebSocket path a replay endpoint serves: a client can tell it plays a recording
#: (as fast as it is asked to, so the timings it shows are not the browser's). Each
#: protocol's is its spec's (``ProtocolSpec.replay``).
REPLAY_PATH = CDP.replay.path
#: The same for a WebDriver BiDi recording (BiDi endpoints live under ``/session``).
BIDI_REPLAY_PATH = BIDI.replay.path
#: The same for a WebKit Inspector Protocol recording (Bun's): a path that says nothing
#: of the protocol, as Bun's own, so a client asks (see ``cdpnb.transport.discovery``).
WIP_REPLAY_PATH = WIP.replay.path
_REPLAY_PATHS = tuple(sorted({spec.replay.path for spec in PROTOCOL_SPECS}))


def is_replay_url(url: str) -> bool:
    return url.split("?", 1)[0].endswith(_REPLAY_PATHS)

CommandKey = tuple[str, str | None, str]


#: Params that say how long the caller waits, not what it asks for (a classic frame
#: walk's ``scriptTimeout`` too: traces recorded before it was sent replay alike).
BUDGET_PARAMS = frozenset({"timeout", "scriptTimeout"})
#: Params that say what the caller knew, not what it asks for, by method: a classic
#: poll's ``shown`` (the window was known to show a dialog) changes only what the poll
#: reads once that dialog is gone, and the recorded answer holds that reading.
KNOWN_PARAMS = {"classic.getAlertText": frozenset({"shown"})}
_NONE: frozenset[str] = frozenset()


def command_key(method: str, session_id: str | None, params: dict[str, Any]) -> CommandKey:
    known = KNOWN_PARAMS.get(method, _NONE)
    asked = {k: v for k, v in params.items() if k not in BUDGET_PARAMS and k not in known}
    return method, session_id, json.dumps(asked, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class Step:
    """One point in the recording: the browser sent an event, the browser replied to
    recorded command ``command``, or (``gate``) the client sent that command."""

    mono: float
    event: Event | None = None
    reply: Reply | ErrorReply | None = None
    command: int = -1
    gate: bool = False

    def frame(self, client_id: int | None = None,
              protocol: str | ProtocolSpec = CDP) -> str:
        """The wire text (in ``protocol``'s framing), the reply carrying the client's id."""
        message: dict[str, Any]
        if protocol_spec(protocol).bidi_messages:
            recorded = self.event if self.event is not None else self.reply
            assert recorded is not None
            message = bidi_wire(recorded)
            if self.event is None:
                message["id"] = client_id
            return wire_text(message)
        if self.event is not None:
            message = {"method": self.event.method, "params": self.event.params}
            session = self.event.session_id
        else:
            reply = self.reply
            assert reply is not None and client_id is not None
            message = {"id": client_id}
            if isinstance(reply, Reply):
                message["result"] = reply.result
            else:
                message["error"] = reply.error
            session = reply.session_id
        if session is not None:
            message["sessionId"] = session
        return wire_text(message)


class ReplayScript:
    """One recorded connection as steps: events, replies, and gates.

    A gate marks where the recorded client sent a command: what the browser said
    after it may depend on it, so a player waits there for the client to send the
    same command. A script is read-only, so one can be played to any number of
    connections; each player takes its own :meth:`matcher`.
    """

    def __init__(self, messages: list[Message]) -> None:
        self.steps: list[Step] = []
        self.gate_of: list[int] = []  # recorded command -> index of its gate step
        #: Every recorded command, by number (what a divergence names as expected).
        self.commands: list[Command] = []
        self.reply_of: dict[int, int] = {}  # recorded command -> index of its reply step
        self._by_key: dict[CommandKey, list[int]] = {}
        #: Each state read's answers: (the step index it had come by, the reply).
        self._reads: dict[CommandKey, list[tuple[int, Reply | ErrorReply]]] = {}
        read_keys: dict[int, CommandKey] = {}  # recorded state read -> its key
        #: The size of the largest recorded command, in characters of ASCII JSON (its
        #: method, session and params): the replay server lets clients send one this big.
        self.largest_command = 0
        # Each recorded reply to its recorded command, as a trace pairs them.
        numbers: ReplyMatcher[int] = ReplyMatcher()  # wire id -> recorded command number
        for message in messages:
            kind = type(message)
            if kind is Command:
                assert isinstance(message, Command)
                number = len(self.gate_of)
                numbers.sent(message.id, number)
                self.commands.append(message)
                key = command_key(message.method, message.session_id, message.params)
                self.largest_command = max(self.largest_command,
                                           len(key[0]) + len(key[1] or "") + len(key[2]))
                self.gate_of.append(len(self.steps))
                if message.method in STATE_READS:
                    read_keys[number] = key  # (no gate: answered where the replay is)
                    continue
                self._by_key.setdefault(key, []).append(number)
                self.steps.append(Step(message.mono, command=number, gate=True))
            elif kind is Event:
                assert isinstance(message, Event)
                self.steps.append(Step(message.mono, event=message))
            elif kind is Reply or kind is ErrorReply:
                assert isinstance(message, Reply | ErrorReply)
                number_or_none = numbers.answered(message.id)
                if number_or_none is None:
                    continue
                if number_or_none in read_keys:
                    self._reads.setdefault(read_keys[number_or_none], []).append(
                        (len(self.steps), message))
                    continue
                self.reply_of[number_or_none] = len(self.steps)
                self.steps.append(Step(message.mono, reply=message, command=number_or_none))
                self._read_after(message)

    @classmethod
    def connections(cls, messages: list[Message] | tuple[Message, ...]) -> list[ReplayScript]:
        """One script per recorded connection (``cdpnb.connected`` notes split them)."""
        epochs: list[list[Message]] = [[]]
        for message in messages:
            if opens_connection(message) and epochs[-1]:
                epochs.append([])
            epochs[-1].append(message)
        return [cls(epoch) for epoch in epochs]

    def _read_after(self, reply: Reply | ErrorReply) -> None:
        """The state read a reply also answers (``READ_AFTER``), kept as that read's."""
        read = READ_AFTER.get(reply.method)
        if read is None or not isinstance(reply, Reply) or "after" not in reply.result:
            return
        window = reply.params.get("window")
        key = command_key(read, None, {"window": window} if window is not None else {})
        after = reply.result["after"]
        said: Reply | ErrorReply = (
            Reply(reply.id, read, {"value": after, "window": window}, None,
                  {"window": window}, reply.wall, reply.mono) if isinstance(after, str)
            else ErrorReply(reply.id, read, 404, "no such alert", {"error": "no such alert"},
                            None, {"window": window}, reply.wall, reply.mono))
        self._reads.setdefault(key, []).append((len(self.steps), said))

    def read_answer(self, method: str, session_id: str | None, params: dict[str, Any],
                    cursor: int) -> Reply | ErrorReply | None:
        """A state read's answer at step ``cursor``: the latest one recorded by then,
        the first one before any; None when the recording never read it so."""
        answers = self._reads.get(command_key(method, session_id, params))
        if not answers:
            return None
        chosen = answers[0][1]
        for position, answer in answers:
            if position > cursor:
                break
            chosen = answer
        return chosen

    @cached_property
    def _recorded(self) -> frozenset[tuple[str, str | None]]:
        return frozenset((method, session) for method, session, _ in self._by_key)

    def matcher(self, match: MatchMode = "strict") -> Matcher:
        """A fresh record of which recorded commands one connection has used."""
        return Matcher({key: deque(numbers) for key, numbers in self._by_key.items()},
                       self._recorded, match)

    def expected(self, used: set[int], cursor: int) -> Command | None:
        """The recorded command a client replaying faithfully sends next: the first one
        not yet used, from the gate the replay has reached (else from the start)."""
        for start in (cursor, 0):
            for step in self.steps[start:]:
                if step.gate and step.command not in used:
                    return self.commands[step.command]
        return None

    def __len__(self) -> int:
        return len(self.steps)


class Matcher:
    """Numbers a client's commands as the recorded commands they replay, each recorded
    command used once (the earliest unused one with the same method, session, params).

    ``match="loose"``: when no unused recorded command has the same params, the earliest
    unused one with the same method and session whose params differ only in fresh random
    tokens is taken (``fresh_only``): a client that puts a generated id or a temporary
    folder in its params still replays its own script; one that asks something else
    does not."""

    def __init__(self, unused: dict[CommandKey, deque[int]],
                 recorded: frozenset[tuple[str, str | None]],
                 match: MatchMode = "strict") -> None:
        if match not in ("strict", "loose"):
            raise ValueError(f"match must be 'strict' or 'loose', got {match!r}")
        self._unused = unused
        # The (method, session) pairs recorded: a command of any other is told apart
        # without writing its params out as JSON (a client may send megabytes of them).
        self._recorded = recorded
        self.mode = match
        #: The recorded commands used so far.
        self.used: set[int] = set()
        #: How many commands were matched loosely (their params differed).
        self.loose = 0

    def match(self, method: str, session_id: str | None, params: dict[str, Any]) -> int | None:
        """The recorded command this one replays, or None when none is left."""
        if (method, session_id) not in self._recorded:
            return None
        try:
            key = command_key(method, session_id, params)
        except (RecursionError, ValueError):
            # Too deep to compare, so nothing recorded can be it (the recorder writes an
            # unrecordable fault line in place of such a message).
            return None
        queue = self._unused.get(key)
        if not queue:
            if self.mode == "strict":
                return None
            return self._loose(method, session_id, params)
        number = queue.popleft()
        self.used.add(number)
        return number

    def _loose(self, method: str, session_id: str | None, params: dict[str, Any]) -> int | None:
        """The earliest unused recorded command of this method and session whose params
        differ from these only in fresh random tokens (``fresh_only``)."""
        asked = {k: v for k, v in params.items() if k not in BUDGET_PARAMS}
        best: tuple[int, CommandKey] | None = None
        for key, queue in self._unused.items():
            if not queue or key[0] != method or key[1] != session_id:
                continue
            if (best is None or queue[0] < best[0]) and fresh_only(json.loads(key[2]), asked):
                best = (queue[0], key)
        if best is None:
            return None
        number = self._unused[best[1]].popleft()
        self.used.add(number)
        self.loose += 1
        return number


#: A fresh random token: what a client generates anew each run (a guid, a temporary
#: folder's suffix, a nonce): letters, digits, ``_`` and ``-``, at least this long.
_TOKEN = re.compile(r"[A-Za-z0-9_-]{6,}")


def fresh_only(recorded: Any, received: Any) -> bool:
    """Whether two params differ only where a client put a fresh random token: the
    same shape, equal everywhere but in strings whose differing middles (once their
    common start and end are set aside) are both tokens. ``"/tmp/pw-artifacts-m08xt0"``
    and ``"/tmp/pw-artifacts-uK6F64"`` do; ``"1+1"`` and ``"2+2"``, ``"Ada"`` and
    ``"Bob"``, ``true`` and ``false`` do not, so a client that asks something else still
    diverges."""
    if isinstance(recorded, dict) and isinstance(received, dict):
        return recorded.keys() == received.keys() and all(
            fresh_only(recorded[k], received[k]) for k in recorded)
    if isinstance(recorded, list) and isinstance(received, list):
        return len(recorded) == len(received) and all(
            fresh_only(a, b) for a, b in zip(recorded, received, strict=True))
    if recorded == received and type(recorded) is type(received):
        return True
    if not (isinstance(recorded, str) and isinstance(received, str)):
        return False
    start = 0
    while start < min(len(recorded), len(received)) and recorded[start] == received[start]:
        start += 1
    end = 0
    while end < min(len(recorded), len(received)) - start \
            and recorded[-1 - end] == received[-1 - end]:
        end += 1
    # The common start may have eaten a token's first characters (two guids that both
    # begin with "8"): widen the middles back to the token they are part of.
    while start > 0 and (recorded[start - 1].isalnum() or recorded[start - 1] in "_-"):
        start -= 1
    while end > 0 and (recorded[-end].isalnum() or recorded[-end] in "_-"):
        end -= 1
    middles = (recorded[start:len(recorded) - end], received[start:len(received) - end])
    return all(_TOKEN.fullmatch(middle) for middle in middles)


MatchMode = Literal["strict", "loose"]
