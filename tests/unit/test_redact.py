"""Secrets never reach config.yaml, checkpoints or loggers; request-bound options may not carry them."""

import pytest
import yaml

from botgrpo_cli.config import load_config
from botgrpo_cli.errors import UserError
from botgrpo_cli.redact import REDACTED, redact


def test_redact_keys_urls_and_argv():
    data = {"task_options": {"hf_token": "hf_abc", "apiKey": "k", "name": "aime", "empty_token": ""},
            "model": "https://user:pa55@hub.example/m",
            "command": ["serve", "--token", "t0p", "--api-key=zz", "HF_TOKEN=hf_x", "--steps", "3"]}
    out = redact(data)
    text = yaml.safe_dump(out)
    for secret in ("hf_abc", "pa55", "t0p", "zz", "hf_x"):
        assert secret not in text
    assert out["task_options"] == {"hf_token": REDACTED, "apiKey": REDACTED, "name": "aime", "empty_token": ""}
    assert out["model"] == f"https://user:{REDACTED}@hub.example/m"
    assert out["command"] == ["serve", "--token", REDACTED, f"--api-key={REDACTED}", f"HF_TOKEN={REDACTED}", "--steps", "3"]


def test_config_yaml_is_redacted(tmp_path):
    cfg = load_config(sets=["run.task_options={hf_token: hf_secret1, n: 2}",
                            "reward.command=[python, serve.py, --token, s3cret]"])
    cfg.save(tmp_path / "config.yaml")
    text = (tmp_path / "config.yaml").read_text()
    assert "hf_secret1" not in text and "s3cret" not in text and REDACTED in text
    assert cfg.run.task_options["hf_token"] == "hf_secret1"  # the run itself still has it


@pytest.mark.parametrize("options", ["{vlm_api_key: sk-1}", "{vlm_base_url: 'http://x:1/v1'}", "{save_dir: /tmp/x}"])
def test_reward_options_may_not_carry_service_settings(options):
    with pytest.raises(UserError, match="reward.options sets .*own setting"):
        load_config(sets=[f"reward.options={options}"])
