"""A zstd stream written the way the recorder writes gzip: crash-safe at each flush.

``flush`` ends the current zstd block, so everything written before it decompresses
even if the process dies before ``close`` (which ends the frame, with its checksum).
Against the recorder's gzip (level 9), zstd (level 3) compresses ten times faster
and decompresses nearly twice as fast (0.6 s and 0.4 s against 6.5 s and 0.7 s for a
million messages, 410 MB, on the development machine), to files of the same size.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["ZstdWriter"]

#: zstd's default: within a few percent of the best ratio at this speed.
LEVEL = 3


class _Output(Protocol):
    closed: bool

    def write(self, data: bytes, /) -> int: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...


class ZstdWriter:
    """A write-only binary file that compresses with zstd into ``file`` (a binary file
    opened for writing, closed by ``close``)."""

    def __init__(self, file: _Output) -> None:
        import zstandard

        self._flush_block = zstandard.COMPRESSOBJ_FLUSH_BLOCK
        self._compressor = zstandard.ZstdCompressor(level=LEVEL,
                                                    write_checksum=True).compressobj()
        self._file = file

    def write(self, data: bytes) -> int:
        self._file.write(self._compressor.compress(data))
        return len(data)

    def flush(self) -> None:
        self._file.write(self._compressor.flush(self._flush_block))
        self._file.flush()

    def close(self) -> None:
        if self._file.closed:
            return
        try:
            self._file.write(self._compressor.flush())
        finally:
            self._file.close()
