"""Credentials in a reward URL (`http://user:PASS@host:port`) and the reward token never reach what
train, eval and `reward score` print or write: stdout, stderr and every file under their output
folders are scanned for both. Real tiny model, a real math service over HTTP; one step each."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from typer.testing import CliRunner

from botgrpo_cli.cli import app
from botgrpo_cli.errors import UserError
from botgrpo_cli.reward_client.http import EndpointError, HttpRewardClient
from test_bring_your_own import SMALL, TOKEN, MathOverHttp

PASSWORD = "pw-Zq8sK2-in-the-url"
SECRETS = (PASSWORD, TOKEN)


@pytest.fixture(scope="module")
def model(tiny_model) -> Path:
    return tiny_model("arith_synth")


@pytest.fixture(scope="module")
def math_url():
    """The URL of a math service over HTTP, written with credentials in it."""
    service = MathOverHttp()
    yield service.url.replace("http://", f"http://alice:{PASSWORD}@")
    service.kill()


@pytest.fixture(scope="module")
def prompts(tmp_path_factory) -> Path:
    from botgrpo_tasks import get_task

    path = tmp_path_factory.mktemp("user") / "prompts.jsonl"
    rows = [{"prompt": ex.prompt, "answer": ex.reference["answer"]}
            for ex in get_task("arith_synth").train_examples()[:10]]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture(autouse=True)
def token(monkeypatch):
    monkeypatch.setenv("BOTGRPO_REWARD_TOKEN", TOKEN)


def _leaks(texts: list[str], *roots: Path) -> list[str]:
    """Where a secret shows: 'output' for a printed text, else the file's path."""
    found = [f"output: ...{t[max(0, t.find(s) - 60):t.find(s) + 20]!r}" for t in texts for s in SECRETS if s in t]
    for root in roots:
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            data = path.read_bytes()
            found += [str(path) for s in SECRETS if s.encode() in data]
    return found


def _run(capfd, caplog, *args: str) -> tuple[int, list[str]]:
    caplog.set_level(logging.INFO)
    result = CliRunner().invoke(app, list(args))
    out, err = capfd.readouterr()
    return result.exit_code, [result.output, out, err, caplog.text, repr(result.exception)]


def test_train_eval_and_score_write_no_credential(model, math_url, prompts, tmp_path, capfd, caplog):
    code, texts = _run(capfd, caplog, "train", "--out", str(tmp_path / "run"), "--steps", "1",
                       *[a for s in [*SMALL, f"model.name_or_path={model}", f"run.task_options={{path: {prompts}}}",
                                     f"reward.url=[{math_url}]", "run.save_every=1", "log.tensorboard=true"] for a in ("--set", s)])
    assert code == 0, texts
    assert sorted(p.name for p in (tmp_path / "run").rglob("*.pt")), "no checkpoint was written to scan"
    assert list((tmp_path / "run").rglob("events.out.tfevents*")), "no TensorBoard log was written to scan"
    code, more = _run(capfd, caplog, "eval", "--task", "prompts", "--task-option", f"path={prompts}", "--url",
                      math_url, "--model", str(model), "--out", str(tmp_path / "eval"), "--n", "1",
                      "--max-new-tokens", "16", "--threads", "1")
    assert code == 0, more
    texts += more
    rollouts = tmp_path / "eval" / "rollouts.jsonl"
    (tmp_path / "scored").mkdir()
    code, more = _run(capfd, caplog, "reward", "score", str(rollouts), "--url", math_url, "-o",
                      str(tmp_path / "scored" / "s.jsonl"))
    assert code == 0, more
    texts += more
    assert json.loads((tmp_path / "eval" / "eval.json").read_text())  # the files scanned are real ones
    assert (tmp_path / "scored" / "s.jsonl").read_text().count("\n") == rollouts.read_text().count("\n")
    assert _leaks(texts, tmp_path) == []


def test_failures_name_the_endpoint_without_its_credentials(model, prompts, tmp_path, capfd, caplog):
    """An endpoint that is not there: each command fails with one line naming the host, not the password;
    a killed `reward score` leaves its partial record behind, also without it."""
    down = f"http://alice:{PASSWORD}@127.0.0.1:9"  # the discard port: nothing listens on it
    code, texts = _run(capfd, caplog, "train", "--out", str(tmp_path / "run"), "--steps", "1",
                       *[a for s in [*SMALL, f"model.name_or_path={model}", f"run.task_options={{path: {prompts}}}",
                                     f"reward.url={down}"] for a in ("--set", s)])
    assert code != 0 and "127.0.0.1:9" in "".join(texts)
    rollouts = tmp_path / "r.jsonl"
    rollouts.write_text(json.dumps({"id": "a", "completion": "Answer: 3", "reference": {"answer": "3"}}) + "\n")
    code, more = _run(capfd, caplog, "reward", "score", str(rollouts), "--url", down, "-o", str(tmp_path / "s.jsonl"))
    assert code != 0 and (tmp_path / "s.jsonl.partial.json").exists()
    texts += more
    code, more = _run(capfd, caplog, "eval", "--task", "prompts", "--task-option", f"path={prompts}", "--url", down,
                      "--model", str(model), "--out", str(tmp_path / "eval"), "--n", "1", "--max-new-tokens", "8")
    assert code != 0
    texts += more
    assert _leaks(texts, tmp_path) == []


def test_a_credential_sent_in_clear_text_beyond_loopback_is_warned_about_once(caplog):
    # 198.51.100.1 is a documentation address (TEST-NET-2): nothing answers, the call fails fast
    client = HttpRewardClient("http://198.51.100.1:9", timeout_s=0.2, token=TOKEN)
    for _ in range(2):
        with pytest.raises(EndpointError):
            client.health()
    warnings = [r.getMessage() for r in caplog.records if "clear text" in r.getMessage()]
    assert len(warnings) == 1 and "198.51.100.1:9" in warnings[0] and TOKEN not in warnings[0]
    caplog.clear()
    for url in ("http://127.0.0.1:9", "https://198.51.100.1:9"):  # loopback, or encrypted: no warning
        with pytest.raises((EndpointError, UserError)):
            HttpRewardClient(url, timeout_s=0.2, token=TOKEN).health()
    assert not [r for r in caplog.records if "clear text" in r.getMessage()]
