"""One timeline per trace: dialogs opening and closing, frames coming and going."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

if TYPE_CHECKING:
    from cdpnb.trace.trace import Trace

__all__ = ["TIMELINE_EVENTS", "timeline"]

TIMELINE_EVENTS = (
    "dialog_opened", "dialog_closed",
    "attached", "navigated", "detached", "swapped", "oopif_attached", "oopif_detached",
)
#: ``Page.frameDetached`` with ``reason: "swap"``: the frame moved to another process
#: (it became, or stopped being, an OOPIF); it was not removed.
SWAPPED = "swapped"
_COLUMNS = ["time", "t", "session_id", "event", "frame_id", "dialog_id", "detail",
            "closed_by", "open_ms"]


def timeline(trace: Trace) -> pd.DataFrame:
    """Dialog and frame events of ``trace`` in time order, one row each.

    ``detail`` is the dialog's message or the frame's URL; ``closed_by`` and
    ``open_ms`` are set on ``dialog_closed`` rows. A frame that moved to another
    process (``frameDetached`` with reason ``swap``, as when it becomes an OOPIF) is
    ``swapped``, apart from ``detached`` (removed). Built from ``trace.dialogs()``
    and ``trace.frames()``, so it agrees with them row for row.
    """
    dialogs = trace.dialogs()
    frames = trace.frames()
    opened = pd.DataFrame({
        "time": dialogs["opened_at"], "t": dialogs["t"],
        "session_id": dialogs["session_id"].astype("string"),
        "event": "dialog_opened", "frame_id": dialogs["frame_id"],
        "dialog_id": dialogs["dialog_id"], "detail": dialogs["message"],
        "closed_by": pd.array([None] * len(dialogs), dtype="string"),
        "open_ms": pd.array([None] * len(dialogs), dtype="Float64"),
    })
    done = dialogs[dialogs["closed_at"].notna()]
    closed = pd.DataFrame({
        "time": done["closed_at"], "t": done["t"] + done["open_ms"].astype(float) / 1000.0,
        "session_id": done["session_id"].astype("string"),
        "event": "dialog_closed", "frame_id": done["frame_id"],
        "dialog_id": done["dialog_id"], "detail": done["message"],
        "closed_by": done["closed_by"].astype("string"), "open_ms": done["open_ms"],
    })
    swapped = (frames["event"].astype(str) == "detached") & (
        frames["reason"].astype("string") == "swap").fillna(False)
    framed = pd.DataFrame({
        "time": frames["time"], "t": frames["t"],
        "session_id": frames["session_id"].astype("string"),
        "event": frames["event"].astype(str).where(~swapped, SWAPPED),
        "frame_id": frames["frame_id"],
        "dialog_id": pd.array([None] * len(frames), dtype="string"),
        "detail": frames["url"],
        "closed_by": pd.array([None] * len(frames), dtype="string"),
        "open_ms": pd.array([None] * len(frames), dtype="Float64"),
    })
    parts = [p for p in (opened, closed, framed) if len(p)]
    if not parts:
        out = pd.DataFrame({c: pd.Series(dtype=opened[c].dtype) for c in _COLUMNS})
    else:
        out = pd.concat(parts, ignore_index=True)
    out = out.sort_values(["t", "event"], kind="stable", ignore_index=True)
    out["session_id"] = out["session_id"].astype("category")
    out["event"] = pd.Categorical(out["event"].astype(str), categories=TIMELINE_EVENTS)
    out["closed_by"] = out["closed_by"].astype("category")
    for column in ("frame_id", "dialog_id", "detail"):
        out[column] = out[column].astype("string")
    return out[_COLUMNS]
