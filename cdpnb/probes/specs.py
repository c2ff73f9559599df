"""What a user may name as a probe backend, parsed once with clear errors."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from cdpnb.backends import LAUNCHABLE
from cdpnb.protocol.credentials import redact_url

__all__ = ["BackendSpec", "parse_backend", "recorded_probes"]

TRACE_SUFFIXES = (".jsonl", ".jsonl.gz")


@dataclass(frozen=True)
class BackendSpec:
    """``kind``: launch (a LAUNCHABLE name), url (attach), or replay (recorded traces)."""

    kind: str
    name: str
    url: str = ""
    traces: dict[str, Path] = field(default_factory=dict)

    @property
    def label(self) -> str:
        if self.kind == "url":
            return redact_url(self.url)
        return self.name


def _split(path: Path) -> tuple[str, str]:
    """``chromium.bridge.jsonl.gz`` -> (``chromium``, ``bridge``); no mode means native."""
    name = path.name
    for suffix in TRACE_SUFFIXES:
        name = name.removesuffix(suffix) if name.endswith(suffix) else name
    stem, _, mode = name.rpartition(".")
    if stem and mode in ("native", "bridge"):
        return stem, mode
    return name, "native"


def recorded_probes(folder: Path) -> list[BackendSpec]:
    """One replay spec per recorded backend in ``folder`` (``<name>.<mode>.jsonl[.gz]``)."""
    groups: dict[str, dict[str, Path]] = {}
    for path in sorted(folder.iterdir()):
        if path.is_file() and path.name.endswith(TRACE_SUFFIXES):
            name, mode = _split(path)
            groups.setdefault(name, {})[mode] = path
    return [BackendSpec("replay", f"replay:{name}", traces=modes)
            for name, modes in groups.items()]


def parse_backend(text: str) -> BackendSpec:
    """A kind, a CDP URL, or ``replay:<trace file or folder>``; ValueError says which."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"a backend must be a non-empty string, got {text!r}")
    text = text.strip()
    if text in LAUNCHABLE:
        return BackendSpec("launch", text)
    scheme = urlsplit(text).scheme.lower() if "://" in text else ""
    if scheme in ("ws", "wss", "http", "https"):
        return BackendSpec("url", text, url=text)
    if text.startswith("replay:"):
        path = Path(text.removeprefix("replay:"))
        if path.is_dir():
            specs = recorded_probes(path)
            if len(specs) != 1:
                raise ValueError(f"{path} holds {len(specs)} recorded probes; name one trace "
                                 "file, or use cdpnb.probes.recorded_probes(folder)")
            return specs[0]
        if not path.is_file():
            raise ValueError(f"replay: {path} is not a trace file or folder")
        name = _split(path)[0]
        siblings = [p for p in path.parent.iterdir()
                    if p.name.endswith(TRACE_SUFFIXES) and _split(p)[0] == name]
        traces = {_split(p)[1]: p for p in sorted(siblings)}
        return BackendSpec("replay", f"replay:{name}", traces=traces)
    raise ValueError(f"unknown backend {text!r}: use one of {', '.join(LAUNCHABLE)}, a CDP URL "
                     "(ws://, wss://, http://host:port) or replay:<trace>")
