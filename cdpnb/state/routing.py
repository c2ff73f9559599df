"""Which CDP session (and execution context) reaches a given frame."""

from __future__ import annotations

from cdpnb.errors import FrameNotRoutable, TargetGone, UnknownFrame
from cdpnb.state import BrowserState, FrameInfo

__all__ = ["context_for_frame", "frame_of", "session_for_frame"]


def frame_of(state: BrowserState, frame_id: str) -> FrameInfo:
    if not isinstance(frame_id, str):
        raise TypeError(f"frame_id must be a str, got {type(frame_id).__name__}")
    frame = state.frames.get(frame_id)
    if frame is None:
        known = ", ".join(list(state.frames)[:8]) or "none"
        raise UnknownFrame(f"frame {frame_id!r} is not in the frame tree (known: {known})")
    return frame


def _is_top(state: BrowserState, frame: FrameInfo) -> bool:
    """The top frame of a supervised page (ours, or a popup): its page session runs it."""
    return frame.parent_frame_id is None and (
        frame.session_id == state.page_session_id or frame.session_id in state.pages)


def _page_session(state: BrowserState) -> str | None:
    if state.page_gone is not None:
        raise TargetGone(f"the supervisor's page is gone: {state.page_gone}")
    return state.page_session_id


def session_for_frame(state: BrowserState, frame_id: str | None) -> str | None:
    """The session of the page (``None``), of the top frame, or of an OOPIF."""
    if frame_id is None:
        return _page_session(state)
    frame = frame_of(state, frame_id)
    if frame.is_oopif or _is_top(state, frame):
        return frame.session_id
    raise FrameNotRoutable(
        f"frame {frame_id!r} ({frame.url or 'no url yet'}) runs in its parent's process, not "
        "as an OOPIF, so it has no CDP session of its own. Reach it from the parent with "
        "iframe.contentWindow / iframe.contentDocument, or use "
        "evaluate(..., frame_id=...) which runs in that frame's execution context.")


def context_for_frame(state: BrowserState, frame_id: str | None) -> tuple[str | None, int | None]:
    """(session, execution context) for running script in a frame; context None = default."""
    if frame_id is None:
        return _page_session(state), None
    frame = frame_of(state, frame_id)
    if frame.is_oopif or _is_top(state, frame):
        return frame.session_id, None
    context = state.contexts.get((frame.session_id, frame_id))
    if not isinstance(context, int):  # None, or a BiDi realm (never over CDP)
        raise FrameNotRoutable(f"frame {frame_id!r} has no JavaScript context yet "
                               f"({frame.url or 'not navigated'})")
    return frame.session_id, context
