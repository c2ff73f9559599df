"""Issue 39, the first hour in words: counts in the right number everywhere the CLI
prints them (item h), help texts that say what is true at 80 columns (item i), and the
hint for a dialog cdpnb had to release said in plain words (item j).

The counts are read from the functions that write each line, given a state or a
backend that holds one of each; the help texts from ``cdpnb … -h`` run as a user runs
it; the hint from a scripted Chromium that orphans a dialog as Chromium 156 does.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time
import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import cdpnb
from cdpnb.cli import live
from cdpnb.cli import proxy as proxy_cli
from cdpnb.cli.counts import count
from cdpnb.state import BrowserState, FrameInfo, PendingDialog
from cdpnb.supervisor.recovery import released_hint
from cdpnb.testing import ScriptedBrowser, ScriptedCommand
from cdpnb.trace import Recorder

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = ("probe", "record", "replay", "proxy", "matrix", "compare", "campaign", "report")


def help_of(*command: str) -> str:
    done = subprocess.run([sys.executable, "-m", "cdpnb.cli", *command, "-h"],
                          capture_output=True, text=True, timeout=60, cwd=ROOT,
                          env={**os.environ, "COLUMNS": "80"})
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return done.stdout


def words(text: str) -> str:
    return " ".join(text.split())


# -- h. counts ------------------------------------------------------------------------------

def test_a_count_is_singular_for_one_only() -> None:
    assert [count(n, "console error") for n in (0, 1, 2)] == [
        "0 console errors", "1 console error", "2 console errors"]
    assert count(1, "OOPIF") == "1 OOPIF" and count(3, "OOPIF") == "3 OOPIFs"
    assert count(2, "body", "bodies") == "2 bodies"


def _state_with_one_of_each() -> BrowserState:
    frames = {"top": FrameInfo(frame_id="top", session_id="S"),
              "kid": FrameInfo(frame_id="kid", parent_frame_id="top", session_id="K",
                               is_oopif=True)}
    dialog = PendingDialog(id="d-1", type="alert", message="hi", opened_at=1.0)
    return BrowserState(frames=frames, pending_dialogs=(dialog,), dialog_seq=1,
                        console_errors_total=1)


def test_records_status_line_says_one_of_each_in_the_singular() -> None:
    one = SimpleNamespace(state=_state_with_one_of_each(), connected=True, alive=True,
                          recorder=SimpleNamespace(counts={"Page.enable": 1}))
    line = live._record_status(one, time.monotonic())  # type: ignore[arg-type]
    assert re.fullmatch(r"recording +\d+\.\d s · 1 message · 2 frames \(1 OOPIF\) · "
                        r"1 dialog \(1 open\) · 1 console error · connected", line), line
    none = SimpleNamespace(state=BrowserState(), connected=False, alive=False, recorder=None)
    line = live._record_status(none, time.monotonic())  # type: ignore[arg-type]
    assert line.endswith("0 messages · 0 frames (0 OOPIFs) · 0 dialogs (0 open) · "
                         "0 console errors · down"), line


def test_replay_and_proxy_status_lines_count_in_the_singular() -> None:
    backend = SimpleNamespace(connections=1, unmatched=["Page.reload"])
    line = live._replay_status(backend, time.monotonic())  # type: ignore[arg-type]
    assert line.endswith(" s · 1 connection · 1 unmatched command"), line
    px = SimpleNamespace(mode="record", connections=1, recordings=[Path("a.jsonl")],
                         divergence=None)
    line = proxy_cli._status(px, time.monotonic())  # type: ignore[arg-type]
    assert line.endswith(" s · 1 connection · recording 1 file"), line


# -- i. help texts ----------------------------------------------------------------------------

@pytest.mark.parametrize("command", ["", *COMMANDS])
def test_every_help_fits_80_columns(command: str) -> None:
    text = help_of(*([command] if command else []))
    wide = [line for line in text.splitlines() if len(line) > 80]
    assert wide == [], wide
    assert not any(line != line.rstrip() for line in text.splitlines())


def test_cdpnbs_help_names_the_four_protocols() -> None:
    text = words(help_of())
    assert ("(the Chrome DevTools Protocol, WebDriver BiDi, WebDriver classic, the WebKit "
            "Inspector Protocol)") in text
    assert "serve a recorded trace as a CDP endpoint" not in text  # (BiDi too)


def test_replays_help_names_every_compression_the_reader_reads(tmp_path: Path) -> None:
    text = words(help_of("replay"))
    assert "TRACE a trace: .jsonl, .jsonl.gz or .jsonl.zst" in text
    assert "WebDriver BiDi at ws://…/session" in text and "cdpnb proxy --replay" in text
    # ... and it does read each: the same recording, written three ways
    trace = cdpnb.Trace.load(ROOT / "datasets" / "probes" / "chromium.native.jsonl.gz")
    for suffix in (".jsonl", ".jsonl.gz", ".jsonl.zst"):
        recorder = Recorder(tmp_path / f"t{suffix}", endpoint="ws://x/")
        for message in trace.messages[:20]:
            recorder(message)
        recorder.close()
        assert len(cdpnb.Trace.load(tmp_path / f"t{suffix}").messages) == 20


def test_records_help_names_its_protocols_and_the_dialog_answers() -> None:
    text = words(help_of("record"))
    assert "(CDP, WebDriver BiDi or WebDriver classic)" in text
    assert "--dialogs {wait,accept,dismiss} what to do when the page opens an alert, " \
           "confirm or prompt: accept it (OK; a prompt gets its default text), dismiss it " \
           "(Cancel)" in text
    assert "--policy" not in text and "must_respond" not in text  # the supervisor's words
    assert "supervisor's page" not in text


# -- j. the hint for a released dialog ----------------------------------------------------

PAGE_URL = "http://127.0.0.1:9/page"
CHILD = "CHILD-FRAME"


def test_the_released_hint_says_what_happened_and_what_to_do() -> None:
    orphan = PendingDialog(id="d-2", type="prompt", message="m", frame_id="F1",
                           opened_at=1.0, unanswerable="orphaned")
    hint = released_hint(orphan)
    assert hint.startswith("d-2, a prompt in frame F1, could not be answered: it opened "
                           "while a dialog of another frame of the page was open")
    assert "the page's prompt() returned null" in hint and "reloading nothing" in hint
    assert "--dialogs accept" in hint and "policy='auto_accept'" in hint
    for jargon in ("orphaned", "same-document", "handle", "top frame"):
        assert jargon not in hint, jargon
    lost = released_hint(orphan.model_copy(update={"unanswerable": "handle_lost",
                                                   "type": "confirm", "frame_id": None}))
    assert lost.startswith("d-2, a confirm in the page, could not be answered: Chromium "
                           "says no dialog is showing")
    assert "confirm() returned false" in lost and lost.endswith("Nothing to do.")


async def test_a_supervisor_gives_the_plain_hint_when_it_releases_an_orphan() -> None:
    """Chromium 156 (measured, cdpnb/state/dialogs.py): a dialog opened while another
    frame's is open closes the older one and can never be answered itself; cdpnb
    releases it, and the warning a user sees is the plain one."""
    b = ScriptedBrowser(has_browser_handler=True)

    @b.on("Page.getNavigationHistory")
    def history(command: ScriptedCommand) -> dict[str, Any]:
        return {"currentIndex": 0, "entries": [{"id": 1, "url": PAGE_URL, "title": ""}]}

    @b.on("Page.navigate")
    def navigate(command: ScriptedCommand) -> dict[str, Any]:
        b.push("Page.javascriptDialogClosed", {"frameId": b.page_frame_id, "result": False,
                                               "userInput": ""}, command.session_id)
        return {"frameId": b.page_frame_id}

    sup = await cdpnb.Supervisor.start(b, dialog_timeout_s=30)
    try:
        await b.emit("Page.frameAttached", {"frameId": CHILD,
                                            "parentFrameId": b.page_frame_id},
                     b.page_session_id)
        await b.open_dialog("prompt", "one", frame_id=CHILD)
        await b.open_dialog("prompt", "two")
        await b.emit("Page.javascriptDialogClosed", {"frameId": CHILD, "result": False,
                                                     "userInput": ""}, b.page_session_id)
        deadline = time.monotonic() + 5
        while not any("released it" in h for h in sup.hints):
            assert time.monotonic() < deadline, sup.hints
            await asyncio.sleep(0.01)
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            sup.snapshot()  # (a hint is warned at the user's next call)
        hints = [str(w.message) for w in said if issubclass(w.category, cdpnb.CdpnbWarning)]
        assert hints == [released_hint(PendingDialog(
            id="d-2", type="prompt", message="two", frame_id=b.page_frame_id, opened_at=0,
            unanswerable="orphaned"))], hints
    finally:
        await sup.stop()
