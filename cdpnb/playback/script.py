"""What a replay endpoint says, and when: a recorded run as a script (no I/O).

The browser's side of a recording is a sequence of events and replies. A client
replaying it sends commands; each is matched to the earliest unused recorded
command with the same method, session and params, and its recorded reply goes
back under the client's own id. A command's ``timeout`` is left out of the match: it
is what was left of the caller's time budget when it was sent, which differs from
run to run, not part of what was asked. Events go out in recorded order, and a reply is
never sent before the events that preceded it in the recording (what the client
saw before that reply, it sees again).

WebDriver classic has no events: a client learns the browser's state by asking again
and again (``STATE_READS``: cdpnb polls for a dialog every 25 ms), and a replay's
client asks as often as its own clock says, not as the recording did. So a state read
is no gate and uses no recorded command up: it is answered with what the latest
recorded read answered by the point the replay has reached (the first one's answer
before any), as the browser would have answered it then.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from cdpnb.protocol import (
    Command,
    ErrorReply,
    Event,
    Message,
    Reply,
    bidi_wire,
    opens_connection,
    wire_text,
)
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
#: (as fast as it is asked to, so the timings it shows are not the browser's).
REPLAY_PATH = "/devtools/browser/cdpnb-replay"
#: The same for a WebDriver BiDi recording (BiDi endpoints live under ``/session``).
BIDI_REPLAY_PATH = "/session/cdpnb-replay"
#: The same for a WebKit Inspector Protocol recording (Bun's): a path that says nothing
#: of the protocol, as Bun's own, so a client asks (see ``cdpnb.transport.discovery``).
WIP_REPLAY_PATH = "/cdpnb-replay"


def is_replay_url(url: str) -> bool:
    return url.split("?", 1)[0].endswith((REPLAY_PATH, BIDI_REPLAY_PATH, WIP_REPLAY_PATH))

CommandKey = tuple[str, str | None, str]


#: Params that say how long the caller waits, not what it asks for.
BUDGET_PARAMS = frozenset({"timeout"})


def command_key(method: str, session_id: str | None, params: dict[str, Any]) -> CommandKey:
    asked = {k: v for k, v in params.items() if k not in BUDGET_PARAMS}
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

    def frame(self, client_id: int | None = None, protocol: str = "cdp") -> str:
        """The wire text, the reply carrying the client's id."""
        message: dict[str, Any]
        if protocol == "bidi":
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

    def matcher(self) -> Matcher:
        """A fresh record of which recorded commands one connection has used."""
        return Matcher({key: deque(numbers) for key, numbers in self._by_key.items()},
                       self._recorded)

    def __len__(self) -> int:
        return len(self.steps)


class Matcher:
    """Numbers a client's commands as the recorded commands they replay, each recorded
    command used once (the earliest unused one with the same method, session, params)."""

    def __init__(self, unused: dict[CommandKey, deque[int]],
                 recorded: frozenset[tuple[str, str | None]]) -> None:
        self._unused = unused
        # The (method, session) pairs recorded: a command of any other is told apart
        # without writing its params out as JSON (a client may send megabytes of them).
        self._recorded = recorded

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
            return None
        return queue.popleft()
