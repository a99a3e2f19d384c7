"""scripts/evidence_report.py on a committed benchmark summary: its tables carry the JSON's numbers."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "docs" / "results" / "convergence" / "arith_synth_contract"  # a real convergence.json (2 seeds)


def _module():
    spec = importlib.util.spec_from_file_location("evidence_report", ROOT / "scripts" / "evidence_report.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_summary_tables_and_plot_come_from_the_json(tmp_path):
    for name in ("react_synth_k2", "react_synth_k4", "arith_synth_pass@1"):
        shutil.copytree(SOURCE, tmp_path / name)
    _module().main(tmp_path)
    text = (tmp_path / "summary.md").read_text()
    data = json.loads((SOURCE / "convergence.json").read_text())
    bot = data["algorithms"]["bot_grpo"]
    final = f"{bot['final']['median']:.3f} ({bot['final']['min']:.3f}-{bot['final']['max']:.3f})"
    assert f"| bot_grpo | >40 / >40 | >40 / >40 | {final} |" in text  # per-seed steps to 0.2 and 0.4, final
    assert "## (b) react_synth, k independent spec sites" in text and "| sites=4 | bot_grpo | 2 |" in text
    assert "## Noisy spans" not in text  # absent results are left out, not invented
    assert (tmp_path / "sites.png").stat().st_size > 10_000
    gains = _module().paired_gain(data, "bot_grpo")
    runs = data["algorithms"]
    assert gains == [runs["bot_grpo"]["runs"][s]["curve"][-1][1] - runs["grpo"]["runs"][s]["curve"][-1][1]
                     for s in ("0", "1")]
