"""Sans-I/O CDP connection: ids, serialisation, reply matching and session routing.

Nothing here touches a socket or an event loop. The I/O layer feeds received
frames into :meth:`CDPConnection.receive` and writes what :meth:`CDPConnection.command`
returns; everything else (futures, timeouts) lives above.
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from cdpnb.errors import CDPError
from cdpnb.protocol.codec import loads, wire_text
from cdpnb.protocol.deep_values import TYPED_REPLY_MIN_BYTES, reply_id
from cdpnb.protocol.messages import Command, ErrorReply, Event, Fault, Reply, TransportFault

__all__ = ["CDPConnection", "CommandBook", "Received", "ReplyReader", "error_of"]

Received = Reply | ErrorReply | Event | Fault
#: Reads a large reply frame as its JSON object in a form of its own (typed nodes:
#: ``cdpnb.protocol.deep_values``), or None to have it read as JSON.
ReplyReader = Callable[[str | bytes | bytearray | memoryview], dict[str, Any] | None]

#: Replies that arrive after their caller gave up are still matched (and folded)
#: for this many abandoned commands; beyond that they count as unknown.
ABANDONED_MEMORY = 1024
#: How much of a bad frame is kept in a Fault for the log.
RAW_EXCERPT = 200


def error_of(reply: ErrorReply) -> CDPError:
    """The exception that an error reply stands for."""
    return CDPError(reply.code, reply.message, reply.method, reply.session_id, reply.data)


class CommandBook:
    """What either protocol's connection keeps of its commands: ids, the pending ones,
    and the abandoned ones whose late replies are still matched. (It counts nothing:
    what was sent, received and faulty is counted once, by the state's fold, from the
    messages and faults this returns.)"""

    def __init__(self, *, first_id: int = 1) -> None:
        # first_id: where this side's ids start. A proxy relays a client's commands under
        # the client's own ids (from 1) and sends its own from far above them.
        self._next_id = first_id
        self._pending: dict[int, Command] = {}
        self._abandoned: OrderedDict[int, Command] = OrderedDict()
        #: Pending commands whose large reply is read by a reader of its own.
        self._reply_readers: dict[int, ReplyReader] = {}

    #: What a method name looks like, in the error that names a bad one.
    METHOD_SHAPE = "'Domain.command'"

    def command(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        session_id: str | None = None,
        *,
        wall: float = 0.0,
        mono: float = 0.0,
        reply_reader: ReplyReader | None = None,
    ) -> tuple[Command, str]:
        """Allocate an id, remember the command, and return it with its wire text.
        ``reply_reader`` reads its reply if that is large (``TYPED_REPLY_MIN_BYTES``):
        a frame it does not take is read as JSON."""
        if not isinstance(method, str) or "." not in method:
            raise ValueError(f"method must look like {self.METHOD_SHAPE}, got {method!r}")
        if params is not None and not isinstance(params, dict):
            raise TypeError(f"params for {method} must be a dict, got {type(params).__name__}")
        self._check_session(method, session_id)
        params = params or {}
        # Encoded before the command is kept: params that do not encode leave nothing.
        try:
            text = wire_text(self._frame(self._next_id, method, params, session_id))
        except RecursionError:
            # The encoders recurse once per level and stop near the interpreter's
            # recursion limit: a caller's mistake (or a value that holds itself), said
            # as one, not a bare RecursionError from inside the encoder.
            raise ValueError(
                f"params for {method} are nested too deep to send as JSON (the encoder "
                f"takes about {sys.getrecursionlimit()} levels), or hold themselves (a "
                f"dict or list inside itself)") from None
        cmd = Command(self._next_id, method, params, session_id, wall, mono)
        self._next_id += 1
        self._pending[cmd.id] = cmd
        if reply_reader is not None:
            self._reply_readers[cmd.id] = reply_reader
        return cmd, text

    def adopt(self, command: Command) -> None:
        """A command someone else sent on this connection (a proxied client's, under its
        own id): its reply is matched to it as to one of ours."""
        self._pending[command.id] = command

    def _check_session(self, method: str, session_id: str | None) -> None:
        """Raise if ``session_id`` cannot go with a command of this protocol."""
        raise NotImplementedError

    def _frame(self, command_id: int, method: str, params: dict[str, Any],
               session_id: str | None) -> dict[str, Any]:
        """The command as this protocol's wire object."""
        raise NotImplementedError

    def _answered(self, command_id: int) -> Command | None:
        """The command a reply answers (pending, else abandoned: a late reply)."""
        self._reply_readers.pop(command_id, None)
        cmd = self._pending.pop(command_id, None)
        if cmd is None:
            cmd = self._abandoned.pop(command_id, None)
        return cmd

    def abandon(self, command_id: int) -> None:
        """The caller stopped waiting; a late reply is still matched, then dropped."""
        self._reply_readers.pop(command_id, None)
        cmd = self._pending.pop(command_id, None)
        if cmd is None:
            return
        self._abandoned[command_id] = cmd
        while len(self._abandoned) > ABANDONED_MEMORY:
            self._abandoned.popitem(last=False)

    def fail_all(self) -> list[Command]:
        """Forget every pending command (the connection is gone) and return them."""
        pending = list(self._pending.values())
        self._pending.clear()
        self._abandoned.clear()
        self._reply_readers.clear()
        return pending

    @property
    def pending(self) -> int:
        return len(self._pending)

    def _read_own_way(self, data: str | bytes | bytearray | memoryview
                      ) -> dict[str, Any] | None:
        """A large frame that answers a command with a reader of its own, as that
        reader reads it; else None (read it as JSON)."""
        if not self._reply_readers or len(data) < TYPED_REPLY_MIN_BYTES:
            return None
        cid = reply_id(data)
        reader = None if cid is None else self._reply_readers.get(cid)
        return None if reader is None else reader(data)

    def _fault(self, kind: str, detail: str, raw: str | bytes | bytearray | memoryview,
               wall: float, mono: float) -> Fault:
        excerpt = raw[:RAW_EXCERPT] if isinstance(raw, str) else _excerpt(raw)
        return Fault(kind, detail, excerpt, wall, mono)


class CDPConnection(CommandBook):
    """One CDP WebSocket's protocol state: pending commands and known sessions."""

    def __init__(self, *, first_id: int = 1) -> None:
        super().__init__(first_id=first_id)
        self._orphans: list[tuple[Command, str]] = []
        # session id -> parent session id (None is the browser/root connection)
        self._sessions: dict[str, str | None] = {}

    # -- sending -------------------------------------------------------------------

    def _check_session(self, method: str, session_id: str | None) -> None:
        if session_id is not None and not isinstance(session_id, str):
            raise TypeError(f"session_id for {method} must be a str or None, "
                            f"got {type(session_id).__name__}")

    def _frame(self, command_id: int, method: str, params: dict[str, Any],
               session_id: str | None) -> dict[str, Any]:
        frame: dict[str, Any] = {"id": command_id, "method": method, "params": params}
        if session_id is not None:
            frame["sessionId"] = session_id
        return frame

    def take_orphans(self) -> list[tuple[Command, str]]:
        """Commands that will never get a reply because their session ended (the
        target detached, e.g. an OOPIF removed) or its renderer crashed, each with
        the reason; each is returned once. A reply that comes anyway is matched as
        an abandoned command's."""
        orphans, self._orphans = self._orphans, []
        return orphans

    def _orphan(self, session_id: str, why: str) -> None:
        for cid, cmd in list(self._pending.items()):
            if cmd.session_id == session_id:
                self.abandon(cid)
                self._orphans.append((cmd, why))

    # -- sessions ------------------------------------------------------------------

    @property
    def sessions(self) -> dict[str, str | None]:
        return dict(self._sessions)

    def knows_session(self, session_id: str | None) -> bool:
        return session_id is None or session_id in self._sessions

    def add_session(self, session_id: str, parent: str | None) -> None:
        self._sessions[session_id] = parent

    def _drop_session(self, session_id: str) -> None:
        # Iterative: a hostile endpoint may nest sessions deeper than the stack.
        doomed = [session_id]
        while doomed:
            current = doomed.pop()
            self._sessions.pop(current, None)
            self._orphan(current, "its session detached (the target closed, or the frame "
                                  "was removed or navigated to another process)")
            doomed.extend(s for s, p in self._sessions.items() if p == current)

    # -- receiving -----------------------------------------------------------------

    def receive(self, data: str | bytes | bytearray | memoryview, *, wall: float = 0.0,
                mono: float = 0.0) -> Received:
        """Parse one frame from the browser. Never raises: bad input becomes a Fault."""
        if isinstance(data, TransportFault):
            return self._fault(data.kind, data.detail, _excerpt(data), wall, mono)
        try:
            msg = self._read_own_way(data)
            if msg is None:
                msg = loads(data)
        except (ValueError, RecursionError) as exc:
            if isinstance(data, bytes | bytearray | memoryview):
                # A text frame's payload as the wire gave it (binary frames come as
                # faults): not UTF-8 is its own fault (the connection closes on it).
                raw = bytes(data)
                try:
                    data = raw.decode("utf-8")
                except UnicodeDecodeError as bad:
                    return self._fault("invalid-utf8", f"a text frame is not UTF-8 "
                                       f"({bad.reason} at byte {bad.start})", _excerpt(raw),
                                       wall, mono)
            return self._fault("malformed-json", str(exc), data, wall, mono)
        if not isinstance(msg, dict):
            return self._fault("not-an-object", type(msg).__name__, data, wall, mono)
        session_id = msg.get("sessionId")
        if session_id is not None and not isinstance(session_id, str):
            return self._fault("bad-session-id", repr(session_id), data, wall, mono)
        if "id" in msg:
            return self._reply(msg, session_id, data, wall, mono)
        method = msg.get("method")
        if not isinstance(method, str):
            return self._fault("no-method", "neither 'id' nor a string 'method'", data, wall, mono)
        params = msg.get("params", {})
        if not isinstance(params, dict):
            return self._fault("bad-params", f"{method}: params is not an object", data, wall, mono)
        if not self.knows_session(session_id):
            return self._fault("unknown-session", f"{method} on {session_id}", data, wall, mono)
        self._track_sessions(method, params, session_id)
        return Event(method, params, session_id, wall, mono)

    def _reply(
        self, msg: dict[str, Any], session_id: str | None, raw: str | bytes | bytearray
        | memoryview, wall: float, mono: float
    ) -> Received:
        cid = msg["id"]
        if not isinstance(cid, int) or isinstance(cid, bool):
            return self._fault("bad-id", repr(cid), raw, wall, mono)
        cmd = self._answered(cid)
        if cmd is None:
            return self._fault("unknown-id", f"reply to id {cid} that was never sent", raw,
                               wall, mono)
        if "error" in msg:
            err = msg["error"]
            if not isinstance(err, dict):
                err = {"code": -1, "message": repr(err)}
            code = err.get("code", -1)
            return ErrorReply(
                cid,
                cmd.method,
                code if isinstance(code, int) else -1,
                str(err.get("message", "")),
                err.get("data"),
                cmd.session_id,
                cmd.params,
                wall,
                mono,
            )
        result = msg.get("result", {})
        if not isinstance(result, dict):
            return self._fault("bad-result", f"{cmd.method}: result is not an object", raw,
                               wall, mono)
        if cmd.method == "Target.attachToTarget" and isinstance(result.get("sessionId"), str):
            self.add_session(result["sessionId"], cmd.session_id)
        return Reply(cid, cmd.method, result, cmd.session_id, cmd.params, wall, mono)

    def _track_sessions(self, method: str, params: dict[str, Any], session_id: str | None) -> None:
        if method == "Target.attachedToTarget":
            child = params.get("sessionId")
            if isinstance(child, str):
                self.add_session(child, session_id)
        elif method == "Target.detachedFromTarget":
            child = params.get("sessionId")
            if isinstance(child, str):
                self._drop_session(child)
        elif method == "Inspector.targetCrashed" and session_id is not None:
            self._orphan(session_id, "its renderer crashed")



def _excerpt(data: bytes | bytearray | memoryview) -> str:
    # Escaped, so a binary or non-UTF-8 payload still shows what it was in a log or trace.
    return bytes(data[:RAW_EXCERPT]).decode("utf-8", "backslashreplace")
