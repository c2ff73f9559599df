"""The one rule that pairs a recorded reply with its recorded command.

A reply answers the latest command sent with its id since the last
``cdpnb.connected`` note (command ids restart with each connection), and a command
is answered once: a second reply with the same id answers nothing. The line reader
(``format.LineDecoder``, which gives a reply its command's method and params), the
columns (``Columns.match_replies``, for the commands table and Parquet) and a replay
(``cdpnb.playback``) all pair them with this class, so a trace means one thing
whichever way it is read.
"""

from __future__ import annotations

from typing import Generic, TypeVar

__all__ = ["ReplyMatcher"]

_C = TypeVar("_C")


class ReplyMatcher(Generic[_C]):
    """The commands of the current connection still waiting for their reply, by id:
    each a ``_C`` (a command, a row, a number: whatever the caller pairs)."""

    __slots__ = ("_waiting",)

    def __init__(self) -> None:
        self._waiting: dict[int, _C] = {}

    def sent(self, command_id: int, command: _C) -> None:
        """A command went out (one with the same id before it is no longer waited on)."""
        self._waiting[command_id] = command

    def answered(self, command_id: int) -> _C | None:
        """The command a reply with ``command_id`` answers, or None (sent before the
        recording began, or in another connection, or answered already)."""
        return self._waiting.pop(command_id, None)

    def connected(self) -> None:
        """A new connection: ids start again, nothing sent before is answered in it."""
        self._waiting.clear()
