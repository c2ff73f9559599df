"""gzip and zstd traces, written and read: the one place that knows the two formats.

Writing: the recorder's streams, crash-safe at each flush. ``flush`` ends the current
zstd block (gzip: a sync flush), so everything written before it decompresses even if
the process dies before ``close`` (which ends the frame or member, with its checksum).

Reading: ``decompressed`` is the one decompression of a trace file, for the columnar
scan and for the line-by-line reader alike. It reads one gzip member (zstd frame) after
another, as the command-line tools do; a stream that simply stops is a crash, not
damage (every byte that decompressed is given). Data that does not decompress, or
bytes after the end that are not another member, raise ``Damaged``, with the first bad
byte found when asked (``locate``): the scan does not ask (it hands the file to the
reader), the reader does, to name the byte and keep every whole line before it.
(Measured reading a million real messages, two cores: the scan and the line reader
take what they took with a decompression each, within the machine's noise.)

Measured on the development machine (2 cores), compressing the dataset traces in
batches of 32 lines with a flush after each, as the recorder writes a read's frames:
zstd level 3 424 MB/s to 9.2× smaller, level 1 559 MB/s / 9.3×; gzip through the
standard library's zlib at level 9 (``gzip.GzipFile``'s default, what the recorder
used) 46-49 MB/s / 9.7×, level 1 157-200 MB/s / 6.5×; through ISA-L (``isal``) at
level 2 507-575 MB/s / 7.2×, zlib-ng level 1 556-643 MB/s / 5.5×. At level 9 the
reader thread fell below a bare client's speed while recording (0.74×, issue 27); ISA-L
at level 2 keeps up and writes a plain gzip stream any ``gzip`` reads.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

__all__ = ["GZIP_MAGIC", "ZSTD_MAGIC", "Damaged", "GzipWriter", "ZstdWriter", "decompressed"]

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"

#: zstd's default: within a few percent of the best ratio at this speed.
LEVEL = 3
#: ISA-L's level 2 (of 0-3): as fast as its level 1 here, a little smaller.
GZIP_LEVEL = 2


class _Output(Protocol):
    closed: bool

    def write(self, data: bytes, /) -> int: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...


class _Compressor(Protocol):
    def compress(self, data: bytes, /) -> bytes: ...

    def flush(self, mode: int = ..., /) -> bytes: ...


class _CompressingWriter:
    """A write-only binary file that compresses into ``file`` (a binary file opened for
    writing, closed by ``close``); ``flush`` ends a block everything before decodes."""

    def __init__(self, file: _Output, compressor: _Compressor, block_end: int) -> None:
        self._file = file
        self._compressor = compressor
        self._block_end = block_end

    def write(self, data: bytes) -> int:
        self._file.write(self._compressor.compress(data))
        return len(data)

    def flush(self) -> None:
        self._file.write(self._compressor.flush(self._block_end))
        self._file.flush()

    def close(self) -> None:
        if self._file.closed:
            return
        try:
            self._file.write(self._compressor.flush())
        finally:
            self._file.close()


class ZstdWriter(_CompressingWriter):
    """zstd at ``LEVEL``, with its checksum; ``flush`` ends a block."""

    def __init__(self, file: _Output) -> None:
        import zstandard

        super().__init__(file, zstandard.ZstdCompressor(level=LEVEL, write_checksum=True)
                         .compressobj(), zstandard.COMPRESSOBJ_FLUSH_BLOCK)


class GzipWriter(_CompressingWriter):
    """One gzip member through ISA-L's deflate at ``GZIP_LEVEL``; ``flush`` is a sync
    flush."""

    def __init__(self, file: _Output) -> None:
        from isal import isal_zlib

        # wbits 31: a gzip member (header and CRC-32 trailer), not a raw zlib stream.
        super().__init__(file, isal_zlib.compressobj(GZIP_LEVEL, isal_zlib.DEFLATED, 31),
                         isal_zlib.Z_SYNC_FLUSH)


# -- reading --------------------------------------------------------------------------------

#: Compressed bytes read at a time: a block of a dozen megabytes once decompressed (big
#: enough that the per-block overhead vanishes).
CHUNK = 1 << 20


class Damaged(Exception):
    """The compressed bytes of a trace stop making sense; ``detail`` says how, ``offset``
    where (the first bad byte in the file; None when it was not looked for), and
    ``good`` is what the block that failed decompressed to before it: its whole lines
    are still good."""

    def __init__(self, detail: str, offset: int | None = None, good: bytes = b"") -> None:
        super().__init__(detail, offset, good)
        self.detail, self.offset, self.good = detail, offset, good

    def __str__(self) -> str:
        return self.detail


def _shortest_failing(fails: Callable[[int], bool], low: int, high: int) -> int:
    """The least length in ``[low, high]`` for which ``fails``, knowing ``high`` does: a
    prefix that fails stays failed when it grows, so a binary search finds it."""
    while low < high:
        middle = (low + high) // 2
        if fails(middle):
            high = middle
        else:
            low = middle + 1
    return low


class _Format:
    """A compressed format's reading: magic bytes, a fresh decompressor, its error, and
    whether a decompressor's state can be copied (zlib's can, zstd's cannot)."""

    def __init__(self, name: str, magic: bytes, make: Callable[[], Any],
                 error: type[Exception], copies: bool) -> None:
        self.name, self.magic, self.make, self.error = name, magic, make, error
        self.copies = copies

    def _fails(self, decompressor: Any, data: bytes) -> bool:
        try:
            decompressor.decompress(data)
        except self.error:
            return True
        return False

    def recover(self, path: Path, member: tuple[int, int], before: Any, data: bytes,
                offset: int) -> tuple[int, bytes]:
        """Where ``data`` (at ``offset`` in the file) fails, and what it decompresses to
        before that byte. ``member``: where the member began and how much it gave before
        ``data``; ``before``: a copy of the decompressor's state before ``data`` (gzip),
        searched within ``data``; zstd's member is decompressed again from its start,
        once per step."""
        if before is not None:
            bad = _shortest_failing(lambda n: self._fails(before.copy(), data[:n]),
                                    1, len(data)) - 1
            return offset + bad, before.decompress(data[:bad])
        start, given = member
        with open(path, "rb") as raw:
            raw.seek(start)
            blob = raw.read(offset + len(data) - start)
        bad = _shortest_failing(lambda n: self._fails(self.make(), blob[:n]),
                                offset - start + 1, len(blob)) - 1
        return start + bad, self.make().decompress(blob[:bad])[given:]

    def failure(self, exc: Exception) -> str:
        if "incorrect data check" in str(exc) or "doesn't match checksum" in str(exc):
            return (f"the {self.name} checksum at the end of the stream does not match what "
                    f"{'inflated' if self.name == 'gzip' else 'decompressed'}: a byte before "
                    "it is damaged")
        verb = "inflate" if self.name == "gzip" else "decompress"
        return f"the {self.name} data does not {verb} ({exc})"


def _format(kind: str) -> _Format:
    if kind == "gzip":
        return _Format("gzip", GZIP_MAGIC, lambda: zlib.decompressobj(wbits=31), zlib.error,
                       copies=True)
    import zstandard

    return _Format("zstd", ZSTD_MAGIC, lambda: zstandard.ZstdDecompressor().decompressobj(),
                   zstandard.ZstdError, copies=False)


def decompressed(path: Path, kind: str, *, locate: bool = False,
                 chunk: int = CHUNK) -> Iterator[bytes]:
    """The decompressed bytes of the ``kind`` (``gzip`` or ``zstd``) file at ``path``, in
    blocks that end anywhere: every member (frame) of it, one after another; what
    follows the last one must be another one or nothing. ``Damaged`` when the bytes stop
    making sense, with the bad byte found if ``locate`` (a search: zstd decompresses its
    member again at each step)."""
    form = _format(kind)
    inflater = form.make()
    offset = 0  # where ``data`` starts in the file
    member = (0, 0)  # where the member began, how many bytes it gave so far
    data = b""
    with open(path, "rb") as raw:
        while True:
            if not data:
                data = raw.read(chunk)
                if not data:
                    return
            # (A copy of zlib's state, about 40 kB, per megabyte read: what finds a bad
            # byte within the block without inflating the member again.)
            before = inflater.copy() if form.copies and locate else None
            try:
                out = inflater.decompress(data)
            except form.error as exc:
                if not locate:
                    raise Damaged(form.failure(exc)) from None
                raise Damaged(form.failure(exc),
                              *form.recover(path, member, before, data, offset)) from None
            if out:
                yield out
            member = (member[0], member[1] + len(out))
            if not inflater.eof:
                offset += len(data)
                data = b""
                continue
            # The end of one member: what follows is another member or nothing.
            offset += len(data) - len(inflater.unused_data)
            data = inflater.unused_data
            while len(data) < len(form.magic):
                more = raw.read(chunk)
                if not more:
                    break
                data += more
            if not data:
                return
            if not data.startswith(form.magic):
                size = path.stat().st_size
                raise Damaged(f"{size - offset} bytes after the end of the {form.name} "
                              f"stream are not {form.name} data", offset)
            inflater = form.make()
            member = (offset, 0)
