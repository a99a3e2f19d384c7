"""Find a Chromium for Playwright, and the launch flags that keep it quiet and root-safe."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

ENV_VAR = "BOTGRPO_CHROMIUM"
SYSTEM_PATHS = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")

# The browser has no route out, whatever a page asks for. Playwright's routing and the page's CSP
# see only requests; these flags also stop what never becomes one. Measured with listeners on
# 127.0.0.1 (tests/integration/test_render_sandbox.py): without them, WebRTC sent STUN over UDP and
# TURN over TCP to a port the page chose, and preconnects (an <iframe src>, a target=_blank link or
# form) and speculation-rules prefetches opened TCP connections routing never saw.
NO_NETWORK_ARGS = (
    # Every connection goes to a proxy that cannot be resolved, loopback included (Chromium
    # otherwise bypasses the proxy for localhost), and no host name resolves (no DNS queries).
    "--proxy-server=http://proxy.botgrpo.invalid:9",
    "--proxy-bypass-list=<-loopback>",
    "--host-resolver-rules=MAP * ~NOTFOUND",
    # WebRTC: no UDP at all, and TCP (TURN) only through that proxy.
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
)

# --no-sandbox: Chromium refuses to start as root otherwise (the page is still fenced by the flags
# above, routing, the CSP and its sandbox directive).
# The background-networking family stops Chromium's own traffic, which floods a closed network.
LAUNCH_ARGS = NO_NETWORK_ARGS + (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--disable-dev-shm-usage",
    "--mute-audio",
    # No --disable-frame-rate-limit: it saved ~25 ms per screenshot on a reused page, but with a
    # navigation per render the uncapped compositor doubled the CPU per render (measured: ~270 vs
    # ~380-490 ms CPU, wall median ~350 vs ~365-515 ms, on the loaded 2-CPU machine).
    # Keep timers and frames at full speed for pages Chromium might consider hidden.
    "--disable-background-timer-throttling",
    "--disable-renderer-backgrounding",
    "--disable-backgrounding-occluded-windows",
    # A hostile component that allocates gigabytes hits this heap cap and crashes its own renderer.
    "--js-flags=--max-old-space-size=1024",
)

HOW_TO_GET_ONE = (
    "no Chromium found for the render service; install one with `apt-get install chromium` or "
    "`python -m playwright install chromium`, or point BOTGRPO_CHROMIUM (or the `chromium` option) at a binary"
)


class ChromiumNotFound(RuntimeError):
    """No usable Chromium binary; the message says how to get one."""


def find_chromium(configured: str | None = None, playwright_own: str | None = None) -> str:
    """The Chromium to drive: `configured`, then $BOTGRPO_CHROMIUM, Playwright's own download
    (`playwright_own`, the path Playwright expects it at), then the system's."""
    explicit = configured or os.environ.get(ENV_VAR)
    if explicit:
        path = shutil.which(explicit) or explicit
        if not Path(path).is_file():
            raise ChromiumNotFound(f"Chromium path {explicit!r} (from the option or ${ENV_VAR}) does not exist; {HOW_TO_GET_ONE}")
        return path
    if playwright_own and Path(playwright_own).is_file():
        return playwright_own
    for candidate in SYSTEM_PATHS:
        if Path(candidate).is_file():
            return candidate
    raise ChromiumNotFound(HOW_TO_GET_ONE)
