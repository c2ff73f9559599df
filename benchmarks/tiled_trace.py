"""A trace of any length made of real recordings, tiled one after another, each tile a
connection of its own, as a long run with reconnects would hold them: the probe traces
of ``datasets/probes`` (dialogs, frames, OOPIFs, many methods; they never enable the
Network domain and their pages log nothing) and ``data/browsing.jsonl.gz``
(``record_browsing.py``: Chromium with Network and console traffic), three times per
round, so about half of the messages come from each.

What a tile changes so the whole is one valid trace (``Trace.load`` scans it with
every check it makes; ``bench_trace.py`` says whether the scan vouched for it):

- ``seq`` numbers every line of the file, 1, 2, ...;
- ``t`` and ``wall`` go on from the tile before (each line keeps its distance from its
  recording's first line; 50 ms between tiles);
- the 32-hex-digit ids Chromium gives targets, frames, sessions and loaders get the
  tile's number added to their last eight digits (so each tile's frames and sessions
  are new ones, as in a long run, and the ``session_id`` categories grow with it);
- cdpnb's dialog ids (``"dialog_id":"d-N"``) go on from the dialogs the tiles before
  opened (the fold numbers dialogs over the whole run, not per connection);
- the connections' generations (``"generation":N`` in ``cdpnb.connected``,
  ``connectionReady``, ``disconnected``) go on from the tiles before, as one
  supervisor's reconnects number them: the fold takes a connection whose generation is
  not newer for an old one's late news and keeps the state it has, so tiles that all
  said 1 piled every earlier tile's pages and frames into the state (83 pages and 119
  frames after 200k lines, where a run holds its own), and each navigation's scan of
  the frame table cost 3-4× a real one's.

Command ids are left as they are: each recording starts with a ``cdpnb.connected``
note, and ids restart with a connection. Payloads are otherwise the bytes the browsers
sent (their numbers spelt as Chromium spells them, their escapes), which is the point.
"""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from cdpnb.trace import Trace

__all__ = ["DATASETS", "Recording", "recordings", "write_tiled"]

DATASETS = Path(__file__).resolve().parent.parent / "datasets" / "probes"
BROWSING = Path(__file__).resolve().parent / "data" / "browsing.jsonl.gz"
#: Tiles of the browsing recording per round of the probe traces (4.5k messages against
#: the CDP probe traces' 12.4k: about half of each).
BROWSING_TILES = 3
_PREFIX = re.compile(rb'\{"seq":\d+,"t":([^,]+),"wall":([^,]+),"dir":"(send|recv|note|fault)"')
_HEX_ID = re.compile(rb'"([0-9A-F]{24})([0-9A-F]{8})"')
_DIALOG_ID = re.compile(rb'"dialog_id":"d-(\d+)"')
_GENERATION = re.compile(rb'"generation":(\d+)')
#: Seconds between one tile's last line and the next one's first.
_GAP = 0.05


@dataclass
class Recording:
    """One recorded trace's message lines, split for tiling."""

    name: str
    protocol: str
    mono: list[float]  # each line's t, from the recording's first line
    wall: list[float]
    direction: list[str]
    rest: bytes  # each line after its "wall" field, newline-separated
    dialogs: int  # how many dialogs its fold opens
    generations: int  # how many connections it holds (its last generation)

    def __len__(self) -> int:
        return len(self.mono)


def recordings(protocol: str = "cdp") -> list[Recording]:
    """The recordings of ``protocol`` (``cdp`` or ``bidi``: the probe traces only) one
    round of tiles takes, read for tiling."""
    paths = sorted(DATASETS.glob("*.jsonl.gz"))
    if protocol == "cdp":
        paths += [BROWSING] * BROWSING_TILES
    found = []
    for path in paths:
        with gzip.open(path, "rb") as file:
            lines = file.read().splitlines()
        if json.loads(lines[0]).get("protocol", "cdp") != protocol:
            continue
        mono, wall, direction, rests = [], [], [], []
        for line in lines[1:]:
            match = _PREFIX.match(line)
            if match is None:
                assert line.startswith(b'{"cdpnb_trace_end"'), (path, line[:80])
                continue
            mono.append(float(match[1]))
            wall.append(float(match[2]))
            direction.append(match[3].decode())
            rests.append(line[match.end(2):])
        dialogs = Trace.load(path).final_state().dialog_seq
        rest = b"\n".join(rests)
        generations = max((int(g) for g in _GENERATION.findall(rest)), default=0)
        found.append(Recording(path.name, protocol, [t - mono[0] for t in mono],
                               [w - wall[0] for w in wall], direction, rest, dialogs,
                               generations))
    return found


def _tiles(sources: list[Recording], messages: int) -> Iterator[tuple[int, Recording, int]]:
    """(tile number, recording, lines of it to take) until ``messages`` lines."""
    tile = 0
    while messages > 0:
        for source in sources:
            take = min(len(source), messages)
            yield tile, source, take
            messages -= take
            tile += 1
            if not messages:
                return


def write_tiled(path: Path, messages: int, protocol: str = "cdp") -> dict[str, int]:
    """Write a trace of ``messages`` message lines to ``path`` (plain JSONL); the
    counts of its footer."""
    sources = recordings(protocol)
    counts: Counter[str] = Counter()
    seq, mono, wall, dialogs, generations = 0, 10_000.0, 1_795_000_000.0, 0, 0
    with open(path, "wb") as out:
        out.write(json.dumps({
            "cdpnb_trace": 2, "protocol": protocol, "cdpnb": "bench", "started_at": wall,
            "started_mono": mono, "backend": {"kind": "tiled"},
            "meta": {"tiled_from": [s.name for s in sources]}},
            separators=(",", ":")).encode() + b"\n")
        for tile, source, take in _tiles(sources, messages):
            rest = _renamed(source.rest, tile, dialogs, generations)
            lines = rest.split(b"\n", take)[:take]
            out.write(b"".join(
                b'{"seq":%d,"t":%r,"wall":%r' % (seq + i + 1, mono + t, wall + w) + line + b"\n"
                for i, (t, w, line) in enumerate(zip(source.mono, source.wall, lines,
                                                     strict=False))))
            counts.update(source.direction[:take])
            seq += take
            mono += source.mono[take - 1] + _GAP
            wall += source.wall[take - 1] + _GAP
            dialogs += source.dialogs
            generations += source.generations
        footer = {"cdpnb_trace_end": 2, "ended_at": wall, "counts": dict(counts)}
        out.write(json.dumps(footer, separators=(",", ":")).encode() + b"\n")
    return dict(counts)


def _renamed(rest: bytes, tile: int, dialogs: int, generations: int) -> bytes:
    """A tile's lines with its own ids and generations (see the module's docstring)."""
    if tile:
        rest = _HEX_ID.sub(lambda m: b'"%s%08X"' % (m[1], (int(m[2], 16) + tile) & 0xFFFFFFFF),
                           rest)
    if dialogs:
        rest = _DIALOG_ID.sub(lambda m: b'"dialog_id":"d-%d"' % (int(m[1]) + dialogs), rest)
    if generations:
        rest = _GENERATION.sub(lambda m: b'"generation":%d' % (int(m[1]) + generations), rest)
    return rest
