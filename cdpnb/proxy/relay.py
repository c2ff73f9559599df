"""One client connection relayed to the browser, as a sans-I/O object.

Contract (as websockets' ``Protocol``): the I/O layer feeds every frame it reads from
the client to :meth:`Relay.from_client` and every frame from the browser to
:meth:`Relay.from_browser`, and carries out the actions each returns, in order:
``Send(to, data)`` (a text frame, the bytes as they are), ``Later(delay_s, then)``
(call ``then(wall, mono)`` after ``delay_s`` and carry out what it returns) and
``Close(closed_by, reason)`` (close both sockets). When either socket ends it calls
:meth:`Relay.closed`. The relay never reads a clock or a socket: times come in with
the frames, so a scripted test and a live proxy run the same code.

What it keeps: the messages in the recording (``sink``: the trace recorder, each
message with its wire bytes, verbatim), the browser's state folded by the same
reducers a supervisor and a trace use (``cdpnb.state.fold``), and the fault rules'
doings, each written into the recording as a ``cdpnb.proxyFault`` note. A message is
recorded as the browser sent it, when the proxy got it; what the client was given
instead (nothing, later, twice) is the note's.

Who closed a dialog is read from the client's own commands: before the client's
``Page.handleJavaScriptDialog`` (BiDi: ``browsingContext.handleUserPrompt``) goes to
the browser, the relay notes ``cdpnb.dialogAnswering`` with ``closed_by="client"``
for the dialog the browser will answer, and ``cdpnb.dialogAnswered`` with the reply;
a dismissal by the ``dismiss-dialogs`` rule is noted ``closed_by="fault"``; a close
neither explains is the browser's or ``remote``, as the reducer reads it.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from cdpnb.protocol import (
    CONNECTED,
    DISCONNECTED,
    PROTOCOL_SPECS,
    Command,
    CommandFrame,
    Connection,
    ErrorReply,
    Event,
    Fault,
    Note,
    ProtocolSpec,
    Reply,
    parse_command,
)
from cdpnb.protocol.specs import CDP
from cdpnb.proxy.faults import (
    REORDER_HOLD_S,
    CloseAfter,
    Delay,
    Detach,
    DismissDialogs,
    Drop,
    Duplicate,
    FaultRule,
    FaultRuleError,
    Reorder,
)
from cdpnb.state import BrowserState
from cdpnb.state.bidi import page_of_context
from cdpnb.state.changes import DialogOpened
from cdpnb.state.dialogs import answerable_on
from cdpnb.state.models import PendingDialog
from cdpnb.state.reducer import fold

__all__ = ["OWN_ID_BASE", "Action", "Close", "Later", "Relay", "Send"]

Side = Literal["client", "browser"]
ClosedBy = Literal["client", "browser", "fault"]
Record = Command | Reply | ErrorReply | Event | Note | Fault
Sink = Callable[[Record, bytes | None], None]

#: The proxy's own commands (a dismissal, a detach) carry ids from here up, so they
#: never meet a client's (clients count from 1) and their replies stay with the proxy.
#: Below 2**31: Chromium reads a command id as a C++ int.
OWN_ID_BASE = 2_000_000_000

PROMPT_OPENED = "browsingContext.userPromptOpened"

#: The protocols a relay speaks: those the proxy relays as themselves (CDP, WebDriver
#: BiDi; WIP is relayed as CDP, and WebDriver classic has no socket to relay).
_RELAYS: dict[str, ProtocolSpec] = {
    spec.name: spec for spec in PROTOCOL_SPECS if spec.relayed_as is spec}


@dataclass(frozen=True, slots=True)
class Send:
    """A text frame for one side, its bytes as they are."""

    to: Side
    data: bytes


@dataclass(frozen=True, slots=True)
class Later:
    """Call ``then(wall, mono)`` after ``delay_s`` and carry out what it returns."""

    delay_s: float
    then: Callable[[float, float], list[Action]]


@dataclass(frozen=True, slots=True)
class Close:
    """Close both sockets."""

    closed_by: ClosedBy
    reason: str


Action = Send | Later | Close


@dataclass
class _Own:
    """A command the proxy sent itself, and what its reply means."""

    rule: str
    dialog_id: str | None = None


@dataclass
class _Held:
    """Messages a reorder rule holds, in arrival order."""

    frames: list[bytes] = field(default_factory=list)


class Relay:
    """One client's connection to one browser WebSocket."""

    def __init__(self, protocol: str | ProtocolSpec = CDP, *,
                 faults: tuple[FaultRule, ...] = (), seed: int | None = None,
                 sink: Sink | None = None) -> None:
        spec = _RELAYS.get(protocol.name if isinstance(protocol, ProtocolSpec) else protocol)
        if spec is None:
            relayed = " and ".join(other.short for other in _RELAYS.values())
            raise ValueError(f"the proxy relays {relayed}, not {protocol!r}")
        if spec.browsing_contexts and any(isinstance(r, Detach) for r in faults):
            raise FaultRuleError(f"detach:METHOD detaches a CDP target; {spec.short} has "
                                 "no sessions to detach (use close-after=N)")
        #: What the client and the browser speak, and its facts.
        self.protocol_spec = spec
        self.protocol = spec.name
        self.faults = faults
        self.random = random.Random(seed)
        self._sink = sink
        self._conn: Connection = spec.connection(first_id=OWN_ID_BASE)
        self.state = BrowserState()
        #: Messages relayed (both directions), for close-after.
        self.relayed = 0
        #: Where each of the client's dialog answers went: its command id -> dialog id.
        self._answers: dict[int, str] = {}
        self._own: dict[int, _Own] = {}
        self._held: dict[Reorder, _Held] = {}
        self._page_noted = False
        self.ended = False
        #: What the fault rules did, by action ("dismissed", "dropped", ...).
        self.fault_acts: Counter[str] = Counter()

    @property
    def _answer_method(self) -> str:
        """The command that answers a native dialog in the relay's protocol."""
        method = self.protocol_spec.dialog_answer
        assert method is not None  # (every protocol relayed answers dialogs)
        return method

    # -- the connection's life ------------------------------------------------------

    def start(self, url: str, wall: float, mono: float) -> None:
        """The client's socket and the browser's are both open."""
        params: dict[str, Any] = {"url": url, "generation": 1, "proxy": True}
        if not self.protocol_spec.implied:
            params["protocol"] = self.protocol
        self._note(CONNECTED, params, None, wall, mono)

    def closed(self, closed_by: ClosedBy, reason: str, wall: float, mono: float) -> None:
        """Either socket ended (``closed_by`` says whose end, or a fault rule's)."""
        if self.ended:
            return
        self.ended = True
        self._note(DISCONNECTED, {"reason": reason, "closed_by": closed_by, "generation": 1},
                   None, wall, mono)

    # -- frames ----------------------------------------------------------------------

    def from_client(self, data: bytes, wall: float, mono: float) -> list[Action]:
        """A frame the client sent: recorded, and on its way to the browser."""
        command = parse_command(data)
        if isinstance(command, CommandFrame):
            message = Command(command.id, command.method, command.params,
                              command.session_id, wall, mono)
            self._conn.adopt(message)
            self._note_client_answer(message)
            self._record(message, data)
        else:
            # Not a command (the browser will say so in its error reply): recorded as
            # the fault it is, and relayed as it came.
            self._record(Fault("client-frame", command.message,
                               data[:200].decode("utf-8", "backslashreplace"), wall, mono),
                         None)
        return self._count([Send("browser", data)], wall, mono)

    def from_browser(self, data: bytes, wall: float, mono: float) -> list[Action]:
        """A frame the browser sent: recorded, folded, and on its way to the client as
        the fault rules say."""
        message = self._conn.receive(data, wall=wall, mono=mono)
        if isinstance(message, Fault):
            self._record(message, None)
            return self._count([Send("client", data)], wall, mono)
        if isinstance(message, Reply | ErrorReply) and message.id >= OWN_ID_BASE:
            self._record(message, data)
            self._fold(message)
            return self._own_replied(message, wall, mono)
        contexts = self.protocol_spec.browsing_contexts
        if contexts and isinstance(message, Event):
            # (its page first, in the recording too: a context or prompt in a page not
            # noted is not folded, live or read back)
            self._note_bidi_page(message, wall, mono)
        self._record(message, data)
        changes = self._fold(message)
        actions: list[Action] = []
        if isinstance(message, Reply | ErrorReply):
            self._client_answer_replied(message, wall, mono)
        elif isinstance(message, Event) and not contexts:
            self._note_page(message, wall, mono)
        for change in changes:
            if isinstance(change, DialogOpened):
                actions.extend(self._dismiss_later(change.dialog))
        actions.extend(self._deliver(message.method, getattr(message, "session_id", None),
                                     data, wall, mono))
        return actions

    # -- fault rules on what goes to the client ---------------------------------------

    def _deliver(self, method: str, session_id: str | None, data: bytes, wall: float,
                 mono: float) -> list[Action]:
        actions: list[Action] = []
        copies = 1
        delay = 0.0
        for rule in self.faults:
            if isinstance(rule, Drop) and rule.method == method and self._draw(rule.chance):
                self._fault_note(rule, "dropped", method, wall, mono)
                return actions
            if isinstance(rule, Duplicate) and rule.method == method \
                    and self._draw(rule.chance):
                self._fault_note(rule, "duplicated", method, wall, mono)
                copies = 2
            elif isinstance(rule, Delay) and rule.method == method and self._draw(rule.chance):
                self._fault_note(rule, "delayed", method, wall, mono)
                delay = max(delay, rule.seconds)
            elif isinstance(rule, Detach) and rule.method == method:
                actions.extend(self._detach(rule, session_id, wall, mono))
        for rule in self.faults:
            if isinstance(rule, Reorder) and rule.first == method:
                return [*actions, *self._hold(rule, data, wall, mono)]
        sends: list[Action] = [Send("client", data) for _ in range(copies)]
        for rule in self.faults:
            if isinstance(rule, Reorder) and rule.second == method and self._held.get(rule):
                held = self._held.pop(rule)
                self._fault_note(rule, "released", rule.first, wall, mono,
                                 count=len(held.frames))
                sends.extend(Send("client", frame) for frame in held.frames)
        if delay > 0:
            later_sends = sends

            def then(wall: float, mono: float) -> list[Action]:
                return self._count(later_sends, wall, mono)

            return [*actions, Later(delay, then)]
        return [*actions, *self._count(sends, wall, mono)]

    def _hold(self, rule: Reorder, data: bytes, wall: float, mono: float) -> list[Action]:
        held = self._held.setdefault(rule, _Held())
        held.frames.append(data)
        self._fault_note(rule, "held", rule.first, wall, mono)
        frame = data

        def let_go(wall: float, mono: float) -> list[Action]:
            # The second never came in time: the first goes on alone (said so).
            current = self._held.get(rule)
            if current is None or frame not in current.frames:
                return []
            current.frames.remove(frame)
            if not current.frames:
                self._held.pop(rule, None)
            self._fault_note(rule, "released-alone", rule.first, wall, mono)
            return self._count([Send("client", frame)], wall, mono)

        return [Later(REORDER_HOLD_S, let_go)]

    def _draw(self, chance: float) -> bool:
        return chance >= 1.0 or self.random.random() < chance

    def _count(self, actions: list[Action], wall: float, mono: float) -> list[Action]:
        """Count the frames relayed; ``close-after`` closes once its count is reached."""
        if self.ended:
            return []
        out: list[Action] = []
        for action in actions:
            out.append(action)
            if not isinstance(action, Send):
                continue
            self.relayed += 1
            rule = next((r for r in self.faults if isinstance(r, CloseAfter)), None)
            if rule is not None and self.relayed >= rule.messages:
                self._fault_note(rule, "closed", None, wall, mono)
                out.append(Close("fault", str(rule)))
                return out
        return out

    # -- the proxy's own commands ------------------------------------------------------

    def _dismiss_later(self, dialog: PendingDialog) -> list[Action]:
        rule = next((r for r in self.faults if isinstance(r, DismissDialogs)), None)
        if rule is None:
            return []
        dialog_id = dialog.id

        def dismiss(wall: float, mono: float) -> list[Action]:
            current = next((d for d in self.state.pending_dialogs if d.id == dialog_id), None)
            if self.ended or current is None or current.answering is not None \
                    or current.unanswerable is not None or current.via != "native":
                return []  # answered, closed or beyond answering meanwhile
            self._note("cdpnb.dialogAnswering", {
                "dialog_id": dialog_id, "accept": False, "prompt_text": None,
                "closed_by": "fault"}, current.session_id, wall, mono)
            method = self._answer_method
            if self.protocol_spec.browsing_contexts:
                params: dict[str, Any] = {"context": current.frame_id or current.session_id,
                                          "accept": False}
                session = None
            else:
                params, session = {"accept": False}, current.session_id
            self._fault_note(rule, "dismissed", method, wall, mono, dialog_id=dialog_id)
            return self._own_command(method, params, session, _Own(str(rule), dialog_id),
                                     wall, mono)

        return [Later(rule.after_s, dismiss)]

    def _detach(self, rule: Detach, session_id: str | None, wall: float,
                mono: float) -> list[Action]:
        if session_id is None:
            self._fault_note(rule, "not-detached", rule.method, wall, mono,
                             why="it came on the browser's own session")
            return []
        self._fault_note(rule, "detached", rule.method, wall, mono, session=session_id)
        return self._own_command("Target.detachFromTarget", {"sessionId": session_id}, None,
                                 _Own(str(rule)), wall, mono)

    def _own_command(self, method: str, params: dict[str, Any], session_id: str | None,
                     own: _Own, wall: float, mono: float) -> list[Action]:
        command, text = self._conn.command(method, params, session_id, wall=wall, mono=mono)
        self._own[command.id] = own
        data = text.encode()
        self._record(command, data)
        return [Send("browser", data)]

    def _own_replied(self, reply: Reply | ErrorReply, wall: float,
                     mono: float) -> list[Action]:
        own = self._own.pop(reply.id, None)
        if own is not None and own.dialog_id is not None:
            outcome: dict[str, Any] = {"dialog_id": own.dialog_id,
                                       "ok": isinstance(reply, Reply)}
            if isinstance(reply, ErrorReply):
                outcome["error"] = reply.message
            self._note("cdpnb.dialogAnswered", outcome, reply.session_id, wall, mono)
        return []

    # -- the client's dialog answers -----------------------------------------------------

    def _note_client_answer(self, command: Command) -> None:
        if command.method != self._answer_method:
            return
        dialog = self._answered_dialog(command)
        if dialog is None or dialog.answering is not None:
            # None open, or an answer (a fault rule's) already on its way: the browser
            # answers that one, and this one fails "No dialog is showing".
            return
        params = command.params
        accept = bool(params.get("accept", False))
        text = params.get("promptText", params.get("userText"))
        self._answers[command.id] = dialog.id
        self._note("cdpnb.dialogAnswering", {
            "dialog_id": dialog.id, "accept": accept,
            "prompt_text": text if isinstance(text, str) else None, "closed_by": "client"},
            dialog.session_id, command.wall, command.mono)

    def _answered_dialog(self, command: Command) -> PendingDialog | None:
        """The dialog the browser will answer for this command."""
        if not self.protocol_spec.browsing_contexts:
            return answerable_on(self.state, command.session_id)
        context = command.params.get("context")
        return next((d for d in self.state.pending_dialogs
                     if d.answering is None and d.unanswerable is None
                     and context in (d.frame_id, d.session_id)), None)

    def _client_answer_replied(self, reply: Reply | ErrorReply, wall: float,
                               mono: float) -> None:
        dialog_id = self._answers.pop(reply.id, None)
        if dialog_id is None:
            return
        outcome: dict[str, Any] = {"dialog_id": dialog_id, "ok": isinstance(reply, Reply)}
        if isinstance(reply, ErrorReply):
            outcome["error"] = reply.message
        self._note("cdpnb.dialogAnswered", outcome, reply.session_id, wall, mono)

    def _note_page(self, event: Event, wall: float, mono: float) -> None:
        """CDP: the client's first page becomes the recording's page (the frame tree's
        top; pages it opens follow as popups): a supervisor says so with the same note."""
        if self._page_noted:
            return
        params = event.params
        info = params.get("targetInfo")
        if (event.method != "Target.attachedToTarget" or event.session_id is not None
                or not isinstance(info, dict) or info.get("type") != "page"):
            return
        target, session = info.get("targetId"), params.get("sessionId")
        if isinstance(target, str) and isinstance(session, str):
            self._page_noted = True
            self._note("cdpnb.pageTarget", {"target_id": target, "session_id": session},
                       None, wall, mono)

    def _note_bidi_page(self, event: Event, wall: float, mono: float) -> None:
        """BiDi: every tab the client learns of is one of its pages (Firefox's first tab
        is not the one Puppeteer's newPage makes; a popup follows its opener, as the
        reducer already folds it); and for a client that never subscribed to
        contextCreated (Selenium asks only for what it handles), the context its prompt
        opened in."""
        params = event.params
        context = params.get("context")
        if not isinstance(context, str):
            return
        if event.method == "browsingContext.contextCreated":
            if params.get("parent") or params.get("originalOpener") \
                    or context in self.state.pages:
                return
        elif event.method != PROMPT_OPENED or page_of_context(self.state, context) is not None:
            return
        self._note("cdpnb.pageTarget", {"target_id": context, "session_id": context},
                   None, wall, mono)

    # -- recording ---------------------------------------------------------------------

    def _fold(self, message: Command | Reply | ErrorReply | Event | Note) -> tuple[Any, ...]:
        self.state, changes = fold(self.state, message)
        return changes

    def _note(self, method: str, params: dict[str, Any], session_id: str | None,
              wall: float, mono: float) -> None:
        note = Note(method, params, session_id, wall, mono)
        self._record(note, None)
        self._fold(note)

    def _fault_note(self, rule: FaultRule, action: str, method: str | None, wall: float,
                    mono: float, **more: Any) -> None:
        self.fault_acts[action] += 1
        params: dict[str, Any] = {"rule": str(rule), "action": action}
        if method is not None:
            params["method"] = method
        params.update(more)
        self._note("cdpnb.proxyFault", params, None, wall, mono)

    def _record(self, message: Record, wire: bytes | None) -> None:
        if self._sink is not None:
            self._sink(message, wire)

