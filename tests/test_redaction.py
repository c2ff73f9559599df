"""``redact=``: one table of where each secret travels, checked entry by entry and against
every place a real Chromium echoes a value back."""

from __future__ import annotations

import base64
import gzip
import http.server
import json
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import open_two_site

import cdpnb
from cdpnb.probes import ScenarioServer
from cdpnb.protocol import Command, ErrorReply, Event, Fault, Note, Reply
from cdpnb.protocol.credentials import hide_credentials, redact_url
from cdpnb.trace import Recorder, Trace
from cdpnb.trace.redaction import BASE64_JSON, JSON_TEXT, REDACTED, SECRETS, Secret

SECRET = "hunter2"


def _with_secret(path: tuple[str, ...]) -> Any:
    """Params holding SECRET at ``path`` (and something that is no secret beside it)."""
    if not path:
        return SECRET
    step, rest = path[0], path[1:]
    if step == BASE64_JSON:
        inner = _with_secret(rest)
        return base64.b64encode(json.dumps({"accept": True, **inner}).encode()).decode()
    if step == JSON_TEXT:
        return json.dumps({"accept": True, **_with_secret(rest)})
    return {step: _with_secret(rest), "other": "kept"}


def _inner(params: dict[str, Any], secret: Secret) -> Any:
    """The JSON document a BASE64_JSON or JSON_TEXT path step goes into."""
    value: Any = params
    for step in secret.path:
        if step == BASE64_JSON:
            return json.loads(base64.b64decode(value))
        if step == JSON_TEXT:
            return json.loads(value)
        value = value[step]
    raise AssertionError(f"{secret} has no JSON step")


def _record(secret: Secret) -> Command | Event | Note:
    params = _with_secret(secret.path)
    if secret.method.startswith("cdpnb."):
        return Note(secret.method, params, None, 1.0, 1.0)
    if secret.method in ("Page.javascriptDialogClosed", "browsingContext.userPromptClosed"):
        return Event(secret.method, params, "S", 1.0, 1.0)
    return Command(7, secret.method, params, "S", 1.0, 1.0)


def _recorded_text(path: Path, records: list[Any], redact: bool | list[str]) -> str:
    recorder = Recorder(path, redact=redact, endpoint="ws://ada:hunter2@127.0.0.1:1/x")
    for record in records:
        recorder(record)
    recorder.close()
    return path.read_text()


@pytest.mark.parametrize("secret", SECRETS, ids=lambda s: f"{s.method}:{'.'.join(s.path)}")
def test_each_table_entry_hides_its_value_and_only_its_kind(tmp_path: Path,
                                                            secret: Secret) -> None:
    record = _record(secret)
    # The entry points at the value: without redaction it is there.
    assert SECRET in json.dumps(record.params) or BASE64_JSON in secret.path
    hidden = _recorded_text(tmp_path / "all.jsonl", [record], redact=True)
    assert SECRET not in hidden
    assert base64.b64encode(SECRET.encode()).decode()[:8] not in hidden
    loaded = Trace.load(tmp_path / "all.jsonl").records[0]
    assert isinstance(loaded, Command | Event | Note)
    assert loaded.params["other"] == "kept"
    if {BASE64_JSON, JSON_TEXT} & set(secret.path):
        assert _inner(loaded.params, secret) == {"accept": True, "promptText": REDACTED,
                                                 "other": "kept"}
    else:
        assert loaded.params[secret.path[0]] == REDACTED
    other_kinds = [k for k in ("prompt_text", "typed_text") if k != secret.kind]
    kept = _recorded_text(tmp_path / "other.jsonl", [record], redact=other_kinds)
    assert SECRET in kept or BASE64_JSON in secret.path


def test_an_absent_or_empty_answer_stays_as_it_was(tmp_path: Path) -> None:
    records = [Note("cdpnb.dialogAnswering", {"dialog_id": "d-1", "prompt_text": None}),
               Event("Page.javascriptDialogClosed", {"result": True, "userInput": ""}, "S"),
               Command(1, "Fetch.fulfillRequest", {"requestId": "r", "body": ""}, "S"),
               Command(2, "Fetch.fulfillRequest", {"requestId": "r", "body": "bm90IGpzb24="})]
    _recorded_text(tmp_path / "t.jsonl", records, redact=True)
    assert Trace.load(tmp_path / "t.jsonl").records == tuple(records)


def test_url_credentials_are_hidden_everywhere_in_a_line(tmp_path: Path) -> None:
    url = "http://ada:hunter2@127.0.0.1:9/x"
    records = [
        Command(1, "Page.navigate", {"url": url}, "S", 1.0, 1.0),
        Reply(1, "Page.navigate", {"frameId": "F", "loaderId": url}, "S", {}, 1.0, 1.0),
        ErrorReply(2, "Page.navigate", -32000, f"cannot open {url}", {"url": url}, "S", {},
                   1.0, 1.0),
        Event("Page.frameNavigated", {"frame": {"url": url, "urlFragment": "#x"}}, "S"),
        Note("probe.check", {"detail": f"fetched {url}", url: "as a key"}),
        Fault("malformed-json", f"near {url}", '{"url": "' + url, 1.0, 1.0),
        Command(3, "Page.navigate", {"url": "https://jos\u00e9:p\u00e4ss\u00a7@h/"}, "S"),
    ]
    text = _recorded_text(tmp_path / "u.jsonl", records, redact=["url_credentials"])
    assert "hunter2" not in text and "ada" not in text and "p\\u00e4ss" not in text
    assert text.count("http://***@127.0.0.1:9/x") == 9
    trace = Trace.load(tmp_path / "u.jsonl")
    assert trace.header["endpoint"] == "ws://***@127.0.0.1:1/x"
    assert trace.complete


def test_the_url_helpers_agree() -> None:
    # redact_url (endpoint URLs) uses the same rule as the trace, and adds
    # token-looking query values.
    for url in ("ws://ada:hunter2@127.0.0.1:9/devtools/browser/x",
                "http://a:p@ss@host:1/x?token=abc&q=1", "wss://user@h/x"):
        assert "hunter2" not in redact_url(url) and "p@ss" not in redact_url(url)
        assert redact_url(url).split("?")[0] == hide_credentials(url).split("?")[0]
    assert redact_url("http://h/x?token=abc&q=1") == "http://h/x?token=***&q=1"
    assert hide_credentials("navigating to http://u:pw@h/ failed: net::ERR") == \
        "navigating to http://***@h/ failed: net::ERR"


# -- against real Chromium -------------------------------------------------------------------


def _plain(path: Path) -> str:
    data = path.read_bytes()
    return (gzip.decompress(data) if path.suffix == ".gz" else data).decode()


@pytest.mark.browser
async def test_a_redacted_recording_holds_no_secret_chromium_echoed(
        chromium: cdpnb.Backend, site: ScenarioServer, tmp_path: Path) -> None:
    native_path, bridge_path = tmp_path / "native.jsonl", tmp_path / "bridge.jsonl.gz"
    secrets = {"native": "hunter2-native", "bridge": "hunter2-bridge",
               "typed": "hunter2-typed", "url": "hunter2-url"}

    # Native prompt in an OOPIF, typed text, and a URL with credentials.
    sup = await cdpnb.Supervisor.start(chromium, record=native_path, redact=True)
    try:
        port = site.url("/blank").rsplit(":", 1)[1].split("/")[0]
        await sup.navigate(f"http://ada:{secrets['url']}@127.0.0.1:{port}/blank")
        ids = await open_two_site(sup, site)
        await sup.evaluate("setTimeout(() => { window.__r = prompt('name?') }, 0); 0",
                           frame_id=ids["oopif"])
        dialog = await sup.wait_for_dialog(timeout=5)
        await sup.respond("accept", prompt_text=secrets["native"], dialog_id=dialog.id)
        assert await sup.evaluate("window.__r.length", frame_id=ids["oopif"]) == 14
        assert sup.state.recent_dialogs[-1].prompt_text == secrets["native"]  # live: kept
        await sup.evaluate("document.body.innerHTML = '<input id=i>'; "
                           "document.getElementById('i').focus(); 0")
        await sup.cdp("Input.insertText", {"text": secrets["typed"]})
        await sup.cdp("Input.dispatchKeyEvent", {"type": "keyDown", "text": "Q", "key": "Q",
                                                 "code": "KeyQ", "windowsVirtualKeyCode": 81})
        await sup.cdp("Input.dispatchKeyEvent", {"type": "keyUp", "key": "Q", "code": "KeyQ",
                                                 "windowsVirtualKeyCode": 81})
        assert await sup.evaluate("document.getElementById('i').value.length") == 14
    finally:
        await sup.stop()

    # A bridged prompt (its answer travels in Fetch.fulfillRequest's base64 body).
    sup = await cdpnb.Supervisor.start(chromium, record=bridge_path, redact=True, bridge=True)
    try:
        ids = await open_two_site(sup, site)
        await sup.evaluate("setTimeout(() => { window.__r = prompt('name?') }, 0); 0",
                           frame_id=ids["oopif"])
        dialog = await sup.wait_for_dialog(timeout=5)
        assert dialog.via == "bridge"
        await sup.respond("accept", prompt_text=secrets["bridge"], dialog_id=dialog.id)
        assert await sup.evaluate("window.__r.length", frame_id=ids["oopif"]) == 14
    finally:
        await sup.stop()

    for path in (native_path, bridge_path):
        text = _plain(path)
        assert "hunter2" not in text, [line for line in text.splitlines() if "hunter2" in line]
        assert "ada:" not in text
        assert Trace.load(path).complete

    # Every place Chromium and cdpnb carried a secret is there, redacted: the test saw
    # each echo happen, it did not just miss it.
    native = Trace.load(native_path)
    closed = [r for r in native.records if isinstance(r, Event)
              and r.method == "Page.javascriptDialogClosed"]
    assert [r.params["userInput"] for r in closed] == [REDACTED]
    sent = {r.method: r.params for r in native.records if isinstance(r, Command)}
    assert sent["Page.handleJavaScriptDialog"]["promptText"] == REDACTED
    assert sent["Input.insertText"]["text"] == REDACTED
    assert sent["Input.dispatchKeyEvent"]["code"] == REDACTED
    assert any(r.params.get("url") == f"http://***@127.0.0.1:{port}/blank"
               for r in native.records if isinstance(r, Command) and r.method == "Page.navigate")
    notes = [r.params for r in native.records if isinstance(r, Note)
             and r.method == "cdpnb.dialogAnswering"]
    assert [n["prompt_text"] for n in notes] == [REDACTED]
    assert native.final_state().recent_dialogs[-1].prompt_text == REDACTED
    assert native.dialogs()["answer"].tolist() == [REDACTED]

    bridged = Trace.load(bridge_path)
    bodies = [json.loads(base64.b64decode(r.params["body"])) for r in bridged.records
              if isinstance(r, Command) and r.method == "Fetch.fulfillRequest"
              and r.params.get("body")]
    assert {"accept": True, "promptText": REDACTED} in bodies


@pytest.mark.browser
@pytest.mark.parametrize("kind", ["firefox", "chromium+bidi"])
async def test_a_redacted_bidi_recording_holds_no_secret_the_browser_echoed(
        kind: str, site: ScenarioServer, tmp_path: Path) -> None:
    """The same promise over WebDriver BiDi: a native prompt's answer (sent in
    handleUserPrompt, echoed in userPromptClosed) and a bridged one (provideResponse's
    JSON body) are nowhere in a redacted trace, and each place is there, redacted."""
    paths = {mode: tmp_path / f"{mode}.jsonl.zst" for mode in ("native", "bridge")}
    async with cdpnb.launch(kind) as backend:
        for mode, path in paths.items():
            sup = await cdpnb.Supervisor.start(backend, record=path, redact=True,
                                               bridge=mode == "bridge", dialog_timeout_s=30)
            try:
                await sup.navigate(site.url("/blank"))
                await sup.evaluate("setTimeout(() => { window.__r = prompt('name?') }, 0); 0")
                dialog = await sup.wait_for_dialog(timeout=10)
                assert dialog.via == mode
                await sup.respond("accept", prompt_text=f"hunter2-{mode}", dialog_id=dialog.id)
                # The page got it (read back reversed, so the read is no echo of it).
                got = await sup.evaluate(
                    "new Promise(done => { const look = () => window.__r === undefined ? "
                    "setTimeout(look, 20) : done([...window.__r].reverse().join('')); "
                    "look(); })", timeout=10)
                assert got == f"hunter2-{mode}"[::-1]
            finally:
                await sup.stop()
    for mode, path in paths.items():
        text = _plain_zst(path)
        assert "hunter2" not in text, [line for line in text.splitlines() if "hunter2" in line]
        trace = Trace.load(path)
        assert trace.complete and trace.protocol == "bidi"
        sent = [r.params for r in trace.records if isinstance(r, Command)]
        if mode == "native":
            answers = [p for p in sent if "userText" in p and "accept" in p]
            assert [a["userText"] for a in answers] == [REDACTED]
            closed = [r.params for r in trace.records if isinstance(r, Event)
                      and r.method == "browsingContext.userPromptClosed"]
            assert closed and {c.get("userText") for c in closed} <= {REDACTED, None}
        else:
            bodies = [json.loads(r.params["body"]["value"]) for r in trace.records
                      if isinstance(r, Command) and r.method == "network.provideResponse"
                      and r.params.get("body")]
            assert {"accept": True, "promptText": REDACTED} in bodies


def _plain_zst(path: Path) -> str:
    import zstandard

    with zstandard.open(path, "rb") as source:
        return source.read().decode()


class _SlowImage(http.server.BaseHTTPRequestHandler):
    """A page whose one image never arrives, so its load event never comes."""

    def do_GET(self) -> None:
        if self.path == "/hang":
            time.sleep(5)
            return
        body = b'<title>slow</title><img src="/hang">'
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.mark.browser
async def test_navigation_errors_name_the_url_but_never_its_credentials(
        chromium: cdpnb.Backend) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _SlowImage)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        dead = free.getsockname()[1]
    sup = await cdpnb.Supervisor.start(chromium)
    try:
        with pytest.raises(cdpnb.NavigationError) as refused:
            await sup.navigate(f"http://ada:hunter2-nav@127.0.0.1:{dead}/x", timeout=10)
        with pytest.raises(cdpnb.WaitTimeout) as slow:
            await sup.navigate(f"http://ada:hunter2-nav@127.0.0.1:{server.server_port}/",
                               timeout=1.5)
    finally:
        await sup.stop()
        server.shutdown()
    for error, says in ((refused.value, "ERR_CONNECTION_REFUSED"),
                        (slow.value, "did not finish loading within 1.5 s")):
        text = f"{error} {error!r} {error.args}"
        assert says in text and "127.0.0.1" in text, text
        assert "hunter2" not in text and "ada:" not in text, text
