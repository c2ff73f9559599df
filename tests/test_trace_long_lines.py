"""A trace line far longer than the rest (a 20 MB alert text, a huge console value):
each reader holds it about twice, never more (issue 38: "a trace with one 2 GiB line
peaks at 4 GiB"), and the copy check still tells a line written twice.

Measured with a 300 MiB line before: ``Trace.load`` peaked at 2.76x the file (its read
buffer doubled to 512 MiB, past the file's end) and ``read_trace`` at 3.05x (the line
joined from its parts, stripped, kept whole for the copy check, its bytes alive
through the parse); now 2.03x and 2.05x: the line's text and its value.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cdpnb.protocol import Event
from cdpnb.trace.reader import read_trace
from cdpnb.trace.recorder import Recorder

MiB = 1 << 20


def _console(value: str, mono: float) -> Event:
    return Event("Runtime.consoleAPICalled",
                 {"type": "log", "args": [{"type": "string", "value": value}]}, "S",
                 1000.0 + mono, mono)


def _write(path: Path, *values: str) -> None:
    recorder = Recorder(path, backend={"kind": "test"})
    for n, value in enumerate(("before", *values, "after")):
        recorder(_console(value, float(n)))
    recorder.close()


#: A reader in a process of its own, so that its peak is its own: its peak RSS (KiB).
#: VmHWM, not getrusage's ru_maxrss: Linux carries the parent's high-water mark into
#: ru_maxrss across exec (a child of a 600 MiB pytest "peaked" at 600 MiB, reading
#: nothing), VmHWM is the child's own memory's.
MEASURE = """
import re, sys
from cdpnb.trace import Trace
from cdpnb.trace.reader import read_trace
reader, path = sys.argv[1:]
kept = Trace.load(path).events() if reader == "load" else read_trace(path)
with open("/proc/self/status") as status:
    print(re.search(r"VmHWM:\\s+(\\d+) kB", status.read())[1])
"""


def _peak(reader: str, path: Path) -> int:
    done = subprocess.run([sys.executable, "-c", MEASURE, reader, str(path)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return int(done.stdout) * 1024


@pytest.mark.parametrize("reader", ["load", "read_trace"])
def test_a_long_line_costs_a_reader_about_twice_its_length(tmp_path: Path,
                                                           reader: str) -> None:
    small, big = tmp_path / "small.jsonl", tmp_path / "big.jsonl"
    _write(small, "x" * 1000)
    _write(big, "x" * (140 * MiB))  # (past 128 MiB: the buffer doubled to 256 MiB)
    # What the long line adds to the peak of the same reader on a trace without it.
    added = _peak(reader, big) - _peak(reader, small)
    size = big.stat().st_size
    # Its text and its value (2.0x); the buffer that doubled past the file's end made
    # Trace.load 2.36x here, joining the line's parts made read_trace 3.1x.
    assert added < 2.2 * size, f"{reader} added {added / size:.2f}x the file's size"


def test_a_long_line_written_twice_is_left_out_once(tmp_path: Path) -> None:
    """A long line is remembered by its digest for the copy check: the same bytes again
    are a line written twice, left out (``strict=False``); the same value under another
    line number is a message of its own, kept."""
    path = tmp_path / "twice.jsonl"
    long_value = "y" * (2 * MiB)
    _write(path, long_value, long_value)
    lines = path.read_bytes().split(b"\n")
    repeated = next(n for n, line in enumerate(lines) if len(line) > MiB)
    lines.insert(repeated + 1, lines[repeated])
    path.write_bytes(b"\n".join(lines))
    _head, records, _footer, problems = read_trace(path, strict=False)
    values = [r.params["args"][0]["value"] for r in records if isinstance(r, Event)]
    assert values == ["before", long_value, long_value, "after"]
    assert problems == [f"{path.name} line {repeated + 2} repeats line {repeated + 1} byte "
                        "for byte; left out"]
    assert json.loads(lines[repeated])["seq"] != json.loads(lines[repeated + 2])["seq"]
