"""The parts of the vLLM engine that need no engine: per-row seeds, the row rule shared with the HF
engine, the weights pushed to vLLM (names as in an HF checkpoint, LoRA merged), the missing-extra error."""

from __future__ import annotations

import pytest
import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

from botgrpo_cli.errors import UserError
from botgrpo_cli.rollout import OffsetDecoder
from botgrpo_cli.rollout.vllm import VLLMEngine, VLLMOptions, finish_row, policy_weights, row_seed, whole_prefills


def test_row_seeds_depend_on_prompt_and_index_only():
    seeds = {row_seed(5, p, k) for p in ([1, 2], [2, 1]) for k in range(4)}
    assert len(seeds) == 8  # distinct per prompt and per completion index
    assert row_seed(5, [1], 1) == row_seed(5, (1,), 1) and row_seed(5, [1], 1) != row_seed(6, [1], 1)
    assert all(0 <= s < 2**31 - 1 for s in seeds)  # within vLLM's seed range


def test_a_cpu_engine_prefills_each_prompt_whole_within_the_context(tmp_path):
    # no chunks (a CPU generator cannot rewind), so the step budget must hold the longest context
    assert whole_prefills("unused", 256) == {"enable_chunked_prefill": False, "max_num_batched_tokens": 4096}
    assert whole_prefills("unused", 8192)["max_num_batched_tokens"] == 8192
    Qwen2Config(max_position_embeddings=16384).save_pretrained(tmp_path)  # no limit given: the model's own
    assert whole_prefills(str(tmp_path), None)["max_num_batched_tokens"] == 16384


@pytest.fixture(scope="module")
def tok() -> PreTrainedTokenizerFast:
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(["a = 1;\n\nb = 2; café"] * 10, trainers.BpeTrainer(
        vocab_size=280, special_tokens=["<eos>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    return PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<eos>", pad_token="<eos>")


def test_rows_end_at_eos_or_stop_string_with_exact_offsets(tok):
    decoder, eos = OffsetDecoder(tok), [tok.eos_token_id]
    ids = tok("a = 1;\n\nb = 2;", add_special_tokens=False)["input_ids"]
    tokens, text, offsets, finished = finish_row(decoder, eos, ids + eos + ids, ())
    assert tokens == ids + eos and text == "a = 1;\n\nb = 2;" and finished
    assert offsets[-1][0] == offsets[-1][1] == len(text)  # EOS owns no characters
    tokens, text, offsets, finished = finish_row(decoder, eos, ids, ("\n\n",))
    assert text == "a = 1;\n\n" and finished and offsets[-1][1] == len(text) and len(tokens) == len(offsets)
    tokens, text, _, finished = finish_row(decoder, eos, ids, ())
    assert tokens == ids and not finished  # cut by the length limit


def _model() -> Qwen2ForCausalLM:
    torch.manual_seed(0)
    return Qwen2ForCausalLM(Qwen2Config(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                        num_attention_heads=2, num_key_value_heads=1, tie_word_embeddings=True))


def test_pushed_weights_have_checkpoint_names_and_merged_lora():
    from peft import LoraConfig, get_peft_model

    plain = _model()
    names = [n for n, _ in plain.named_parameters()]
    assert [n for n, _ in policy_weights(plain)] == names
    lora = get_peft_model(_model(), LoraConfig(r=2, target_modules=["q_proj"], init_lora_weights=False))
    lora.merge_adapter()
    pushed = dict(policy_weights(lora))
    assert list(pushed) == names  # adapter matrices left out, wrapper prefixes gone
    q = "model.layers.0.self_attn.q_proj.weight"
    assert not torch.equal(pushed[q], plain.state_dict()[q])  # the merged (adapted) weight is what is sent
    lora.unmerge_adapter()
    torch.testing.assert_close(lora.base_model.model.model.layers[0].self_attn.q_proj.base_layer.weight,
                               plain.state_dict()[q])


def test_missing_vllm_is_one_clear_error(tok, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "vllm", None)  # what a venv without it gives: ImportError
    with pytest.raises(UserError, match=r"needs vLLM: run `make setup`"):
        VLLMEngine(_model(), tok, "unused", VLLMOptions())


def test_sampling_options_mean_what_the_lean_loop_means():
    from botgrpo_cli.rollout import SamplingParams
    from botgrpo_cli.rollout.vllm import SAMPLING_KEYS, sampling_options

    opts = sampling_options(SamplingParams(max_new_tokens=7, temperature=0.7, top_p=0.9, stop=("\n\n",)), [5, 9])
    assert opts["max_tokens"] == 7 and opts["temperature"] == 0.7 and opts["top_p"] == 0.9
    assert opts["stop"] == ["\n\n"] and opts["include_stop_str_in_output"]  # kept in the text, as the lean loop does
    assert opts["stop_token_ids"] == [5, 9] and opts["logprobs"] == 0  # the sampled token's own log-prob
    assert (opts["top_k"], opts["min_p"], opts["repetition_penalty"]) == (0, 0.0, 1.0)  # off, as in the lean loop
    opts = sampling_options(SamplingParams(top_k=20, min_p=0.05, repetition_penalty=1.3), [5])
    assert (opts["top_k"], opts["min_p"], opts["repetition_penalty"]) == (20, 0.05, 1.3)
    assert set(opts) <= set(SAMPLING_KEYS)  # what a server accepts


def test_server_settings_are_checked_before_anything_loads():
    from botgrpo_cli.config import load_config

    assert load_config(None, sets=["rollout.engine=vllm_server"]).rollout.vllm_url is None  # the run starts one
    with pytest.raises(UserError, match="rollout.vllm_url"):
        load_config(None, sets=["rollout.engine=vllm_server", "rollout.vllm_url=localhost:8011"])
    cfg = load_config(None, sets=["rollout.engine=vllm_server", "rollout.vllm_url=http://127.0.0.1:1"])
    assert cfg.rollout.vllm_server_timeout_s > 0


def test_a_server_nobody_runs_is_one_line_at_once():
    import socket

    from botgrpo_cli.rollout.vllm_server import VLLMServerEngine

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(UserError, match=r"vLLM server at http://127\.0\.0\.1:\d+ is not answering.*botgrpo vllm serve"):
        VLLMServerEngine(None, None, f"http://127.0.0.1:{port}", timeout_s=5)


def test_the_default_engine_is_chosen_per_machine_with_a_reason():
    from botgrpo_cli.rollout.choice import choose_engine

    assert choose_engine("auto", cuda=False, vllm_installed=True)[0] == "fast"  # CPU: the lean loop is faster
    assert "lean decode loop" in choose_engine("auto", cuda=False, vllm_installed=True)[1]
    assert choose_engine("auto", cuda=True, vllm_installed=True)[0] == "vllm"
    assert choose_engine("auto", cuda=True, vllm_installed=False) == (
        "fast", "a GPU without vLLM (`make setup` installs it)")
    assert choose_engine("vllm", cuda=False, vllm_installed=True) == ("vllm", "rollout.engine=vllm")


def test_the_forced_close_tags_are_found_again_and_a_server_takes_only_budget_arguments():
    pytest.importorskip("vllm", reason="the logits processor is vLLM's interface")
    from botgrpo_cli.rollout.vllm_thinking import KEY, check_args, forced_positions, request_args

    args = request_args([5, 6], [7, 8], 3, opened=False)
    assert forced_positions([1, 5, 6, 9, 9, 9, 7, 8, 9], args[KEY]) == [6, 7]  # the lean loop's rule, replayed
    assert forced_positions([5, 6, 9, 7, 8, 9, 9, 9, 9], args[KEY]) == []  # closed in time
    assert forced_positions([9, 9, 7, 8, 9], request_args([5], [7, 8], 2, opened=True)[KEY]) == [2, 3]
    check_args(None)
    check_args(args)
    for bad in ({"other": 1}, {KEY: {**args[KEY], "budget": "3"}}, {KEY: {**args[KEY], "open": ["x"]}}):
        with pytest.raises(ValueError, match="extra_args"):
            check_args(bad)
