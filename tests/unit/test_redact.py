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


# The four forms the hostile probe found reaching config.yaml (issue 26), each as the run's config holds it.
SECRET_FORMS = {
    "shell string": ("reward.command=[sh, -c, 'python serve.py --token SHELLTOK1 --port 1']", "SHELLTOK1"),
    "url userinfo": ("model.name_or_path=https://USERINFOTOK2@hub.example/m", "USERINFOTOK2"),
    "query secret": ("reward.command=[python, s.py, --base-url, 'http://h:1/v1?model=m&api_key=QUERYTOK3']", "QUERYTOK3"),
    "header in env": ("reward.command=[env, 'HDR=Authorization: Bearer HEADERTOK4', python, s.py]", "HEADERTOK4"),
}


@pytest.mark.parametrize("form", list(SECRET_FORMS))
def test_secret_forms_never_reach_config_yaml(tmp_path, form):
    setting, secret = SECRET_FORMS[form]
    cfg = load_config(sets=[setting])
    cfg.save(tmp_path / "config.yaml")
    text = (tmp_path / "config.yaml").read_text()
    assert secret not in text and REDACTED in text
    assert secret not in cfg.to_yaml()  # the copy a checkpoint stores
    assert secret in str(cfg.to_dict())  # the run itself still has it


@pytest.mark.parametrize("text, shown", [
    ("sh -c 'serve --token T1 --port 3'", f"sh -c 'serve --token {REDACTED} --port 3'"),
    ('bash -c "HF_TOKEN=T2 serve --api-key=T3 --n 2"', f'bash -c "HF_TOKEN={REDACTED} serve --api-key={REDACTED} --n 2"'),
    ("https://T4@host/x", f"https://{REDACTED}@host/x"),
    ("http://h/v1?key=T5&model=m&access_token=T6#f", f"http://h/v1?key={REDACTED}&model=m&access_token={REDACTED}#f"),
    ("https://b.example/o?X-Amz-Signature=T7&sig=T8&password=T9",
     f"https://b.example/o?X-Amz-Signature={REDACTED}&sig={REDACTED}&password={REDACTED}"),
    ("HDR=Authorization: Bearer T10", f"HDR=Authorization: {REDACTED}"),
    ("curl -H 'X-Api-Key: T11' -H 'Accept: json'", f"curl -H 'X-Api-Key: {REDACTED}' -H 'Accept: json'"),
    ("token Bearer T12abc", f"token Bearer {REDACTED}"),
])
def test_secrets_inside_strings(text, shown):
    assert redact(text) == shown


@pytest.mark.parametrize("text", ["http://127.0.0.1:8765/v1/score?model=qwen&n=2", "time: 12:30", "sh -c 'serve --port 3'",
                                  "a=b --steps=3", "Qwen/Qwen2.5-0.5B", "monkey: 3"])
def test_ordinary_strings_are_kept(text):
    assert redact(text) == text
