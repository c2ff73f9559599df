"""Record the browsing trace ``bench_trace.py`` tiles with the probe traces: Chromium on
loopback pages with the Network and Runtime domains on, so the trace holds what the
probe traces do not (they never enable Network and the probe pages log nothing):
``Network.requestWillBeSent`` / ``…ExtraInfo`` with Chromium's request headers
(``sec-ch-ua`` holds escaped quotes), ``Network.responseReceived``, and
``Runtime.consoleAPICalled`` (every one with an epoch-milliseconds ``timestamp``,
which Chromium spells with an exponent, ``1.795636643825172e+12``).

    python benchmarks/record_browsing.py            # writes benchmarks/data/browsing.jsonl.gz

Needs Debian's ``chromium``; pages are served from 127.0.0.1 (no network).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import cdpnb.sync

OUT = Path(__file__).resolve().parent / "data" / "browsing.jsonl.gz"

#: A page that loads scripts, styles and images, fetches JSON, and logs what it does.
PAGE = """<!doctype html><html><head><title>shop {n}</title>
<link rel="stylesheet" href="/asset/site.css?v={n}">
<script src="/asset/app.js?v={n}"></script></head>
<body><h1>Items, page {n}</h1>
<img src="/asset/logo.svg?v={n}"><img src="/asset/item-{n}.svg">
<iframe src="{other}/child"></iframe>
<script>
console.log("page", {n}, "loaded: \\"quoted\\" and {{braces}}, [brackets]: ok");
console.info({{page: {n}, items: [1, 2.5, -0.001], nested: {{ok: true, label: "a, b: c"}}}});
for (let i = 0; i < 12; i++) {{
  fetch("/api/items?page={n}&i=" + i).then(r => r.text()).then(t => {{
    console.log("fetched", i, t.length, performance.now());
    if (i % 5 == 0) console.warn("slow item", i, {{ms: performance.now() / 7}});
  }});
}}
console.error(new Error("boom on page {n}"));
setTimeout(() => {{ throw new TypeError("late \\"error\\" {n}"); }}, 5);
</script></body></html>"""
ASSETS = {
    "/asset/site.css": "body { font: 14px sans-serif }",
    "/asset/app.js": "console.debug('app', navigator.userAgent, Date.now() / 1e3);",
    "/asset/logo.svg": '<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"/>',
    "/api/items": '{"items": [{"id": 1, "name": "caf\\u00e9 \\"deluxe\\""}]}',
}


def record(out: Path, pages: int) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    site = cdpnb.scenarios()
    for path, body in ASSETS.items():
        site.add(path, body)
    for n in range(12):
        site.add(f"/asset/item-{n}.svg", ASSETS["/asset/logo.svg"])
    with cdpnb.sync.launch("chromium") as backend, \
            cdpnb.sync.Supervisor.start(backend, record=str(out)) as sup:
        sup.cdp("Network.enable", {})
        sup.cdp("Log.enable", {})
        for n in range(pages):
            path = f"/shop/{n}"
            site.add(path, PAGE.format(n=n % 12, other=site.site_b))
            sup.navigate(site.url(path))
            sup.evaluate("new Promise(r => setTimeout(r, 150))")
        sup.navigate(site.url("/two-site"))
        sup.evaluate("new Promise(r => setTimeout(r, 150))")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--pages", type=int, default=24)
    args = parser.parse_args(argv)
    record(args.out, args.pages)
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e3:.0f} KB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
