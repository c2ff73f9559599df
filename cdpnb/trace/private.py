"""Files that hold a recording are the user's alone: created 0600, like ssh keys and
shell histories (a trace holds prompt answers, typed text and page contents unless
recorded with ``redact=``). No I/O beyond creating the file."""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["PRIVATE_MODE", "create_private"]

#: Read and write for the owner, nothing for anyone else, whatever the umask.
PRIVATE_MODE = 0o600


def create_private(path: str | os.PathLike[str]) -> Path:
    """Create ``path`` empty (or empty it) with mode 0600, before a writer opens it by
    name: the file is never readable by others, not even for the moment between its
    creation and a chmod. An existing file is made private too."""
    path = Path(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_MODE)
    try:
        # Only a file of its own: a device or a pipe named as the output (/dev/full,
        # /dev/stdout) keeps the mode it has for everyone else.
        if stat.S_ISREG(os.fstat(fd).st_mode):
            os.fchmod(fd, PRIVATE_MODE)
    finally:
        os.close(fd)
    return path
