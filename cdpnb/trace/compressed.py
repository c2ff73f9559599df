"""The recorder's compressed streams, crash-safe at each flush: zstd and gzip.

``flush`` ends the current zstd block (gzip: a sync flush), so everything written before
it decompresses even if the process dies before ``close`` (which ends the frame or
member, with its checksum).

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

from typing import Protocol

__all__ = ["GzipWriter", "ZstdWriter"]

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
