"""A trace file's bytes, decompressed, in large blocks: what the columnar scan reads.

Plain ``.jsonl`` is read as it is; gzip and zstd (``.jsonl.zst``) are told by their
magic bytes, whatever the name says, and decompressed as the line-by-line reader
decompresses them (``compressed.decompressed``), by a thread of their own, ahead of the
scan (zlib and zstd let go of the GIL while they work), so their decompression costs
little more than reading a plain file.
Blocks end anywhere, not at line ends. Anything that is not a clean stream (data that
does not decompress, bytes after the end of the compressed data) stops the scan with
``Refused``: the line-by-line reader then reads the file and names the damage by its
byte offset. A stream that simply stops is a crash, not damage: every byte that
decompressed is yielded, and the scan finds the last line cut short.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path
from queue import Full, Queue
from typing import Any

from cdpnb.trace.compressed import GZIP_MAGIC, ZSTD_MAGIC, Damaged, decompressed

__all__ = ["CHUNK", "GZIP_MAGIC", "ZSTD_MAGIC", "LineBlocks", "Refused", "blocks", "compression"]

#: Bytes of a plain file read per block: big enough that the per-block
#: overhead vanishes, small enough that a block's lines stay in the CPU cache while the
#: scan works on them.
CHUNK = 8 << 20


class Refused(Exception):
    """The columnar scan cannot vouch for this file; the line-by-line reader takes over
    (and names what is wrong, if anything is)."""


def compression(path: Path) -> str:
    """``"gzip"``, ``"zstd"`` or ``"plain"``, by the file's first bytes."""
    with open(path, "rb") as probe:
        magic = probe.read(4)
    if magic.startswith(GZIP_MAGIC):
        return "gzip"
    if magic == ZSTD_MAGIC:
        return "zstd"
    return "plain"


class LineBlocks:
    """The decompressed bytes of ``path`` as blocks of whole lines: each item is
    ``(buffer, length)``, its first ``length`` bytes ending with a newline; ``tail`` is
    what followed the last newline, once the blocks are read."""

    def __init__(self, path: Path, kind: str) -> None:
        self.path, self.kind = path, kind
        self.tail = b""

    def __iter__(self) -> Iterator[tuple[bytes | bytearray, int]]:
        if self.kind == "plain":
            yield from self._plain()
            return
        try:
            for block in _ahead(blocks(self.path, self.kind)):
                data = self.tail + block if self.tail else block
                cut = data.rfind(b"\n") + 1
                self.tail = data[cut:]
                if cut:
                    yield data, cut
        except Damaged as damage:
            raise Refused(damage.detail) from None

    def _plain(self) -> Iterator[tuple[bytes | bytearray, int]]:
        # One buffer, read into again for each block after the last block's tail: no
        # fresh memory to fault in and zero per block (that cost as much as the reading),
        # no copy to join a line cut in two. The consumer keeps nothing of a block.
        buffer = bytearray(CHUNK)
        size = 0  # the tail of the last block, moved to the front
        with open(self.path, "rb", buffering=0) as raw:
            while True:
                if size == len(buffer):  # a line longer than the buffer
                    # Twice as long, but never past what the file has left: a 300 MiB
                    # line doubled it to 512 MiB (Trace.load peaked at 2.7x the file).
                    # (A file whose size says nothing more, growing or not a regular
                    # file, gets a block's worth: an empty read is the end, not this.)
                    left = os.fstat(raw.fileno()).st_size - raw.tell()
                    buffer += bytes(min(len(buffer), left) if left > 0 else CHUNK)
                got = raw.readinto(memoryview(buffer)[size:])
                if not got:
                    self.tail = bytes(buffer[:size])
                    return
                end = size + got
                cut = buffer.rfind(b"\n", 0, end) + 1
                if cut:
                    yield buffer, cut
                size = end - cut
                buffer[:size] = buffer[cut:end]


def blocks(path: Path, kind: str, *, locate: bool = False) -> Iterator[bytes]:
    """The decompressed bytes of ``path`` (``kind`` from :func:`compression`), in blocks
    that end anywhere; ``compressed.Damaged`` where a compressed file stops making sense
    (its bad byte found if ``locate``)."""
    if kind == "plain":
        with open(path, "rb") as raw:
            while block := raw.read(CHUNK):
                yield block
        return
    yield from decompressed(path, kind, locate=locate)


def _ahead(items: Iterator[bytes], depth: int = 2) -> Iterator[bytes]:
    """``items``, produced by a thread of their own up to ``depth`` ahead of the caller;
    its error raised here. The thread stops when the caller does."""
    queue: Queue[tuple[bool, Any]] = Queue(depth)
    stop = threading.Event()

    def put(done: bool, value: Any) -> bool:
        while not stop.is_set():
            try:
                queue.put((done, value), timeout=0.1)
                return True
            except Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not put(False, item):
                    return
            put(True, None)
        except BaseException as exc:  # handed to the caller, raised there
            put(True, exc)

    threading.Thread(target=produce, name="cdpnb-trace-read", daemon=True).start()
    try:
        while True:
            done, value = queue.get()
            if done:
                if value is not None:
                    raise value
                return
            yield value
    finally:
        stop.set()
