"""One timeline per trace: dialogs opening and closing, frames coming and going."""

from __future__ import annotations

from typing import Any

import pandas as pd

from cdpnb.trace.dtypes import TEXT
from cdpnb.trace.tables import FRAME_EVENTS, SWAPPED

__all__ = ["SWAPPED", "TIMELINE_EVENTS", "timeline"]

TIMELINE_EVENTS = ("dialog_opened", "dialog_closed", *FRAME_EVENTS)
_COLUMNS = ["time", "t", "session_id", "event", "frame_id", "dialog_id", "detail",
            "closed_by", "open_ms"]


def _missing(n: int, dtype: Any = TEXT) -> Any:
    """``n`` missing values of ``dtype`` (a column that only some rows fill)."""
    return pd.array([None] * n, dtype=dtype)


def timeline(dialogs: pd.DataFrame, frames: pd.DataFrame) -> pd.DataFrame:
    """Dialog and frame events of a trace in time order, one row each, from its
    ``dialogs()`` and ``frames()`` tables.

    ``detail`` is the dialog's message or the frame's URL; ``closed_by`` and
    ``open_ms`` are set on ``dialog_closed`` rows. A frame's rows are
    ``trace.frames()``'s, with its events: ``swapped`` is a frame that moved to another
    process (as when it becomes an OOPIF), ``detached`` one removed. Built from
    ``trace.dialogs()`` and ``trace.frames()``, so it agrees with them row for row.
    """
    opened = pd.DataFrame({
        "time": dialogs["opened_at"], "t": dialogs["t"],
        "session_id": dialogs["session_id"].astype(TEXT),
        "event": "dialog_opened", "frame_id": dialogs["frame_id"],
        "dialog_id": dialogs["dialog_id"], "detail": dialogs["message"],
        "closed_by": _missing(len(dialogs)), "open_ms": _missing(len(dialogs), "Float64"),
    })
    done = dialogs[dialogs["closed_at"].notna()]
    closed = pd.DataFrame({
        "time": done["closed_at"], "t": done["t"] + done["open_ms"].astype(float) / 1000.0,
        "session_id": done["session_id"].astype(TEXT),
        "event": "dialog_closed", "frame_id": done["frame_id"],
        "dialog_id": done["dialog_id"], "detail": done["message"],
        "closed_by": done["closed_by"].astype(TEXT), "open_ms": done["open_ms"],
    })
    framed = pd.DataFrame({
        "time": frames["time"], "t": frames["t"],
        "session_id": frames["session_id"].astype(TEXT),
        "event": frames["event"].astype(TEXT),
        "frame_id": frames["frame_id"],
        "dialog_id": _missing(len(frames)),
        "detail": frames["url"],
        "closed_by": _missing(len(frames)),
        "open_ms": _missing(len(frames), "Float64"),
    })
    parts = [p for p in (opened, closed, framed) if len(p)]
    if not parts:
        out = pd.DataFrame({c: pd.Series(dtype=opened[c].dtype) for c in _COLUMNS})
    else:
        out = pd.concat(parts, ignore_index=True)
    out = out.sort_values(["t", "event"], kind="stable", ignore_index=True)
    out["session_id"] = pd.Categorical(out["session_id"], categories=pd.Index(
        sorted(out["session_id"].dropna().unique()), dtype=TEXT))
    out["event"] = pd.Categorical(out["event"], categories=pd.Index(TIMELINE_EVENTS,
                                                                    dtype=TEXT))
    out["closed_by"] = pd.Categorical(out["closed_by"], categories=pd.Index(
        sorted(out["closed_by"].dropna().unique()), dtype=TEXT))
    for column in ("frame_id", "dialog_id", "detail"):
        out[column] = out[column].astype(TEXT)
    return out[_COLUMNS]
