"""Render compiled components to screenshots in one Chromium, driven from a dedicated asyncio thread.

Design: one browser per process; `pages` slots, each a browser context with one page. Every render
gets a document of its own: after each render, in the background and before the slot serves
again, the page navigates to a fresh in-memory document (a new JavaScript realm, React loaded by
an init script) and the origin's storage is cleared; page.js refuses to mount twice in one
document. A render is then one evaluate (mount) and one screenshot. Every request other than that
document is aborted, and the browser itself has no route out (chromium.py's flags). A render past
its deadline gets its slot's context closed and rebuilt in the background; if that hangs, the
browser is restarted. Chromium is the one child here that is not a LineChild
(botgrpo_rewards.protocol): Playwright starts it and speaks its own pipe protocol to it, so its
life cycle is Playwright's launch/close plus the slot resets below. The esbuild helper is a LineChild.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import async_playwright

from botgrpo_rewards.render.chromium import LAUNCH_ARGS, find_chromium

log = logging.getLogger("botgrpo_rewards.render")
PAGE_URL = "http://render.botgrpo.invalid/"
ORIGIN = PAGE_URL.rstrip("/")
PAGE_JS = (Path(__file__).resolve().parent / "page.js").read_text(encoding="utf-8")
# connect-src/img-src/etc. 'none' stop fetch, XHR, WebSockets, images and frames even if routing missed one.
CSP = (
    "default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; style-src 'unsafe-inline'; "
    "img-src data: blob:; font-src data:; connect-src 'none'; frame-src 'none'; child-src 'none'; "
    "worker-src 'none'; form-action 'none'; base-uri 'none'"
)
# Sent as a header (a <meta> cannot sandbox): the browser itself then opens no popups or new windows
# (window.open, target=_blank links and forms), shows no dialogs and submits no forms;
# allow-same-origin keeps localStorage working for components that use it (cleared between renders).
HEADERS = {"Content-Security-Policy": CSP + "; sandbox allow-scripts allow-same-origin",
           "Cache-Control": "no-store"}
# Animations and transitions off, so a screenshot does not depend on when it was taken.
STILL_CSS = (
    "*,*::before,*::after{animation:none!important;transition:none!important;caret-color:transparent!important}"
    "html,body{margin:0;background:#fff}"
)
HTML = (
    f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
    f'<meta data-botgrpo http-equiv="Content-Security-Policy" content="{CSP}"><style data-botgrpo>{STILL_CSS}</style></head>'
    f'<body><div id="root"></div></body></html>'
)
MAX_BOXES = 2000
RESET_TIMEOUT_S = 5.0
# Waiting for a slot (its page reloading, or being rebuilt after a timeout) is the service's own
# work, not the request's: it does not count against the deadline, up to this long.
SLOT_WAIT_S = 60.0


class BrowserUnavailable(RuntimeError):
    """Chromium died and could not be restarted."""


class RenderTimeout(Exception):
    """The render did not finish by its deadline (its page has been or is being replaced)."""


@dataclass
class Render:
    """What one render produced. `error` says why nothing rendered when `rendered` is False."""

    rendered: bool
    png: bytes | None = None
    text: str = ""
    boxes: list[list[float]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # console errors and uncaught exceptions
    error: str | None = None
    timings: dict[str, float] = field(default_factory=dict)  # milliseconds


@dataclass
class _Slot:
    browser: object
    context: object
    page: object
    cdp: object
    crashed: bool = False


class Renderer:
    """Thread-safe front of an asyncio Playwright session; `render` may be called from any thread."""

    def __init__(self, runtime_js: str, chromium: str | None = None, pages: int = 2,
                 viewport: tuple[int, int] = (640, 480), fresh_context: bool = False):
        self.runtime_js = runtime_js
        self.chromium = chromium
        self.n_pages = pages
        self.viewport = {"width": viewport[0], "height": viewport[1]}
        self.fresh_context = fresh_context  # benchmark baseline: a new context per render
        self.restarts = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="render-browser", daemon=True)
        self._browser = None
        self._pw = None
        self._slots: asyncio.Queue | None = None
        self._resets: set[asyncio.Task] = set()  # background reloads and rebuilds of slots
        self._restart_lock = asyncio.Lock()
        self._closing = False
        self.broken: str | None = None  # set when Chromium cannot be brought back

    # ---------------------------------------------------------------- life cycle (any thread)

    def start(self) -> None:
        self._thread.start()
        self._call(self._start(), timeout=120.0)

    def close(self) -> None:
        if self._thread.is_alive():
            try:
                self._call(self._stop(), timeout=30.0)
            finally:
                self._loop.call_soon_threadsafe(self._loop.stop)
                self._thread.join(timeout=10)

    def render(self, js: str, deadline: float) -> Render:
        """Mount CommonJS component code and screenshot it. Raises RenderTimeout past `deadline`
        (a `time.monotonic()` value), not counting the wait for a free page."""
        budget = max(0.0, deadline - time.monotonic())
        return self._call(self._render(js, budget), timeout=budget + SLOT_WAIT_S + 2.0)

    def _call(self, coro, timeout: float):
        fut = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return fut.result(timeout=timeout)
        except TimeoutError:
            fut.cancel()
            raise RenderTimeout("the browser did not answer in time") from None

    # ---------------------------------------------------------------- browser (loop thread)

    async def _start(self) -> None:
        self._pw = await async_playwright().start()
        path = find_chromium(self.chromium, self._pw.chromium.executable_path)
        await self._launch(path)
        self._slots = asyncio.Queue()
        for _ in range(self.n_pages):
            self._slots.put_nowait(await self._new_slot())

    async def _launch(self, path: str) -> None:
        self._path = path
        self._browser = await self._pw.chromium.launch(executable_path=path, args=list(LAUNCH_ARGS), headless=True)

    async def _stop(self) -> None:
        self._closing = True
        for task in list(self._resets):
            task.cancel()
        await asyncio.gather(*self._resets, return_exceptions=True)
        try:
            if self._browser is not None:
                await asyncio.wait_for(self._browser.close(), RESET_TIMEOUT_S)
        except (PlaywrightError, asyncio.TimeoutError):
            pass
        if self._pw is not None:
            await self._pw.stop()

    async def _new_slot(self) -> _Slot:
        context = await self._browser.new_context(
            viewport=self.viewport, device_scale_factor=1, locale="en-US", timezone_id="UTC",
            reduced_motion="reduce", service_workers="block", java_script_enabled=True,
        )
        await context.route("**/*", _route)
        await context.route_web_socket("**/*", _drop_socket)
        await context.add_init_script(self.runtime_js)
        await context.add_init_script(PAGE_JS)
        context.on("page", _close_popup)  # the sandbox opens none; closed should one appear anyway
        page = await context.new_page()
        page.on("dialog", _dismiss)
        slot = _Slot(self._browser, context, page, await context.new_cdp_session(page))
        page.on("crash", lambda _page: setattr(slot, "crashed", True))
        await page.goto(PAGE_URL, wait_until="domcontentloaded")
        return slot

    def _in_background(self, coro) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._resets.add(task)
        task.add_done_callback(self._resets.discard)

    async def _refresh(self, slot: _Slot) -> None:
        """Give a used slot a fresh document and empty storage, then free it; rebuild it if that fails.
        The navigation comes first: it ends the old document, which could otherwise write again."""
        try:
            await asyncio.wait_for(self._fresh_document(slot), RESET_TIMEOUT_S)
        except (PlaywrightError, asyncio.TimeoutError):
            await self._reset(slot)
            return
        self._slots.put_nowait(slot)

    @staticmethod
    async def _fresh_document(slot: _Slot) -> None:
        await slot.page.goto(PAGE_URL, wait_until="domcontentloaded")
        await asyncio.gather(slot.cdp.send("Storage.clearDataForOrigin", {"origin": ORIGIN, "storageTypes": "all"}),
                             slot.cdp.send("Page.resetNavigationHistory"))

    async def _reset(self, slot: _Slot) -> None:
        """Replace a slot whose page is stuck or crashed; restart the browser if that fails."""
        for _ in range(3):
            if self._closing:
                return
            try:
                if slot.browser is self._browser:
                    await asyncio.wait_for(slot.context.close(), RESET_TIMEOUT_S)
                self._slots.put_nowait(await asyncio.wait_for(self._new_slot(), RESET_TIMEOUT_S))
                return
            except (PlaywrightError, asyncio.TimeoutError):
                await self._restart_browser(slot.browser)
        self.broken = "Chromium could not be restarted three times in a row; see the service's stderr"

    async def _restart_browser(self, wedged) -> None:
        """Replace the browser `wedged`, unless another reset already did."""
        async with self._restart_lock:
            if self._browser is not wedged or self._closing:
                return
            self.restarts += 1
            try:
                await asyncio.wait_for(wedged.close(), RESET_TIMEOUT_S)
            except (PlaywrightError, asyncio.TimeoutError):
                pass  # gone or wedged; Playwright kills the process when its connection drops
            try:
                await self._launch(self._path)
            except PlaywrightError as err:
                log.warning("relaunching Chromium failed: %s", err)

    async def _render(self, js: str, budget: float) -> Render:
        loop = asyncio.get_running_loop()
        if self.broken:
            raise BrowserUnavailable(self.broken)
        try:
            slot = await asyncio.wait_for(self._slots.get(), SLOT_WAIT_S)
        except asyncio.TimeoutError:
            raise RenderTimeout("no page became free (the browser is stuck?)") from None
        if self.fresh_context:
            await slot.context.close()
            slot = await self._new_slot()
        deadline = loop.time() + budget
        try:
            result = await asyncio.wait_for(self._mount(slot, js), max(0.0, deadline - loop.time()))
        except asyncio.TimeoutError:
            self._in_background(self._reset(slot))
            raise RenderTimeout("the render did not finish before its deadline") from None
        except PlaywrightError as err:
            if slot.crashed or slot.page.is_closed():
                self._in_background(self._reset(slot))
                return Render(rendered=False, error="the page crashed (out of memory?)")
            self._release(slot)
            return Render(rendered=False, error=_first_line(err))
        self._release(slot)
        return result

    def _release(self, slot: _Slot) -> None:
        if self.fresh_context:  # the baseline replaces the whole context before its next render
            self._slots.put_nowait(slot)
        else:
            self._in_background(self._refresh(slot))

    async def _mount(self, slot: _Slot, js: str) -> Render:
        t1 = time.perf_counter()
        dom = await slot.page.evaluate("([js, n]) => window.__botgrpoMount(js, n)", [js, MAX_BOXES])
        t2 = time.perf_counter()
        shot = await slot.cdp.send("Page.captureScreenshot", {"format": "png", "optimizeForSpeed": True})
        png = base64.b64decode(shot["data"])
        t3 = time.perf_counter()
        timings = {"mount_ms": (t2 - t1) * 1e3, "screenshot_ms": (t3 - t2) * 1e3}
        return Render(rendered=dom["nodes"] > 0, png=png, text=dom["text"], boxes=dom["boxes"],
                      errors=dom["errors"], error=None if dom["nodes"] > 0 else "the component rendered nothing",
                      timings=timings)


def _first_line(err: Exception) -> str:
    text = str(err).strip()
    # Playwright prefixes evaluate errors with its own call name; keep the page's message.
    for prefix in ("Page.evaluate: ", "Error: "):
        text = text.removeprefix(prefix)
    return text.splitlines()[0][:500] if text else type(err).__name__


def _is_top_document(request) -> bool:
    try:
        return request.url == PAGE_URL and request.resource_type == "document" and request.frame.parent_frame is None
    except PlaywrightError:  # a request with no frame (a worker's)
        return False


async def _route(route) -> None:
    # Only the top frame's own document is served: a frame of any address, this one included, is not.
    if _is_top_document(route.request):
        await route.fulfill(status=200, content_type="text/html; charset=utf-8", headers=HEADERS, body=HTML)
    else:
        await route.abort("blockedbyclient")


async def _drop_socket(ws) -> None:
    await ws.close()


async def _dismiss(dialog) -> None:
    await dialog.dismiss()


async def _close_popup(page) -> None:
    if await page.opener() is not None:  # a popup, not the slot's own page
        await page.close(run_before_unload=False)
