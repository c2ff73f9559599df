"""Scenario pages served on two loopback sites from one port.

``127.0.0.1:P`` and ``localhost:P`` are two sites, so an iframe from one to the
other is a cross-site, out-of-process iframe (OOPIF). Pages are templates: ``{A}``
and ``{B}`` become the two origins, ``{OTHER}`` the origin of the site that did
*not* serve this request, ``{Q:name}`` a query parameter.
"""

from __future__ import annotations

import html
import re
import ssl
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from urllib.parse import parse_qs, urlsplit

__all__ = ["PAGES", "ScenarioServer", "scenarios"]

#: A page's own script reading its field at each ``input`` event (the fill check's).
_FIELD_LISTENER = """<script>
const field = document.getElementById('field');
window.typed = null;
field.addEventListener('input', () => { window.typed = field.value; });
</script>"""

PAGES: dict[str, str] = {
    "/blank": "<!doctype html><title>blank</title><body>blank</body>",
    "/child": "<!doctype html><title>child</title><body><p id=who>child</p></body>",
    "/two-site": """<!doctype html><title>two sites</title><body>
<h1>main</h1>
<iframe id=srcdoc srcdoc="<p>in-process srcdoc frame</p>"></iframe>
<iframe id=oopif src="{B}/child"></iframe>
</body>""",
    "/beforeunload": """<!doctype html><title>beforeunload</title><body>
<p>leaving asks first</p>
<script>addEventListener('beforeunload', e => { e.preventDefault(); e.returnValue = ''; });</script>
</body>""",
    # The probe's page: in-process srcdoc, an OOPIF, and an OOPIF nested in that one.
    "/probe": """<!doctype html><title>probe</title><body>
<h1>main</h1>
<iframe id=srcdoc srcdoc="<p>in-process srcdoc frame</p>"></iframe>
<iframe id=oopif src="{B}/nest?depth=1"></iframe>
</body>""",
    # Something to find by accessibility ref: ``textbox:Your name``, ``button:Go#2``.
    "/form": """<!doctype html><title>form</title><body>
<h1>A form</h1>
<label>Your name <input id=name></label>
<button id=go onclick="window.went = 'go'">Go</button>
<button id=go2 onclick="window.went = 'go2: ' + document.getElementById('name').value">Go</button>
</body>""",
    # A strict connect-src (as many real sites have) blocks the dialog bridge's XHR.
    "/csp": """<!doctype html><title>strict csp</title><body><p>connect-src 'self'</p>
<iframe id=oopif src="{B}/child"></iframe></body>""",
    # No allow-modals: the browser blocks native dialogs in this frame.
    "/sandboxed": """<!doctype html><title>sandboxed</title><body>
<iframe id=sandboxed sandbox="allow-scripts" src="{B}/child"></iframe></body>""",
    # The screenshot check's: a blue page, a red cross-site frame at a known box (CSS
    # px 40,40 to 240,140). Flat colours, so a screenshot is checked by counting pixels.
    "/shot": """<!doctype html><title>shot</title>
<body style="margin:0;background:#0000ff">
<iframe id=frame src="{B}/shot-frame" width=200 height=100
 style="border:0;display:block;margin:40px 0 0 40px"></iframe></body>""",
    "/shot-frame": """<!doctype html><title>shot frame</title>
<body style="margin:0;background:#ff0000"></body>""",
    # The fill check's: a field holding "old" whose own input listener keeps what it
    # read (window.typed), here and in a cross-site frame.
    "/fill": """<!doctype html><title>fill</title><body>
<input id=field value="old">
<iframe id=frame src="{B}/fill-frame" width=300 height=60></iframe>
""" + _FIELD_LISTENER + "</body>",
    "/fill-frame": """<!doctype html><title>fill frame</title><body>
<input id=field value="old">
""" + _FIELD_LISTENER + "</body>",
    # The wait_for_selector check's: its own script adds #late ``?ms=`` after it runs.
    "/later": """<!doctype html><title>later</title><body><script>
setTimeout(() => { const p = document.createElement('p'); p.id = 'late';
  p.textContent = 'late'; document.body.append(p); }, Number('{Q:ms}'));
</script></body>""",
}

HEADERS: dict[str, dict[str, str]] = {
    "/csp": {"Content-Security-Policy": "connect-src 'self'"},
}

Handler = Callable[[str, dict[str, list[str]]], tuple[int, str, str]]


def _nested(this: str, other: str, query: dict[str, list[str]]) -> str:
    depth = int((query.get("depth") or ["0"])[0])
    inner = f'<iframe id=next src="{other}/nest?depth={depth - 1}"></iframe>' if depth > 0 else ""
    return f"<!doctype html><title>nest {depth}</title><body><p>depth {depth}</p>{inner}</body>"


def _many(this: str, other: str, query: dict[str, list[str]]) -> str:
    count = int((query.get("n") or ["10"])[0])
    cross = (query.get("cross") or ["0"])[0] == "1"
    frames = "".join(
        f'<iframe src="{other}/child?i={i}"></iframe>' if cross
        else f'<iframe srcdoc="<p>frame {i}</p>"></iframe>'
        for i in range(count)
    )
    return f"<!doctype html><title>{count} frames</title><body>{frames}</body>"


GENERATED: dict[str, Callable[[str, str, dict[str, list[str]]], str]] = {
    "/nest": _nested,
    "/many": _many,
}


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        # A browser refusing the self-signed certificate drops the handshake: expected.
        pass


#: A self-signed certificate for 127.0.0.1 and localhost (test-only; its key is public).
LOOPBACK_CERT = Path(__file__).with_name("tls") / "loopback.pem"


class ScenarioServer:
    """A threaded HTTP server on 127.0.0.1 serving PAGES (and pages you ``add``), and
    the same pages over https with a self-signed certificate (``site="https"``).

    ``site.url(path)`` is on site a (``127.0.0.1``), ``site.url(path, "b")`` on site b
    (``localhost``): a page from one framing the other gets a cross-site OOPIF.

    >>> import urllib.request
    >>> with ScenarioServer() as site:
    ...     page = urllib.request.urlopen(site.url("/two-site")).read().decode()
    >>> site.url("/child", "b") in page   # the iframe comes from the other site
    True
    """

    def __init__(self) -> None:
        self.pages: dict[str, str] = dict(PAGES)
        self.headers: dict[str, dict[str, str]] = {k: dict(v) for k, v in HEADERS.items()}
        self.requests: list[tuple[str, str]] = []
        server = _QuietServer(("127.0.0.1", 0), self._handler_class())
        self._server = server
        self.port = server.server_address[1]
        tls = _QuietServer(("127.0.0.1", 0), self._handler_class())
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(LOOPBACK_CERT)
        tls.socket = context.wrap_socket(tls.socket, server_side=True)
        self._tls = tls
        self.tls_port = tls.server_address[1]
        self._threads: list[threading.Thread] = []

    @property
    def site_a(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def site_b(self) -> str:
        return f"http://localhost:{self.port}"

    @property
    def site_https(self) -> str:
        return f"https://127.0.0.1:{self.tls_port}"

    def url(self, path: str, site: str = "a") -> str:
        origins = {"a": self.site_a, "b": self.site_b, "https": self.site_https}
        if site not in origins:
            raise ValueError(f"site must be 'a' (127.0.0.1), 'b' (localhost) or 'https', "
                             f"got {site!r}")
        return origins[site] + path

    def add(self, path: str, page: str, headers: dict[str, str] | None = None) -> str:
        """Serve ``page`` (a template) at ``path``, with extra response ``headers``;
        returns its URL on site a."""
        self.pages[path] = page
        if headers:
            self.headers[path] = dict(headers)
        return self.url(path)

    def render(self, path: str, host: str, query: dict[str, list[str]]) -> str | None:
        this = f"http://{host}"
        other = self.site_b if host.startswith("127.0.0.1") else self.site_a
        if path in GENERATED:
            return GENERATED[path](this, other, query)
        page = self.pages.get(path)
        if page is None:
            return None
        page = page.replace("{A}", self.site_a).replace("{B}", self.site_b)
        page = page.replace("{OTHER}", other).replace("{THIS}", this)
        return re.sub(r"\{Q:(\w+)\}",
                      lambda m: html.escape((query.get(m.group(1)) or [""])[0]), page)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        owner = self

        class _Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                host = self.headers.get("Host", f"127.0.0.1:{owner.port}")
                owner.requests.append((host, self.path))
                if parts.path == "/favicon.ico" and parts.path not in owner.pages:
                    # Headful Chromium 156 asks every page for one and reports the 404 as
                    # a browser console error (Log.entryAdded): none, and no error.
                    self.send_response(204)
                    self.send_header("Cache-Control", "max-age=3600")
                    self.end_headers()
                    return
                body = owner.render(parts.path, host, parse_qs(parts.query))
                data = (body if body is not None else "not found").encode()
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Cache-Control", "no-store")
                for name, value in owner.headers.get(parts.path, {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                # navigator.sendBeacon('/report?...'): a report that survives its
                # document's unloading (an image's request does not, on Firefox).
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(min(length, 1 << 16))
                owner.requests.append((self.headers.get("Host", ""), self.path))
                self.send_response(204)
                self.send_header("Cache-Control", "no-store")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                pass

        return _Handler

    def start(self) -> ScenarioServer:
        if not self._threads:
            for server, name in ((self._server, "cdpnb-scenarios"),
                                 (self._tls, "cdpnb-scenarios")):
                thread = threading.Thread(target=server.serve_forever, name=name, daemon=True)
                thread.start()
                self._threads.append(thread)
        return self

    def close(self) -> None:
        if self._threads:
            self._server.shutdown()
            self._tls.shutdown()
            self._threads = []
        self._server.server_close()
        self._tls.server_close()

    def __enter__(self) -> ScenarioServer:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def scenarios() -> ScenarioServer:
    """Start the scenario pages on two loopback sites, in one line; ``close()`` ends it.

    ``/two-site`` has a srcdoc frame and a cross-site iframe (an OOPIF), ``/probe``
    an OOPIF nested in an OOPIF, ``/form`` a text box and two buttons,
    ``/beforeunload``, ``/csp``, ``/sandboxed``, and the page checks' ``/shot``,
    ``/fill`` and ``/later``; ``site.add(path, html)`` serves your own page
    (``{A}``/``{B}`` in it become the two origins).

    >>> import cdpnb
    >>> site = cdpnb.scenarios()
    >>> site.url("/two-site").startswith("http://127.0.0.1:")
    True
    >>> site.close()
    """
    return ScenarioServer().start()
