"""Where a replayed client left its recording: the first command the recording has no
answer for, beside the one it recorded at that point, with what differs (no I/O)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from cdpnb.protocol import Command

__all__ = ["Divergence", "learn_substitutions", "params_diff"]

#: A string value shorter than this is never substituted (too likely to occur by chance).
SUBSTITUTED_MIN_CHARS = 8

#: How many differing paths a divergence lists, and how long a value it shows.
_DIFFS_SHOWN = 8
_VALUE_CHARS = 80


def _show(value: Any) -> str:
    try:
        text = json.dumps(value, sort_keys=True, ensure_ascii=True)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return text if len(text) <= _VALUE_CHARS else text[:_VALUE_CHARS - 1] + "…"


def params_diff(recorded: Any, received: Any, path: str = "params") -> list[str]:
    """The paths where ``received`` differs from ``recorded``, one line each
    (``params.expression: "1" (recorded) != "2" (received)``)."""
    if isinstance(recorded, dict) and isinstance(received, dict):
        lines: list[str] = []
        for key in sorted(set(recorded) | set(received), key=str):
            where = f"{path}.{key}"
            if key not in received:
                lines.append(f"{where}: {_show(recorded[key])} (recorded), missing (received)")
            elif key not in recorded:
                lines.append(f"{where}: missing (recorded), {_show(received[key])} (received)")
            else:
                lines.extend(params_diff(recorded[key], received[key], where))
        return lines
    if isinstance(recorded, list) and isinstance(received, list) \
            and len(recorded) == len(received):
        return [line for i, (a, b) in enumerate(zip(recorded, received, strict=True))
                for line in params_diff(a, b, f"{path}[{i}]")]
    if recorded != received or type(recorded) is not type(received):
        return [f"{path}: {_show(recorded)} (recorded) != {_show(received)} (received)"]
    return []


@dataclass(frozen=True)
class Divergence:
    """The first command of a replayed client that its recording has no answer for."""

    method: str
    session_id: str | None
    params: dict[str, Any]
    #: The recorded command the replay was at (None: the recording had no more).
    expected: Command | None
    #: The recorded connection (1 for the first) it happened in.
    connection: int = 1

    @property
    def diff(self) -> list[str]:
        """What differs from the expected command: method, session, then params."""
        expected = self.expected
        if expected is None:
            return ["the recording has no further command"]
        lines: list[str] = []
        if expected.method != self.method:
            lines.append(f"method: {expected.method} (recorded) != {self.method} (received)")
        if expected.session_id != self.session_id:
            lines.append(f"sessionId: {expected.session_id} (recorded) != {self.session_id} "
                         "(received)")
        if not lines:
            lines.extend(params_diff(expected.params, self.params))
        return lines

    def __str__(self) -> str:
        where = f" on session {self.session_id}" if self.session_id else ""
        head = (f"replay diverged from the recording (connection {self.connection}): "
                f"received {self.method}{where}")
        if self.expected is None:
            return head + ", but the recording has no further command"
        diff = self.diff
        shown = "; ".join(diff[:_DIFFS_SHOWN])
        if len(diff) > _DIFFS_SHOWN:
            shown += f"; … {len(diff) - _DIFFS_SHOWN} more"
        return f"{head}, recorded next: {self.expected.method} — {shown}"


def learn_substitutions(recorded: Any, received: Any) -> dict[str, str]:
    """The string values a client sent in place of recorded ones (both at least
    ``SUBSTITUTED_MIN_CHARS`` long), as JSON-escaped text without quotes: a replay
    writes the client's value wherever the recording's appears in what it sends back."""
    found: dict[str, str] = {}
    if isinstance(recorded, dict) and isinstance(received, dict):
        for key in recorded.keys() & received.keys():
            found.update(learn_substitutions(recorded[key], received[key]))
    elif isinstance(recorded, list) and isinstance(received, list) \
            and len(recorded) == len(received):
        for a, b in zip(recorded, received, strict=True):
            found.update(learn_substitutions(a, b))
    elif isinstance(recorded, str) and isinstance(received, str) and recorded != received \
            and min(len(recorded), len(received)) >= SUBSTITUTED_MIN_CHARS:
        found[json.dumps(recorded)[1:-1]] = json.dumps(received)[1:-1]
    return found
