"""Terminal output that cannot be hijacked, and that copy-pastes whole (issue 25, items 5
and 7).

Item 5: what an endpoint (``/json/version``, its frames), a trace header or a file name
says reaches the terminal inert — no ESC, BEL, C1, bidi control or lone surrogate — yet
visible in escaped form, through ``cdpnb probe``, ``compare`` and ``replay`` run as
subprocesses (through pipes, and through a pseudo-terminal, where rich draws its
progress bars and status lines). The hostile endpoint is a loopback proxy in front of a
real Chromium that rewrites ``/json/version`` and sends one frame with a hostile method.

Item 7: at 80 columns every line fits and no token (a trace path, a method name, a
version) is cut: captured from the commands run on the traces in ``datasets/probes`` and
from ``cdpnb record`` on a real Chromium in an 80-column pseudo-terminal.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import gzip
import io
import json
import os
import pty
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import time
from collections.abc import AsyncIterator, Iterator
from http import HTTPStatus
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.text import Text
from websockets.asyncio.client import connect
from websockets.asyncio.server import ServerConnection, serve
from websockets.datastructures import Headers
from websockets.http11 import Request, Response

import cdpnb
from cdpnb.cli.output import Grid, InertConsole, Words, fit_widths, print_json
from cdpnb.probes import ScenarioServer
from cdpnb.terminal_text import UNSAFE, inert, inert_json

ROOT = Path(__file__).resolve().parent.parent
PROBES = ROOT / "datasets" / "probes"
CHROMIUM = PROBES / "chromium.native.jsonl.gz"
PLAYWRIGHT = PROBES / "chromium+playwright.native.jsonl.gz"
FIREFOX = PROBES / "firefox.native.jsonl.gz"

#: What a hostile far end says: retitle the terminal (OSC 0), clear it (CSI 2J), write
#: the clipboard (OSC 52), return the carriage, an 8-bit CSI and NEL (C1), a bidi
#: override, a zero-width space, and rich markup. Words apart, so a table can wrap them.
STEER = ("\x1b]0;pwned\x07 \x1b[2J \x1b]52;c;aGk=\x07 \rback \x9b31m\x85 \u202eesrever "
         "\u200b [link=http://evil.test]click[/link]")
#: How each shows once inert.
SHOWN = ("\\x1b]0;pwned\\x07", "\\x1b[2J", "\\x1b]52;c;aGk=\\x07", "\\x0dback", "\\x9b31m\\x85",
         "\\u202eesrever", "\\u200b", "[link=http://evil.test]click[/link]")
#: rich's own styling and cursor movement in a pseudo-terminal (SGR, erase, cursor
#: up, show/hide cursor): what remains after removing these must hold no ESC.
_RICH_CONTROL = re.compile(r"\x1b\[[0-9;?]*[ABCDHJKlhm]")


def cdpnb_command(*args: str, columns: int = 80, timeout: float = 120
                  ) -> subprocess.CompletedProcess[str]:
    """The command through pipes (no terminal), ``COLUMNS`` wide."""
    env = {**os.environ, "COLUMNS": str(columns)}
    return subprocess.run([sys.executable, "-m", "cdpnb.cli", *args], capture_output=True,
                          text=True, errors="surrogateescape", timeout=timeout, env=env,
                          cwd=ROOT)


def in_terminal(*args: str, columns: int = 80, timeout: float = 120,
                interrupt_after: float | None = None,
                env: dict[str, str] | None = None) -> tuple[int, str]:
    """The command in a pseudo-terminal ``columns`` wide (stdout and stderr both on it,
    as a user sees them): its exit status and everything written, as text. ``env``
    adds to (or overrides) the environment; ``NO_COLOR`` is dropped unless given."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    environment = {**os.environ, "COLUMNS": str(columns), "TERM": "xterm-256color",
                   **(env or {})}
    if "NO_COLOR" not in (env or {}):  # (the environment the tests run in may set it)
        environment.pop("NO_COLOR", None)
    process = subprocess.Popen([sys.executable, "-m", "cdpnb.cli", *args], stdin=follower,
                               stdout=follower, stderr=follower, env=environment, cwd=ROOT)
    os.close(follower)
    written = bytearray()
    began = time.monotonic()
    interrupted = False
    try:
        while True:
            if (interrupt_after is not None and not interrupted
                    and time.monotonic() - began > interrupt_after):
                process.send_signal(signal.SIGINT)
                interrupted = True
            assert time.monotonic() - began < timeout, bytes(written)[-2000:]
            ready, _, _ = select.select([leader], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(leader, 65536)
                except OSError:  # the follower side closed: the command ended
                    chunk = b""
                if not chunk:
                    break
                written += chunk
            elif process.poll() is not None:
                break
        status = process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
        os.close(leader)
    return status, bytes(written).decode("utf-8", "surrogateescape")


def screen_lines(written: str) -> list[str]:
    """What a pseudo-terminal capture shows, line by line: split at every carriage
    return, line feed, cursor move and erasure (each redraw of a status line is one
    line), rich's styling removed."""
    moved = re.sub(r"\x1b\[[0-9]*[ABCDHJK]", "\n", written)  # cursor moves, erasures
    return re.split(r"\r\n|\r|\n", _RICH_CONTROL.sub("", moved))


def assert_inert(*outputs: str, shown: tuple[str, ...] = SHOWN) -> None:
    """No character that could steer a terminal; each hostile piece visible, escaped."""
    everything = "\n".join(outputs)
    raw = UNSAFE.search(everything)
    assert raw is None, f"{raw.group()!r} reached the terminal: {everything[:3000]!r}"
    for piece in shown:
        assert piece in everything, f"{piece!r} is not shown: {everything[:3000]}"


def assert_inert_in_terminal(written: str, shown: tuple[str, ...] = SHOWN) -> None:
    """A pseudo-terminal capture: ESC only as rich's own styling and cursor movement,
    CR only as the terminal's line ends and rich's redraws (pipes show a page's CR)."""
    assert_inert("\n".join(screen_lines(written)), shown=shown)


def assert_fits(lines: list[str], columns: int = 80) -> None:
    too_wide = [line for line in lines if len(line) > columns]
    assert too_wide == [], f"{len(too_wide)} lines wider than {columns}: {too_wide[:3]}"


def assert_whole(lines: list[str], *tokens: str) -> None:
    """Each token on one line, uncut: what a copy-paste needs."""
    for token in tokens:
        assert any(token in line for line in lines), f"{token!r} is cut or missing:\n" + \
            "\n".join(lines)


# -- the sanitiser ------------------------------------------------------------------------


def test_every_control_a_terminal_obeys_is_shown_escaped_and_the_rest_stays() -> None:
    controls = ([chr(c) for c in range(0x20) if chr(c) not in "\t\n"] + ["\x7f"]
                + [chr(c) for c in range(0x80, 0xA0)]
                + list("\u061c\u200b\u200e\u200f\u2028\u2029\u202a\u202b\u202c\u202d\u202e"
                       "\u2060\u2066\u2067\u2068\u2069\ufeff\ufff9") + ["\ud800", "\udfff"])
    for control in controls:
        shown = inert(f"a{control}b")
        assert UNSAFE.search(shown) is None and shown.startswith("a\\") and shown.endswith("b")
        assert shown.encode("utf-8")  # printable: a lone surrogate no longer raises
    assert inert("\x1b]0;t\x07") == "\\x1b]0;t\\x07"
    assert inert("\u202e") == "\\u202e"
    # What a reader needs stays: tabs, line feeds, scripts, emoji joined by ZWJ, markup.
    kept = "a\tb\nc Ünïcode 日本語 👩\u200d💻 [b]x[/b] \\x1b"
    assert inert(kept) == kept
    assert inert(inert(STEER)) == inert(STEER)  # the escaped form is itself inert
    with pytest.raises(TypeError, match="text must be a str"):
        inert(b"\x1b")  # type: ignore[arg-type]


def test_json_stays_the_same_json_with_nothing_raw() -> None:
    value = {"Browser": "Chrome/1" + STEER + "\x7f\ud800", "list": [STEER]}
    document = inert_json(json.dumps(value, ensure_ascii=False, indent=1))
    assert UNSAFE.search(document) is None
    assert json.loads(document) == value
    assert "\\u202e" in document and "\\u009b" in document and "\\ud800" in document
    with pytest.raises(TypeError, match="document must be a str"):
        inert_json(None)  # type: ignore[arg-type]


def test_print_json_writes_no_raw_control(capsys: pytest.CaptureFixture[str]) -> None:
    print_json({"version": "Chrome/1" + STEER})
    out = capsys.readouterr().out
    assert UNSAFE.search(out) is None
    assert json.loads(out) == {"version": "Chrome/1" + STEER}


def printed(width: int, *renderables: object, terminal: bool = False) -> str:
    """What an InertConsole ``width`` wide prints of ``renderables`` (with rich's
    styling when ``terminal``)."""
    file = io.StringIO()
    console = InertConsole(width=width, file=file, force_terminal=terminal)
    for renderable in renderables:
        console.print(renderable)
    return file.getvalue()


def test_the_console_shows_page_text_inert_and_never_as_markup() -> None:
    written = printed(80, "hostile: " + STEER, Grid([(Text(inert("name")), Text(inert(STEER)))]),
                      Words("a · " + STEER), terminal=True)
    assert_inert(_RICH_CONTROL.sub("", written))


# -- the layout -----------------------------------------------------------------------------


def test_fit_widths_narrows_the_widest_and_never_below_a_word() -> None:
    assert fit_widths([30, 20], [10, 5], 60) == [30, 20]  # room for all: natural widths
    assert fit_widths([30, 20], [10, 5], 40) == [20, 20]
    assert fit_widths([30, 30], [10, 10], 40, weights=[1, 3]) == [10, 30]
    assert fit_widths([30, 20], [28, 15], 40) is None
    with pytest.raises(ValueError, match="differ in length"):
        fit_widths([1], [1, 2], 10)
    with pytest.raises(ValueError, match="weights must be > 0"):
        fit_widths([1], [1], 10, weights=[0])


_WORD = st.text(alphabet=st.sampled_from("abcdefghij./_-+0123456789"), min_size=1,
                max_size=40)
_CELL = st.lists(_WORD, min_size=0, max_size=6).map(" ".join)


@settings(max_examples=150, deadline=None)
@given(rows=st.lists(st.lists(_CELL, min_size=3, max_size=3), min_size=1, max_size=6),
       headers=st.lists(_WORD, min_size=3, max_size=3),
       width=st.integers(min_value=20, max_value=130),
       boxed=st.booleans(), sections=st.booleans())
def test_a_grid_keeps_every_word_whole_and_fits_every_line_it_can(
        rows: list[list[str]], headers: list[str], width: int, boxed: bool,
        sections: bool) -> None:
    grid = Grid([tuple(Text(c) for c in row) for row in rows],
                headers=tuple(Text(h) for h in headers), boxed=boxed, sections=sections,
                keys=2 if sections else 1)
    lines = printed(width, grid).splitlines()
    keys = 2 if sections else 1
    # (The headers of the key columns are not repeated when rows are printed as lines.)
    words = {word for row in rows for cell in row for word in cell.split()} | set(
        headers[keys:])
    for line in lines:
        # A line wider than the terminal is one word too wide for any line, whole.
        assert len(line.rstrip()) <= width or (
            len(line.split()) == 1 and line.split()[0].rstrip(":") in words), (width, line)
    shown = {word.rstrip(":") for line in lines for word in line.split()}
    missing = [w for w in words if w not in shown]
    assert missing == [], (width, missing, lines)


def test_a_status_line_breaks_between_its_parts_never_inside_one() -> None:
    status = ("recording  12.3 s · 1204 messages · 9 frames (3 OOPIF) · 2 dialogs (1 open) · "
              "0 console errors · connected")
    lines = printed(40, Words(status)).splitlines()
    assert lines == ["recording  12.3 s · 1204 messages", "9 frames (3 OOPIF) · 2 dialogs (1 open)",
                     "0 console errors · connected"]


def test_a_printed_path_wider_than_the_terminal_stays_whole_on_its_own_line() -> None:
    path = "/data/" + "very-long-directory-name/" * 5 + "chromium+playwright.native.jsonl.gz"
    lines = printed(60, f"recorded 1642 messages in 4.7 s to {path} (33 dialogs, "
                        "47 frames)").splitlines()
    assert lines == ["recorded 1642 messages in 4.7 s to", path, "(33 dialogs, 47 frames)"]


# -- item 5: a hostile endpoint and a hostile trace, through the commands ----------------


class HostileEndpoint:
    """A CDP endpoint on loopback in front of a real Chromium: ``/json/version`` names
    the browser with :data:`STEER` in it, and each connection gets one frame whose
    method is hostile (cdpnb logs it as a bad frame) before the browser's own."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _version(self, connection: ServerConnection, request: Request) -> Response | None:
        if request.path != "/json/version":
            return None  # the WebSocket handshake
        body = json.dumps({
            "Browser": "Chrome/156.0 " + ENDPOINT_STEER, "Protocol-Version": "1.3",
            "webSocketDebuggerUrl": f"ws://127.0.0.1:{self.port}/devtools/browser/x"}
        ).encode()
        return Response(HTTPStatus.OK, "OK", Headers({
            "Content-Type": "application/json", "Content-Length": str(len(body))}), body)

    async def _relay(self, client: ServerConnection) -> None:
        async with connect(self.upstream, max_size=None, compression=None,
                           ping_interval=None) as browser:
            await client.send(json.dumps({"method": "Page.evil" + STEER.split(" ")[0],
                                          "params": "not an object"}))

            async def pump(source: object, sink: object) -> None:
                async for frame in source:  # type: ignore[attr-defined]
                    await sink.send(frame)  # type: ignore[attr-defined]

            tasks = [asyncio.create_task(pump(client, browser)),
                     asyncio.create_task(pump(browser, client))]
            with contextlib.suppress(Exception):
                await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in tasks:
                task.cancel()

    @contextlib.asynccontextmanager
    async def serving(self) -> AsyncIterator[HostileEndpoint]:
        async with serve(self._relay, "127.0.0.1", 0, process_request=self._version,
                         max_size=None, compression=None, ping_interval=None) as server:
            self.port = next(iter(server.sockets)).getsockname()[1]
            yield self


@pytest.fixture(scope="module")
def own_chromium() -> Iterator[cdpnb.Backend]:
    """A Chromium of this module's own: the probe opens and closes pages in it."""
    with cdpnb.launch("chromium") as backend:
        yield backend


#: An endpoint's version with no "/" after the first: the matrix header shows what
#: follows the last one.
ENDPOINT_STEER = STEER.partition(" [link")[0]
_ENDPOINT_SHOWN = SHOWN[:-1]


@pytest.mark.browser
async def test_a_hostile_endpoint_reaches_the_terminal_inert_through_probe(
        own_chromium: cdpnb.Backend, tmp_path: Path) -> None:
    async with HostileEndpoint(own_chromium.cdp_url).serving() as endpoint:
        out = tmp_path / "probe"
        status, written = await asyncio.to_thread(
            in_terminal, "probe", "--backends", endpoint.url, "--reasons", "--out", str(out))
        done = await asyncio.to_thread(cdpnb_command, "probe", "--backends", endpoint.url,
                                       "--json")
    assert status == 0, written[-3000:]
    # In a terminal: the progress bar, the matrix, the log line of the bad frame (the
    # matrix's header shows the version's number alone, so of the version's text only
    # what the bad frame's method carries is on the screen, and shown).
    assert_inert_in_terminal(written, shown=("\\x1b]0;pwned\\x07",))
    # cdpnb's log line, above the progress bar (not written onto it), inert.
    assert any(line.startswith("cdpnb: ignored a bad CDP frame (bad-params): "
                               "Page.evil\\x1b]0;pwned\\x07") for line in screen_lines(written))
    # Through pipes, as JSON: nothing raw, the same words when parsed.
    assert done.returncode == 0, done.stderr
    assert_inert(done.stdout, done.stderr, shown=("\\u001b]0;pwned\\u0007", "\\u202e"))
    data = json.loads(done.stdout)
    assert data["backends"][endpoint.url]["version"] == "Chrome/156.0 " + ENDPOINT_STEER
    # The saved matrix (read with cat) is inert too.
    assert_inert((out / "matrix.md").read_text(), shown=_ENDPOINT_SHOWN)


@pytest.fixture(scope="module")
def hostile_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """chromium.native.jsonl.gz with a hostile header (the browser, the backend's kind
    and version) and a hostile file name."""
    lines = gzip.decompress(CHROMIUM.read_bytes()).decode().splitlines(keepends=True)
    header = json.loads(lines[0])
    header["browser"] = {"Browser": "Chrome/156 " + STEER}
    header["backend"] = {**header["backend"], "kind": "chromium " + STEER,
                         "version": "Chrome/156 " + STEER}
    path = tmp_path_factory.mktemp("hostile") / "run\x1b]0;pwned\x07\u202e.jsonl"
    path.write_text(json.dumps(header) + "\n" + "".join(lines[1:]))
    return path


_PATH_SHOWN = "run\\x1b]0;pwned\\x07\\u202e.jsonl"


def test_a_hostile_trace_header_reaches_the_terminal_inert_through_compare(
        hostile_trace: Path) -> None:
    done = cdpnb_command("compare", str(CHROMIUM), str(hostile_trace))
    assert done.returncode == 0, done.stderr
    assert_inert(done.stdout, done.stderr)
    as_json = cdpnb_command("compare", str(CHROMIUM), str(hostile_trace), "--json")
    assert as_json.returncode == 0, as_json.stderr
    assert_inert(as_json.stdout, as_json.stderr, shown=("\\u001b]0;pwned\\u0007", "\\u202e"))
    data = json.loads(as_json.stdout)
    assert data["traces"][1] == str(hostile_trace)  # the same name, escaped in JSON only
    # A file that is no trace, named hostile: the error names it inert.
    bad = hostile_trace.with_name("bad\x1b]0;pwned\x07\u202e.jsonl")
    bad.write_text("not json\n")
    failed = cdpnb_command("compare", str(CHROMIUM), str(bad))
    assert failed.returncode == 1
    assert_inert(failed.stdout, failed.stderr, shown=("bad\\x1b]0;pwned\\x07\\u202e.jsonl",))


def test_a_hostile_trace_header_reaches_the_terminal_inert_through_replay(
        hostile_trace: Path) -> None:
    done = cdpnb_command("replay", str(hostile_trace), "--duration", "0.5")
    assert done.returncode == 0, done.stderr
    assert_inert(done.stdout, done.stderr, shown=(*SHOWN, _PATH_SHOWN))
    as_json = cdpnb_command("replay", str(hostile_trace), "--duration", "0.5", "--json")
    assert as_json.returncode == 0, as_json.stderr
    assert_inert(as_json.stdout, as_json.stderr,
                 shown=("\\u001b]0;pwned\\u0007", "\\u202e"))
    info = json.loads(as_json.stdout)
    assert info["trace"] == str(hostile_trace) and STEER in info["recorded"]
    # In a terminal, with the status line drawn.
    status, written = in_terminal("replay", str(hostile_trace), "--duration", "1")
    assert status == 0, written
    assert_inert_in_terminal(written)


@pytest.mark.parametrize(("argv", "shown"), [
    (["probe", *STEER.split(" ")], SHOWN),  # "unrecognized arguments", quoted as typed
    # (argparse takes an option holding a space for a positional: none here)
    (["compare", "a", "b", "--bogus=" + STEER.replace(" ", "")], SHOWN),
    ([STEER], ()),  # no such command (argparse quotes it with repr)
    (["probe", "--repeats", STEER], ()),  # a subcommand's parser: invalid int value
    (["probe", "--out", STEER, "--backends", "no-such-browser"], ()),  # cdpnb's own check
], ids=["unrecognized", "unrecognized-option", "command", "value", "check"])
def test_a_usage_error_quotes_what_was_typed_inert(
        argv: list[str], shown: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    from cdpnb import cli

    with pytest.raises(SystemExit) as exited:
        cli.main(argv)
    assert exited.value.code == 2  # argparse's usage-error status, kept
    said = capsys.readouterr()
    assert said.err.startswith("usage: cdpnb"), said.err
    assert_inert(said.out, said.err, shown=shown)


def test_a_usage_error_writes_no_raw_control_byte() -> None:
    """As a user runs it: the bytes on stderr, not only the str argparse made."""
    done = cdpnb_command("probe", *STEER.split(" "))
    assert done.returncode == 2
    assert "unrecognized arguments" in done.stderr
    assert_inert(done.stdout, done.stderr)


# -- item 7: 80 columns, every token whole --------------------------------------------------

#: Tokens the 80-column compare used to cut (``Page.setLifecycleEven`` / ``tsEnabled``).
_METHODS = ("Page.setLifecycleEventsEnabled", "Runtime.runIfWaitingForDebugger",
            "Target.detachFromTarget", "Runtime.releaseObject", "Chrome/156.0.8078.114")


def test_compare_at_80_columns_keeps_method_names_and_versions_whole() -> None:
    done = cdpnb_command("compare", str(CHROMIUM), str(PLAYWRIGHT))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert_fits(lines)
    assert_whole(lines, *_METHODS, 'alert "probe": closed_by')
    # Wide enough for everything: one table, the sections as a column, nothing wrapped.
    wide = cdpnb_command("compare", str(CHROMIUM), str(PLAYWRIGHT), columns=120)
    lines = wide.stdout.splitlines()
    assert_fits(lines, 120)
    assert any(line.startswith("section") for line in lines)
    assert_whole(lines, *(f"median ms: {m}" for m in _METHODS[:3]))
    # Three traces at 80: the traces split into tables side by side, each line fits.
    three = cdpnb_command("compare", str(CHROMIUM), str(PLAYWRIGHT), str(FIREFOX))
    lines = three.stdout.splitlines()
    assert_fits(lines)
    assert_whole(lines, "Runtime.releaseObject", "Chrome/156.0.8078.114", "Firefox/153.8.0esr")


def test_replay_and_matrix_at_80_columns_keep_trace_paths_whole(tmp_path: Path) -> None:
    shown = PLAYWRIGHT.relative_to(ROOT).as_posix()
    done = cdpnb_command("replay", shown, "--duration", "0.5")
    assert done.returncode == 0, done.stderr
    assert_fits(done.stdout.splitlines() + done.stderr.splitlines())
    assert_whole(done.stdout.splitlines(), shown, "ws://127.0.0.1:")
    matrix = cdpnb_command("matrix", "datasets/probes", "--reasons", "--verbose")
    assert matrix.returncode == 0, matrix.stderr
    lines = matrix.stdout.splitlines()
    assert_fits(lines)
    assert_whole(lines, *(f"datasets/probes/{p.name}" for p in PROBES.glob("*.jsonl.gz")),
                 "browsingContext.userPromptOpened", "acceptInsecureCerts,")
    # A path wider than the terminal: whole, on a line of its own.
    deep = tmp_path.joinpath(*["a-directory-with-a-long-name"] * 4)
    deep.mkdir(parents=True)
    long_path = deep / PLAYWRIGHT.name
    shutil.copy(PLAYWRIGHT, long_path)
    done = cdpnb_command("replay", str(long_path), "--duration", "0.5")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert str(long_path) in lines
    assert_fits([line for line in lines if line != str(long_path)])


def test_probe_of_a_replay_in_an_80_column_terminal_cuts_nothing() -> None:
    status, written = in_terminal("probe", "--backends", f"replay:{PLAYWRIGHT}", "--reasons")
    assert status == 0, written[-3000:]
    lines = screen_lines(written)
    assert_fits(lines)
    assert "…" not in written
    # The progress line below the bar says what runs, whole; the reasons' words whole.
    assert any(re.fullmatch(r"replay:chromium\+playwright: [a-z_.]+\s*", line)
               for line in lines), lines
    assert_whole(lines, "replay:chromium+playwright  dialogs main", "dialog.alert.cross_site:",
                 "dialog.beforeunload.main:", "prompt()")


@pytest.mark.browser
def test_record_in_an_80_column_terminal_breaks_its_status_line_between_parts(
        site: ScenarioServer) -> None:
    out = Path(tempfile.mkdtemp(prefix="rec")) / "two-site.jsonl.gz"  # a short path
    try:
        status, written = in_terminal("record", site.url("/two-site"), "--out", str(out),
                                      "--backend", "headless-shell", "--duration", "4")
        assert status == 0, written
        lines = screen_lines(written)
        assert_fits(lines)
        assert "…" not in written
        drawn = [line for line in lines if line.startswith("recording ") and " s · " in line]
        assert drawn, lines
        # Every part of the status, whole, on some line of each redraw.
        for part in ("messages", "frames (", "OOPIF)", "dialogs (0 open)", "console errors",
                     "connected"):
            assert any(part in line for line in lines), (part, lines)
        assert_whole(lines, str(out))
        assert any(line.startswith("recorded ") for line in lines)
    finally:
        shutil.rmtree(out.parent, ignore_errors=True)
