"""``cdpnb.Trace``: a recorded run, as DataFrames and as replayed state."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cdpnb.protocol import Fault, Message, Reply
from cdpnb.state import BrowserState, Change, Snapshot, fold, fold_all, snapshot_of
from cdpnb.trace.format import Record
from cdpnb.trace.reader import read_trace

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Trace"]


class Trace:
    """Every message of one recorded run, in order.

    ``Trace.load(path)`` reads a ``.jsonl`` or ``.jsonl.gz`` recording. The
    DataFrame methods (``events``, ``commands``, ``dialogs``, ``frames``,
    ``console``) and the replay methods (``replay``, ``snapshot_at``,
    ``final_state``) all read the same records; replay folds them through the
    reducers the live supervisor uses.
    """

    def __init__(self, header: dict[str, Any], records: Sequence[Record],
                 footer: dict[str, Any] | None = None, problems: Sequence[str] = (),
                 path: Path | None = None) -> None:
        self.header = header
        self.records: tuple[Record, ...] = tuple(records)
        self.footer = footer
        self.problems: tuple[str, ...] = tuple(problems)
        self.path = path
        self._final: BrowserState | None = None

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, strict: bool = True) -> Trace:
        """Read a trace. A last line cut short loads with a TraceTruncatedWarning;
        a file that is not a cdpnb trace raises TraceFormatError saying why."""
        head, records, end, problems = read_trace(path, strict=strict)
        return cls(head, records, end, problems, Path(path))

    # -- what it is ----------------------------------------------------------------

    @property
    def protocol(self) -> str:
        """What the recorded endpoint spoke: ``cdp``, or ``bidi`` (WebDriver BiDi)."""
        return "bidi" if self.header.get("protocol") == "bidi" else "cdp"

    @property
    def backend(self) -> dict[str, Any]:
        value = self.header.get("backend")
        return value if isinstance(value, dict) else {}

    @property
    def browser(self) -> dict[str, Any]:
        """What the browser said it was: the header's, else the recorded
        ``Browser.getVersion`` reply (in ``/json/version`` spelling)."""
        value = self.header.get("browser")
        if isinstance(value, dict) and value:
            return value
        for record in self.records:
            if isinstance(record, Reply) and record.method == "Browser.getVersion":
                info = record.result
                return {"Browser": info.get("product", ""),
                        "Protocol-Version": info.get("protocolVersion", ""),
                        "User-Agent": info.get("userAgent", ""),
                        "V8-Version": info.get("jsVersion", ""),
                        "Revision": info.get("revision", "")}
        return {}

    @property
    def label(self) -> str:
        """A short name: the backend kind and browser version, or the file name."""
        kind = self.backend.get("kind")
        version = self.browser.get("Browser") or self.backend.get("version")
        if kind:
            return f"{kind} {version}" if version else str(kind)
        return self.path.name if self.path is not None else "trace"

    @property
    def started_at(self) -> float:
        """Wall time the recording began (0.0 when the header does not say)."""
        value = self.header.get("started_at")
        return float(value) if isinstance(value, int | float) else 0.0

    @property
    def started_mono(self) -> float:
        start = self.header.get("started_mono")
        if isinstance(start, int | float):
            return float(start)
        return self.records[0].mono if self.records else 0.0

    @property
    def truncated(self) -> bool:
        return any("cut short" in p for p in self.problems)

    @property
    def complete(self) -> bool:
        """Closed cleanly: the footer is there and no message was lost (none failed to
        be written, none had to be replaced by an ``unrecordable`` fault line)."""
        if self.footer is None or self.problems:
            return False
        counts = self.footer.get("counts") or {}
        return not counts.get("write_errors") and not counts.get("unrecordable")

    @property
    def messages(self) -> tuple[Message, ...]:
        """The records the reducers fold (faults left out)."""
        return tuple(r for r in self.records if not isinstance(r, Fault))

    @property
    def faults(self) -> tuple[Fault, ...]:
        return tuple(r for r in self.records if isinstance(r, Fault))

    @property
    def duration_s(self) -> float:
        if not self.records:
            return 0.0
        return self.records[-1].mono - self.started_mono

    def __len__(self) -> int:
        return len(self.records)

    # -- replay --------------------------------------------------------------------

    def replay_states(self) -> Iterator[tuple[Message, BrowserState]]:
        """Each message with the state right after it (the reducers' own fold)."""
        for message, state, _ in self.replay_changes():
            yield message, state

    def replay_changes(self) -> Iterator[tuple[Message, BrowserState, tuple[Change, ...]]]:
        """Each message with the state right after it and the changes it made: what the
        live supervisor's listeners were told, in the same order."""
        state = BrowserState()
        for record in self.records:
            if isinstance(record, Fault):
                continue
            state, changes = fold(state, record)
            yield record, state, changes

    def replay(self) -> Iterator[Snapshot]:
        """A snapshot each time a message changed the state, in recorded order."""
        last: BrowserState | None = None
        for _, state in self.replay_states():
            if state is not last:
                last = state
                yield snapshot_of(state)

    def final_state(self) -> BrowserState:
        if self._final is None:
            self._final = fold_all(self.messages)
        return self._final

    def state_at(self, t: float | dt.datetime | pd.Timestamp) -> BrowserState:
        """The state after every message up to ``t``: seconds since the trace started,
        or a wall-clock datetime / Timestamp (naive means UTC)."""
        use_wall, limit = self._time_limit(t)
        state = BrowserState()
        for record in self.records:
            at = record.wall if use_wall else record.mono - self.started_mono
            if at > limit:
                break
            if not isinstance(record, Fault):
                state = fold(state, record).state
        return state

    def snapshot_at(self, t: float | dt.datetime | pd.Timestamp) -> Snapshot:
        return snapshot_of(self.state_at(t))

    def _time_limit(self, t: object) -> tuple[bool, float]:
        if isinstance(t, dt.datetime):  # pd.Timestamp is a datetime too
            aware = t if t.tzinfo is not None else t.replace(tzinfo=dt.UTC)
            return True, aware.timestamp()
        if isinstance(t, bool) or not isinstance(t, int | float):
            raise TypeError("t must be seconds since the trace started (a number) or a "
                            f"datetime, got {t!r}")
        return False, float(t)

    # -- DataFrames ----------------------------------------------------------------

    def events(self) -> pd.DataFrame:
        """One row per recorded message (send, recv, note, fault)."""
        from cdpnb.trace import tables
        return tables.events(self)

    def commands(self) -> pd.DataFrame:
        """One row per command, joined with its reply: latency and error."""
        from cdpnb.trace import tables
        return tables.commands(self)

    def dialogs(self) -> pd.DataFrame:
        """One row per dialog: opened/closed, type, frame, via, answer, closed_by."""
        from cdpnb.trace import tables
        return tables.dialogs(self)

    def frames(self) -> pd.DataFrame:
        """The frame timeline: attached / navigated / detached, with parent and OOPIF flag."""
        from cdpnb.trace import tables
        return tables.frames(self)

    def console(self) -> pd.DataFrame:
        """Console errors and uncaught exceptions."""
        from cdpnb.trace import tables
        return tables.console(self)

    def timeline(self) -> pd.DataFrame:
        """Dialogs opening/closing and frame events in time order, per session."""
        from cdpnb.trace.timeline import timeline
        return timeline(self)

    def to_parquet(self, path: str | os.PathLike[str]) -> Path:
        """The whole trace (header and every message) as one Parquet file."""
        from cdpnb.trace import tables
        return tables.to_parquet(self, path)

    @classmethod
    def from_parquet(cls, path: str | os.PathLike[str]) -> Trace:
        """A trace written by ``to_parquet``, message for message."""
        from cdpnb.trace import tables
        return tables.from_parquet(path)

    # -- display -------------------------------------------------------------------

    def summary(self) -> dict[str, Any]:
        kinds: dict[str, int] = {}
        for record in self.records:
            name = type(record).__name__
            kinds[name] = kinds.get(name, 0) + 1
        return {"label": self.label, "messages": len(self.records), "by_kind": kinds,
                "duration_s": round(self.duration_s, 3), "complete": self.complete,
                "problems": list(self.problems)}

    def view(self) -> Any:
        """An ipywidgets view: the timeline of dialogs and frame events per session,
        and a plot of when each dialog opened and how long it stayed open."""
        # Imported here: widgets and matplotlib are the notebook layer's, loaded on use.
        from cdpnb.notebook.trace_view import TraceView

        return TraceView(self)

    def _repr_html_(self) -> str:
        from cdpnb.trace.display import trace_html
        return trace_html(self)

    def __repr__(self) -> str:
        where = f" {self.path.name}" if self.path is not None else ""
        flags = "" if self.complete else (" truncated" if self.truncated else " incomplete")
        return (f"<Trace{where} {self.label!r} {len(self.records)} messages "
                f"{self.duration_s:.1f} s{flags}>")
