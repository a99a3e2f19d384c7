"""The render sandbox with real Chromium: hostile components reach no address and no later request.

One backend (one browser, one page) serves the module, so every hostile render is followed by the
next request on the same page. Listeners run on 127.0.0.1 only: a TCP and a UDP socket on one
port, which record every connection and datagram that arrives.
"""

from __future__ import annotations

import socket
import threading
import time

import pytest

from botgrpo_rewards.protocol import ScoreRequest

GOOD = """import React from "react";
export default function App() {
  return (<div style={{ padding: 24, fontFamily: "sans-serif" }}>
    <h1 style={{ color: "#2255aa" }}>Shopping list</h1>
    <ul><li>Milk</li><li>Eggs</li></ul>
    <button style={{ background: "#22aa55", color: "white", padding: 8 }}>Add item</button>
  </div>);
}"""


@pytest.fixture(scope="module")
def backend(render_backend):
    return render_backend


class Listener:
    """TCP and UDP on one port of 127.0.0.1; `hits` holds (protocol, first bytes) of what arrived."""

    def __init__(self):
        self.tcp = socket.socket()
        self.tcp.bind(("127.0.0.1", 0))
        self.tcp.listen(64)
        self.port = self.tcp.getsockname()[1]
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", self.port))
        for s in (self.tcp, self.udp):
            s.settimeout(0.1)
        self.hits: list[tuple[str, bytes]] = []
        self.running = True
        self.threads = [threading.Thread(target=f, daemon=True) for f in (self._accept, self._receive)]
        for t in self.threads:
            t.start()

    def _accept(self):
        while self.running:
            try:
                conn, _ = self.tcp.accept()
            except OSError:
                continue
            conn.settimeout(0.3)
            try:
                data = conn.recv(200)
            except OSError:
                data = b""
            self.hits.append(("tcp", data))
            conn.close()

    def _receive(self):
        while self.running:
            try:
                data, _ = self.udp.recvfrom(2048)
            except OSError:
                continue
            self.hits.append(("udp", data[:64]))

    def close(self):
        self.running = False
        for t in self.threads:
            t.join()
        self.tcp.close()
        self.udp.close()


@pytest.fixture
def listener():
    got = Listener()
    yield got
    got.close()


def _render(backend, code, reference=None, deadline_s=10.0):
    req = ScoreRequest(id="s", completion=code, options={} if reference else {"judge": "none"},
                       reference={"reference_code": reference} if reference else {})
    return backend.score(req, time.monotonic() + deadline_s)


def _app(body: str, shown: str = "<p>ran</p>") -> str:
    """A component that runs `body` in an effect (after it mounted) and shows `shown`."""
    return ('import { useEffect } from "react";\nexport default function App() {\n'
            f"  useEffect(() => {{ {body} }}, []);\n  return {shown};\n}}")


def _escapes(port: int) -> dict[str, str]:
    url = f"http://127.0.0.1:{port}"
    peer = ("const pc = new RTCPeerConnection({ iceServers: [%s] }); pc.createDataChannel('x'); "
            "pc.createOffer().then((o) => pc.setLocalDescription(o));")
    return {
        "stun-udp": _app(peer % f'{{ urls: "stun:127.0.0.1:{port}" }}'),
        "turn-udp": _app(peer % f'{{ urls: "turn:127.0.0.1:{port}", username: "LEAKUSER", credential: "c" }}'),
        "turn-tcp": _app(peer % f'{{ urls: "turn:127.0.0.1:{port}?transport=tcp", username: "LEAKUSER", credential: "c" }}'),
        "iframe": f'export default function App() {{ return <div><p>frame</p><iframe src="{url}/frame" /></div>; }}',
        "blank-link": _app('(document.getElementById("a") as any).click();', f'<a id="a" href="{url}/blank" target="_blank">x</a>'),
        "blank-form": _app('(document.getElementById("f") as any).submit();',
                           f'<form id="f" action="{url}/form" method="post" target="_blank"><input name="q" defaultValue="x" /></form>'),
        "window-open": _app("", f'<p>{{"popup:" + String(window.open("{url}/popup"))}}</p>'),
        "preconnect": f'export default function App() {{ return <div><link rel="preconnect" href="{url}" /><p>pre</p></div>; }}',
        "speculation": _app('const s = document.createElement("script"); s.type = "speculationrules"; '
                            f's.textContent = JSON.stringify({{ prefetch: [{{ source: "list", urls: ["{url}/a"] }}], '
                            f'prerender: [{{ source: "list", urls: ["{url}/b"] }}] }}); document.head.appendChild(s);'),
        "fetch-xhr-beacon": _app(f'fetch("{url}/fetch").catch(() => 0); const x = new XMLHttpRequest(); '
                                 f'x.open("GET", "{url}/xhr"); x.send(); navigator.sendBeacon("{url}/beacon", "b");'),
        "socket-transport": _app(f'try {{ new WebSocket("ws://127.0.0.1:{port}/ws"); }} catch (e) {{}} '
                                 f'try {{ new (window as any).WebTransport("https://127.0.0.1:{port}/wt"); }} catch (e) {{}}'),
        "img-navigate": _app(f'window.location.href = "{url}/nav";',
                             f'<div><img src="{url}/img.png" /><p style={{{{ backgroundImage: "url({url}/bg.png)" }}}}>img</p></div>'),
    }


def test_no_packet_leaves_the_browser(backend, listener):
    """WebRTC (STUN and TURN, UDP and TCP), frames, new windows, preconnects, speculative loads and
    every request API: each component renders, and nothing reaches the listener."""
    probe = socket.create_connection(("127.0.0.1", listener.port))  # the listener does hear a connection
    probe.close()
    for name, code in _escapes(listener.port).items():
        res = backend.render_code(code, time.monotonic() + 10)
        assert res.rendered, (name, res.error, res.errors)
        if name == "window-open":
            assert res.text == "popup:null"  # the sandbox, not a page script, refused the window
    time.sleep(1.5)  # STUN retransmits and preconnects arrive within this if they leave at all
    assert listener.hits == [("tcp", b"")], listener.hits
    assert sum(len(c.pages) for c in backend._renderer._browser.contexts) == 1  # no popup was opened


def test_requests_cannot_see_each_other(backend):
    """A render that leaves a MutationObserver, a timer and notes in every store a browser keeps
    sees nothing of the next request, which in turn finds every store empty."""
    spy = _app(
        "const keep = () => { const t = document.body.innerText; localStorage.setItem('seen', t); "
        "sessionStorage.setItem('seen', t); document.cookie = 'seen=' + encodeURIComponent(t); window.name = t; "
        "history.pushState({}, '', '#seen'); };"
        "new MutationObserver(keep).observe(document, { subtree: true, childList: true, characterData: true });"
        "setInterval(keep, 5); keep();")
    assert _render(backend, spy).metrics["rendered"] == 1.0
    assert _render(backend, "export default function App() { return <p>SECRET-OF-B</p>; }").metrics["rendered"] == 1.0
    reader = ('export default function App() {\n  const seen = [localStorage.getItem("seen"), sessionStorage.getItem("seen"),\n'
              '    document.cookie, window.name, history.length, location.hash];\n'
              "  return <p>{JSON.stringify(seen)}</p>;\n}")
    res = backend.render_code(reader, time.monotonic() + 10)
    assert res.rendered and res.text == '[null,null,"","",1,""]', res.text


def test_a_surviving_style_cannot_blank_later_renders(backend):
    """Styles a render puts where the old page reset did not look (outside <head>, marked as the
    page's own, adopted sheets) are gone for the next request: identical code still scores 1."""
    blank = "*{visibility:hidden!important;background:#fff!important}"
    hostile = _app(
        f'const a = document.createElement("style"); a.textContent = "{blank}"; document.documentElement.appendChild(a);'
        f'const b = document.createElement("style"); b.setAttribute("data-botgrpo", ""); b.textContent = "{blank}"; '
        "document.head.appendChild(b);"
        f'const c = new CSSStyleSheet(); c.replaceSync("{blank}"); document.adoptedStyleSheets = [c];')
    _render(backend, hostile)
    unique = GOOD.replace("Shopping list", "Shopping list (style case)")  # a reference rendered after the attack
    res = _render(backend, unique, reference=unique)
    assert res.metrics["rendered"] == 1.0 and res.score == 1.0, res.info


def test_replaced_builtins_do_not_reach_the_next_render(backend):
    hostile = _app(
        "Object.getOwnPropertyNames = () => []; (Array.prototype as any).map = function () { return []; };"
        "JSON.stringify = () => '{}'; (Promise.prototype as any).then = function () { return this; };"
        "(Element.prototype as any).getBoundingClientRect = () => ({ left: 0, top: 0, width: 0, height: 0 });")
    _render(backend, hostile)
    unique = GOOD.replace("Shopping list", "Shopping list (built-ins case)")
    res = _render(backend, unique, reference=unique)
    assert res.metrics["rendered"] == 1.0 and res.score == 1.0, res.info


def test_a_page_that_will_not_unload_is_replaced(backend):
    """Handlers that loop when the document is left: the page is rebuilt and the next request renders."""
    _render(backend, _app('window.addEventListener("pagehide", () => { for (;;) {} });'
                          'window.addEventListener("beforeunload", () => { for (;;) {} });'))
    res = _render(backend, GOOD, reference=GOOD, deadline_s=30)
    assert res.metrics["rendered"] == 1.0 and res.score == 1.0
