"""The render reward backend: render the completion's React component in Chromium and judge it.

score = the judge's score in [0, 1] (0 when nothing rendered); metrics `rendered` and `similarity`
(similarity judge) or `judge` (vlm judge, pairwise mode). Options and scoring are in README.md.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from pathlib import Path

from botgrpo_rewards.backend import Backend, BackendError, BackendTimeout, ScoreResult, check_option_names
from botgrpo_rewards.lru import LRU
from botgrpo_rewards.protocol import ScoreRequest
from botgrpo_rewards.react.extract import answer_code, maybe_component
from botgrpo_rewards.render.compiler import CompileError, Compiler
from botgrpo_rewards.render.judges import RenderOptions, compare_similarity, similarity_verdict
from botgrpo_rewards.render.renderer import BrowserUnavailable, Render, Renderer, RenderTimeout
from botgrpo_rewards.render.similarity import is_blank
from botgrpo_rewards.render.vlm import VlmClient, VlmConfig, judge_pair

# request options (README.md): RenderOptions' fields, and the vlm judge's model name, timeout and retries
OPTIONS = ("judge", "mode", "save_group", "vlm_model", "vlm_timeout_s", "vlm_max_retries", "missing_score", "rendered_score")

REF_CACHE_SIZE = 512
REF_CACHE_BYTES = 128 << 20  # screenshots of large pages are megabytes: bound the memory, not only the count
VLM_CACHE_SIZE = 10_000  # verdicts of every model together: a request's model name pins nothing else


class RenderBackend(Backend):
    """Renders completions with one Chromium (`pages` reused pages) and scores them with a judge."""

    name = "render"
    version = "0.1.0"
    capabilities = ("render", "similarity", "vlm", "pairwise")
    max_inflight = 4
    max_completion_chars = 200_000  # compiling and mounting grow with the text; longer is refused

    def __init__(self, chromium: str | None = None, pages: int | None = None, viewport: tuple[int, int] = (640, 480),
                 save_dir: str | None = None, vlm_base_url: str | None = None, vlm_model: str | None = None):
        """save_dir (else $BOTGRPO_RENDER_SAVE_DIR): where every candidate's `<id>.png` is written; the
        VLM's address: see VlmConfig.from_settings. These are the service's settings, never a request's."""
        self.chromium = chromium
        self.save_dir = save_dir or os.environ.get("BOTGRPO_RENDER_SAVE_DIR") or None
        self.vlm_base_url, self.vlm_model = vlm_base_url, vlm_model
        self.pages = pages or int(os.environ.get("BOTGRPO_RENDER_PAGES", "2"))
        # one request per page at a time: the rest wait in the runner's queue, where their deadline
        # has not started, so two endless loops holding both pages delay other renders, never fail them
        self.max_inflight = self.pages
        self.viewport = viewport
        self._compiler: Compiler | None = None
        self._renderer: Renderer | None = None
        self._refs = LRU(REF_CACHE_SIZE, REF_CACHE_BYTES, _render_bytes)  # code hash -> Render of trusted code
        self._verdicts = LRU(VLM_CACHE_SIZE)  # VLM verdicts, shared by every model and request

    def start(self) -> None:
        self._compiler = Compiler()
        self._renderer = Renderer(self._compiler.runtime(), self.chromium, self.pages, self.viewport)
        self._renderer.start()

    def close(self) -> None:
        if self._renderer is not None:
            self._renderer.close()
        if self._compiler is not None:
            self._compiler.close()

    # ------------------------------------------------------------------ rendering

    def render_code(self, code: str, deadline: float) -> Render:
        """Compile and render TSX source. A compile error is a failed render; past the deadline
        raises BackendTimeout."""
        if self._renderer is None or self._compiler is None:
            raise BackendError("the render backend was not started (call start() first)")
        t0 = time.perf_counter()
        try:
            js = self._compiler.compile(code, timeout=max(0.1, deadline - time.monotonic()))
        except CompileError as err:
            return Render(rendered=False, error=f"compile error: {err}")
        except TimeoutError:
            raise BackendTimeout("compiling the component took past the deadline") from None
        compile_ms = (time.perf_counter() - t0) * 1e3
        try:
            result = self._renderer.render(js, deadline)
        except RenderTimeout as err:
            raise BackendTimeout(f"render: {err} (an endless loop, a huge DOM or a huge allocation?)") from None
        except BrowserUnavailable as err:
            raise BackendError(str(err)) from None
        result.timings["compile_ms"] = compile_ms
        if result.rendered and is_blank(result.png):
            result.rendered, result.error = False, "the screenshot is blank (one colour)"
        return result

    def _cached_render(self, code: str, deadline: float, what: str) -> Render:
        """A render of trusted code (reference, other), cached by code hash; it must render."""
        key = hashlib.sha256(code.encode("utf-8", "surrogatepass")).hexdigest()
        cached = self._refs.get(key)
        if cached is not None:
            return cached
        result = self.render_code(code, deadline)
        if not result.rendered:
            raise BackendError(f"reference.{what} does not render: {result.error}; fix the task's reference", "bad_request")
        self._refs.put(key, result)
        return result

    def _vlm_client(self, options: dict) -> VlmClient:
        return VlmClient(VlmConfig.from_settings(options, self.vlm_base_url, self.vlm_model), self._verdicts)

    # ------------------------------------------------------------------ scoring

    def score(self, request: ScoreRequest, deadline: float) -> ScoreResult:
        check_option_names("render", request.options, OPTIONS)
        opts = RenderOptions.parse(request.options)
        ref_code = _reference(request, "reference_code", required=opts.judge == "similarity")
        other_code = _other_code(request, required=opts.mode == "pairwise")
        client = self._vlm_client(request.options) if opts.judge == "vlm" else None
        ref = self._cached_render(ref_code, deadline, "reference_code") if ref_code else None
        found_code = answer_code(request.completion, request.options)
        if found_code is None or not maybe_component(found_code[0]):  # no attempt: nothing to render
            why = ("the reasoning never closed (cut off by the length limit?): no code" if found_code is None
                   else "no component: the completion holds no JSX, function or class")
            return ScoreResult(score=opts.missing_score, metrics={"rendered": 0.0} | _judge_metric(opts, 0.0),
                               info={"render_error": why})
        cand = self.render_code(found_code[0], deadline)
        info = _render_info(cand)
        if self.save_dir and cand.png:
            info["screenshot"] = _save(cand.png, self.save_dir, opts.save_group, request.id)
        metrics = {"rendered": float(cand.rendered)}
        if opts.judge == "none":
            return ScoreResult(score=float(cand.rendered), metrics=metrics, info=info)
        if not cand.rendered:
            return ScoreResult(score=0.0, metrics=metrics | _judge_metric(opts, 0.0), info=info)
        t0 = time.perf_counter()
        instruction = str(request.reference.get("spec") or request.prompt)
        value = self._judge(opts, cand, ref, other_code, instruction, client, deadline, info)
        info["judge_ms"] = round((time.perf_counter() - t0) * 1e3, 2)
        return ScoreResult(score=opts.score(value), metrics=metrics | _judge_metric(opts, value), info=info)

    def _judge(self, opts: RenderOptions, cand: Render, ref: Render | None, other_code: str | None,
               instruction: str, client: VlmClient | None, deadline: float, info: dict) -> float:
        """The judge's score of a rendered candidate; adds the judge's details to `info`."""
        if opts.mode == "pairwise":
            other = self._cached_render(other_code, deadline, "other_code")
            if client is not None:
                def verdict(first: bytes, second: bytes) -> str:
                    return client.compare(instruction, first, second, deadline)
            else:
                verdict = similarity_verdict(ref, {cand.png: cand, other.png: other})
            return judge_pair(cand.png, other.png, verdict)
        if client is not None:
            value, info["reason"] = client.score(instruction, cand.png, ref.png if ref else None, deadline)
            return value
        parts = compare_similarity(cand, ref)
        value = parts.pop("score")
        info.update({k: round(v, 4) for k, v in parts.items()})
        return value


def _judge_metric(opts: RenderOptions, value: float) -> dict[str, float]:
    """The judge's raw value under its metric name (none for judge=none)."""
    if opts.judge == "none":
        return {}
    return {"similarity" if opts.judge == "similarity" and opts.mode == "single" else "judge": value}


def _reference(request: ScoreRequest, key: str, required: bool) -> str | None:
    code = request.reference.get(key)
    if code is None and required:
        raise BackendError(f"this judge/mode needs reference.{key} (TSX source of a component)", "bad_request")
    if code is not None and not isinstance(code, str):
        raise BackendError(f"reference.{key} must be a string of TSX source", "bad_request")
    return code


def _other_code(request: ScoreRequest, required: bool) -> str | None:
    """The pairwise opponent: reference.other_completion (a whole completion; its code is read as
    the candidate's is, after any reasoning block) or reference.other_code (TSX source)."""
    completion = request.reference.get("other_completion")
    if completion is None:
        return _reference(request, "other_code", required)
    if not isinstance(completion, str):
        raise BackendError("reference.other_completion must be a string (the opponent's completion)", "bad_request")
    found = answer_code(completion, request.options)
    return found[0] if found is not None else ""  # an opponent whose reasoning never closed answered nothing


def _render_info(result: Render) -> dict:
    info: dict = {k: round(v, 2) for k, v in result.timings.items()}
    if result.error:
        info["render_error"] = result.error
    info["n_console_errors"] = len(result.errors)
    if result.errors:
        info["console_errors"] = "\n".join(result.errors[:5])
    return info


def _safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", text)[:100].lstrip(".") or "render"


def _save(png: bytes, root: str, group: str, request_id) -> str:
    """Write `<root>/<group>/<id>.png`: the service chose root; the request's group and id only name
    folders and a file inside it (each part reduced to [A-Za-z0-9_.-], no leading dot)."""
    path = Path(root).joinpath(*(_safe_name(part) for part in group.split("/") if part))
    path.mkdir(parents=True, exist_ok=True)
    target = path / f"{_safe_name(str(request_id))}.png"
    target.write_bytes(png)
    return str(target)


def _render_bytes(render: Render) -> int:
    """What a cached render holds in memory, near enough: its screenshot and its page text."""
    return len(render.png or b"") + 2 * len(render.text) + 16 * 4 * len(render.boxes)
