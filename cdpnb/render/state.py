"""Plain and HTML reprs of the state's models (dialogs, frame trees, snapshots):
bounded, page text escaped.

The models of :mod:`cdpnb.state` call these from their ``__repr__`` and
``_repr_html_``; this module never imports them (render is a leaf). It reads what it
is given through the protocols below, each naming the attributes it reads of one model,
so mypy still checks every call.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence, Set
from typing import Protocol, TypeAlias, TypeGuard

from cdpnb.render import MAX_ROWS, MAX_TEXT, badge, clip, short_repr, table, text, when

__all__ = [
    "NAME_SHOWN",
    "STATE_DIALOGS_SHOWN",
    "TEXT_LINES",
    "ClosedDialog",
    "ConsoleLine",
    "Dialog",
    "OpenDialog",
    "PageLine",
    "SnapshotParts",
    "StateParts",
    "Tree",
    "TreeNode",
    "dialog_html",
    "dialog_repr",
    "dialogs_html",
    "frame_tree_html",
    "frame_tree_text",
    "snapshot_html",
    "state_repr",
]


class _AnyDialog(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def message(self) -> str: ...
    @property
    def frame_id(self) -> str | None: ...
    @property
    def via(self) -> str: ...
    @property
    def opened_at(self) -> float: ...


class OpenDialog(_AnyDialog, Protocol):
    """What is shown of a dialog open now (``cdpnb.state.PendingDialog``)."""

    @property
    def unanswerable(self) -> str | None: ...


class ClosedDialog(_AnyDialog, Protocol):
    """What is shown of a closed dialog (``cdpnb.state.DialogRecord``): who closed it,
    why, and the answer."""

    @property
    def closed_by(self) -> str: ...
    @property
    def reason(self) -> str | None: ...
    @property
    def accepted(self) -> bool | None: ...
    @property
    def prompt_text(self) -> str | None: ...
    @property
    def open_ms(self) -> float: ...


Dialog: TypeAlias = OpenDialog | ClosedDialog


class TreeNode(Protocol):
    """What is shown of one frame of a tree (``cdpnb.state.FrameNode``)."""

    @property
    def frame_id(self) -> str: ...
    @property
    def url(self) -> str: ...
    @property
    def name(self) -> str | None: ...
    @property
    def is_oopif(self) -> bool: ...
    @property
    def session_id(self) -> str | None: ...
    @property
    def depth(self) -> int: ...


class Tree(Protocol):
    """What is shown of a frame tree (``cdpnb.state.FrameTree``)."""

    @property
    def top(self) -> TreeNode | None: ...
    @property
    def children(self) -> Sequence[TreeNode]: ...
    @property
    def truncated(self) -> bool: ...
    def __len__(self) -> int: ...


class PageLine(Protocol):
    """What is shown of one supervised page (``cdpnb.state.PageNode``)."""

    @property
    def target_id(self) -> str: ...
    @property
    def main(self) -> bool: ...
    @property
    def opener_target_id(self) -> str | None: ...
    @property
    def url(self) -> str: ...
    @property
    def frames(self) -> int: ...
    @property
    def pending_dialogs(self) -> int: ...
    @property
    def hazard(self) -> str | None: ...


class ConsoleLine(Protocol):
    """What is shown of one console error (``cdpnb.state.ConsoleEntry``)."""

    @property
    def at(self) -> float: ...
    @property
    def kind(self) -> str: ...
    @property
    def source(self) -> str | None: ...
    @property
    def level(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def url(self) -> str: ...
    @property
    def line(self) -> int | None: ...


class SnapshotParts(Protocol):
    """What is shown of a snapshot (``cdpnb.state.Snapshot``)."""

    @property
    def connected(self) -> bool: ...
    @property
    def page_target_id(self) -> str | None: ...
    @property
    def pending_dialogs(self) -> Sequence[OpenDialog]: ...
    @property
    def pending_total(self) -> int: ...
    @property
    def recent_dialogs(self) -> Sequence[ClosedDialog]: ...
    @property
    def frame_tree(self) -> Tree: ...
    @property
    def console_errors(self) -> Sequence[ConsoleLine]: ...
    @property
    def pages(self) -> Sequence[PageLine]: ...
    @property
    def pages_truncated(self) -> bool: ...
    @property
    def page_gone(self) -> str | None: ...


class _Phase(Protocol):
    @property
    def phase(self) -> str: ...
    @property
    def generation(self) -> int: ...
    @property
    def reason(self) -> str | None: ...


class _Frame(Protocol):
    @property
    def url(self) -> str: ...
    @property
    def parent_frame_id(self) -> str | None: ...
    @property
    def session_id(self) -> str | None: ...
    @property
    def is_oopif(self) -> bool: ...


class _Page(Protocol):
    @property
    def url(self) -> str: ...


class StateParts(Protocol):
    """What the plain repr of ``cdpnb.state.BrowserState`` shows."""

    @property
    def protocol(self) -> str: ...
    @property
    def connection(self) -> _Phase: ...
    @property
    def page_target_id(self) -> str | None: ...
    @property
    def page_session_id(self) -> str | None: ...
    @property
    def page_gone(self) -> str | None: ...
    @property
    def pages(self) -> Mapping[str, _Page]: ...
    @property
    def frames(self) -> Mapping[str, _Frame]: ...
    @property
    def crashed_sessions(self) -> Set[str]: ...
    @property
    def pending_dialogs(self) -> Sequence[OpenDialog]: ...
    @property
    def dialogs_closed_total(self) -> int: ...
    @property
    def console_errors_total(self) -> int: ...


def _closed(d: Dialog) -> TypeGuard[ClosedDialog]:
    # Only a closed dialog says who closed it (an open one has no such attribute).
    return hasattr(d, "closed_by")


def _open(d: Dialog) -> TypeGuard[OpenDialog]:
    return not _closed(d)


_CLOSED_BY_COLOUR = {"agent": "#2a7", "auto_policy": "#27a", "watchdog": "#c70",
                     "remote": "#a33", "browser": "#777", "cdpnb": "#74a",
                     # a proxied client's own answer, and a proxy fault rule's
                     "client": "#2a7", "fault": "#c3a"}


def dialog_repr(d: Dialog) -> str:
    kind = type(d).__name__
    extra = ""
    if _closed(d):
        why = f" reason={d.reason}" if d.reason else ""
        extra = (f" closed_by={d.closed_by}{why} accepted={d.accepted} "
                 f"open_ms={d.open_ms:.1f}")
    elif _open(d) and d.unanswerable:
        extra = f" unanswerable={d.unanswerable}"
    frame = f" frame={clip(d.frame_id, 12)}" if d.frame_id else ""
    via = " via=bridge" if d.via == "bridge" else ""
    return f"<{kind} {d.id} {d.type} {short_repr(d.message)}{frame}{via}{extra}>"


#: Open dialogs a state's repr names (type and message); the rest are counted.
STATE_DIALOGS_SHOWN = 3


def _page_url(s: StateParts) -> str:
    """The URL of the supervisor's own page: its top frame's, else the page's."""
    top = next((f for f in s.frames.values()
                if f.parent_frame_id is None and f.session_id == s.page_session_id), None)
    if top is not None:
        return top.url
    page = s.pages.get(s.page_session_id) if s.page_session_id is not None else None
    return page.url if page is not None else ""


def _quoted(value: str, limit: int) -> str:
    """``repr(value)`` of at most ``limit`` characters, cut inside its quotes: the cut
    is of the escaped text, so a string of escapes cannot run past it."""
    shown = repr(value)
    return shown if len(shown) <= limit else f"{shown[:limit - 2]}…{shown[-1]}"


def state_repr(s: StateParts) -> str:
    """One line of a few hundred characters at most, whatever the state holds: the
    protocol, the connection's phase, the page (id and URL), how many pages and frames,
    the open dialogs (the first few named) and the totals. Page text is clipped and
    shown as ``repr`` shows it (a newline or a terminal escape stays inert)."""
    link = s.connection
    parts = [s.protocol, f"connection={link.phase}"]
    if link.generation > 1:
        parts.append(f"reconnects={link.generation - 1}")
    if link.phase in ("lost", "reconnecting", "gave_up") and link.reason:
        parts.append(f"why={_quoted(link.reason, 40)}")
    if s.page_target_id is not None:
        parts.append(f"page={clip(s.page_target_id, 12)} url={_quoted(_page_url(s), 60)}")
    if s.page_gone:
        parts.append(f"page_gone={_quoted(s.page_gone, 40)}")
    oopifs = sum(f.is_oopif for f in s.frames.values())
    parts += [f"pages={len(s.pages)}", f"frames={len(s.frames)}" + (
        f" ({oopifs} OOPIF{'s' if oopifs != 1 else ''})" if oopifs else "")]
    if s.crashed_sessions:
        parts.append(f"crashed={len(s.crashed_sessions)}")
    pending = s.pending_dialogs
    shown = ", ".join(f"{d.type} {_quoted(d.message, 30)}"
                      for d in pending[:STATE_DIALOGS_SHOWN])
    more = f", +{len(pending) - STATE_DIALOGS_SHOWN} more" \
        if len(pending) > STATE_DIALOGS_SHOWN else ""
    parts.append(f"pending_dialogs={len(pending)}" + (f" [{shown}{more}]" if pending else ""))
    parts += [f"dialogs_closed={s.dialogs_closed_total}",
              f"console_errors={s.console_errors_total}"]
    return f"<BrowserState {' '.join(parts)}>"


def _status(d: Dialog) -> str:
    if _closed(d):
        label = f"{d.closed_by}: {d.reason}" if d.reason else d.closed_by
        return badge(label, _CLOSED_BY_COLOUR.get(d.closed_by, "#555"))
    if _open(d) and d.unanswerable:
        return badge(f"unanswerable: {d.unanswerable}", "#a33")
    return badge("open", "#b50")


def _dialog_row(d: Dialog) -> list[object]:
    status = _status(d)
    answer = ""
    if _closed(d):
        answer = {True: "accept", False: "dismiss", None: ""}[d.accepted]
        if d.prompt_text is not None:
            answer += f" {d.prompt_text!r}"
    return [d.id, d.type, status, d.message, clip(d.frame_id, 12), d.via, when(d.opened_at),
            answer]


_DIALOG_COLUMNS = ("id", "type", "status", "message", "frame", "via", "opened (UTC)", "answer")
_RAW = frozenset({2})


def dialog_html(d: Dialog) -> str:
    return dialogs_html([d])


def dialogs_html(dialogs: Iterable[Dialog], max_rows: int = MAX_ROWS,
                 total: int | None = None) -> str:
    return table(_DIALOG_COLUMNS, map(_dialog_row, dialogs), raw_columns=_RAW,
                 max_rows=max_rows, total=total)


#: Characters of a frame name shown (a name is page-controlled: any length).
NAME_SHOWN = 40


def _node_line(node: TreeNode) -> str:
    kind = badge("OOPIF", "#7a3") if node.is_oopif else ""
    # A name is page-controlled text: escaped and clipped like a URL.
    name = (f' <b title="{text(node.name, 400)}">{text(node.name, NAME_SHOWN)}</b>'
            if node.name else "")
    session = (f' <span style="color:#777">session {text(node.session_id, 12)}</span>'
               if node.session_id else "")
    return (f'<div style="padding-left:{node.depth * 16}px">{text(clip(node.frame_id, 12))}'
            f"{name} {kind} {text(node.url)}{session}</div>")


def frame_tree_html(tree: Tree) -> str:
    if tree.top is None:
        return '<div style="color:#777">no frames yet</div>'
    lines = [_node_line(n) for n in (tree.top, *tree.children)]
    if tree.truncated:
        lines.append('<div style="color:#777">… truncated (sup.frame_tree(full=True) has '
                     "every frame)</div>")
    return "".join(lines)


#: Lines of ``str(frame_tree)`` before the rest are counted instead.
TEXT_LINES = 100


def _plain(value: str, limit: int) -> str:
    """Clipped page text for a plain-text line: control characters (a newline that would
    forge a line, a terminal escape) shown escaped, as ``repr`` shows them."""
    return repr(clip(value, limit))[1:-1]


def _frame_id_shown(frame_id: str) -> str:
    """A frame id clipped to 12 characters, but a WebDriver classic one keeps its frame
    path (``page-BCC342…/0/1``): its window handle is the same for every frame."""
    handle, slash, path = frame_id.partition("/")
    if slash and path.replace("/", "").isdigit():
        return f"{clip(handle, 12)}/{path}"
    return clip(frame_id, 12)


def frame_tree_text(tree: Tree) -> str:
    """``str(tree)``: one frame a line, indented by depth; ``name='…'`` where the frame
    has a name, ``OOPIF`` for an out-of-process one."""
    if tree.top is None:
        return "<FrameTree: no frames yet>"
    nodes = (tree.top, *tree.children)
    lines = [f"<FrameTree {len(nodes)} frames{' (truncated)' if tree.truncated else ''}>"]
    for node in nodes[:TEXT_LINES]:
        parts = [_frame_id_shown(node.frame_id)]
        if node.name:
            parts.append(f"name={short_repr(node.name, NAME_SHOWN)}")
        if node.is_oopif:
            parts.append("OOPIF")
        parts.append(_plain(node.url, MAX_TEXT))
        lines.append("  " * (node.depth + 1) + " ".join(parts))
    if len(nodes) > TEXT_LINES:
        lines.append(f"  … {len(nodes) - TEXT_LINES} more frames")
    if tree.truncated:
        lines.append("  … truncated (sup.frame_tree(full=True) has every frame)")
    return "\n".join(lines)


def _console_row(e: ConsoleLine) -> list[object]:
    where = f"{e.url}:{e.line}" if e.url and e.line is not None else e.url
    kind = e.kind if e.source is None else f"{e.kind} ({e.source})"  # browser (network)
    return [when(e.at), kind, e.level, e.text, where]


def _pages_html(s: SnapshotParts) -> str:
    if len(s.pages) <= 1 and s.page_gone is None and not any(p.hazard for p in s.pages):
        return ""
    rows = [[clip(p.target_id, 12), "own page" if p.main else "popup",
             clip(p.opener_target_id, 12) if p.opener_target_id else "", p.url, p.frames,
             p.pending_dialogs, p.hazard or ""] for p in s.pages]
    gone = (f'<div style="color:#a33">the supervisor\'s page is gone: {text(s.page_gone)}</div>'
            if s.page_gone else "")
    more = " (more not shown)" if s.pages_truncated else ""
    return (f"<div><b>pages</b> ({len(s.pages)}{more}){gone}"
            + table(("target", "kind", "opener", "url", "frames", "dialogs", "hazard"), rows)
            + "</div>")


def snapshot_html(s: SnapshotParts, title: str = "cdpnb snapshot") -> str:
    state = badge("connected", "#2a7") if s.connected else badge("disconnected", "#a33")
    pending = dialogs_html(s.pending_dialogs, total=s.pending_total or None)
    # newest first: the last ones are what a reader looks for
    recent = dialogs_html(reversed(s.recent_dialogs), MAX_ROWS // 2)
    console = table(("at (UTC)", "kind", "level", "text", "where"),
                    map(_console_row, reversed(s.console_errors)), max_rows=MAX_ROWS // 2)
    return (
        '<div style="font-family:var(--jp-ui-font-family,sans-serif);font-size:12px">'
        f"<b>{text(title)}</b> {state} page {text(clip(s.page_target_id, 12))}"
        f"{_pages_html(s)}"
        f"<div><b>frames</b> ({len(s.frame_tree)}){frame_tree_html(s.frame_tree)}</div>"
        f"<div><b>pending dialogs</b> ({s.pending_total or len(s.pending_dialogs)})"
        f"{pending}</div>"
        f"<div><b>recent dialogs</b> ({len(s.recent_dialogs)}){recent}</div>"
        f"<div><b>console errors</b> ({len(s.console_errors)}){console}</div>"
        "</div>"
    )
