"""Both CPU engines (HF generate, lean decode loop) on a tiny random Qwen2 model: groups, seeding, left padding, stop strings."""

from __future__ import annotations

from typing import Iterator

import pytest
import torch

from botgrpo_cli.rollout import HFEngine, SamplingParams
from botgrpo_cli.rollout.fast import FastEngine
from rollout_models import PROMPTS, model, tokenizer


@pytest.fixture(scope="module", params=[HFEngine, FastEngine], ids=["hf", "fast"])
def engine(request) -> Iterator[HFEngine]:
    """Each behaviour holds for HF generate and for the lean decode loop alike."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny matmuls: more threads only add contention
    tok = tokenizer()
    yield request.param(model("qwen2", tok), tok)
    torch.set_num_threads(threads)


def test_batch_shapes_groups_and_offsets(engine):
    batch = engine.generate(PROMPTS, 3, SamplingParams(max_new_tokens=12, seed=1))
    assert batch.completion_ids.shape[0] == 9 and batch.mask.shape == batch.completion_ids.shape
    assert batch.group_ids.tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert batch.prompts[3] == PROMPTS[1]
    for i, (text, offs) in enumerate(zip(batch.texts, batch.offsets)):
        n = int(batch.mask[i].sum())
        assert len(offs) == n and bool(batch.mask[i, :n].all())  # mask is a prefix
        ids = batch.completion_ids[i, :n].tolist()
        assert text == engine.tok.decode(ids, skip_special_tokens=True)
        assert offs[-1][1] == len(text) if offs else text == ""
        ended_by_eos = ids[-1] == engine.tok.eos_token_id
        assert bool(batch.finished[i]) == ended_by_eos or n < 12


def test_same_seed_same_tokens_other_seed_differs(engine):
    p = SamplingParams(max_new_tokens=10, seed=7)
    a, b = engine.generate(PROMPTS, 2, p), engine.generate(PROMPTS, 2, p)
    c = engine.generate(PROMPTS, 2, SamplingParams(max_new_tokens=10, seed=8))
    assert torch.equal(a.completion_ids, b.completion_ids) and a.texts == b.texts
    assert a.texts != c.texts


def test_left_padding_matches_unbatched_greedy(engine):
    p = SamplingParams(max_new_tokens=8, temperature=0.0)
    together = engine.generate(PROMPTS, 1, p)
    alone = [engine.generate([q], 1, p).texts[0] for q in PROMPTS]
    assert together.texts == alone


def test_stop_string_ends_row_and_is_kept(engine):
    stop = "e"
    batch = engine.generate(PROMPTS * 3, 2, SamplingParams(max_new_tokens=24, temperature=1.5, seed=3, stop=(stop,)))
    stopped = 0
    for i, text in enumerate(batch.texts):
        if stop in text:
            assert text.endswith(stop) and text.find(stop) == len(text) - 1  # cut right after the first stop
            assert bool(batch.finished[i]) and batch.offsets[i][-1][1] == len(text)
            stopped += 1
    assert stopped > 0


def test_rows_are_reported_as_soon_as_they_end_with_their_final_text(engine):
    seen: dict[int, str] = {}

    def on_done(i: int, text: str) -> None:
        assert i not in seen  # once per row
        seen[i] = text

    batch = engine.generate(PROMPTS * 2, 2, SamplingParams(max_new_tokens=24, temperature=1.5, seed=5, stop=("e",)),
                            on_done=on_done)
    assert seen, "some rows should end before the length limit"
    for i, text in seen.items():
        assert text == batch.texts[i] and bool(batch.finished[i])
    unreported = set(range(len(batch.texts))) - set(seen)
    assert all(not bool(batch.finished[i]) for i in unreported)  # only length-limited rows are left


def test_reported_rows_are_reused_and_equal_a_fresh_decode(engine):
    """Rows handed to on_done are kept for the batch rather than decoded again; what the batch holds
    must still be exactly what decoding its own tokens gives (text, offsets, finished)."""
    reported: list[int] = []
    params = SamplingParams(max_new_tokens=24, temperature=1.5, seed=5, stop=("e",))
    batch = engine.generate(PROMPTS * 2, 2, params, on_done=lambda i, text: reported.append(i))
    assert reported
    for i in range(len(batch.texts)):
        tokens = batch.completion_ids[i][batch.mask[i]].tolist()
        _, text, offsets, finished = engine._row(tokens, params.stop)
        assert (text, offsets, finished) == (batch.texts[i], batch.offsets[i], bool(batch.finished[i]))


def test_token_id_prompts_are_fed_as_they_are(engine):
    """Id prompts give the batch text prompts give, and ids no tokenisation of their text would
    produce (split differently from the BPE's merge) reach the model untouched."""
    p = SamplingParams(max_new_tokens=8, seed=4)
    ids = [engine.tok(q, add_special_tokens=False)["input_ids"] for q in PROMPTS]
    by_text, by_ids = engine.generate(PROMPTS, 2, p), engine.generate(ids, 2, p)
    assert torch.equal(by_text.completion_ids, by_ids.completion_ids) and by_text.texts == by_ids.texts
    assert by_ids.prompt_ids == [q for q in ids for _ in range(2)] and by_ids.prompts == by_text.prompts
    split = [engine.tok.convert_tokens_to_ids(list(engine.tok.convert_ids_to_tokens(ids[0])[0])) + ids[0][1:]]
    assert split[0] != ids[0]  # the same text as other tokens
    assert engine.generate(split, 1, p).prompt_ids == split


def test_mixed_prompts_are_refused(engine):
    with pytest.raises(TypeError, match="all be strings or all be lists"):
        engine.generate(["text", [1, 2]], 1, SamplingParams(max_new_tokens=2))
