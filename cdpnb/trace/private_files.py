"""Files that hold a recording are the user's alone: created 0600, in folders cdpnb
creates 0700, like ssh keys and shell histories (a trace holds prompt answers, typed
text and page contents unless recorded with ``redact=``; its Parquet export and a
campaign's cells hold the same).

The mode is given when the file is created (``os.open(..., 0o600)``), never set by a
chmod afterwards, so there is no moment in which others can open it; the writer
writes through the descriptor it was created with, not by opening the name again.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

__all__ = ["PRIVATE_DIR_MODE", "PRIVATE_MODE", "make_private_dirs", "open_private",
           "private_file", "write_private_text"]

#: Read and write for the owner, nothing for anyone else, whatever the umask.
PRIVATE_MODE = 0o600
#: A folder cdpnb creates for such files: the owner's alone.
PRIVATE_DIR_MODE = 0o700

_CREATE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0)


def open_private(path: str | os.PathLike[str], *, exclusive: bool = False) -> int:
    """A write-only descriptor of ``path``, created (or emptied) with mode 0600, the
    folders it needs created 0700. ``exclusive=True`` refuses a name that exists (a
    temporary file). An existing regular file is made private too; a device or a pipe
    named as the output (``/dev/full``, ``/dev/stdout``) keeps the mode it has for
    everyone else."""
    path = Path(path)
    make_private_dirs(path.parent)
    flags = _CREATE | (os.O_EXCL if exclusive else 0)
    fd = os.open(path, flags, PRIVATE_MODE)
    try:
        # The umask can only take bits away from 0600; a file that existed keeps the
        # mode it had until this fchmod, which happens before anything is written.
        if stat.S_ISREG(os.fstat(fd).st_mode):
            os.fchmod(fd, PRIVATE_MODE)
    except BaseException:
        os.close(fd)
        raise
    return fd


def private_file(path: str | os.PathLike[str], *, exclusive: bool = False) -> BinaryIO:
    """``open_private`` as a binary file object (buffered), for writers that take one
    (``pyarrow.parquet.write_table``); close it (``with``) to close the descriptor."""
    return open(open_private(path, exclusive=exclusive), "wb")


def write_private_text(path: str | os.PathLike[str], text: str) -> None:
    """``text`` (UTF-8) as the whole of ``path``, through ``private_file``: what
    ``Path.write_text`` does, but 0600 from the start (a probe result, a matrix)."""
    with private_file(path) as file:
        file.write(text.encode("utf-8"))


def make_private_dirs(path: str | os.PathLike[str]) -> None:
    """Create the folder ``path`` and the missing folders above it, each 0700. Folders
    that exist are the user's and keep their mode."""
    path = Path(path)
    missing: list[Path] = []
    while not path.is_dir():
        missing.append(path)
        if path.parent == path:
            break
        path = path.parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, PRIVATE_DIR_MODE)
        except FileExistsError:
            if not folder.is_dir():  # a file where a folder must be
                raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR),
                                         str(folder)) from None
            continue  # made meanwhile by another writer (a campaign's workers): theirs
        # mkdir's mode is masked by the umask, which can only take bits away; a umask
        # that took the owner's own leaves a folder the owner cannot write in.
        if stat.S_IMODE(os.stat(folder).st_mode) != PRIVATE_DIR_MODE:
            os.chmod(folder, PRIVATE_DIR_MODE)
