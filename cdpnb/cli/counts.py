"""Counts as the CLI prints them: ``1 message``, ``2 messages``, ``0 messages``."""

from __future__ import annotations

__all__ = ["count"]


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun``, in the plural (``plural``, else ``noun`` + ``s``) unless ``n``
    is 1; a noun of several words is pluralised at its last (``1 console error``)."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"
