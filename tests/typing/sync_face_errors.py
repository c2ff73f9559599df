"""Checked by mypy --strict in tests/test_faces.py: the lines marked `# error` must fail."""

from __future__ import annotations

import cdpnb.sync


def wrong(url: str) -> None:
    sup = cdpnb.sync.Supervisor.start(url, polcy="auto_accept")  # error
    sup.evaluate(42)  # error
    sup.respond("accept", prompt_txt="x")  # error
    sup.evalute("1")  # error
    sup.respond("acept")  # error
    sup.evaluate("(x) => x", 1, "frame-id")  # error
    cdpnb.sync.launch("chromium", timeout="slow")  # error
    ok: int = cdpnb.sync.registry.stop_all()
    print(ok)
