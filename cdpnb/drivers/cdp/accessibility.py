"""The accessibility tree of every frame as one table, and stable refs into it.

**The ref rule** (one rule, used for every snapshot and every frame filter):

- Rows are in document order across the whole page: each frame's tree depth-first
  by ``childIds``, a child frame's tree spliced in right after its ``<iframe>``
  element's node (OOPIFs included, fetched through their own sessions). A child
  frame whose owner element cannot be found goes after all of its parent's rows.
- Only rows that are not ``ignored`` get a ref; ``InlineTextBox`` nodes (layout
  fragments of a ``StaticText``) are left out entirely.
- ``ref = f"{role}:{name}"``, the name with whitespace collapsed and cut to
  ``MAX_REF_NAME`` characters (``…`` marks a cut). The *n*-th row (n ≥ 2) with the
  same role and name, counted over the whole page, gets ``#n`` appended; so does
  the first one when its name itself ends in ``#<digits>``, so a ref always reads
  back as one (role, name, n) (see :func:`parse_ref`).

Two snapshots of an unchanged page give the same refs, and a frame-filtered
snapshot gives each row the ref it has in the full one.

A node's ``backendDOMNodeId`` is kept only where it is unambiguous: if two nodes of
one frame claim the same DOM node, both rows leave it empty rather than guess.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cdpnb.errors import CDPError, CommandTimeout, StaleRef, TargetGone
from cdpnb.session.budget import Budget
from cdpnb.session.core import Core
from cdpnb.session.ref_names import (
    assign_refs,
    ref_name,
)
from cdpnb.state import BrowserState
from cdpnb.state.frames import descendants

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["COLUMNS", "AXRow", "AXSnapshot", "FrameAX", "RefTarget", "order_rows", "resolve",
           "take_snapshot", "to_frame"]

#: Layout fragments, one per line box of a StaticText: noise with the same name.
SKIPPED_ROLES = frozenset({"InlineTextBox"})
COLUMNS = ("ref", "role", "name", "frame_id", "backend_dom_node_id", "ignored", "depth",
           "ax_node_id", "parent_ax_node_id", "session_id")


# -- the ref rule (pure) -------------------------------------------------------------










# -- ordering across frames (pure) ---------------------------------------------------


@dataclass(frozen=True)
class AXRow:
    ref: str | None
    role: str
    name: str
    frame_id: str
    backend_dom_node_id: int | None
    ignored: bool
    depth: int
    ax_node_id: str
    parent_ax_node_id: str | None
    session_id: str | None


@dataclass(frozen=True)
class FrameAX:
    """One frame's ``getFullAXTree`` nodes, and where the frame hangs."""

    frame_id: str
    session_id: str | None
    nodes: Sequence[Mapping[str, Any]]
    parent_frame_id: str | None = None
    #: backendNodeId of this frame's ``<iframe>`` in the parent frame, if found.
    owner_backend_id: int | None = None


def _text(field: Any) -> str:
    value = field.get("value") if isinstance(field, Mapping) else None
    return "" if value is None else str(value)


def _node_id(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _walk(nodes: Sequence[Mapping[str, Any]]) -> list[tuple[Mapping[str, Any], int]]:
    """(node, depth) depth-first by childIds from the roots; unreached nodes last."""
    by_id = {str(n.get("nodeId")): n for n in nodes}
    roots = [n for n in nodes if str(n.get("parentId")) not in by_id]
    out: list[tuple[Mapping[str, Any], int]] = []
    seen: set[str] = set()
    stack = [(n, 0) for n in reversed(roots)]
    while stack:
        node, depth = stack.pop()
        key = str(node.get("nodeId"))
        if key in seen:
            continue
        seen.add(key)
        out.append((node, depth))
        kids = [by_id[str(k)] for k in node.get("childIds") or () if str(k) in by_id]
        stack.extend((kid, depth + 1) for kid in reversed(kids))
    out.extend((n, 0) for n in nodes if str(n.get("nodeId")) not in seen)
    return out


def _frame_rows(frame: FrameAX, depth0: int) -> list[AXRow]:
    walked = [(n, d) for n, d in _walk(frame.nodes)
              if _text(n.get("role")) not in SKIPPED_ROLES]
    claims = Counter(_node_id(n.get("backendDOMNodeId")) for n, _ in walked)
    rows = []
    for node, depth in walked:
        backend = _node_id(node.get("backendDOMNodeId"))
        parent = node.get("parentId")
        rows.append(AXRow(
            ref=None, role=_text(node.get("role")), name=_text(node.get("name")),
            frame_id=frame.frame_id,
            backend_dom_node_id=backend if backend is not None and claims[backend] == 1
            else None,
            ignored=bool(node.get("ignored")), depth=depth0 + depth,
            ax_node_id=str(node.get("nodeId")),
            parent_ax_node_id=None if parent is None else str(parent),
            session_id=frame.session_id))
    return rows


def order_rows(frames: Sequence[FrameAX], top_frame_id: str | None) -> list[AXRow]:
    """All frames' rows in page document order, with refs assigned (the rule above)."""
    by_id = {f.frame_id: f for f in frames}
    children: dict[str, list[FrameAX]] = {}
    for f in frames:
        if f.parent_frame_id in by_id and f.frame_id != top_frame_id:
            children.setdefault(str(f.parent_frame_id), []).append(f)
    placed: set[str] = set()

    def emit(frame: FrameAX, depth0: int) -> list[AXRow]:
        placed.add(frame.frame_id)
        kids = [k for k in children.get(frame.frame_id, []) if k.frame_id not in placed]
        at_owner: dict[int, list[FrameAX]] = {}
        for kid in kids:
            if kid.owner_backend_id is not None:
                at_owner.setdefault(kid.owner_backend_id, []).append(kid)
        out: list[AXRow] = []
        for row in _frame_rows(frame, depth0):
            out.append(row)
            if row.backend_dom_node_id in at_owner:
                for kid in at_owner.pop(row.backend_dom_node_id):
                    if kid.frame_id not in placed:
                        out.extend(emit(kid, row.depth + 1))
        for kid in kids:  # owner not found (or not in the AX tree): after the parent's rows
            if kid.frame_id not in placed:
                out.extend(emit(kid, depth0 + 1))
        return out

    rows: list[AXRow] = []
    top = by_id.get(top_frame_id or "")
    if top is not None:
        rows.extend(emit(top, 0))
    for frame in frames:  # frames whose parent we have no tree for
        if frame.frame_id not in placed:
            rows.extend(emit(frame, 0))
    refs = assign_refs(None if r.ignored else (r.role, r.name) for r in rows)
    return [dataclasses.replace(r, ref=ref) for ref, r in zip(refs, rows, strict=True)]


# -- live snapshot ---------------------------------------------------------------------


@dataclass(frozen=True)
class RefTarget:
    ref: str
    role: str
    name: str
    frame_id: str
    session_id: str | None
    backend_node_id: int | None


@dataclass(frozen=True)
class AXSnapshot:
    rows: tuple[AXRow, ...]
    #: Frames whose tree could not be read, with the reason.
    skipped: Mapping[str, str]

    def targets(self) -> dict[str, RefTarget]:
        return {r.ref: RefTarget(r.ref, r.role, r.name, r.frame_id, r.session_id,
                                 r.backend_dom_node_id)
                for r in self.rows if r.ref is not None}

    def for_frame(self, state: BrowserState, frame_id: str | None) -> list[AXRow]:
        """Rows of ``frame_id`` and the frames inside it (all rows for ``None``)."""
        if frame_id is None:
            return list(self.rows)
        keep = descendants({k: f.parent_frame_id for k, f in state.frames.items()},
                           {frame_id})
        return [r for r in self.rows if r.frame_id in keep]


async def _tree(core: Core, frame_id: str, session: str | None,
                budget: Budget) -> list[Mapping[str, Any]]:
    reply = await core.send("Accessibility.getFullAXTree", {"frameId": frame_id}, session,
                            budget.left())
    nodes = reply.get("nodes")
    return [n for n in nodes if isinstance(n, Mapping)] if isinstance(nodes, list) else []


async def _owner(core: Core, frame_id: str, parent_session: str | None,
                 budget: Budget) -> int | None:
    try:
        reply = await core.send("DOM.getFrameOwner", {"frameId": frame_id}, parent_session,
                                budget.left())
    except (CDPError, CommandTimeout, TargetGone):
        return None  # placed after its parent's rows instead
    return _node_id(reply.get("backendNodeId"))


async def take_snapshot(core: Core, budget: Budget) -> AXSnapshot:
    """Every frame's tree, each through the session that renders it, in parallel."""
    state = core.state
    frames = [f for f in state.frames.values() if f.session_id is not None]
    top = next((f.frame_id for f in frames
                if f.parent_frame_id is None and f.session_id == state.page_session_id), None)
    if budget.left() <= 0:
        raise CommandTimeout("accessibility: no budget left")
    trees = await asyncio.gather(*(_tree(core, f.frame_id, f.session_id, budget)
                                   for f in frames), return_exceptions=True)

    async def owner(frame_id: str, parent_id: str | None) -> int | None:
        parent = state.frames.get(parent_id or "")
        if parent is None:
            return None
        return await _owner(core, frame_id, parent.session_id, budget)

    owners = await asyncio.gather(*(owner(f.frame_id, f.parent_frame_id) for f in frames))
    got: list[FrameAX] = []
    skipped: dict[str, str] = {}
    for frame, tree, owner_id in zip(frames, trees, owners, strict=True):
        if isinstance(tree, BaseException):
            if frame.frame_id == top or not isinstance(tree, CDPError | CommandTimeout
                                                       | TargetGone):
                raise tree
            skipped[frame.frame_id] = str(tree)
            continue
        got.append(FrameAX(frame.frame_id, frame.session_id, tree, frame.parent_frame_id,
                           owner_id))
    return AXSnapshot(tuple(order_rows(got, top)), skipped)


def to_frame(rows: Sequence[AXRow], skipped: Mapping[str, str]) -> pd.DataFrame:
    import pandas as pd

    from cdpnb.trace.dtypes import TEXT  # (pandas is loaded on use: here)

    data = {c: [getattr(r, c) for r in rows] for c in COLUMNS}
    df = pd.DataFrame(data, columns=list(COLUMNS))
    for column in ("ref", "role", "name", "frame_id", "ax_node_id", "parent_ax_node_id",
                   "session_id"):
        df[column] = df[column].astype(TEXT)  # the one text dtype of cdpnb's tables
    df["backend_dom_node_id"] = df["backend_dom_node_id"].astype("Int64")
    df["ignored"] = df["ignored"].astype(bool)
    df["depth"] = df["depth"].astype("int64")
    df.attrs["skipped_frames"] = dict(skipped)
    return df


# -- ref -> element ----------------------------------------------------------------------


async def resolve(core: Core, target: RefTarget, budget: Budget,
                  object_group: str) -> str:
    """A handle (objectId) on the element ``target`` names, checked to still be it."""
    state = core.state
    ref = target.ref
    frame = state.frames.get(target.frame_id)
    if frame is None:
        raise StaleRef(ref, f"its frame {target.frame_id} is gone")
    if frame.session_id != target.session_id:
        raise StaleRef(ref, f"its frame {target.frame_id} moved to another process")
    if target.backend_node_id is None:
        raise StaleRef(ref, "it names an accessibility node with no single DOM node "
                            "(text, or an ambiguous mapping)")
    node = {"backendNodeId": target.backend_node_id}
    session = target.session_id
    try:
        partial = await core.send("Accessibility.getPartialAXTree",
                                  {**node, "fetchRelatives": False}, session, budget.left())
        now: dict[str, Any] = next(iter(partial.get("nodes") or ()), {})
        role, name = _text(now.get("role")), _text(now.get("name"))
        if (role, ref_name(name)) != (target.role, ref_name(target.name)):
            raise StaleRef(ref, f"its node is now {role}:{ref_name(name)!s}")
        reply = await core.send("DOM.resolveNode", {**node, "objectGroup": object_group},
                                session, budget.left())
    except CDPError as exc:
        raise StaleRef(ref, f"its node is gone ({exc.message})") from None
    object_id = (reply.get("object") or {}).get("objectId")
    if not isinstance(object_id, str):
        raise StaleRef(ref, "DOM.resolveNode gave no object for it")
    return object_id
