"""``cdpnb.Trace``: a recorded run, as DataFrames and as replayed state.

The facade of the trace room: it holds a run's messages as columns (``Columns``) and
hands them to the modules below it (``tables``, ``columnar``, ``timeline``,
``parquet``, ``display``), which take columns, frames or a small Protocol and never
import this module.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cdpnb.protocol import Fault, Message, ProtocolSpec, Reply, recorded_protocol
from cdpnb.state import BrowserState, Change, Snapshot, fold, snapshot_of
from cdpnb.state.stats import replay_stats
from cdpnb.terminal_text import inert
from cdpnb.trace.format import Record
from cdpnb.trace.reader import check_path, read_trace
from cdpnb.views import VIEWS

if TYPE_CHECKING:
    import pandas as pd

    from cdpnb.trace.columns import Columns

__all__ = ["Trace"]


class Trace:
    """Every message of one recorded run, in order.

    ``Trace.load(path)`` reads a ``.jsonl``, ``.jsonl.gz`` or ``.jsonl.zst``
    recording. The DataFrame methods (``events``, ``commands``, ``dialogs``,
    ``frames``, ``console``) and the replay methods (``replay``, ``snapshot_at``,
    ``final_state``) all read the same messages; replay folds them through the
    reducers the live supervisor uses.
    """

    def __init__(self, header: dict[str, Any], records: Sequence[Record],
                 footer: dict[str, Any] | None = None, problems: Sequence[str] = (),
                 path: Path | None = None) -> None:
        self.header = header
        self._records: tuple[Record, ...] | None = tuple(records)
        #: The messages as columns: what the tables and the fold read (made from the
        #: records when first needed, for a trace made of records).
        self._columns: Columns | None = None
        self.footer = footer
        self.problems: tuple[str, ...] = tuple(problems)
        self.path = path
        self._final: BrowserState | None = None

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, strict: bool = True) -> Trace:
        """Read a trace. A last line cut short loads with a TraceTruncatedWarning;
        a file that is not a cdpnb trace raises TraceFormatError saying why, and with
        ``strict`` (the default) so does damage, naming the line or byte.

        One columnar pass reads the file (every check made, no message object built:
        the tables come from the columns, and ``records`` are made when first asked
        for). A file it cannot vouch for (damaged, or merely unusual) is read line by
        line into message objects instead, which names every problem."""
        from cdpnb.trace.scan import Refused, scan

        path = check_path(Path(path))
        try:
            found = scan(path)
        except Refused:
            head, records, end, problems = read_trace(path, strict=strict)
            return cls(head, records, end, problems, path)
        return cls._of_columns(found.header, found.columns, found.footer, found.problems, path)

    @classmethod
    def _of_columns(cls, header: dict[str, Any], columns: Columns,
                   footer: dict[str, Any] | None = None, problems: Sequence[str] = (),
                   path: Path | None = None) -> Trace:
        """A trace held as columns (a scanned file, a Parquet file): its records are
        made from them when first asked for."""
        trace = cls(header, (), footer, problems, path)
        trace._records = None
        trace._columns = columns
        return trace

    @property
    def _held(self) -> Columns:
        """The messages as columns (every question below reads these)."""
        if self._columns is None:
            # (numpy loads with the first question asked, not with cdpnb)
            from cdpnb.trace.columns import Columns

            assert self._records is not None
            self._columns = Columns.of_records(self._records)
        return self._columns

    @property
    def records(self) -> tuple[Record, ...]:
        """Every message (and fault), in recorded order."""
        if self._records is None:
            assert self._columns is not None
            self._records = self._columns.records()
        return self._records

    # -- what it is ----------------------------------------------------------------

    @property
    def protocol(self) -> str:
        """What the recorded endpoint spoke: ``cdp``, ``bidi`` (WebDriver BiDi), ``wip``
        (the WebKit Inspector Protocol: Bun) or ``classic`` (WebDriver classic)."""
        return self.protocol_spec.name

    @property
    def protocol_spec(self) -> ProtocolSpec:
        """The recorded endpoint's protocol and its facts (the header names it; a header
        that names none is CDP's)."""
        return recorded_protocol(self.header.get("protocol"))

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
        columns = self._held
        for record in columns.messages(columns.rows_of("reply", ["Browser.getVersion"])):
            if isinstance(record, Reply):
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
        mono = self._held.mono
        return float(mono[0]) if len(mono) else 0.0

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
        mono = self._held.mono
        return float(mono[-1]) - self.started_mono if len(mono) else 0.0

    def __len__(self) -> int:
        return len(self._records) if self._records is not None else len(self._held)

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
            final = BrowserState()
            for _, _, after, _ in self._held.folded():
                final = after
            self._final = final
        return self._final

    def stats(self) -> dict[str, int]:
        """``Supervisor.stats()`` as this recording rebuilds it, key by key: the folded
        counters and the wire counts (``cdpnb.state.stats``). Folds every message."""
        return replay_stats(self.records)

    def state_at(self, t: float | dt.datetime | pd.Timestamp) -> BrowserState:
        """The state after every message up to ``t``: seconds since the trace started,
        or a wall-clock datetime / Timestamp (naive means UTC)."""
        import numpy as np

        use_wall, limit = self._time_limit(t)
        # Every message up to the first one past ``t``, folding those with a rule.
        columns = self._held
        at = columns.wall if use_wall else columns.mono - self.started_mono
        past = np.flatnonzero(at > limit)
        end = int(past[0]) if len(past) else len(columns)
        ruled = columns.ruled()
        state = BrowserState()
        for message in columns.messages(ruled[ruled < end]):
            state = fold(state, message).state
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
        from cdpnb.trace import columnar
        return columnar.events(self._held, self.started_mono)

    def commands(self) -> pd.DataFrame:
        """One row per command, joined with its reply: latency and error."""
        from cdpnb.trace import columnar
        return columnar.commands(self._held, self.started_mono)

    def dialogs(self) -> pd.DataFrame:
        """One row per dialog: opened/closed, type, frame, via, answer, closed_by."""
        from cdpnb.trace import tables
        return tables.dialogs(self._held, self.started_mono)

    def frames(self) -> pd.DataFrame:
        """The frame timeline: attached / navigated / detached, with parent and OOPIF flag."""
        from cdpnb.trace import tables
        return tables.frames(self._held, self.started_mono)

    def console(self) -> pd.DataFrame:
        """Console errors and uncaught exceptions."""
        from cdpnb.trace import tables
        return tables.console(self._held, self.started_mono)

    def timeline(self) -> pd.DataFrame:
        """Dialogs opening/closing and frame events in time order, per session."""
        from cdpnb.trace.timeline import timeline
        return timeline(self.dialogs(), self.frames())

    def to_parquet(self, path: str | os.PathLike[str]) -> Path:
        """The whole trace (header and every message) as one Parquet file."""
        from cdpnb.trace import parquet
        return parquet.to_parquet(path, self._held, self.started_mono, header=self.header,
                                  footer=self.footer, problems=self.problems)

    @classmethod
    def from_parquet(cls, path: str | os.PathLike[str]) -> Trace:
        """A trace written by ``to_parquet``, message for message."""
        from cdpnb.trace import parquet
        found = parquet.read_parquet(path)
        return cls._of_columns(found.header, found.columns, found.footer, found.problems,
                               Path(path))

    # -- display -------------------------------------------------------------------

    def summary(self) -> dict[str, Any]:
        return {"label": self.label, "messages": len(self),
                "by_kind": self._held.kind_counts(),
                "duration_s": round(self.duration_s, 3), "complete": self.complete,
                "problems": list(self.problems)}

    def view(self) -> Any:
        """An ipywidgets view: the timeline of dialogs and frame events per session,
        and a plot of when each dialog opened and how long it stayed open."""
        return VIEWS.make(self)  # cdpnb.notebook (widgets, matplotlib), loaded on use

    def _repr_html_(self) -> str:
        from cdpnb.trace.display import trace_html
        return trace_html(self)

    def __repr__(self) -> str:
        where = f" {inert(self.path.name)}" if self.path is not None else ""  # a file name
        flags = "" if self.complete else (" truncated" if self.truncated else " incomplete")
        return (f"<Trace{where} {self.label!r} {len(self)} messages "
                f"{self.duration_s:.1f} s{flags}>")
