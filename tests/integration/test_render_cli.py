"""`botgrpo reward render FILE --out DIR` with real Chromium: PNGs, rendered.jsonl and index.html."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from botgrpo_cli.cli import app
from botgrpo_cli.errors import UserError
from botgrpo_rewards.protocol import ServiceStartError

LINES = [
    {"id": "ok", "prompt": "A <b>counter</b> button", "completion": "```tsx\nexport default function App() { return <button>Count 0</button>; }\n```",
     "reference": {"reference_code": "export default function App() { return <button>Count 0</button>; }"}},
    {"id": "boom", "prompt": "p", "completion": 'export default function App() { throw new Error("<script>x</script>"); }'},
]


def test_contact_sheet(tmp_path):
    rollout = tmp_path / "roll.jsonl"
    rollout.write_text("\n".join(json.dumps(x) for x in LINES) + "\n{not json\n", encoding="utf-8")
    out = tmp_path / "sheet"
    result = CliRunner().invoke(app, ["reward", "render", str(rollout), "--out", str(out), "--pages", "1"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(x) for x in (out / "rendered.jsonl").read_text().splitlines()]
    assert [(r["id"], r["rendered"]) for r in rows] == [("ok", True), ("boom", False), ("", False)]
    assert rows[0]["score"] == 1.0 and (out / "png" / rows[0]["png"]).stat().st_size > 0
    assert "invalid JSON" in rows[2]["error"]
    page = (out / "index.html").read_text()
    assert page.count('class="card') == 3 and f'src="png/{rows[0]["png"]}"' in page
    assert "<script>" not in page and "&lt;script&gt;x&lt;/script&gt;" in page  # model text shown, never run


def test_missing_file_is_a_user_error(tmp_path):
    result = CliRunner().invoke(app, ["reward", "render", str(tmp_path / "nope.jsonl"), "--out", str(tmp_path)])
    assert isinstance(result.exception, UserError) and "does not exist" in str(result.exception)


def test_names_follow_lines_and_a_missing_chromium_is_one_error(tmp_path):
    rollout = tmp_path / "roll.jsonl"
    same = {"id": "a/b", "prompt": "p", "completion": "export default function App() { return <div>hi</div>; }"}
    rollout.write_text(json.dumps(same) + "\n" + json.dumps(same) + "\n", encoding="utf-8")
    out = tmp_path / "sheet"
    result = CliRunner().invoke(app, ["reward", "render", str(rollout), "--out", str(out), "--pages", "1"])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (out / "png").iterdir()) == ["00001-a_b.png", "00002-a_b.png"]  # ids repeat, files do not
    result = CliRunner().invoke(app, ["reward", "render", str(rollout), "--out", str(tmp_path / "x"),
                                      "--chromium", str(tmp_path / "no-chromium")])
    assert isinstance(result.exception, ServiceStartError) and "no-chromium" in str(result.exception)
